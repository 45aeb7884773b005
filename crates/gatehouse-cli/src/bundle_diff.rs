//! `gatehouse bundle diff OLD NEW`: what a rotation changes, for the admins about to sign it
//! and for their CI. The decisions (what changed, what widens) are
//! `gatehouse_attest::diff`'s; this reads the files, says whether each verifies, and prints.
//!
//! Exit status: 0 when nothing widens access, 3 when something does (after printing the
//! changes, so stdout holds only the diff, never an error object), 2 when a file cannot be
//! read or is not a bundle.

use std::path::Path;

use gatehouse_attest::bundle::{Bundle, BundleError, VerifiedBundle};
use gatehouse_attest::diff::{BundleDiff, Change, ChangeKind, diff};
use gatehouse_review::escape;
use serde_json::{Value, json};
use time::OffsetDateTime;

use crate::commands::Context;
use crate::failure::Failure;
use crate::output;

/// The exit status when a change widens access.
pub const WIDENS_EXIT: u8 = 3;

/// Columns of each side of a side-by-side definition; longer lines are wrapped, never cut.
const COLUMN: usize = 60;

fn load(path: &Path) -> Result<Bundle, Failure> {
    let bytes = std::fs::read(path)
        .map_err(|e| Failure::usage(format!("cannot read {}: {e}", path.display())))?;
    Bundle::parse(&bytes).map_err(|e| Failure {
        code: (&e).into(),
        message: format!("{}: {e}", path.display()),
        exit: 2,
    })
}

fn status(label: String, outcome: &Result<VerifiedBundle, BundleError>) -> Value {
    match outcome {
        Ok(verified) => json!({"bundle": label, "verifies": true, "signers": verified.signers()}),
        Err(e) => json!({"bundle": label, "verifies": false,
            "problem": {"code": e.code(), "message": e.to_string()}}),
    }
}

pub fn run(context: &Context, old: &Path, new: &Path) -> Result<u8, Failure> {
    let (old_bundle, new_bundle) = (load(old)?, load(new)?);
    let (a, b) = (old_bundle.content(), new_bundle.content());
    // Signatures do not change the diff, but a reviewer should know what they are reading:
    // the old one against its own root keys, the new one as a rotation of the old (current,
    // its own threshold and the old root keys' threshold), as `bundle install` would check it.
    let old_verified = old_bundle.verify_as_installed();
    let new_verified =
        new_bundle.verify(OffsetDateTime::now_utc(), old_verified.as_ref().ok(), None);
    let changes = diff(a, b);
    let old_status = status(format!("{}@{}", a.bundle_id, a.version), &old_verified);
    let new_status = status(format!("{}@{}", b.bundle_id, b.version), &new_verified);
    if context.json {
        output::print_json(&json!({
            "widens": changes.widens(),
            "old": old_status,
            "new": new_status,
            "changes": changes.changes,
        }));
    } else {
        print!("{}", render(&old_status, &new_status, &changes));
    }
    Ok(if changes.widens() { WIDENS_EXIT } else { 0 })
}

