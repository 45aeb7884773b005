//! A package-registry mirror on a loopback port, serving a seed directory the way the public
//! registries serve it, so host tests run the same fetch code as against registry.npmjs.org
//! and pypi.org:
//!
//! - `GET /npm/<name>/-/<file>.tgz`: an npm tarball (`<name>` may be `@scope/name`, its slash
//!   percent-encoded or not), from `<seed>/npm/<name>/-/<file>.tgz`;
//! - `GET /pypi/simple/<normalised name>/` with `Accept: application/vnd.pypi.simple.v1+json`:
//!   the PEP 691 JSON page listing every wheel in `<seed>/pypi/` of that distribution, each
//!   with a relative URL (`../../files/<filename>`) and its SHA-256;
//! - `GET /pypi/files/<filename>`: a file of `<seed>/pypi/`.
//!
//! Everything else is 404: other paths, other methods, a path with a `.`, `..` or empty
//! segment (percent-encoded or not), a backslash or a control character, a name that is not
//! PEP 503 normalised (pypi.org would redirect; a fetcher must ask for the normalised name),
//! a project with no wheels. A listing asked for without the JSON media type is 406, so a
//! fetcher that does not ask for PEP 691 is seen at once.
//!
//! The seed directory is read at each request: what an install step writes after the start
//! is served. The server runs on its own thread and runtime, so both plain and async tests
//! can use it, and a test's blocking client never starves it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use sha2::{Digest, Sha256};

/// The PEP 691 JSON media type.
pub const PYPI_JSON: &str = "application/vnd.pypi.simple.v1+json";

/// A running mirror. Dropping it stops it.
pub struct Mirror {
    base: String,
    shared: Arc<Shared>,
    running: Mutex<Option<(tokio::sync::oneshot::Sender<()>, JoinHandle<()>)>>,
}

struct Shared {
    seed: PathBuf,
    /// `http://127.0.0.1:PORT`, for the absolute tarball URLs of packuments.
    base: String,
    requests: Mutex<Vec<String>>,
    tamper: Mutex<HashMap<String, Vec<u8>>>,
}

/// A lock whose holder panicked still guards plain data; the test's own assertion is the
/// failure worth seeing, not a poisoned lock.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Mirror {
    /// Starts serving `seed_dir` on a free port of 127.0.0.1. The port accepts connections
    /// when this returns.
    pub fn start(seed_dir: impl Into<PathBuf>) -> Mirror {
        let listener =
            std::net::TcpListener::bind("127.0.0.1:0").expect("a loopback port for the mirror");
        listener
            .set_nonblocking(true)
            .expect("the mirror's socket in non-blocking mode");
        let base = format!(
            "http://{}",
            listener.local_addr().expect("the mirror's address")
        );
        let shared = Arc::new(Shared {
            seed: seed_dir.into(),
            base: base.clone(),
            requests: Mutex::default(),
            tamper: Mutex::default(),
        });
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let state = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("registry-mirror".into())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("a runtime for the mirror");
                runtime.block_on(async move {
                    let listener = tokio::net::TcpListener::from_std(listener)
                        .expect("the mirror's socket on its runtime");
                    let app = Router::new().fallback(serve).with_state(state);
                    tokio::select! {
                        _ = axum::serve(listener, app) => {}
                        _ = stopped => {}
                    }
                });
                // Dropping the runtime drops every connection task with the listener, so a
                // client's kept-alive connection closes too and the next one is refused.
                drop(runtime);
            })
            .expect("a thread for the mirror");
        Mirror {
            base,
            shared,
            running: Mutex::new(Some((stop, thread))),
        }
    }

    /// The npm registry base: `http://127.0.0.1:PORT/npm`.
    pub fn npm_url(&self) -> String {
        format!("{}/npm", self.base)
    }

    /// The PEP 691 simple index base: `http://127.0.0.1:PORT/pypi/simple`.
    pub fn pypi_url(&self) -> String {
        format!("{}/pypi/simple", self.base)
    }

    /// The path (as sent, percent-encoding kept, without the query) of every request the
    /// mirror received, in order, whatever it answered.
    pub fn requests(&self) -> Vec<String> {
        lock(&self.shared.requests).clone()
    }

    /// Serves `bytes` instead of the seed's file named `file_name` (an npm tarball's or a
    /// wheel's file name) from now on: the registry serving something else than what was
    /// pinned. The PEP 691 listing gives the hash of the served bytes, as a compromised index
    /// would. The file must still exist in the seed directory to be served.
    pub fn set_tamper(&self, file_name: &str, bytes: impl Into<Vec<u8>>) {
        lock(&self.shared.tamper).insert(file_name.to_owned(), bytes.into());
    }

    /// Stops the mirror: once this returns, connections to its port are refused (the
    /// registry is unreachable). Stopping again does nothing.
    pub fn stop(&self) {
        let running = lock(&self.running).take();
        if let Some((stop, thread)) = running {
            // The thread is gone already if the server failed; either way it is joined.
            let _ = stop.send(());
            let _ = thread.join();
        }
    }
}

