//! The stdio executable checks: a command resolved the way `execvp` would, the file hashed,
//! and matched against the stdio bindings of the installed bundles.

use std::ffi::OsStr;
use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::Trust;

/// The directory a stdio server not admitted runs in: its configured `cwd` (relative to the
/// host's own directory), or the host's directory when it sets none, resolved when it
/// exists; `None` when the host's own directory cannot be read. (An admitted server runs in
/// `/` whatever this says.)
pub fn working_directory(cwd: Option<&Path>) -> Option<PathBuf> {
    let dir = match cwd {
        Some(dir) if dir.is_absolute() => dir.to_path_buf(),
        Some(dir) => std::env::current_dir().ok()?.join(dir),
        None => std::env::current_dir().ok()?,
    };
    Some(std::fs::canonicalize(&dir).unwrap_or(dir))
}

impl Trust {
    pub(super) fn stdio_candidates(&self) -> Vec<Candidate> {
        self.store
            .bundles()
            .iter()
            .flat_map(|b| {
                b.content().servers.iter().filter_map(move |s| {
                    s.stdio.as_ref().map(|binding| Candidate {
                        bundle_id: b.content().bundle_id.clone(),
                        policy_id: s.id.clone(),
                        command: binding.command.clone(),
                        args: binding.args.clone(),
                        sha256: binding.sha256,
                    })
                })
            })
            .collect()
    }
}

/// A stdio binding, copied out of the trust store for the blocking check.
#[derive(Debug, Clone)]
pub(super) struct Candidate {
    bundle_id: String,
    policy_id: String,
    command: String,
    args: Vec<String>,
    sha256: [u8; 32],
}

#[derive(Debug)]
pub(super) enum StdioCheck {
    /// The check could not be made; `program` when the command resolved.
    Failed {
        program: Option<PathBuf>,
        detail: String,
    },
    Unbound {
        program: PathBuf,
    },
    ArgsDiffer {
        program: PathBuf,
        bound: Vec<String>,
    },
    BinaryChanged {
        program: PathBuf,
        expected: String,
        actual: String,
    },
    /// Bound more than once, under different server ids: which identity it has is not ours to
    /// pick.
    Ambiguous {
        program: PathBuf,
        bindings: Vec<String>,
    },
    Bound {
        bundle_id: String,
        policy_id: String,
        program: PathBuf,
    },
}

/// Resolves a launch's `command` as it will be started: on the PATH its own `env` sets, else
/// the host's (what `resolve_program` is given by the stdio transport and by confinement).
pub fn resolve_launch_program(
    command: &str,
    cwd: Option<&Path>,
    env: &[(String, String)],
) -> Result<PathBuf, String> {
    let path_env = env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| std::ffi::OsString::from(v))
        .or_else(|| std::env::var_os("PATH"));
    resolve_program(command, cwd, path_env.as_deref())
}

/// Resolves a command the way `execvp` would (a name with a slash is a path, relative to the
/// working directory; otherwise the first executable file on PATH), then canonicalizes it so
/// symlinks cannot stand in for the bound file.
pub fn resolve_program(
    command: &str,
    cwd: Option<&Path>,
    path_env: Option<&OsStr>,
) -> Result<PathBuf, String> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &Path| {
        std::fs::metadata(p)
            .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    };
    let found = if command.contains('/') {
        let path = Path::new(command);
        let path = match cwd {
            Some(dir) if path.is_relative() => dir.join(path),
            _ => path.to_path_buf(),
        };
        executable(&path).then_some(path)
    } else {
        path_env.and_then(|paths| {
            std::env::split_paths(paths)
                .map(|dir| dir.join(command))
                .find(|p| executable(p))
        })
    };
    let found = found.ok_or_else(|| {
        format!("{command:?} is not an executable file (looked on PATH and relative to the working directory)")
    })?;
    std::fs::canonicalize(&found).map_err(|e| format!("cannot resolve {}: {e}", found.display()))
}

/// SHA-256 of a file's bytes, streamed.
pub fn file_sha256(path: &Path) -> Result<[u8; 32], String> {
    let mut file =
        std::fs::File::open(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let n = file
            .read(&mut buffer)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        if n == 0 {
            break;
        }
        hasher.update(&buffer[..n]);
    }
    Ok(hasher.finalize().into())
}

pub(super) fn stdio_check(
    candidates: &[Candidate],
    command: &str,
    args: &[String],
    cwd: Option<&Path>,
    path_env: Option<&OsStr>,
) -> StdioCheck {
    let program = match resolve_program(command, cwd, path_env) {
        Ok(program) => program,
        Err(detail) => {
            return StdioCheck::Failed {
                program: None,
                detail,
            };
        }
    };
    let same_program: Vec<&Candidate> = candidates
        .iter()
        .filter(|c| {
            resolve_program(&c.command, None, std::env::var_os("PATH").as_deref())
                .is_ok_and(|p| p == program)
        })
        .collect();
    let bound: Vec<&&Candidate> = same_program.iter().filter(|c| c.args == args).collect();
    let ids: std::collections::BTreeSet<&str> =
        bound.iter().map(|c| c.policy_id.as_str()).collect();
    if ids.len() > 1 {
        return StdioCheck::Ambiguous {
            program,
            bindings: bound
                .iter()
                .map(|c| format!("{} in {}", c.policy_id, c.bundle_id))
                .collect(),
        };
    }
    let Some(candidate) = bound.first() else {
        return match same_program.first() {
            Some(c) => StdioCheck::ArgsDiffer {
                program,
                bound: c.args.clone(),
            },
            None => StdioCheck::Unbound { program },
        };
    };
    match file_sha256(&program) {
        Err(detail) => StdioCheck::Failed {
            program: Some(program),
            detail,
        },
        Ok(actual) if actual != candidate.sha256 => StdioCheck::BinaryChanged {
            program,
            expected: hex::encode(candidate.sha256),
            actual: hex::encode(actual),
        },
        Ok(_) => StdioCheck::Bound {
            bundle_id: candidate.bundle_id.clone(),
            policy_id: candidate.policy_id.clone(),
            program,
        },
    }
}
