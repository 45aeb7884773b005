//! The tools that confine stdio servers, as the tests find them: bubblewrap
//! (`$GATEHOUSE_BWRAP`, else `bwrap` on `PATH`) and Gatehouse's own sandbox init
//! (`$GATEHOUSE_SANDBOX_INIT`, else `gatehouse-sandbox-init` in the target directory the running
//! test was built into, as [`crate::demo`] finds the demo server). Build the init first with
//! `cargo build -p gatehouse-sandbox`.

use std::path::{Path, PathBuf};

use gatehouse_host::SandboxTools;

/// The init's file name, as `cargo build -p gatehouse-sandbox` writes it.
pub const INIT_BINARY: &str = "gatehouse-sandbox-init";

/// A path to give as bubblewrap that exits 1 at once: the machine "cannot confine".
pub const BROKEN_BWRAP: &str = "/bin/false";

/// The sandbox init's executable. Panics, saying how to build it, when it is not there (a path
/// from `$GATEHOUSE_SANDBOX_INIT` is taken as given).
pub fn init() -> PathBuf {
    if let Some(path) = std::env::var_os("GATEHOUSE_SANDBOX_INIT") {
        return PathBuf::from(path);
    }
    let exe = std::env::current_exe().expect("the test knows its own path");
    let path = init_beside(&exe);
    assert!(
        path.is_file(),
        "{} is missing: build it with `cargo build -p gatehouse-sandbox` or set GATEHOUSE_SANDBOX_INIT",
        path.display()
    );
    path
}

/// bubblewrap's executable. Panics, saying what to install, when there is none.
pub fn bwrap() -> PathBuf {
    if let Some(path) = std::env::var_os("GATEHOUSE_BWRAP") {
        return PathBuf::from(path);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join("bwrap"))
        .find(|candidate| candidate.is_file())
        .expect("bwrap is not on PATH: install bubblewrap (apt install bubblewrap) or set GATEHOUSE_BWRAP")
}

/// The real tools: a host given these confines its stdio servers.
pub fn tools() -> SandboxTools {
    SandboxTools {
        bwrap: Some(bwrap()),
        init: Some(init()),
    }
}

/// The real init with a bubblewrap that always fails ([`BROKEN_BWRAP`]): a machine that cannot
/// confine, for the tests of `required` and `preferred`.
pub fn broken_tools() -> SandboxTools {
    SandboxTools {
        bwrap: Some(PathBuf::from(BROKEN_BWRAP)),
        init: Some(init()),
    }
}

/// Where the init is built for a test executable at `exe`: the directory above the test's
/// `deps`.
fn init_beside(exe: &Path) -> PathBuf {
    exe.parent()
        .and_then(Path::parent)
        .expect("the test runs from target/<profile>/deps")
        .join(INIT_BINARY)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_init_is_looked_for_above_the_tests_deps_directory() {
        assert_eq!(
            init_beside(Path::new("/w/target/debug/deps/confinement-0123abcd")),
            Path::new("/w/target/debug/gatehouse-sandbox-init")
        );
    }

    #[test]
    fn the_broken_tools_keep_the_init_and_break_bubblewrap() {
        let broken = broken_tools();
        assert_eq!(broken.bwrap.as_deref(), Some(Path::new(BROKEN_BWRAP)));
        assert_eq!(broken.init, Some(init()));
        assert_ne!(broken, tools());
    }
}
