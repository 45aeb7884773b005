//! The forwarder: the sandbox's only way out. It listens on the sandbox's own loopback (the
//! server's HTTP_PROXY points there) and pipes each connection, unread, to the host's
//! per-server proxy through the unix socket bubblewrap bound into the sandbox. The host's
//! proxy decides what is allowed; this side only carries bytes.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Connections carried at once; further ones are closed at once. Bounds the threads a server
/// can make the forwarder start (it runs outside the server's seccomp process bound).
pub const MAX_CONNECTIONS: usize = 64;

/// What the forwarder prints on stdout once it listens; the init waits for it.
pub const READY_LINE: &str = "ready";

/// Why the forwarder could not start.
#[derive(Debug)]
pub enum ForwardError {
    /// The proxy socket is missing or not a socket: the host did not bind it.
    NoSocket {
        path: PathBuf,
        detail: String,
    },
    Listen {
        port: u16,
        source: io::Error,
    },
}

impl std::fmt::Display for ForwardError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ForwardError::NoSocket { path, detail } => write!(
                f,
                "the egress proxy socket {} is not usable ({detail}); the host binds it into \
                 the sandbox when the server's confinement names hosts",
                path.display()
            ),
            ForwardError::Listen { port, source } => write!(
                f,
                "could not listen on 127.0.0.1:{port} inside the sandbox ({source})"
            ),
        }
    }
}

impl std::error::Error for ForwardError {}

/// Checks the socket without connecting (a probe connection would reach the host's proxy as
/// an empty request and be audited as malformed).
pub fn check_socket(path: &Path) -> Result<(), ForwardError> {
    let no_socket = |detail: String| ForwardError::NoSocket {
        path: path.to_path_buf(),
        detail,
    };
    let meta = std::fs::metadata(path).map_err(|e| no_socket(e.to_string()))?;
    if !meta.file_type().is_socket() {
        return Err(no_socket("not a unix socket".to_string()));
    }
    Ok(())
}

/// Binds the listener after checking the socket; the caller then says ready and serves.
pub fn bind(port: u16, socket: &Path) -> Result<TcpListener, ForwardError> {
    check_socket(socket)?;
    TcpListener::bind(("127.0.0.1", port)).map_err(|source| ForwardError::Listen { port, source })
}

/// Serves forever: one thread per connection, at most [`MAX_CONNECTIONS`] at once.
pub fn serve(listener: TcpListener, socket: PathBuf) -> ! {
    let active = Arc::new(AtomicUsize::new(0));
    let socket = Arc::new(socket);
    loop {
        let tcp = match listener.accept() {
            Ok((tcp, _)) => tcp,
            Err(e) => {
                // Out of descriptors or similar: back off instead of spinning.
                eprintln!("gatehouse-sandbox-init: forwarder: accept failed: {e}");
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
        };
        let Some(slot) = Slot::take(&active) else {
            // Over the bound: closing the connection is the refusal.
            drop(tcp);
            continue;
        };
        let socket = Arc::clone(&socket);
        let spawned = std::thread::Builder::new()
            .name("forward".into())
            .spawn(move || {
                let _slot = slot;
                if let Err(e) = carry(tcp, &socket) {
                    eprintln!("gatehouse-sandbox-init: forwarder: {e}");
                }
            });
        if let Err(e) = spawned {
            eprintln!("gatehouse-sandbox-init: forwarder: could not start a thread: {e}");
        }
    }
}

/// One of the [`MAX_CONNECTIONS`] places; given back when dropped (also on a panic).
pub struct Slot(Arc<AtomicUsize>);

impl Slot {
    pub fn take(active: &Arc<AtomicUsize>) -> Option<Slot> {
        active
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < MAX_CONNECTIONS).then_some(n + 1)
            })
            .ok()
            .map(|_| Slot(Arc::clone(active)))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Copies both ways until both directions are done; each direction's end is passed on as a