impl Drop for Mirror {
    fn drop(&mut self) {
        self.stop();
    }
}

/// What a request asks for, its names checked.
#[derive(Debug, PartialEq, Eq)]
enum Route {
    /// `<seed>/npm/[<scope>/]<name>/-/<file>`.
    NpmTarball {
        scope: Option<String>,
        name: String,
        file: String,
    },
    /// The listing of a project, by its normalised name.
    PypiProject(String),
    /// `<seed>/pypi/<file>`.
    PypiFile(String),
    /// An npm packument, by the package's name (`@scope/name` or `name`).
    NpmPackument(String),
}

/// Decodes `%XX` escapes; `None` for a malformed escape or bytes that are not UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// A name that stays one directory entry inside the seed directory.
fn safe_piece(piece: &str) -> bool {
    !matches!(piece, "" | "." | "..")
        && !piece
            .chars()
            .any(|c| c == '/' || c == '\\' || c == '%' || c.is_control())
}

/// PEP 503: lower case, each run of `-`, `_` and `.` one `-`.
pub fn normalize_pypi_name(name: &str) -> String {
    // The bundle parser's rule; a name it refuses is only lower-cased (and matches nothing).
    gatehouse_attest::package::normalize_pypi_name(name).unwrap_or_else(|| name.to_lowercase())
}

/// Parses a request path (percent-encoded, as sent). Every segment is decoded once and
/// checked; an encoded slash is accepted only between an npm scope and its name.
fn route(path: &str) -> Option<Route> {
    let rest = path.strip_prefix('/')?;
    // Only the listing ends with a slash, as the index's URLs do.
    let (rest, listing) = match rest.strip_suffix('/') {
        Some(rest) => (rest, true),
        None => (rest, false),
    };
    let segments: Vec<String> = rest.split('/').map(percent_decode).collect::<Option<_>>()?;
    // Every piece of every segment, encoded slashes split, is checked before any matching.
    if !segments.iter().flat_map(|s| s.split('/')).all(safe_piece) {
        return None;
    }
    let segments: Vec<&str> = segments.iter().map(String::as_str).collect();
    match segments.as_slice() {
        ["pypi", "simple", name] if listing && normalize_pypi_name(name) == *name => {
            Some(Route::PypiProject((*name).to_owned()))
        }
        ["pypi", "files", file] if !listing && !file.contains('/') => {
            Some(Route::PypiFile((*file).to_owned()))
        }
        // A packument (`GET /npm/<name>`, `@scope/name` or `@scope%2fname`): what npm's
        // resolver reads.
        ["npm", scope, name] if !listing && scope.starts_with('@') && !name.starts_with('@') => {
            Some(Route::NpmPackument(format!("{scope}/{name}")))
        }
        ["npm", name] if !listing => match name.split_once('/') {
            Some((scope, rest)) if scope.starts_with('@') && !rest.contains('/') => {
                Some(Route::NpmPackument((*name).to_owned()))
            }
            Some(_) => None,
            None if !name.starts_with('@') => Some(Route::NpmPackument((*name).to_owned())),
            None => None,
        },
        ["npm", name @ .., "-", file] if !listing && file.ends_with(".tgz") => {
            let name = name.join("/");
            let (scope, name) = match name.split_once('/') {
                Some((scope, name)) if scope.starts_with('@') && !name.contains('/') => {
                    (Some(scope.to_owned()), name.to_owned())
                }
                Some(_) => return None,
                None if !name.is_empty() && !name.starts_with('@') => (None, name),
                None => return None,
            };
            (!file.contains('/')).then(|| Route::NpmTarball {
                scope,
                name,
                file: (*file).to_owned(),
            })
        }
        _ => None,
    }
}

