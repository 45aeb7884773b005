//! A private D-Bus session bus for the tests: a real `dbus-daemon` that starts no services by
//! itself (so nothing on the machine answers in place of the test's stand-ins).

#![allow(dead_code)]

use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use gatehouse_presence::{ActionHandler, TrayAction};

/// A running `dbus-daemon`, ended on drop.
pub struct PrivateBus {
    pub address: String,
    child: Child,
    _dir: tempfile::TempDir,
}

impl PrivateBus {
    pub fn start() -> PrivateBus {
        let dir = tempfile::tempdir().expect("a temp dir for the bus");
        let config = dir.path().join("session.conf");
        std::fs::write(
            &config,
            format!(
                r#"<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:dir={}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"#,
                dir.path().display()
            ),
        )
        .expect("the bus config");
        let mut child = Command::new("dbus-daemon")
            .arg(format!("--config-file={}", config.display()))
            .args(["--nofork", "--print-address=1"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect(
                "dbus-daemon is not installed: install the `dbus` package (scripts/install-deps.sh does)",
            );
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().expect("the bus's stdout"))
            .read_line(&mut line)
            .expect("dbus-daemon prints its address");
        let address = line.trim().to_string();
        assert!(
            address.starts_with("unix:"),
            "dbus-daemon printed no address: {line:?}"
        );
        PrivateBus {
            address,
            child,
            _dir: dir,
        }
    }

    /// A plain zbus connection for the test's stand-ins.
    pub async fn connect(&self) -> zbus::Connection {
        zbus::connection::Builder::address(self.address.as_str())
            .expect("the address")
            .build()
            .await
            .expect("connecting to the private bus")
    }
}

impl Drop for PrivateBus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An action handler that records into a channel.
pub fn recorder() -> (ActionHandler, mpsc::Receiver<TrayAction>) {
    let (tx, rx) = mpsc::channel();
    let tx = std::sync::Mutex::new(tx);
    let handler: ActionHandler = std::sync::Arc::new(move |a| {
        let _ = tx.lock().expect("the recorder").send(a);
    });
    (handler, rx)
}

/// The next action, waiting at most `WAIT` (a bound so a broken delivery fails, not hangs).
pub fn next_action(rx: &mpsc::Receiver<TrayAction>) -> TrayAction {
    rx.recv_timeout(WAIT)
        .expect("an action is delivered (none arrived)")
}

/// How long a test waits for something that should happen at once before failing.
pub const WAIT: Duration = Duration::from_secs(10);

/// Polls `f` until it holds, failing the test after `WAIT`.
pub async fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + WAIT;
    while !f() {
        assert!(
            std::time::Instant::now() < deadline,
            "never happened: {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
