//! One door into the host: the front ends (the CLI, the gateway, the desktop shell) reach the
//! runtime through `Host` and the crate root's front-end contract, never through the runtime
//! modules themselves. This test reads their sources and fails, naming the file and line, on
//! any path into a runtime module (`gatehouse_host::config::…`, also inside a
//! `use gatehouse_host::{…}` group), except the documented exceptions below. An exception that
//! no longer occurs fails the test too, so the list only ever shrinks.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The runtime modules: what the host does, behind its door. The crate-private ones are the
/// list in `runtime_modules!` (src/lib.rs): keep the two in step. `config` and `fetch` stay
/// public for the documented exceptions, so only this test keeps other front ends out of them.
const RUNTIME_MODULES: &[&str] = &[
    "admission",
    "broker",
    "client",
    "confine",
    "config",
    "connection",
    "durability",
    "era",
    "error",
    "error_code",
    "fetch",
    "gatekeeper",
    "http",
    "launch_risk",
    "packages",
    "security",
    "stdio",
    "tap",
    // Not a runtime module but its one door for a protocol test client (a `Connection`
    // driven request by request): listed so that only the exception below may use it.
    "protocol",
];

/// The front ends' source directories, relative to the workspace root.
const FRONT_ENDS: &[&str] = &[
    "crates/gatehouse-cli/src",
    "crates/gatehouse-gateway/src",
    "crates/gatehouse-desk/src",
    "crates/gatehouse-clients/src",
    "src-tauri/src",
];

/// A file (relative to the workspace root) allowed to reach a runtime module, and why.
struct Exception {
    file: &'static str,
    module: &'static str,
    reason: &'static str,
}

// One entry per file and module (any number of lines). Each is a front end using a host rule
// on its own, without an open host, or (the conformance client) the protocol itself, on
// purpose; anything else goes through `Host`.
const EXCEPTIONS: &[Exception] = &[
    Exception {
        file: "crates/gatehouse-cli/src/admin.rs",
        module: "fetch",
        reason: "`gatehouse attest fetch|verify` show an admin what a server publishes, by the \
                 host's own fetch rules, with no host (and no trust) open",
    },
    Exception {
        file: "crates/gatehouse-cli/src/conformance.rs",
        module: "protocol",
        reason: "the conformance client is scored on the MRTR rounds themselves (authorize, one \
                 round, answer the input requests, retry with the request state), which `Host` \
                 does not offer any front end; it drives its `Connection` request by request",
    },
    Exception {
        file: "crates/gatehouse-clients/src/connect.rs",
        module: "config",
        reason: "connecting an AI client imports its servers into servers.json by the host's \
                 own import rules and entry model, with no host open",
    },
];