fn status_line(which: &str, status: &Value) -> String {
    let bundle = status["bundle"].as_str().unwrap_or_default();
    if status["verifies"].as_bool() == Some(true) {
        let signers: Vec<&str> = status["signers"]
            .as_array()
            .map(|s| s.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        format!(
            "{which} {}: verifies (signed by {})\n",
            escape(bundle),
            escape(&signers.join(", "))
        )
    } else {
        format!(
            "{which} {}: does NOT verify: {}\n",
            escape(bundle),
            escape(status["problem"]["message"].as_str().unwrap_or_default())
        )
    }
}

/// The text form: both bundles' standing, then the changes grouped by server, each marked
/// WIDENS or narrows, pin changes with both definitions side by side.
fn render(old: &Value, new: &Value, changes: &BundleDiff) -> String {
    let mut out = String::new();
    out.push_str(&status_line("old", old));
    out.push_str(&status_line("new", new));
    if changes.changes.is_empty() {
        out.push_str("no changes\n");
        return out;
    }
    let mut group: Option<Option<&str>> = None;
    for change in &changes.changes {
        let server = change.server.as_deref();
        if group != Some(server) {
            match server {
                None => out.push_str("\nbundle-wide:\n"),
                Some(id) => out.push_str(&format!("\nserver {}:\n", escape(id))),
            }
            group = Some(server);
        }
        let mark = if change.widens { "WIDENS " } else { "narrows" };
        out.push_str(&format!(
            "  {mark} {}: {}\n",
            change.kind.code(),
            escape(&change.detail)
        ));
        if matches!(
            change.kind,
            ChangeKind::ToolPinChanged | ChangeKind::PromptPinChanged
        ) {
            out.push_str(&side_by_side(change));
        }
    }
    let widening = changes.changes.iter().filter(|c| c.widens).count();
    out.push_str(&format!(
        "\n{} change(s), {widening} widen access{}\n",
        changes.changes.len(),
        if widening > 0 {
            ": a second look is needed before signing"
        } else {
            ""
        }
    ));
    out
}

/// One side's lines: the carried definition pretty-printed, or its pin when the bundle does
/// not carry it.
fn side_lines(side: Option<&Value>) -> Vec<String> {
    let Some(side) = side else {
        return Vec::new();
    };
    let text = match side.get("definition") {
        Some(definition) => {
            serde_json::to_string_pretty(definition).unwrap_or_else(|_| definition.to_string())
        }
        None => format!(
            "pin {}\n(definition not carried)",
            side["pin"].as_str().unwrap_or_default()
        ),
    };
    text.lines().map(str::to_string).collect()
}

/// A line with invisible characters escaped, cut into rows of at most [`COLUMN`] characters,
/// never inside an escape (a reviewer must read `\u{200B}` whole).
fn rows(line: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut width = 0;
    let mut buffer = [0u8; 4];
    for c in line.chars() {
        let piece = escape(c.encode_utf8(&mut buffer)).into_owned();
        let w = piece.chars().count();
        if width + w > COLUMN && width > 0 {
            out.push(String::new());
            width = 0;
        }
        out.last_mut().expect("never empty").push_str(&piece);
        width += w;
    }
    out
}

/// Lines paired for reading side by side: equal lines (a longest common subsequence) on one
/// row, the lines between them paired in order; `None` where one side has nothing.
fn align<'a>(left: &'a [String], right: &'a [String]) -> Vec<(Option<&'a str>, Option<&'a str>)> {
    // Definitions are small; past this many lines, pair them in order rather than spend
    // quadratic time on an outsized one.
    const MAX_LINES: usize = 2000;
    if left.len() > MAX_LINES || right.len() > MAX_LINES {
        return (0..left.len().max(right.len()))
            .map(|i| {
                (
                    left.get(i).map(String::as_str),
                    right.get(i).map(String::as_str),
                )
            })
            .collect();
    }
    let (n, m) = (left.len(), right.len());
    let mut lcs = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if left[i] == right[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let mut pairs = Vec::new();
    let (mut i, mut j) = (0, 0);
    let (mut gone, mut come): (Vec<&str>, Vec<&str>) = (Vec::new(), Vec::new());
    let flush = |gone: &mut Vec<&'a str>, come: &mut Vec<&'a str>, pairs: &mut Vec<_>| {
        for k in 0..gone.len().max(come.len()) {
            pairs.push((gone.get(k).copied(), come.get(k).copied()));
        }
        gone.clear();
        come.clear();
    };
    while i < n || j < m {
        if i < n && j < m && left[i] == right[j] {
            flush(&mut gone, &mut come, &mut pairs);
            pairs.push((Some(left[i].as_str()), Some(right[j].as_str())));
            i += 1;
            j += 1;
        } else if j == m || (i < n && lcs[i + 1][j] >= lcs[i][j + 1]) {
            gone.push(left[i].as_str());
            i += 1;
        } else {
            come.push(right[j].as_str());
            j += 1;
        }
    }
    flush(&mut gone, &mut come, &mut pairs);
    pairs
}

fn side_by_side(change: &Change) -> String {
    let left = side_lines(change.before.as_ref());
    let right = side_lines(change.after.as_ref());
    let mut out = format!("    {:<COLUMN$} | new\n", "old");
    for (l, r) in align(&left, &right) {
        // `*` marks the rows that differ, where a reviewer should look first.
        let mark = if l == r { ' ' } else { '*' };
        let (l, r) = (rows(l.unwrap_or("")), rows(r.unwrap_or("")));
        for k in 0..l.len().max(r.len()) {
            let a = l.get(k).map(String::as_str).unwrap_or("");
            let b = r.get(k).map(String::as_str).unwrap_or("");
            out.push_str(format!("  {mark} {a:<COLUMN$} | {b}").trim_end());
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{COLUMN, align, rows};

    #[test]
    fn rows_wrap_long_lines_but_never_inside_an_escape() {
        let line = format!("{}\u{200B}tail", "a".repeat(COLUMN - 3));
        let cut = rows(&line);
        assert_eq!(cut, [&"a".repeat(COLUMN - 3), "\\u{200B}tail"]);
        assert_eq!(rows("short"), ["short"]);
        assert_eq!(rows(""), [""]);
    }

    #[test]
    fn equal_lines_stay_paired_around_a_changed_one() {
        let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let left = words(&["{", "a", "b", "}"]);
        let right = words(&["{", "a2", "extra", "b", "}"]);
        assert_eq!(
            align(&left, &right),
            [
                (Some("{"), Some("{")),
                (Some("a"), Some("a2")),
                (None, Some("extra")),
                (Some("b"), Some("b")),
                (Some("}"), Some("}")),
            ]
        );
    }
}