/// A regular file's bytes; links are not followed, so nothing outside the seed is reached.
/// `package/package.json` of an npm tarball.
fn package_json(tgz: &[u8]) -> Option<serde_json::Value> {
    use std::io::Read;
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(tgz));
    for entry in archive.entries().ok()? {
        let entry = entry.ok()?;
        let path = entry.path().ok()?.to_string_lossy().into_owned();
        if path.split_once('/').map(|(_, rest)| rest) == Some("package.json") {
            let mut text = String::new();
            entry.take(1 << 20).read_to_string(&mut text).ok()?;
            return serde_json::from_str(&text).ok();
        }
    }
    None
}

fn read_file(path: &Path) -> Option<Vec<u8>> {
    let metadata = std::fs::symlink_metadata(path).ok()?;
    if !metadata.file_type().is_file() {
        return None;
    }
    std::fs::read(path).ok()
}

impl Shared {
    /// The bytes served for the seed file at `path`: the tampered ones if the test set any.
    fn served(&self, path: &Path, file_name: &str) -> Option<Vec<u8>> {
        let bytes = read_file(path)?;
        Some(lock(&self.tamper).get(file_name).cloned().unwrap_or(bytes))
    }

    /// The npm packument of `name`, made from the seed's tarballs of that name (each one's
    /// `package.json`, its `dist.tarball` on this mirror and its sha512 `integrity`), with
    /// `latest` the highest version; `None` if the seed holds none.
    fn packument(&self, name: &str) -> Option<serde_json::Value> {
        use base64::Engine;
        use sha2::Sha512;
        let dir = self.seed.join("npm").join(name).join("-");
        let mut versions = serde_json::Map::new();
        let mut latest: Option<(Vec<u64>, String)> = None;
        for entry in std::fs::read_dir(&dir).ok()?.flatten() {
            let file = entry.file_name().into_string().ok()?;
            if !file.ends_with(".tgz") {
                continue;
            }
            let bytes = self.served(&entry.path(), &file)?;
            let Some(manifest) = package_json(&bytes) else {
                continue;
            };
            let Some(version) = manifest["version"].as_str().map(str::to_owned) else {
                continue;
            };
            let mut doc = serde_json::Map::new();
            for key in [
                "name",
                "version",
                "dependencies",
                "optionalDependencies",
                "peerDependencies",
                "peerDependenciesMeta",
                "bin",
                "engines",
                "os",
                "cpu",
                "bundleDependencies",
            ] {
                if let Some(value) = manifest.get(key) {
                    doc.insert(key.to_owned(), value.clone());
                }
            }
            let integrity = format!(
                "sha512-{}",
                base64::engine::general_purpose::STANDARD.encode(Sha512::digest(&bytes))
            );
            doc.insert(
                "dist".into(),
                json!({"tarball": format!("{}/npm/{name}/-/{file}", self.base), "integrity": integrity}),
            );
            let key: Vec<u64> = version
                .split(['.', '-'])
                .map(|p| p.parse().unwrap_or(0))
                .collect();
            if latest.as_ref().is_none_or(|(k, _)| key > *k) {
                latest = Some((key, version.clone()));
            }
            versions.insert(version, serde_json::Value::Object(doc));
        }
        let (_, latest) = latest?;
        Some(json!({"name": name, "dist-tags": {"latest": latest}, "versions": versions}))
    }

