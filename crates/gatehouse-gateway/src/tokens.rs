//! Bearer tokens for `gatehouse serve --http`: one per AI client, made by Gatehouse, kept in
//! the OS keychain (secret `gateway-token.CLIENT`). Which clients have one is listed, without
//! the tokens, in `gateway-clients.json` in the data directory; the server knows a token only
//! by its SHA-256, and reads the keychain again at most every few seconds, so a token made,
//! rotated or revoked while it runs counts within that time.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use gatehouse_host::caller::validate_client_id;
use gatehouse_host::files::write_atomically;
use gatehouse_host::secrets::{SecretStore, SecretValue};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The client a request's bearer token belongs to, put in the request by the HTTP layer for
/// the gateway's record. Here, beside the tokens, so the server that reads it and the HTTP
/// layer that sets it import one way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpClient(pub String);

/// The file listing which clients have a token, in the data directory.
pub const INDEX_FILE: &str = "gateway-clients.json";
/// A token's secret name is this followed by the client id.
pub const SECRET_PREFIX: &str = "gateway-token.";
/// Tokens start with this, so one pasted into the wrong place is recognisable.
pub const TOKEN_PREFIX: &str = "ghgw_";
/// How long the server trusts what it read from the keychain.
pub const RELOAD_AFTER: Duration = Duration::from_secs(5);

/// Where the list of clients with a token lives, in the data directory `data`.
pub fn index_path(data: &Path) -> PathBuf {
    data.join(INDEX_FILE)
}

pub fn secret_name(client: &str) -> String {
    format!("{SECRET_PREFIX}{client}")
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Index {
    version: u32,
    clients: BTreeSet<String>,
}

fn read_index(path: &Path) -> Result<Index, String> {
    match std::fs::read(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Index {
            version: 1,
            clients: BTreeSet::new(),
        }),
        Err(e) => Err(format!("cannot read {}: {e}", path.display())),
        Ok(bytes) => {
            let index: Index = serde_json::from_slice(&bytes).map_err(|e| {
                format!(
                    "{} is not a Gatehouse client list ({e}); remove it and make the tokens again",
                    path.display()
                )
            })?;
            if index.version != 1 {
                return Err(format!(
                    "{} is version {}, this Gatehouse reads version 1",
                    path.display(),
                    index.version
                ));
            }
            Ok(index)
        }
    }
}

fn write_index(path: &Path, index: &Index) -> Result<(), String> {
    let bytes = serde_json::to_vec_pretty(index).expect("index serializes");
    write_atomically(path, &bytes, 0o600)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// A new token: 32 random bytes, hex.
fn new_token() -> Result<String, String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| format!("no randomness for a token: {e}"))?;
    Ok(format!("{TOKEN_PREFIX}{}", hex::encode(bytes)))
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// What `clients token` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Issued {
    /// A token was made (the client had none).
    Made,
    /// The client's token was replaced; the old one no longer works.
    Rotated,
    /// The client's existing token, shown again.
    Existing,
}

impl Issued {
    pub fn as_str(self) -> &'static str {
        match self {
            Issued::Made => "made",
            Issued::Rotated => "rotated",
            Issued::Existing => "existing",
        }
    }
}

/// The client's token, made when it has none (or when `rotate`), stored in `store` and listed
/// in `index`. The keychain is written before the list, so a listed client always has one.
pub fn issue(
    store: &dyn SecretStore,
    index_path: &Path,
    client: &str,
    rotate: bool,
) -> Result<(String, Issued), String> {
    validate_client_id(client)?;
    let name = secret_name(client);
    let mut index = read_index(index_path)?;
    let existing = store.get(&name).map_err(|e| e.to_string())?;
    let (token, issued) = match existing {
        Some(token) if !rotate => (token.expose().to_string(), Issued::Existing),
        existing => {
            let token = new_token()?;
            store
                .set(&name, &SecretValue::new(token.clone()))
                .map_err(|e| e.to_string())?;
            let issued = if existing.is_some() {
                Issued::Rotated
            } else {
                Issued::Made
            };
            (token, issued)
        }
    };
    if index.clients.insert(client.to_string()) {
        write_index(index_path, &index)?;
    }
    Ok((token, issued))
}

/// Deletes the client's token; true when it had one.
pub fn revoke(store: &dyn SecretStore, index_path: &Path, client: &str) -> Result<bool, String> {
    validate_client_id(client)?;
    let mut index = read_index(index_path)?;
    let had = store
        .get(&secret_name(client))
        .map_err(|e| e.to_string())?
        .is_some();
    // The list first: a client that is not listed is never accepted, whatever the keychain
    // still holds.
    if index.clients.remove(client) {
        write_index(index_path, &index)?;
    }
    if had {
        store
            .delete(&secret_name(client))
            .map_err(|e| e.to_string())?;
    }
    Ok(had)
}

/// The clients that have a token.
pub fn listed(index_path: &Path) -> Result<Vec<String>, String> {
    Ok(read_index(index_path)?.clients.into_iter().collect())
}

/// Token digest -> client, as read from the keychain at a moment.
type Known = Arc<HashMap<[u8; 32], String>>;

/// What the server checks bearer tokens against.
pub struct TokenBook {
    store: Arc<dyn SecretStore>,
    index: PathBuf,
    known: Mutex<Option<(Instant, Known)>>,
}

impl TokenBook {
    pub fn new(store: Arc<dyn SecretStore>, index: PathBuf) -> TokenBook {
        TokenBook {
            store,
            index,
            known: Mutex::new(None),
        }
    }

    /// Reads every listed client's token from the keychain (blocking: D-Bus).
    pub fn load(&self) -> Result<usize, String> {
        let mut known = HashMap::new();
        for client in listed(&self.index)? {
            if let Some(token) = self
                .store
                .get(&secret_name(&client))
                .map_err(|e| e.to_string())?
            {
                known.insert(digest(token.expose()), client);
            }
        }
        let count = known.len();
        *self.known.lock().expect("token book poisoned") = Some((Instant::now(), Arc::new(known)));
        Ok(count)
    }

    /// The client `token` belongs to, if any. Reads the keychain again when what it knows is
    /// older than [`RELOAD_AFTER`] (on a blocking thread); if that fails, no token counts.
    pub async fn client_of(self: &Arc<Self>, token: &str) -> Option<String> {
        let fresh = {
            let known = self.known.lock().expect("token book poisoned");
            known
                .as_ref()
                .filter(|(at, _)| at.elapsed() < RELOAD_AFTER)
                .map(|(_, map)| map.clone())
        };
        let map = match fresh {
            Some(map) => map,
            None => {
                let book = self.clone();
                match tokio::task::spawn_blocking(move || book.load()).await {
                    Ok(Ok(_)) => {}
                    Ok(Err(error)) => {
                        eprintln!("gatehouse serve: cannot read the client tokens: {error}");
                        *self.known.lock().expect("token book poisoned") = None;
                        return None;
                    }
                    Err(_) => return None,
                }
                self.known
                    .lock()
                    .expect("token book poisoned")
                    .as_ref()
                    .map(|(_, map)| map.clone())?
            }
        };
        map.get(&digest(token)).cloned()
    }
}
