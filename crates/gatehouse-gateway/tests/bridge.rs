//! The bridge's socket and hello, attacked from this process: who may listen, who may
//! connect, and what a client must say before anything reaches the host.

use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use gatehouse_gateway::HeadlessConsent;
use gatehouse_gateway::bridge::{
    self, BridgeCode, BridgeListener, HELLO_LIMIT, own_uid, socket_path_in,
};
use gatehouse_gateway::tokens::{self, TokenBook};
use gatehouse_host::MemoryStore;
use gatehouse_host::host::Host;
use gatehouse_testkit as kit;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;

/// A host with no servers, in its own directory.
fn host(dir: &Path) -> Arc<Host> {
    kit::host::open(kit::host::options(dir), Arc::new(HeadlessConsent::new()))
}

struct World {
    dir: tempfile::TempDir,
}

impl World {
    fn new() -> World {
        World {
            dir: tempfile::tempdir().unwrap(),
        }
    }
    fn runtime(&self) -> PathBuf {
        let runtime = self.dir.path().join("run");
        std::fs::create_dir_all(&runtime).unwrap();
        std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o700)).unwrap();
        runtime
    }
    fn socket(&self) -> PathBuf {
        socket_path_in(&self.runtime())
    }
    /// Binds and serves; the listener runs until the test's runtime ends.
    fn serve(&self, listener: BridgeListener) {
        tokio::spawn(listener.serve(host(&self.dir.path().join("host"))));
    }
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path)
        .unwrap()
        .permissions()
        .mode()
        & 0o777
}

/// Sends `line` raw and reads the one line the app answers (empty when it closed).
async fn say(socket: &Path, line: &[u8]) -> String {
    let mut stream = UnixStream::connect(socket).await.unwrap();
    stream.write_all(line).await.unwrap();
    let mut reader = BufReader::new(stream);
    let mut reply = String::new();
    match tokio::time::timeout(Duration::from_secs(10), reader.read_line(&mut reply))
        .await
        .expect("the app answers or closes within 10 s")
    {
        Ok(_) => reply,
        // Closed with the hello unread.
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => String::new(),
        Err(e) => panic!("{e}"),
    }
}

#[tokio::test]
async fn the_socket_is_private_replaces_a_stale_one_refuses_a_live_one_and_goes_when_dropped() {
    let world = World::new();
    let socket = world.socket();
    let listener = BridgeListener::bind(&socket).expect("binds");
    assert_eq!(mode(socket.parent().unwrap()), 0o700);
    assert_eq!(mode(&socket), 0o600);
    // A second app while the first listens.
    let second = BridgeListener::bind(&socket).err().expect("refused");
    assert_eq!(second.code, BridgeCode::InUse, "{second}");
    drop(listener);
    assert!(!socket.exists(), "the socket goes with its listener");
    // An app that died left its socket: nobody answers there, so it is replaced.
    let dead = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    drop(dead);
    assert!(socket.exists());
    let listener = BridgeListener::bind(&socket).expect("replaces the stale socket");
    // A listener never removes a socket that is no longer its own.
    std::fs::remove_file(&socket).unwrap();
    let other = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    drop(listener);
    assert!(socket.exists(), "another process's socket stays");
    drop(other);
}

