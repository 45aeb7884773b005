//! Generic atomic file writing for every part of the host and its front ends (configuration,
//! approvals, client config files, saved resources, tokens): a crash leaves the old file or the
//! new one, never half.

use std::io::Write;
use std::path::{Path, PathBuf};

/// Writes `bytes` to `path` so that a crash leaves either the old file or the new one, never
/// half of either: a temporary file in the same directory (created with `mode`), fsync, rename,
/// then fsync of the directory. The directory is created if missing.
pub fn write_atomically(path: &Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let result = (|| {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, mode);
        let mut file = options.open(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)?;
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Writes `bytes` under the first of `names` in `dir` that is free, atomically and never over
/// an existing file: a temporary file, synced, then hard-linked into place (on a file system
/// without hard links: checked free, then renamed). Returns the path written; `AlreadyExists`
/// when every name is taken. Nothing is left behind on failure.
pub fn write_new(
    dir: &Path,
    names: impl IntoIterator<Item = String>,
    bytes: &[u8],
) -> std::io::Result<PathBuf> {
    use std::io::{Error, ErrorKind};
    static SERIAL: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    std::fs::create_dir_all(dir)?;
    let serial = SERIAL.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = dir.join(format!(
        ".gatehouse-new-{}-{serial}.part",
        std::process::id()
    ));
    let written = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()
    })();
    let placed = written.and_then(|()| {
        for name in names {
            let target = dir.join(name);
            // A hard link never replaces what exists: the first free name wins, atomically.
            match std::fs::hard_link(&tmp, &target) {
                Ok(()) => return Ok(target),
                Err(e) if e.kind() == ErrorKind::AlreadyExists => continue,
                Err(_) if target.symlink_metadata().is_ok() => continue,
                Err(_) => {
                    std::fs::rename(&tmp, &target)?;
                    return Ok(target);
                }
            }
        }
        Err(Error::from(ErrorKind::AlreadyExists))
    });
    let _ = std::fs::remove_file(&tmp);
    if placed.is_ok()
        && let Ok(d) = std::fs::File::open(dir)
    {
        let _ = d.sync_all();
    }
    placed
}
