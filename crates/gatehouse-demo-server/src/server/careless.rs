//! `--careless-files ROOT`: `file://` resources read the careless way many servers read them,
//! the fixture that proves Gatehouse's resource gate keeps reads under an allowed prefix.
//!
//! It lists the files under ROOT (a few levels deep) as `file://` URIs and the template
//! `file://ROOT/{+path}`, and answers `resources/read` for **any** `file:` URI by
//! [`resolve`]: strip `file://` and the authority, keep a query or fragment as part of the
//! path, percent-decode until nothing changes (reading overlong UTF-8 as the character it
//! spells), NFKC-normalize, fold look-alikes of `/`, `\` and `.` as Windows "best fit" does,
//! read `\` as `/`, drop `;params` (as servlets do), trim spaces around segments, and resolve
//! `.` and `..`. Then it reads whatever file that is, inside ROOT or not. With
//! `--request-log FILE` every URI it is asked for is appended to FILE with the path it
//! resolved to, before reading, so a test can prove what a host sent.
//!
//! A test fixture only: it reads any file the process can read.

use std::{
    fs::OpenOptions,
    io::Write as _,
    path::{Path, PathBuf},
    sync::Mutex,
};

use base64::{Engine as _, engine::general_purpose::STANDARD as BASE64};
use rmcp::{
    ErrorData,
    model::{
        ReadResourceResponse, ReadResourceResult, Resource, ResourceContents, ResourceTemplate,
    },
};
use serde_json::json;
use unicode_normalization::UnicodeNormalization;

use super::resources::not_found;

/// Most files listed, and how deep below ROOT.
const MAX_LISTED: usize = 64;
const MAX_DEPTH: usize = 3;

/// The careless reader of the files under one root.
#[derive(Debug)]
pub struct CarelessFiles {
    root: PathBuf,
    log: Option<PathBuf>,
    /// One log line at a time.
    writing: Mutex<()>,
}

impl CarelessFiles {
    /// `root` should be absolute (the command line canonicalizes it).
    pub fn new(root: PathBuf, log: Option<PathBuf>) -> Self {
        Self {
            root,
            log,
            writing: Mutex::new(()),
        }
    }

    /// `file://` and ROOT's path, percent-encoded, ending in `/`.
    pub fn root_uri(&self) -> String {
        let mut uri = String::from("file://");
        for segment in self.root.iter().skip(1) {
            uri.push('/');
            encode_segment(&segment.to_string_lossy(), &mut uri);
        }
        uri.push('/');
        uri
    }

    /// The template every file of ROOT is under.
    pub fn template(&self) -> ResourceTemplate {
        ResourceTemplate::new(format!("{}{{+path}}", self.root_uri()), "file")
            .with_title("A file")
            .with_description("Any file below the root, by its path")
    }

    /// The files below ROOT, in path order (at most [`MAX_LISTED`]).
    pub fn resources(&self) -> Vec<Resource> {
        let mut files = Vec::new();
        collect_files(&self.root, 0, &mut files);
        files.sort();
        files.truncate(MAX_LISTED);
        files
            .into_iter()
            .filter_map(|path| {
                let relative = path.strip_prefix(&self.root).ok()?;
                let mut uri = self.root_uri();
                for (n, segment) in relative.iter().enumerate() {
                    if n > 0 {
                        uri.push('/');
                    }
                    encode_segment(&segment.to_string_lossy(), &mut uri);
                }
                let name = relative.to_string_lossy().into_owned();
                Some(Resource::new(uri, name))
            })
            .collect()
    }

    /// `resources/read` of a `file:` URI: resolved carelessly, logged, and read. `None` for
    /// any other URI (the demo's own resources answer those).
    pub fn read(&self, uri: &str) -> Option<Result<ReadResourceResponse, ErrorData>> {
        let path = resolve(uri)?;
        self.record(uri, &path);
        Some(self.read_file(uri, &path))
    }

    fn read_file(&self, uri: &str, path: &Path) -> Result<ReadResourceResponse, ErrorData> {
        let bytes = std::fs::read(path).map_err(|_| not_found(uri))?;
        let contents = match String::from_utf8(bytes) {
            Ok(text) => ResourceContents::text(text, uri).with_mime_type("text/plain"),
            Err(error) => ResourceContents::blob(BASE64.encode(error.into_bytes()), uri)
                .with_mime_type("application/octet-stream"),
        };
        Ok(ReadResourceResult::new(vec![contents]).into())
    }

    fn record(&self, uri: &str, path: &Path) {
        let Some(log) = &self.log else {
            return;
        };
        let _guard = self
            .writing
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let line = json!({"uri": uri, "path": path.to_string_lossy()});
        let written = OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .and_then(|mut file| {
                file.write_all(format!("{line}\n").as_bytes())?;
                file.flush()
            });
        if let Err(error) = written {
            tracing::warn!(%error, log = %log.display(), "cannot write the request log");
        }
    }
}

fn collect_files(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        match entry.file_type() {
            Ok(kind) if kind.is_dir() && depth + 1 < MAX_DEPTH => {
                collect_files(&path, depth + 1, out);
            }
            Ok(kind) if kind.is_file() => out.push(path),
            _ => {}
        }
    }
}

/// Percent-encodes every byte but ASCII letters, digits and `-._~`.
fn encode_segment(segment: &str, out: &mut String) {
    for byte in segment.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
}

