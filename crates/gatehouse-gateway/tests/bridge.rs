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
use gatehouse_host::host::Host;
use gatehouse_testkit as kit;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;

/// A host with no servers, in its own directory.
fn host(dir: &Path) -> Arc<Host> {
    kit::host::open(kit::host::options(dir), Arc::new(HeadlessConsent))
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