#[tokio::test]
async fn a_directory_others_can_use_or_a_planted_file_is_refused_on_both_sides() {
    // Loose mode.
    let world = World::new();
    let socket = world.socket();
    std::fs::create_dir(socket.parent().unwrap()).unwrap();
    std::fs::set_permissions(
        socket.parent().unwrap(),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    let error = BridgeListener::bind(&socket).err().expect("refused");
    assert_eq!(error.code, BridgeCode::UnsafeDir, "{error}");
    assert!(error.message.contains("755"), "{error}");
    let error = bridge::connect(&socket, "c", None, Duration::ZERO)
        .await
        .err()
        .expect("serve refuses it too");
    assert_eq!(error.code, BridgeCode::UnsafeDir, "{error}");

    // A link to somewhere else.
    let world = World::new();
    let socket = world.socket();
    let elsewhere = world.dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::fs::set_permissions(&elsewhere, std::fs::Permissions::from_mode(0o700)).unwrap();
    symlink(&elsewhere, socket.parent().unwrap()).unwrap();
    let error = BridgeListener::bind(&socket).err().expect("refused");
    assert_eq!(error.code, BridgeCode::UnsafeDir, "{error}");
    let error = bridge::connect(&socket, "c", None, Duration::ZERO)
        .await
        .err()
        .unwrap();
    assert_eq!(error.code, BridgeCode::UnsafeDir, "{error}");

    // A plain file where the socket goes is never deleted.
    let world = World::new();
    let socket = world.socket();
    std::fs::create_dir(socket.parent().unwrap()).unwrap();
    std::fs::set_permissions(
        socket.parent().unwrap(),
        std::fs::Permissions::from_mode(0o700),
    )
    .unwrap();
    std::fs::write(&socket, b"not a socket").unwrap();
    let error = BridgeListener::bind(&socket).err().expect("refused");
    assert_eq!(error.code, BridgeCode::UnsafeDir, "{error}");
    assert_eq!(std::fs::read(&socket).unwrap(), b"not a socket");
}

#[tokio::test]
async fn without_an_app_serve_is_told_to_run_its_own_host() {
    let world = World::new();
    let socket = world.socket();
    // No directory yet.
    assert!(
        bridge::connect(&socket, "c", None, Duration::ZERO)
            .await
            .unwrap()
            .is_none()
    );
    // The directory, no socket.
    drop(BridgeListener::bind(&socket).unwrap());
    assert!(
        bridge::connect(&socket, "c", None, Duration::ZERO)
            .await
            .unwrap()
            .is_none()
    );
    // A stale socket.
    drop(std::os::unix::net::UnixListener::bind(&socket).unwrap());
    assert!(
        bridge::connect(&socket, "c", None, Duration::ZERO)
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn a_peer_of_another_uid_gets_not_a_word() {
    let world = World::new();
    let socket = world.socket();
    // The kernel reports this process's uid for the test's peer: a listener serving another
    // uid must refuse it exactly as it would refuse another user.
    world.serve(BridgeListener::bind_for(&socket, own_uid() + 1).unwrap());
    let reply = say(&socket, b"{\"gatehouse_bridge\":1,\"client\":\"c\"}\n").await;
    assert_eq!(reply, "", "closed without a reply");
    let error = bridge::connect(&socket, "c", None, Duration::ZERO)
        .await
        .err()
        .expect("refused");
    assert_eq!(error.code, BridgeCode::BadHello, "{error}");

    // The same hello, to a listener serving this uid, is accepted.
    let world = World::new();
    let socket = world.socket();
    world.serve(BridgeListener::bind(&socket).unwrap());
    let reply = say(&socket, b"{\"gatehouse_bridge\":1,\"client\":\"c\"}\n").await;
    assert_eq!(reply.trim(), r#"{"gatehouse_bridge":1,"accepted":true}"#);
}

#[tokio::test]
async fn a_bad_hello_is_refused_with_its_reason() {
    let world = World::new();
    let socket = world.socket();
    world.serve(BridgeListener::bind(&socket).unwrap());
    let oversized = {
        let mut line = format!(
            "{{\"gatehouse_bridge\":1,\"client\":\"{}",
            "a".repeat(HELLO_LIMIT)
        );
        line.push_str("\"}\n");
        line
    };
    for (hello, why) in [
        (b"GET / HTTP/1.1\r\n\r\n".to_vec(), "not valid"),
        (
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\"}\n".to_vec(),
            "not valid",
        ),
        (
            b"{\"gatehouse_bridge\":2,\"client\":\"c\"}\n".to_vec(),
            "version 2",
        ),
        (
            b"{\"gatehouse_bridge\":1,\"client\":\"Claude Desktop\"}\n".to_vec(),
            "client",
        ),
        (
            b"{\"gatehouse_bridge\":1,\"client\":\"c\",\"admin\":true}\n".to_vec(),
            "unknown field",
        ),
        (oversized.into_bytes(), "one line of at most"),
    ] {
        let reply = say(&socket, &hello).await;
        let reply: serde_json::Value = serde_json::from_str(&reply)
            .unwrap_or_else(|e| panic!("{e}: {reply:?} for {:?}", String::from_utf8_lossy(&hello)));
        assert_eq!(reply["error"]["code"], "bridge_bad_hello", "{reply}");
        let message = reply["error"]["message"].as_str().unwrap();
        assert!(message.contains(why), "{message} should say {why}");
    }
}

#[tokio::test]
async fn a_client_that_never_initializes_is_closed_and_frees_its_place() {
    let world = World::new();
    let socket = world.socket();
    world.serve(
        BridgeListener::bind(&socket)
            .unwrap()
            .with_max_clients(1)
            .with_handshake_timeout(Duration::from_millis(300)),
    );
    // Greeted, then silent: no MCP initialize.
    let mut stream = UnixStream::connect(&socket).await.unwrap();
    stream
        .write_all(b"{\"gatehouse_bridge\":1,\"client\":\"idle\"}\n")
        .await
        .unwrap();
    let mut reader = BufReader::new(stream);
    let mut reply = String::new();
    reader.read_line(&mut reply).await.unwrap();
    assert!(reply.contains("\"accepted\":true"), "{reply}");
    // The app closes it once the handshake time is up.
    let mut rest = String::new();
    let closed = tokio::time::timeout(Duration::from_secs(10), reader.read_line(&mut rest))
        .await
        .expect("closed within the handshake time");
    assert!(matches!(closed, Ok(0) | Err(_)), "{closed:?} {rest:?}");
    // Its place is free again: the one-client app serves the next client.
    let next = bridge::connect(&socket, "next", None, Duration::ZERO).await;
    assert!(matches!(next, Ok(Some(_))), "{:?}", next.err());
}

#[tokio::test]
async fn a_client_over_the_limit_is_told_the_app_is_busy() {
    let world = World::new();
    let socket = world.socket();
    world.serve(BridgeListener::bind(&socket).unwrap().with_max_clients(1));
    let first = bridge::connect(&socket, "first", None, Duration::ZERO)
        .await
        .unwrap()
        .expect("the first client is served");
    let error = bridge::connect(&socket, "second", None, Duration::ZERO)
        .await
        .err()
        .expect("the second is refused");
    assert_eq!(error.code, BridgeCode::Busy, "{error}");
    // The slot is freed when the first client's session ends.
    drop(first);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        match bridge::connect(&socket, "third", None, Duration::ZERO).await {
            Ok(Some(_)) => break,
            Err(e) if e.code == BridgeCode::Busy && std::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            other => panic!("{:?}", other.err()),
        }
    }
}

#[tokio::test]
async fn a_client_asking_for_one_server_the_app_does_not_have_is_refused_by_name() {
    let world = World::new();
    let config = world.dir.path().join("host/config/servers.json");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(&config, r#"{"mcpServers": {"known": {"command": "true"}}}"#).unwrap();
    let socket = world.socket();
    world.serve(BridgeListener::bind(&socket).unwrap());
    let error = bridge::connect(&socket, "c", Some("nosuch"), Duration::ZERO)
        .await
        .err()
        .expect("refused");
    assert_eq!(error.code, BridgeCode::Refused, "{error}");
    assert!(
        error.message.contains("no server named \"nosuch\""),
        "{error}"
    );
    // A server it has is accepted.
    assert!(
        bridge::connect(&socket, "c", Some("known"), Duration::ZERO)
            .await
            .unwrap()
            .is_some()
    );
}

/// A token book with one client's token (a memory keychain), and the token.
fn book_with_token(dir: &Path) -> (Arc<TokenBook>, String) {
    let store = Arc::new(MemoryStore::default());
    let index = dir.join("data").join(tokens::INDEX_FILE);
    let (token, _) = tokens::issue(store.as_ref(), &index, "claude_code", false).unwrap();
    (Arc::new(TokenBook::new(store, index)), token)
}

fn loopback_listener() -> std::net::TcpListener {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap()
}

/// One raw HTTP POST of an MCP initialize to `addr`: the status line's code.
fn post_initialize(addr: std::net::SocketAddr, token: &str) -> u16 {
    use std::io::{Read, Write};
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status in {response:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_listener_is_served_on_the_apps_host_until_serve_closes_the_bridge() {
    let world = World::new();
    let socket = world.socket();
    let (book, token) = book_with_token(world.dir.path());
    world.serve(BridgeListener::bind(&socket).unwrap().with_tokens(book));
    let listener = loopback_listener();
    let addr = listener.local_addr().unwrap();
    let bridged = bridge::connect_http(&socket, &listener, None, Duration::ZERO)
        .await
        .unwrap()
        .expect("the app serves it");
    assert_eq!(bridged.serving(), addr.to_string());
    // The app's HTTP: its token rule, then MCP.
    let good = token.clone();
    let statuses = tokio::task::spawn_blocking(move || {
        (
            post_initialize(addr, &good),
            post_initialize(addr, "ghgw_not-a-token"),
        )
    })
    .await
    .unwrap();
    assert_eq!(statuses, (200, 401));

    // serve goes: the app stops accepting on the socket; what arrives next waits for serve's
    // own copy of it (its fallback host).
    drop(bridged);
    listener.set_nonblocking(true).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let mut clients = Vec::new();
    loop {
        clients.push(std::net::TcpStream::connect(addr).unwrap());
        tokio::time::sleep(Duration::from_millis(100)).await;
        if listener.accept().is_ok() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the app still accepts on serve's listener after the bridge closed"
        );
    }
}

/// Says an http hello on a raw connection; returns it once the app accepted.
async fn http_hello_accepted(socket: &Path) -> std::os::unix::net::UnixStream {
    let mut stream = UnixStream::connect(socket).await.unwrap();
    stream
        .write_all(b"{\"gatehouse_bridge\":1,\"mode\":\"http\"}\n")
        .await
        .unwrap();
    let mut reader = BufReader::new(stream);
    let mut reply = String::new();
    reader.read_line(&mut reply).await.unwrap();
    assert_eq!(reply.trim(), r#"{"gatehouse_bridge":1,"accepted":true}"#);
    let stream = reader.into_inner().into_std().unwrap();
    stream.set_nonblocking(false).unwrap();
    stream
}

/// Sends `byte` carrying `fds`, and reads the app's answer line.
fn pass_and_read(
    stream: std::os::unix::net::UnixStream,
    byte: u8,
    fds: &[std::os::fd::BorrowedFd<'_>],
) -> serde_json::Value {
    use rustix::net::{SendAncillaryBuffer, SendAncillaryMessage, SendFlags};
    use std::io::BufRead;
    let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(2))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    if !fds.is_empty() {
        assert!(control.push(SendAncillaryMessage::ScmRights(fds)));
    }
    rustix::net::sendmsg(
        &stream,
        &[std::io::IoSlice::new(&[byte])],
        &mut control,
        SendFlags::empty(),
    )
    .unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(stream)
        .read_line(&mut line)
        .unwrap();
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_passed_descriptor_that_is_not_one_loopback_listener_is_refused() {
    use std::os::fd::AsFd;
    let world = World::new();
    let socket = world.socket();
    let (book, _) = book_with_token(world.dir.path());
    world.serve(BridgeListener::bind(&socket).unwrap().with_tokens(book));
    let file = std::fs::File::open(world.dir.path()).unwrap();
    let unix = std::os::unix::net::UnixListener::bind(world.dir.path().join("u.sock")).unwrap();
    let open = loopback_listener();
    let connected = std::net::TcpStream::connect(open.local_addr().unwrap()).unwrap();
    let everywhere = std::net::TcpListener::bind("0.0.0.0:0").unwrap();
    let (one, two) = (loopback_listener(), loopback_listener());
    let cases: Vec<(&str, u8, Vec<std::os::fd::BorrowedFd<'_>>, &str)> = vec![
        ("a directory", b'\n', vec![file.as_fd()], "not a socket"),
        (
            "a Unix listener",
            b'\n',
            vec![unix.as_fd()],
            "not a TCP/IP socket",
        ),
        (
            "a connection",
            b'\n',
            vec![connected.as_fd()],
            "does not listen",
        ),
        (
            "all addresses",
            b'\n',
            vec![everywhere.as_fd()],
            "not a loopback address",
        ),
        (
            "two listeners",
            b'\n',
            vec![one.as_fd(), two.as_fd()],
            "2 descriptor(s)",
        ),
        ("nothing", b'\n', vec![], "0 descriptor(s)"),
        ("another byte", b'x', vec![one.as_fd()], "'x'"),
    ];
    for (what, byte, fds, why) in cases {
        let stream = http_hello_accepted(&socket).await;
        let reply = tokio::task::block_in_place(|| pass_and_read(stream, byte, &fds));
        assert_eq!(
            reply["error"]["code"], "bridge_bad_hello",
            "{what}: {reply}"
        );
        let message = reply["error"]["message"].as_str().unwrap();
        assert!(message.contains(why), "{what}: {message} should say {why}");
    }
    // The good one, the same way, is served.
    let stream = http_hello_accepted(&socket).await;
    let reply = tokio::task::block_in_place(|| pass_and_read(stream, b'\n', &[one.as_fd()]));
    assert_eq!(
        reply["serving"],
        one.local_addr().unwrap().to_string(),
        "{reply}"
    );
}

#[tokio::test]
async fn an_http_hello_follows_its_own_rules_and_needs_the_apps_tokens() {
    let world = World::new();
    let socket = world.socket();
    let (book, _) = book_with_token(world.dir.path());
    world.serve(BridgeListener::bind(&socket).unwrap().with_tokens(book));
    for (hello, why) in [
        (
            &b"{\"gatehouse_bridge\":1,\"mode\":\"http\",\"client\":\"c\"}\n"[..],
            "names no client",
        ),
        (
            &b"{\"gatehouse_bridge\":1,\"mode\":\"stdio\"}\n"[..],
            "names its client",
        ),
        (&b"{\"gatehouse_bridge\":1}\n"[..], "names its client"),
        (
            &b"{\"gatehouse_bridge\":1,\"mode\":\"ftp\"}\n"[..],
            "unknown variant",
        ),
    ] {
        let reply: serde_json::Value = serde_json::from_str(&say(&socket, hello).await).unwrap();
        assert_eq!(reply["error"]["code"], "bridge_bad_hello", "{reply}");
        let message = reply["error"]["message"].as_str().unwrap();
        assert!(message.contains(why), "{message} should say {why}");
    }
    // The stdio hello every release sent still works, with "mode":"stdio" or without.
    let reply = say(
        &socket,
        b"{\"gatehouse_bridge\":1,\"mode\":\"stdio\",\"client\":\"c\"}\n",
    )
    .await;
    assert_eq!(reply.trim(), r#"{"gatehouse_bridge":1,"accepted":true}"#);

    // An app given no tokens does not serve HTTP.
    let world = World::new();
    let socket = world.socket();
    world.serve(BridgeListener::bind(&socket).unwrap());
    let listener = loopback_listener();
    let error = bridge::connect_http(&socket, &listener, None, Duration::ZERO)
        .await
        .err()
        .expect("refused");
    assert_eq!(error.code, BridgeCode::Refused, "{error}");
    assert!(error.message.contains("does not serve HTTP"), "{error}");

    // Nor an app whose keychain holds no client's token.
    let world = World::new();
    let socket = world.socket();
    let empty = Arc::new(TokenBook::new(
        Arc::new(MemoryStore::default()),
        world.dir.path().join(tokens::INDEX_FILE),
    ));
    world.serve(BridgeListener::bind(&socket).unwrap().with_tokens(empty));
    let error = bridge::connect_http(&socket, &listener, None, Duration::ZERO)
        .await
        .err()
        .expect("refused");
    assert_eq!(error.code, BridgeCode::Refused, "{error}");
    assert!(
        error.message.contains("gatehouse clients token CLIENT"),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_listeners_over_the_limit_are_told_the_app_is_busy_and_other_users_get_nothing() {
    let world = World::new();
    let socket = world.socket();
    let (book, _) = book_with_token(world.dir.path());
    world.serve(
        BridgeListener::bind(&socket)
            .unwrap()
            .with_tokens(book.clone())
            .with_max_http_listeners(1),
    );
    let (first, second) = (loopback_listener(), loopback_listener());
    let held = bridge::connect_http(&socket, &first, None, Duration::ZERO)
        .await
        .unwrap()
        .expect("served");
    let error = bridge::connect_http(&socket, &second, None, Duration::ZERO)
        .await
        .err()
        .expect("busy");
    assert_eq!(error.code, BridgeCode::Busy, "{error}");
    drop(held);
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        match bridge::connect_http(&socket, &second, None, Duration::ZERO).await {
            Ok(Some(_)) => break,
            Err(e) if e.code == BridgeCode::Busy && std::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            other => panic!("{:?}", other.err()),
        }
    }

    // A listener serving another uid never reads the hello, so no descriptor is taken.
    let world = World::new();
    let socket = world.socket();
    world.serve(
        BridgeListener::bind_for(&socket, own_uid() + 1)
            .unwrap()
            .with_tokens(book),
    );
    let error = bridge::connect_http(&socket, &first, None, Duration::ZERO)
        .await
        .err()
        .expect("refused");
    // The listener closes at once: serve fails writing its hello (the pipe broke first) or
    // reading the answer (none came), whichever the scheduler makes it see first. Either way
    // the descriptor is never sent.
    assert!(
        matches!(error.code, BridgeCode::BadHello | BridgeCode::Io),
        "{error}"
    );
}