/// The file a careless server reads for `uri`: `None` only when it is not a `file:` URI.
pub fn resolve(uri: &str) -> Option<PathBuf> {
    let scheme_end = uri.find(':')?;
    if !uri[..scheme_end].eq_ignore_ascii_case("file") {
        return None;
    }
    let rest = &uri[scheme_end + 1..];
    // "file://host/path" and "file:///path": the authority, if any, is dropped.
    let path = match rest.strip_prefix("//") {
        Some(after) => &after[after.find('/').unwrap_or(after.len())..],
        None => rest,
    };
    // Decoded until nothing changes: %252e is %2e, then ".".
    let mut text = path.to_string();
    for _ in 0..8 {
        let next = decode_once(&text);
        if next == text {
            break;
        }
        text = next;
    }
    let text: String = text
        .nfkc()
        .map(best_fit)
        .collect::<String>()
        .replace('\\', "/");
    let mut parts: Vec<String> = Vec::new();
    for segment in text.split('/') {
        let segment = segment.split(';').next().unwrap_or("").trim();
        match segment {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            other => parts.push(other.to_string()),
        }
    }
    Some(PathBuf::from(format!("/{}", parts.join("/"))))
}

/// One round of percent-decoding, read as UTF-8 the lenient way.
fn decode_once(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escape = bytes
            .get(i + 1..i + 3)
            .and_then(|hex| std::str::from_utf8(hex).ok())
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match (bytes[i], escape) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    lenient_utf8(&out)
}

/// UTF-8 as an old decoder reads it: overlong forms accepted, so `C0 AE` is ".".
fn lenient_utf8(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let lead = bytes[i];
        let (len, first) = match lead {
            0x00..=0x7f => (1, u32::from(lead)),
            0xc0..=0xdf => (2, u32::from(lead & 0x1f)),
            0xe0..=0xef => (3, u32::from(lead & 0x0f)),
            0xf0..=0xf7 => (4, u32::from(lead & 0x07)),
            _ => (0, 0),
        };
        let decoded = bytes
            .get(i + 1..i + len.max(1))
            .filter(|tail| len > 0 && tail.iter().all(|b| b & 0xc0 == 0x80))
            .map(|tail| {
                tail.iter()
                    .fold(first, |code, b| (code << 6) | u32::from(b & 0x3f))
            })
            .and_then(char::from_u32);
        match decoded {
            Some(c) => {
                out.push(c);
                i += len;
            }
            None => {
                out.push('\u{fffd}');
                i += 1;
            }
        }
    }
    out
}

/// Windows "best fit": look-alikes of separators and dots that NFKC leaves alone.
fn best_fit(c: char) -> char {
    match c {
        '\u{2215}' | '\u{2044}' => '/',
        '\u{a5}' | '\u{20a9}' => '\\',
        '\u{2024}' => '.',
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_resolves_the_careless_way_so_it_can_be_led_out_of_its_root() {
        for (uri, path) in [
            ("file:///srv/docs/a.txt", "/srv/docs/a.txt"),
            ("file://localhost/srv/docs/a.txt", "/srv/docs/a.txt"),
            ("file:///srv/docs/my%20file.txt", "/srv/docs/my file.txt"),
            ("file:///srv/docs/caf%C3%A9.txt", "/srv/docs/caf\u{e9}.txt"),
            ("file:///srv/docs/x?/../../secret.txt", "/srv/secret.txt"),
            ("file:///srv/docs/x#/../../secret.txt", "/srv/secret.txt"),
            ("file:///srv/docs/%2e%2e/secret.txt", "/srv/secret.txt"),
            ("file:///srv/docs/%252e%252e/secret.txt", "/srv/secret.txt"),
            (
                "file:///srv/docs/%25252e%25252e/secret.txt",
                "/srv/secret.txt",
            ),
            ("file:///srv/docs/..%2fsecret.txt", "/srv/secret.txt"),
            ("file:///srv/docs/..%5csecret.txt", "/srv/secret.txt"),
            (
                "file:///srv/docs/%c0%ae%c0%ae/secret.txt",
                "/srv/secret.txt",
            ),
            ("file:///srv/docs/..%ef%bc%8fsecret.txt", "/srv/secret.txt"),
            (
                "file:///srv/docs/%ef%bc%8e%ef%bc%8e/secret.txt",
                "/srv/secret.txt",
            ),
            ("file:///srv/docs/%e2%80%a5/secret.txt", "/srv/secret.txt"),
            (
                "file:///srv/docs/%e2%80%a4%e2%80%a4/secret.txt",
                "/srv/secret.txt",
            ),
            ("file:///srv/docs/..%e2%88%95secret.txt", "/srv/secret.txt"),
            ("file:///srv/docs/..;/secret.txt", "/srv/secret.txt"),
            ("file:///srv/docs/..%20/secret.txt", "/srv/secret.txt"),
            ("file:///srv/docs/../../../../etc/passwd", "/etc/passwd"),
        ] {
            assert_eq!(resolve(uri), Some(PathBuf::from(path)), "{uri}");
        }
        assert_eq!(resolve("demo://x"), None);
    }

    #[test]
    fn it_lists_the_files_under_its_root_with_encoded_names() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("sub")).unwrap();
        std::fs::write(root.join("my file.txt"), "a").unwrap();
        std::fs::write(root.join("sub/deeper.txt"), "b").unwrap();
        let files = CarelessFiles::new(root.clone(), None);
        let base = files.root_uri();
        assert!(
            base.starts_with("file:///") && base.ends_with('/'),
            "{base}"
        );
        let uris: Vec<String> = files.resources().into_iter().map(|r| r.uri).collect();
        assert_eq!(
            uris,
            [
                format!("{base}my%20file.txt"),
                format!("{base}sub/deeper.txt")
            ]
        );
        assert_eq!(files.template().uri_template, format!("{base}{{+path}}"));
        for uri in &uris {
            assert!(resolve(uri).unwrap().starts_with(&root), "{uri}");
        }
    }
}