    /// The PEP 691 page of a project: every wheel of `<seed>/pypi/` whose distribution name
    /// normalises to `project`, sorted by file name; `None` if there is none.
    fn listing(&self, project: &str) -> Option<serde_json::Value> {
        let dir = self.seed.join("pypi");
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .ok()?
            .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
            .filter(|name| {
                name.ends_with(".whl")
                    && name
                        .split_once('-')
                        .is_some_and(|(dist, _)| normalize_pypi_name(dist) == project)
            })
            .collect();
        names.sort();
        let files: Vec<serde_json::Value> = names
            .iter()
            .filter_map(|name| {
                let bytes = self.served(&dir.join(name), name)?;
                Some(json!({
                    "filename": name,
                    "url": format!("../../files/{name}"),
                    "hashes": {"sha256": hex::encode(Sha256::digest(&bytes))},
                }))
            })
            .collect();
        if files.is_empty() {
            return None;
        }
        Some(json!({"meta": {"api-version": "1.0"}, "name": project, "files": files}))
    }
}

/// Whether an `Accept` header asks for the PEP 691 JSON page.
fn accepts_json(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|item| {
            let media = item.split(';').next().unwrap_or_default().trim();
            media.eq_ignore_ascii_case(PYPI_JSON)
                || media.eq_ignore_ascii_case("application/vnd.pypi.simple.latest+json")
        })
}

fn octets(bytes: Vec<u8>) -> Response {
    ([(header::CONTENT_TYPE, "application/octet-stream")], bytes).into_response()
}