/// A path into a runtime module found in a source text.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Hit {
    /// 1-based.
    line: usize,
    module: &'static str,
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Blanks comments (doc comments included: a link is not an import) and the contents of
/// string, raw string and char literals, keeping every newline so line numbers stay right.
fn code_only(source: &str) -> String {
    let chars: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    // Blanks `chars[from..to]` into `out`, newlines kept.
    let blank = |out: &mut String, from: usize, to: usize| {
        out.extend(
            chars[from..to]
                .iter()
                .map(|&c| if c == '\n' { '\n' } else { ' ' }),
        );
    };
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        // `r` starts a raw string unless it ends an identifier (`br"…"` is one too).
        let after_ident = i > 0
            && is_ident(chars[i - 1])
            && !(chars[i - 1] == 'b' && (i < 2 || !is_ident(chars[i - 2])));
        if c == '/' && next == Some('/') {
            let end = (i..chars.len())
                .find(|&j| chars[j] == '\n')
                .unwrap_or(chars.len());
            blank(&mut out, i, end);
            i = end;
        } else if c == '/' && next == Some('*') {
            let end = (i + 2..chars.len().saturating_sub(1))
                .find(|&j| chars[j] == '*' && chars[j + 1] == '/')
                .map_or(chars.len(), |j| j + 2);
            blank(&mut out, i, end);
            i = end;
        } else if c == 'r' && !after_ident && matches!(next, Some('#') | Some('"')) {
            // A raw string: r"…", r#"…"#, …
            let hashes = chars[i + 1..].iter().take_while(|&&h| h == '#').count();
            if chars.get(i + 1 + hashes) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            let body = i + 2 + hashes;
            let end = (body..chars.len())
                .find(|&j| {
                    chars[j] == '"'
                        && chars.len() >= j + 1 + hashes
                        && chars[j + 1..j + 1 + hashes].iter().all(|&h| h == '#')
                })
                .map_or(chars.len(), |j| j + 1 + hashes);
            blank(&mut out, i, end);
            i = end;
        } else if c == '"' {
            let mut j = i + 1;
            while j < chars.len() && chars[j] != '"' {
                j += if chars[j] == '\\' { 2 } else { 1 };
            }
            let end = (j + 1).min(chars.len());
            blank(&mut out, i, end);
            i = end;
        } else if c == '\'' {
            // A char literal ('x', '\n', '\u{..}'), or a lifetime left as it is.
            let end = if next == Some('\\') {
                (i + 2..chars.len())
                    .find(|&j| chars[j] == '\'')
                    .map(|j| j + 1)
            } else if chars.get(i + 2) == Some(&'\'') {
                Some(i + 3)
            } else {
                None
            };
            match end {
                Some(end) => {
                    blank(&mut out, i, end);
                    i = end;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// The runtime module `segment` names, if it names one (`config`, `config::X`, `tap as t`).
fn runtime_module(segment: &str) -> Option<&'static str> {
    let name: String = segment
        .trim_start()
        .chars()
        .take_while(|c| is_ident(*c))
        .collect();
    RUNTIME_MODULES.iter().copied().find(|m| *m == name)
}

/// Every path into a runtime module in `source`: `gatehouse_host::MODULE…` anywhere in the
/// code, and `MODULE…` among the top-level items of a `gatehouse_host::{…}` group.
fn scan(source: &str) -> Vec<Hit> {
    const ROOT: &str = "gatehouse_host::";
    let code = code_only(source);
    let line_of = |at: usize| code[..at].matches('\n').count() + 1;
    let mut hits = Vec::new();
    let mut from = 0;
    while let Some(found) = code[from..].find(ROOT) {
        let start = from + found;
        let after = start + ROOT.len();
        from = after;
        if code[..start].chars().next_back().is_some_and(is_ident) {
            continue;
        }
        let rest = &code[after..];
        let skipped = rest.len() - rest.trim_start().len();
        if rest.trim_start().starts_with('{') {
            // A group: split its top level at commas, each item's first segment a module.
            let open = after + skipped;
            let mut depth = 0usize;
            let mut item_start = open + 1;
            for (offset, c) in code[open..].char_indices() {
                let at = open + offset;
                match c {
                    '{' => depth += 1,
                    '}' | ',' if depth == 1 => {
                        let item = &code[item_start..at];
                        if let Some(module) = runtime_module(item) {
                            let lead = item.len() - item.trim_start().len();
                            hits.push(Hit {
                                line: line_of(item_start + lead),
                                module,
                            });
                        }
                        item_start = at + 1;
                        if c == '}' {
                            break;
                        }
                    }
                    '}' => depth -= 1,
                    _ => {}
                }
            }
        } else if let Some(module) = runtime_module(rest) {
            let boundary = rest.trim_start()[module.len()..].chars().next();
            if !boundary.is_some_and(is_ident) {
                hits.push(Hit {
                    line: line_of(start),
                    module,
                });
            }
        }
    }
    hits
}

/// What is wrong with `hits` (by file, relative to the workspace root) under `exceptions`:
/// each hit no exception allows, and each exception no hit uses any more.
fn problems(hits: &[(String, Hit)], exceptions: &[Exception]) -> Vec<String> {
    let mut problems = Vec::new();
    let mut used = BTreeSet::new();
    for (file, hit) in hits {
        match exceptions
            .iter()
            .position(|e| e.file == file && e.module == hit.module)
        {
            Some(index) => {
                used.insert(index);
            }
            None => problems.push(format!(
                "{file}:{}: imports the runtime module gatehouse_host::{}; go through Host (or an item the crate root re-exports for front ends) instead",
                hit.line, hit.module
            )),
        }
    }
    for (index, exception) in exceptions.iter().enumerate() {
        if !used.contains(&index) {
            problems.push(format!(
                "{}: no longer imports gatehouse_host::{} ({}); remove this exception from one_door.rs",
                exception.file, exception.module, exception.reason
            ));
        }
    }
    problems
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the workspace root")
}

fn rust_files(dir: &Path, files: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

#[test]
fn front_ends_reach_the_runtime_only_through_the_host() {
    let root = workspace_root();
    let mut hits = Vec::new();
    let mut scanned = 0;
    for front_end in FRONT_ENDS {
        let mut files = Vec::new();
        rust_files(&root.join(front_end), &mut files);
        files.sort();
        for path in files {
            let source = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let file = path
                .strip_prefix(&root)
                .expect("under the workspace root")
                .to_string_lossy()
                .into_owned();
            scanned += 1;
            hits.extend(scan(&source).into_iter().map(|hit| (file.clone(), hit)));
        }
    }
    // Guards against a moved directory making this test pass on nothing.
    assert!(scanned >= 20, "only {scanned} front-end source files found");
    let problems = problems(&hits, EXCEPTIONS);
    assert!(problems.is_empty(), "\n{}\n", problems.join("\n"));
}

#[test]
fn every_exception_says_why() {
    for exception in EXCEPTIONS {
        assert!(
            RUNTIME_MODULES.contains(&exception.module),
            "{}: {} is not a runtime module",
            exception.file,
            exception.module
        );
        assert!(
            !exception.reason.trim().is_empty(),
            "{}: the exception for {} gives no reason",
            exception.file,
            exception.module
        );
    }
}

#[test]
fn the_scanner_passes_the_door_and_the_contract() {
    let source = r##"
use gatehouse_host::host::{ApiError, Host};
use gatehouse_host::{CallOptions, Subscriber, files::write_atomically, system_clock};
use gatehouse_host::{
    Caller,
    desk::FieldError,
};
// gatehouse_host::config::write_atomically was here once.
/// See [`gatehouse_host::connection::Subscriber`].
const NOTE: &str = "gatehouse_host::tap::system_clock \" gatehouse_host::config";
const RAW: &str = r#"{"a": "gatehouse_host::config::x"}"#;
const BYTES: &[u8] = br"gatehouse_host::http";
/* gatehouse_host::broker::x */
fn f() -> gatehouse_host::Subscriber { my_gatehouse_host::config::x() }
use gatehouse_host::configure;
"##;
    assert_eq!(scan(source), []);
}

#[test]
fn the_scanner_names_the_line_of_each_runtime_import() {
    let source = r#"use gatehouse_host::Era;
use gatehouse_host::{
    Caller,
    config::ServersFile, tap as t,
    connection::{Round, MAX_INPUT_ROUNDS},
};
fn f<'a>(s: &'a str) {
    let quote = ('"', '\'', "\"");
    let clock = gatehouse_host::tap::system_clock();
    let x = gatehouse_host:: security::AUDIT_FILE;
}
use gatehouse_host::fetch;
"#;
    let found: Vec<(usize, &str)> = scan(source).iter().map(|h| (h.line, h.module)).collect();
    assert_eq!(
        found,
        [
            (4, "config"),
            (4, "tap"),
            (5, "connection"),
            (9, "tap"),
            (10, "security"),
            (12, "fetch"),
        ]
    );
}

#[test]
fn an_unlisted_import_and_a_stale_exception_are_both_problems() {
    let exceptions = [Exception {
        file: "src-tauri/src/lib.rs",
        module: "tap",
        reason: "a test",
    }];
    let hit = |line, module| Hit { line, module };
    // Listed: fine.
    assert_eq!(
        problems(
            &[("src-tauri/src/lib.rs".to_string(), hit(3, "tap"))],
            &exceptions
        ),
        Vec::<String>::new()
    );
    // Not listed, and the exception unused.
    let found = problems(
        &[(
            "crates/gatehouse-gateway/src/http.rs".to_string(),
            hit(7, "config"),
        )],
        &exceptions,
    );
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(
        found[0].starts_with("crates/gatehouse-gateway/src/http.rs:7: imports the runtime module gatehouse_host::config"),
        "{found:?}"
    );
    assert!(
        found[1].starts_with("src-tauri/src/lib.rs: no longer imports gatehouse_host::tap"),
        "{found:?}"
    );
}