/// half-close, so a client that shuts down its write side still gets the whole answer.
pub fn carry(tcp: TcpStream, socket: &Path) -> io::Result<()> {
    let unix = UnixStream::connect(socket).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!(
                "could not reach the egress proxy at {}: {e}",
                socket.display()
            ),
        )
    })?;
    let tcp_out = tcp.try_clone()?;
    let unix_in = unix.try_clone()?;
    let upstream = std::thread::Builder::new()
        .name("forward-up".into())
        .spawn(move || {
            let result = pipe(tcp, &unix_in);
            let _ = unix_in.shutdown(Shutdown::Write);
            result
        })?;
    let down = pipe(unix, &tcp_out);
    let _ = tcp_out.shutdown(Shutdown::Write);
    let up = upstream
        .join()
        .unwrap_or_else(|_| Err(io::Error::other("the upstream copy panicked")));
    // A reset from either side is an ordinary end of a connection, not worth a log line.
    for result in [up, down] {
        match result {
            Err(e)
                if !matches!(
                    e.kind(),
                    io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe
                ) =>
            {
                return Err(e);
            }
            _ => {}
        }
    }
    Ok(())
}

fn pipe(mut from: impl Read, mut to: impl Write) -> io::Result<u64> {
    io::copy(&mut from, &mut to)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixListener;

    fn echo_listener(dir: &Path) -> PathBuf {
        let path = dir.join("echo.sock");
        let listener = UnixListener::bind(&path).unwrap();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { return };
                std::thread::spawn(move || {
                    let mut buf = Vec::new();
                    // Echo after the client's half-close: proves the half-close is passed on.
                    conn.read_to_end(&mut buf).unwrap();
                    conn.write_all(&buf).unwrap();
                });
            }
        });
        path
    }

    #[test]
    fn carries_bytes_both_ways_and_passes_on_the_half_close() {
        let dir = tempfile::tempdir().unwrap();
        let socket = echo_listener(dir.path());
        let listener = bind(0, &socket).unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || serve(listener, socket));
        let mut client = TcpStream::connect(("127.0.0.1", port)).unwrap();
        client
            .write_all(b"CONNECT example.org:443 HTTP/1.1\r\n\r\n")
            .unwrap();
        client.shutdown(Shutdown::Write).unwrap();
        let mut back = Vec::new();
        client.read_to_end(&mut back).unwrap();
        assert_eq!(back, b"CONNECT example.org:443 HTTP/1.1\r\n\r\n");
    }

    #[test]
    fn a_missing_or_non_socket_path_is_refused_before_listening() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("absent.sock");
        assert!(matches!(
            bind(0, &missing),
            Err(ForwardError::NoSocket { .. })
        ));
        let file = dir.path().join("file");
        std::fs::write(&file, b"not a socket").unwrap();
        let err = bind(0, &file).unwrap_err();
        assert!(err.to_string().contains("not a unix socket"), "{err}");
        let socket = dir.path().join("ok.sock");
        let _listener = UnixListener::bind(&socket).unwrap();
        assert!(check_socket(&socket).is_ok());
    }

    #[test]
    fn a_proxy_that_went_away_closes_the_client_connection() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("gone.sock");
        drop(UnixListener::bind(&socket).unwrap());
        let listener = bind(0, &socket).unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || serve(listener, socket));
        let mut client = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let mut back = Vec::new();
        // EOF (or a reset), never a hang: the forwarder closed it.
        let _ = client.read_to_end(&mut back);
        assert!(back.is_empty());
    }

    #[test]
    fn slots_are_bounded_and_given_back() {
        let active = Arc::new(AtomicUsize::new(0));
        let slots: Vec<Slot> = (0..MAX_CONNECTIONS)
            .map(|_| Slot::take(&active).expect("below the bound"))
            .collect();
        assert!(Slot::take(&active).is_none(), "the 65th is refused");
        drop(slots);
        assert_eq!(active.load(Ordering::Acquire), 0);
        assert!(Slot::take(&active).is_some());
    }
}