async fn serve(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    lock(&shared.requests).push(uri.path().to_owned());
    let not_found = || (StatusCode::NOT_FOUND, "not found").into_response();
    if method != Method::GET && method != Method::HEAD {
        return not_found();
    }
    let Some(route) = route(uri.path()) else {
        return not_found();
    };
    match route {
        Route::NpmTarball { scope, name, file } => {
            let mut path = shared.seed.join("npm");
            if let Some(scope) = scope {
                path.push(scope);
            }
            path.push(name);
            path.push("-");
            path.push(&file);
            shared.served(&path, &file).map_or_else(not_found, octets)
        }
        Route::NpmPackument(name) => shared.packument(&name).map_or_else(not_found, |doc| {
            (
                [(header::CONTENT_TYPE, "application/json")],
                doc.to_string(),
            )
                .into_response()
        }),
        Route::PypiFile(file) => shared
            .served(&shared.seed.join("pypi").join(&file), &file)
            .map_or_else(not_found, octets),
        Route::PypiProject(project) => {
            if !accepts_json(&headers) {
                return (
                    StatusCode::NOT_ACCEPTABLE,
                    format!("this index serves only {PYPI_JSON}"),
                )
                    .into_response();
            }
            match shared.listing(&project) {
                Some(page) => {
                    ([(header::CONTENT_TYPE, PYPI_JSON)], page.to_string()).into_response()
                }
                None => not_found(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};

    use super::*;

    const WHEEL: &str = "demo_server-1.0.0-py3-none-any.whl";
    const WHEEL_2: &str = "Demo.Server-1.1.0-py3-none-any.whl";
    const OTHER_WHEEL: &str = "demo_server_extra-1.0.0-py3-none-any.whl";

    /// A seed directory (inside a temporary directory that also holds `secret`, beside the
    /// seed, which no request may reach).
    fn seed() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let seed = dir.path().join("seed");
        for (path, bytes) in [
            (
                "npm/left-pad/-/left-pad-1.3.0.tgz",
                &b"left-pad tarball"[..],
            ),
            ("npm/@demo/server/-/server-2.0.0.tgz", b"scoped tarball"),
            (&format!("pypi/{WHEEL}"), b"wheel one"),
            (&format!("pypi/{WHEEL_2}"), b"wheel two"),
            (&format!("pypi/{OTHER_WHEEL}"), b"another project"),
            ("pypi/demo_server-1.0.0.tar.gz", b"an sdist, not listed"),
        ] {
            let path = seed.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, bytes).unwrap();
        }
        std::fs::write(dir.path().join("secret"), b"outside the seed").unwrap();
        std::fs::write(seed.join("npm/secret"), b"outside any package").unwrap();
        // Where `/npm/../-/escaped.tgz` and `/npm/@demo/../-/escaped.tgz` would lead if `..`
        // were joined: the request's shape fits a tarball's, so only the segment check stops it.
        for path in ["-/escaped.tgz", "npm/-/escaped.tgz"] {
            let path = seed.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, b"outside the seed").unwrap();
        }
        (dir, seed)
    }

    async fn get(url: &str) -> (reqwest::StatusCode, Vec<u8>) {
        let response = reqwest::get(url).await.unwrap();
        let status = response.status();
        (status, response.bytes().await.unwrap().to_vec())
    }

    /// A request with the path exactly as written: reqwest would resolve `..` first.
    fn raw_status(mirror: &Mirror, path: &str) -> String {
        let address = mirror.base.strip_prefix("http://").unwrap();
        let mut stream = std::net::TcpStream::connect(address).unwrap();
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        answer.lines().next().unwrap_or_default().to_owned()
    }

    #[tokio::test]
    async fn npm_tarballs_are_served_scoped_names_encoded_or_not() {
        let (_dir, seed) = seed();
        let mirror = Mirror::start(&seed);
        let npm = mirror.npm_url();
        let response = reqwest::get(format!("{npm}/left-pad/-/left-pad-1.3.0.tgz"))
            .await
            .unwrap();
        assert_eq!(response.status(), reqwest::StatusCode::OK);
        assert_eq!(
            response.headers()[reqwest::header::CONTENT_TYPE],
            "application/octet-stream"
        );
        assert_eq!(&response.bytes().await.unwrap()[..], b"left-pad tarball");
        for path in [
            "@demo/server/-/server-2.0.0.tgz",
            "@demo%2fserver/-/server-2.0.0.tgz",
            "@demo%2Fserver/-/server-2.0.0.tgz",
        ] {
            assert_eq!(
                get(&format!("{npm}/{path}")).await,
                (reqwest::StatusCode::OK, b"scoped tarball".to_vec()),
                "{path}"
            );
        }
        let requests = mirror.requests();
        assert_eq!(requests.len(), 4);
        assert_eq!(
            requests
                .iter()
                .filter(|p| *p == "/npm/left-pad/-/left-pad-1.3.0.tgz")
                .count(),
            1,
            "fetched once: {requests:?}"
        );
    }

    #[tokio::test]
    async fn the_pypi_index_lists_a_projects_wheels_with_relative_urls_and_hashes() {
        let (_dir, seed) = seed();
        let mirror = Mirror::start(&seed);
        let client = reqwest::Client::new();
        let page_url = reqwest::Url::parse(&format!("{}/demo-server/", mirror.pypi_url())).unwrap();
        let response = client
            .get(page_url.clone())
            .header(reqwest::header::ACCEPT, PYPI_JSON)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), reqwest::StatusCode::OK);
        assert_eq!(response.headers()[reqwest::header::CONTENT_TYPE], PYPI_JSON);
        let page: serde_json::Value = response.json().await.unwrap();
        assert_eq!(page["meta"]["api-version"], "1.0");
        assert_eq!(page["name"], "demo-server");
        let files = page["files"].as_array().unwrap();
        let names: Vec<&str> = files
            .iter()
            .map(|f| f["filename"].as_str().unwrap())
            .collect();
        // Both spellings of the distribution; not the other project, not the sdist.
        assert_eq!(names, [WHEEL_2, WHEEL]);
        for file in files {
            let name = file["filename"].as_str().unwrap();
            assert_eq!(file["url"], format!("../../files/{name}"));
            let url = page_url.join(file["url"].as_str().unwrap()).unwrap();
            assert!(url.path().starts_with("/pypi/files/"), "{url}");
            let (status, bytes) = get(url.as_str()).await;
            assert_eq!(status, reqwest::StatusCode::OK);
            assert_eq!(bytes, std::fs::read(seed.join("pypi").join(name)).unwrap());
            assert_eq!(
                file["hashes"]["sha256"],
                hex::encode(Sha256::digest(&bytes))
            );
        }

        // Without the JSON media type, with a name not normalised, or for no wheels: refused.
        let plain = client.get(page_url.clone()).send().await.unwrap();
        assert_eq!(plain.status(), reqwest::StatusCode::NOT_ACCEPTABLE);
        for name in ["Demo_Server", "demo-server-missing", "demo_server"] {
            let response = client
                .get(format!("{}/{name}/", mirror.pypi_url()))
                .header(reqwest::header::ACCEPT, PYPI_JSON)
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), reqwest::StatusCode::NOT_FOUND, "{name}");
        }
    }

    #[tokio::test]
    async fn anything_else_is_not_found() {
        let (_dir, seed) = seed();
        let mirror = Mirror::start(&seed);
        let base = &mirror.base;
        for path in [
            "/",
            "/npm/left-pad",
            "/npm/left-pad/-/left-pad-9.9.9.tgz",
            "/npm/left-pad/-/",
            "/npm/@demo/-/server-2.0.0.tgz",
            "/npm/demo/server/-/server-2.0.0.tgz",
            "/pypi/simple/demo-server",
            "/pypi/files/missing.whl",
            "/pypi/files/",
            "/pypi/files/bad%zzescape.whl",
            "/other",
        ] {
            let (status, _) = get(&format!("{base}{path}")).await;
            assert_eq!(status, reqwest::StatusCode::NOT_FOUND, "{path}");
        }
        let post = reqwest::Client::new()
            .post(format!(
                "{}/left-pad/-/left-pad-1.3.0.tgz",
                mirror.npm_url()
            ))
            .send()
            .await
            .unwrap();
        assert_eq!(post.status(), reqwest::StatusCode::NOT_FOUND);
    }

    #[tokio::test]
    async fn path_traversal_is_not_found_encoded_or_not() {
        let (_dir, seed) = seed();
        let mirror = Mirror::start(&seed);
        let base = &mirror.base;
        // Through reqwest, which keeps these (an encoded slash is not a separator to it).
        for path in [
            "/pypi/files/..%2f..%2fsecret",
            "/pypi/files/%2e%2e%2f%2e%2e%2fsecret",
            "/pypi/files/..%5c..%5csecret",
            "/npm/..%2fsecret/-/x.tgz",
            "/npm/%2e%2e%2f%2e%2e/secret/-/x.tgz",
            "/npm/@demo%2f..%2f..%2f..%2fsecret/-/x.tgz",
            "/npm/@demo%2f../-/escaped.tgz",
            "/npm/..%2f@demo/server/-/server-2.0.0.tgz",
        ] {
            let (status, body) = get(&format!("{base}{path}")).await;
            assert_eq!(status, reqwest::StatusCode::NOT_FOUND, "{path}");
            assert_ne!(body, b"outside the seed", "{path}");
        }
        // As written, which reqwest would resolve before sending. (A blocking socket in an
        // async test is fine: the mirror runs on its own thread.)
        for path in [
            "/pypi/files/../../secret",
            "/pypi/files/%2e%2e/%2e%2e/secret",
            "/npm/../secret",
            "/npm/left-pad/-/../../secret",
            "/npm/./left-pad/-/left-pad-1.3.0.tgz",
            "/npm//left-pad/-/left-pad-1.3.0.tgz",
            "/pypi/simple/../../npm/",
            "/npm/../-/escaped.tgz",
            "/npm/%2e%2e/-/escaped.tgz",
            "/npm/@demo/../-/escaped.tgz",
            "/npm/@demo/%2E%2E/-/escaped.tgz",
        ] {
            assert_eq!(
                raw_status(&mirror, path),
                "HTTP/1.1 404 Not Found",
                "{path}"
            );
        }
        // The same raw client reaches a file that is there, so the 404s above are refusals.
        assert_eq!(
            raw_status(&mirror, "/npm/left-pad/-/left-pad-1.3.0.tgz"),
            "HTTP/1.1 200 OK"
        );
    }

    #[tokio::test]
    async fn a_tampered_file_is_served_and_listed_with_its_own_hash() {
        let (_dir, seed) = seed();
        let mirror = Mirror::start(&seed);
        mirror.set_tamper("left-pad-1.3.0.tgz", b"evil".to_vec());
        mirror.set_tamper(WHEEL, b"evil wheel".to_vec());
        let npm = mirror.npm_url();
        assert_eq!(
            get(&format!("{npm}/left-pad/-/left-pad-1.3.0.tgz")).await,
            (reqwest::StatusCode::OK, b"evil".to_vec())
        );
        // Other files are untouched.
        assert_eq!(
            get(&format!("{npm}/@demo/server/-/server-2.0.0.tgz"))
                .await
                .1,
            b"scoped tarball"
        );
        let (_, wheel) = get(&format!("{}/../files/{WHEEL}", mirror.pypi_url())).await;
        assert_eq!(wheel, b"evil wheel");
        let page: serde_json::Value = reqwest::Client::new()
            .get(format!("{}/demo-server/", mirror.pypi_url()))
            .header(reqwest::header::ACCEPT, PYPI_JSON)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let listed = page["files"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["filename"] == WHEEL)
            .unwrap();
        assert_eq!(
            listed["hashes"]["sha256"],
            hex::encode(Sha256::digest(b"evil wheel"))
        );
        // A tamper for a file the seed lacks serves nothing.
        mirror.set_tamper("absent-1.0.0.tgz", b"evil".to_vec());
        assert_eq!(
            get(&format!("{npm}/absent/-/absent-1.0.0.tgz")).await.0,
            reqwest::StatusCode::NOT_FOUND
        );
    }

    #[tokio::test]
    async fn a_stopped_mirror_refuses_connections() {
        let (_dir, seed) = seed();
        let mirror = Mirror::start(&seed);
        let url = format!("{}/left-pad/-/left-pad-1.3.0.tgz", mirror.npm_url());
        let client = reqwest::Client::new();
        assert_eq!(
            client.get(&url).send().await.unwrap().status(),
            reqwest::StatusCode::OK
        );
        mirror.stop();
        mirror.stop();
        let error = reqwest::Client::new().get(&url).send().await.unwrap_err();
        assert!(error.is_connect(), "{error:?}");
        // The client that held a kept-alive connection is refused too.
        assert!(client.get(&url).send().await.is_err());
        assert_eq!(mirror.requests().len(), 1);
    }

    #[test]
    fn routes_and_names() {
        assert_eq!(
            route("/npm/@a/b/-/b-1.tgz"),
            Some(Route::NpmTarball {
                scope: Some("@a".into()),
                name: "b".into(),
                file: "b-1.tgz".into()
            })
        );
        assert_eq!(route("/npm/@a%2Fb/-/b-1.tgz"), route("/npm/@a/b/-/b-1.tgz"));
        assert_eq!(route("/npm/a/-/a-1.tgz/"), None);
        assert_eq!(route("/npm/a/-/a-1.zip"), None);
        assert_eq!(route("/npm/a%00/-/a-1.tgz"), None);
        assert_eq!(route("/pypi/files/a%252e.whl"), None);
        assert_eq!(
            route("/pypi/simple/a-b/"),
            Some(Route::PypiProject("a-b".into()))
        );
        assert_eq!(route("/pypi/simple/a--b/"), None);
        assert_eq!(normalize_pypi_name("Foo.Bar__baz-_.Q"), "foo-bar-baz-q");
        assert_eq!(percent_decode("%2"), None);
        assert_eq!(percent_decode("%ff"), None);
        assert_eq!(percent_decode("a%2Fb").as_deref(), Some("a/b"));
    }
}
