//! `gatehouse clients lockdown --out DIR`: writes the managed settings of
//! `gatehouse_clients::lockdown` into DIR, one subdirectory per client, each file atomically
//! (temporary file, then rename). Everything is checked before anything is written: a file in
//! DIR that this command did not write (no marker) is never overwritten, so a re-run updates
//! its own files and nothing else.

use std::io::Write;
use std::path::{Path, PathBuf};

use gatehouse_clients::lockdown::{self, LockdownFile};
use gatehouse_host::ErrorCode;
use serde_json::json;

use crate::commands::Context;
use crate::failure::Failure;
use crate::output::{self, safe_line};

/// The prefix of the temporary files written beside each target before the rename.
const TEMP_PREFIX: &str = ".gatehouse-lockdown-";

pub fn run(context: &Context, out: &Path, gatehouse: Option<&Path>) -> Result<u8, Failure> {
    let gatehouse = gatehouse_path(gatehouse)?;
    let gatehouse_text = gatehouse.to_str().ok_or_else(|| {
        Failure::usage(format!(
            "--gatehouse {} is not valid UTF-8; the clients' files are JSON and need it as text",
            gatehouse.display()
        ))
    })?;
    let files = lockdown::files(gatehouse_text);
    check_out_dir(out, &files)?;
    for file in &files {
        write_atomically(&out.join(file.path), &file.bytes)?;
    }
    if context.json {
        let rows: Vec<_> = files
            .iter()
            .map(|f| {
                json!({
                    "client": f.client,
                    "path": out.join(f.path),
                    "relative": f.path,
                    "purpose": f.purpose,
                    "destinations": f.destinations,
                })
            })
            .collect();
        output::print_json(&json!({ "gatehouse": gatehouse, "out": out, "files": rows }));
    } else {
        println!(
            "Wrote {} files to {} (clients run {} serve --client CLIENT):",
            files.len(),
            safe_line(&out.display().to_string()),
            safe_line(gatehouse_text)
        );
        for file in &files {
            println!("  {}", file.path);
        }
        println!("README.txt says where each goes on Linux, macOS and Windows.");
    }
    Ok(0)
}

/// `--gatehouse`, or this executable. Relative paths are refused: a client starts the command
/// from a working directory of its own, where a relative path names some other file.
fn gatehouse_path(given: Option<&Path>) -> Result<PathBuf, Failure> {
    let path = match given {
        Some(path) => path.to_path_buf(),
        None => std::env::current_exe().map_err(|e| {
            Failure::usage(format!(
                "cannot tell this executable's path ({e}); name it with --gatehouse PATH"
            ))
        })?,
    };
    if !path.is_absolute() {
        return Err(Failure::usage(format!(
            "--gatehouse {} is a relative path; the clients start it from their own working directory, so give the absolute path where Gatehouse is installed",
            path.display()
        )));
    }
    Ok(path)
}

fn foreign(path: &Path, why: &str) -> Failure {
    Failure {
        code: ErrorCode::ClientLockdownForeignFile,
        message: format!(
            "{} {why}; it was not written by `gatehouse clients lockdown`, so nothing was written: choose an empty directory or move it away",
            path.display()
        ),
        exit: 1,
    }
}

fn io_failure(action: &str, path: &Path, error: std::io::Error) -> Failure {
    Failure {
        code: ErrorCode::ClientIo,
        message: format!("cannot {action} {}: {error}", path.display()),
        exit: 2,
    }
}

/// Refuses, before anything is written, when DIR holds anything but this command's own files:
/// an unknown entry, a target that is not a regular file (a symlink could point the write
/// anywhere), or a target without the marker.
fn check_out_dir(out: &Path, files: &[LockdownFile]) -> Result<(), Failure> {
    let metadata = match std::fs::symlink_metadata(out) {
        Ok(metadata) => metadata,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io_failure("read", out, e)),
    };
    if !metadata.is_dir() {
        return Err(foreign(out, "is not a directory"));
    }
    let subdirs: std::collections::BTreeSet<&str> = files
        .iter()
        .filter_map(|f| f.path.split_once('/').map(|(dir, _)| dir))
        .collect();
    for dir in std::iter::once(None).chain(subdirs.iter().copied().map(Some)) {
        let here = dir.map_or_else(|| out.to_path_buf(), |d| out.join(d));
        let entries = match std::fs::read_dir(&here) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && dir.is_some() => continue,
            Err(e) => return Err(io_failure("read", &here, e)),
        };
        for entry in entries {
            let entry = entry.map_err(|e| io_failure("read", &here, e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            let kind = entry
                .file_type()
                .map_err(|e| io_failure("read", &path, e))?;
            let relative = match dir {
                Some(d) => format!("{d}/{name}"),
                None => name.clone(),
            };
            if dir.is_none() && subdirs.contains(&name.as_str()) {
                if !kind.is_dir() {
                    return Err(foreign(&path, "is not a directory"));
                }
                continue;
            }
            if !files.iter().any(|f| f.path == relative) {
                // A temporary file of an interrupted run is ours to replace.
                if name.starts_with(TEMP_PREFIX) && kind.is_file() {
                    continue;
                }
                return Err(foreign(&path, "is in the way"));
            }
            if !kind.is_file() {
                return Err(foreign(&path, "is not a regular file"));
            }
            let bytes = std::fs::read(&path).map_err(|e| io_failure("read", &path, e))?;
            if !lockdown::is_ours(&bytes) {
                return Err(foreign(&path, "has no lockdown marker"));
            }
        }
    }
    Ok(())
}

fn write_atomically(target: &Path, bytes: &[u8]) -> Result<(), Failure> {
    let dir = target.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| io_failure("create", dir, e))?;
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = dir.join(format!("{TEMP_PREFIX}{name}"));
    // A leftover from an interrupted run; create_new below then refuses anything raced in.
    match std::fs::remove_file(&temp) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io_failure("remove", &temp, e)),
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&temp)
        .map_err(|e| io_failure("create", &temp, e))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(|e| io_failure("write", &temp, e))?;
    drop(file);
    std::fs::rename(&temp, target).map_err(|e| io_failure("write", target, e))
}
