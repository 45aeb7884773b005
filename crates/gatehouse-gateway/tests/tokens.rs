//! Client tokens for `serve --http`: made once, shown again, rotated, revoked, and what the
//! server accepts after each (a memory store here; tests/serve_http.rs in the CLI uses a real
//! gnome-keyring).

use std::sync::Arc;

use gatehouse_gateway::tokens::{self, Issued, TokenBook, secret_name};
use gatehouse_host::{MemoryStore, SecretStore};

#[tokio::test]
async fn tokens_are_made_once_rotated_and_revoked_and_the_book_follows() {
    let dir = tempfile::tempdir().unwrap();
    let index = dir.path().join("data").join(tokens::INDEX_FILE);
    let store: Arc<MemoryStore> = Arc::new(MemoryStore::default());
    let (first, issued) = tokens::issue(store.as_ref(), &index, "claude_code", false).unwrap();
    assert_eq!(issued, Issued::Made);
    assert!(
        first.starts_with(tokens::TOKEN_PREFIX) && first.len() == 5 + 64,
        "{first}"
    );
    // The keychain holds it; the list on disk holds only the client's id.
    assert_eq!(
        store
            .get(&secret_name("claude_code"))
            .unwrap()
            .unwrap()
            .expose(),
        first
    );
    let listed = std::fs::read_to_string(&index).unwrap();
    assert!(
        listed.contains("claude_code") && !listed.contains(&first[5..]),
        "{listed}"
    );
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&index).unwrap().permissions().mode() & 0o777,
        0o600
    );

    let (again, issued) = tokens::issue(store.as_ref(), &index, "claude_code", false).unwrap();
    assert_eq!((again.as_str(), issued), (first.as_str(), Issued::Existing));
    let (other, _) = tokens::issue(store.as_ref(), &index, "cursor", false).unwrap();
    assert_ne!(other, first, "each client its own token");

    let book = Arc::new(TokenBook::new(store.clone(), index.clone()));
    assert_eq!(book.load().unwrap(), 2);
    assert_eq!(book.client_of(&first).await.as_deref(), Some("claude_code"));
    assert_eq!(book.client_of(&other).await.as_deref(), Some("cursor"));
    for wrong in [
        "",
        "ghgw_",
        &first[..first.len() - 1],
        &first.to_uppercase(),
    ] {
        assert_eq!(book.client_of(wrong).await, None, "{wrong:?}");
    }

    let (rotated, issued) = tokens::issue(store.as_ref(), &index, "claude_code", true).unwrap();
    assert_eq!(issued, Issued::Rotated);
    assert_ne!(rotated, first);
    book.load().unwrap();
    assert_eq!(book.client_of(&first).await, None, "the old token is dead");
    assert_eq!(
        book.client_of(&rotated).await.as_deref(),
        Some("claude_code")
    );

    assert!(tokens::revoke(store.as_ref(), &index, "cursor").unwrap());
    assert!(!tokens::revoke(store.as_ref(), &index, "cursor").unwrap());
    book.load().unwrap();
    assert_eq!(book.client_of(&other).await, None);
    assert_eq!(
        tokens::listed(&index).unwrap(),
        vec!["claude_code".to_string()]
    );
    // A token left in the keychain for a client no longer listed is never accepted.
    store
        .set(
            &secret_name("ghost"),
            &gatehouse_host::secrets::SecretValue::new("ghgw_ghost"),
        )
        .unwrap();
    book.load().unwrap();
    assert_eq!(book.client_of("ghgw_ghost").await, None);
}

#[test]
fn a_bad_client_id_or_a_broken_list_is_refused_with_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let index = dir.path().join(tokens::INDEX_FILE);
    let store = MemoryStore::default();
    for bad in ["", "Claude Code", "../x", "a.b"] {
        assert!(
            tokens::issue(&store, &index, bad, false).is_err(),
            "{bad:?}"
        );
    }
    std::fs::write(
        &index,
        b"{\"version\":1,\"clients\":[\"a\"],\"tokens\":[\"x\"]}",
    )
    .unwrap();
    let error = tokens::issue(&store, &index, "a", false).unwrap_err();
    assert!(error.contains("remove it"), "{error}");
    let book = TokenBook::new(Arc::new(MemoryStore::default()), index);
    assert!(book.load().is_err(), "a broken list admits no one");
}
