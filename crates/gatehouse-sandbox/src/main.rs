//! `gatehouse-sandbox-init`: the first process inside a server's bubblewrap sandbox.
//!
//! ```text
//! gatehouse-sandbox-init --memory-mib N --processes N [--proxy-port P --proxy-socket PATH] -- PROGRAM [ARG…]
//! gatehouse-sandbox-init --self-check
//! gatehouse-sandbox-init --forward --proxy-port P --proxy-socket PATH
//! ```
//! (the grammar is `gatehouse_confine::parse_init_args`, shared with the host that writes it).
//!
//! Run mode starts the egress forwarder (itself again, in forward mode) when a proxy is given,
//! waits until it listens, sets the resource limits, applies the seccomp filter, and then
//! replaces itself with the server (`exec`: the server keeps this pid and the host's stdio).
//! Any failure before that prints one line starting "gatehouse-sandbox-init:" and exits 125:
//! the server never runs with less confinement than it was admitted with.

mod forward;
mod limits;
mod seccomp;
mod selfcheck;

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use gatehouse_confine::{InitArgs, InitCommand, forward_args, parse_init_args};

/// The exit status of every failure of the init itself (as `env` and `nice` use it): the
/// host tells it apart from the server's own statuses.
const INIT_FAILED: u8 = 125;

/// How long the forwarder may take to listen.
const FORWARDER_READY_TIMEOUT: Duration = Duration::from_secs(5);

fn main() -> ExitCode {
    let mut argv = Vec::new();
    for arg in std::env::args_os().skip(1) {
        match arg.into_string() {
            Ok(arg) => argv.push(arg),
            Err(arg) => {
                return fail(&format!(
                    "argument {arg:?} is not UTF-8; the host passes only UTF-8 arguments"
                ));
            }
        }
    }
    let command = match parse_init_args(&argv) {
        Ok(command) => command,
        Err(e) => return fail(&format!("{e} (usage: see gatehouse_confine::init_args)")),
    };
    match command {
        InitCommand::SelfCheck => match selfcheck::report() {
            Ok(report) => {
                let mut out = std::io::stdout().lock();
                if writeln!(out, "{report}")
                    .and_then(|()| out.flush())
                    .is_err()
                {
                    return ExitCode::from(INIT_FAILED);
                }
                ExitCode::SUCCESS
            }
            Err(e) => fail(&e),
        },
        InitCommand::Forward { port, socket } => match forward_mode(port, &socket) {
            Ok(never) => match never {},
            Err(e) => fail(&format!("forwarder: {e}")),
        },
        InitCommand::Run(args) => match run(args) {
            Ok(never) => match never {},
            Err(e) => fail(&e),
        },
    }
}

fn fail(message: &str) -> ExitCode {
    eprintln!("gatehouse-sandbox-init: {message}");
    ExitCode::from(INIT_FAILED)
}

/// Bounds the init, then becomes the server. Returns only on failure.
fn run(args: InitArgs) -> Result<std::convert::Infallible, String> {
    let mut forwarder = match &args.proxy {
        Some((port, socket)) => Some(start_forwarder(*port, socket)?),
        None => None,
    };
    let bounded = limits::apply(args.memory_mib, args.processes)
        .and_then(|()| seccomp::apply(args.processes).map_err(|e| e.to_string()));
    let error = match bounded {
        // The server inherits the environment bubblewrap set (--clearenv plus the plan's
        // variables) and the init's stdio; std resets SIGPIPE to its default across exec.
        Ok(()) => {
            let error = Command::new(&args.program).args(&args.args).exec();
            format!("could not run {}: {error}", args.program.display())
        }
        Err(e) => e,
    };
    // Inside bubblewrap the pid namespace ends with us anyway; outside it, do not leave the
    // forwarder behind.
    if let Some(child) = forwarder.as_mut() {
        let _ = child.kill();
        let _ = child.wait();
    }
    Err(error)
}

/// Starts the forwarder (this binary again) and waits until it says it listens. Its stdin is
/// not the server's: the MCP channel stays the server's alone.
fn start_forwarder(port: u16, socket: &Path) -> Result<Child, String> {
    let exe = std::env::current_exe()
        .map_err(|e| format!("could not find its own executable to start the forwarder: {e}"))?;
    let mut child = Command::new(&exe)
        .args(forward_args(port, socket))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("could not start the forwarder ({}): {e}", exe.display()))?;
    let Some(stdout) = child.stdout.take() else {
        let _ = child.kill();
        let _ = child.wait();
        return Err("the forwarder has no stdout to say it is ready".into());
    };
    let (tx, rx) = mpsc::channel();
    // A pipe read has no timeout of its own: a thread reads, this one waits a bounded time.
    let reader = std::thread::Builder::new()
        .name("forwarder-ready".into())
        .spawn(move || {
            let mut line = String::new();
            let read = BufReader::new(stdout.take(64)).read_line(&mut line);
            let _ = tx.send(read.map(|_| line));
        });
    let outcome = match reader {
        Ok(_) => rx.recv_timeout(FORWARDER_READY_TIMEOUT),
        Err(e) => Ok(Err(e)),
    };
    let problem = match outcome {
        Ok(Ok(line)) if line.trim_end() == forward::READY_LINE => return Ok(child),
        Ok(Ok(line)) if line.is_empty() => {
            "the forwarder stopped before it listened (its reason is above)".to_string()
        }
        Ok(Ok(line)) => format!("the forwarder said {:?} instead of ready", line.trim_end()),
        Ok(Err(e)) => format!("could not read the forwarder's ready line: {e}"),
        Err(_) => format!(
            "the forwarder did not listen on 127.0.0.1:{port} within {} s",
            FORWARDER_READY_TIMEOUT.as_secs()
        ),
    };
    let _ = child.kill();
    let _ = child.wait();
    Err(problem)
}

/// Listens, bounds itself like a server without processes, says ready, then serves.
fn forward_mode(port: u16, socket: &Path) -> Result<std::convert::Infallible, String> {
    let listener = forward::bind(port, socket).map_err(|e| e.to_string())?;
    // The server runs as the same user beside it: non-dumpable keeps it from writing into
    // this process through /proc/PID/mem, and the filter keeps this process from starting any.
    nix::sys::prctl::set_dumpable(false)
        .map_err(|e| format!("could not make the forwarder non-dumpable: {e}"))?;
    seccomp::apply(0).map_err(|e| e.to_string())?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", forward::READY_LINE)
        .and_then(|()| out.flush())
        .map_err(|e| format!("could not say ready: {e}"))?;
    drop(out);
    forward::serve(listener, socket.to_path_buf())
}
