//! The demo server binary, as the tests find it: `$GATEHOUSE_DEMO_SERVER`, else
//! `gatehouse-demo-server` in the target directory the running test was built into
//! (`target/<profile>/deps/<test>-…` → `target/<profile>/gatehouse-demo-server`). Build it
//! first with `cargo build -p gatehouse-demo-server`.

use std::path::{Path, PathBuf};

use gatehouse_host::ServerSpec;
use gatehouse_host::demo::DEMO_SERVER_BINARY;

/// The demo server's executable. Panics, saying how to build it, when it is not there (a path
/// from `$GATEHOUSE_DEMO_SERVER` is taken as given).
pub fn server() -> PathBuf {
    if let Some(path) = std::env::var_os("GATEHOUSE_DEMO_SERVER") {
        return PathBuf::from(path);
    }
    let exe = std::env::current_exe().expect("the test knows its own path");
    let path = beside(&exe);
    assert!(
        path.is_file(),
        "{} is missing: build it with `cargo build -p gatehouse-demo-server` or set GATEHOUSE_DEMO_SERVER",
        path.display()
    );
    path
}

/// [`server`] as a command-line word (for `Command::new`, `--stdio`, servers.json).
pub fn command() -> String {
    server().display().to_string()
}

/// Exactly the command line the demo bundle binds: the executable, no arguments.
pub fn spec() -> ServerSpec {
    gatehouse_host::demo::demo_server_spec_at(&server())
}

/// Where the demo server is built for a test executable at `exe`: the directory above the
/// test's `deps`.
fn beside(exe: &Path) -> PathBuf {
    exe.parent()
        .and_then(Path::parent)
        .expect("the test runs from target/<profile>/deps")
        .join(DEMO_SERVER_BINARY)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_demo_server_is_looked_for_above_the_tests_deps_directory() {
        assert_eq!(
            beside(Path::new("/w/target/debug/deps/review-0123abcd")),
            Path::new("/w/target/debug/gatehouse-demo-server")
        );
    }

    #[test]
    fn the_spec_is_the_bare_executable() {
        match spec() {
            ServerSpec::Stdio(stdio) => {
                assert_eq!(stdio.command, command());
                assert!(stdio.args.is_empty() && stdio.env.is_empty() && stdio.cwd.is_none());
            }
            other => panic!("not stdio: {other:?}"),
        }
    }
}
