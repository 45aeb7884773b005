//! Package servers at run time (issue 25): a bound package's closure fetched, verified and
//! installed into the store, the tree checked against its manifest at every launch, the
//! interpreter checked against the binding's allowed set, and the command line that runs the
//! stored entry point with the tree as the only place modules come from.
//!
//! The decisions (which config matches which binding, what a user argument may be, where each
//! artifact goes, the store key) are `gatehouse-package`'s; the bytes and their checks are
//! `gatehouse-store`'s. This module does the I/O between them.

mod fetch;
mod interpreter;
mod sources;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use gatehouse_attest::package::{Ecosystem, EntryPoint, Interpreter, PackageBinding};
use gatehouse_package::layout;
use gatehouse_store::{Artifact, Store, StoreError};
use sha2::{Digest as _, Sha256};

pub use fetch::{FetchFailure, Fetcher, MAX_ARTIFACT_BYTES, npm_tarball_path, pypi_normal};
pub use interpreter::DigestCache;
pub use sources::{PUBLIC_NPM_REGISTRY, PUBLIC_PYPI_INDEX, PackageSources, SOURCES_FILE};

/// What a package server does not inherit from the host's environment, by prefix: the
/// interpreters' own module-path and preload settings (`NODE_OPTIONS`, `NODE_PATH`,
/// `PYTHONPATH`…, which Python's `-I` ignores anyway) and the dynamic linker's. The config
/// itself may not set them (admission refuses it).
pub const MODULE_ENV_PREFIXES: &[&str] = &["NODE_", "PYTHON", "LD_", "DYLD_", "ELECTRON_"];

/// The store's directory in the host's data directory.
pub const STORE_DIR: &str = "store";

/// How long one artifact may take to fetch.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(120);

/// How long fetching one whole closure may take, on top of [`FETCH_TIMEOUT`] for each
/// artifact: hundreds of dependencies each answering just in time must still end.
pub const CLOSURE_FETCH_TIMEOUT: Duration = Duration::from_secs(600);

/// Why a bound package cannot be launched. Each names what to do.
#[derive(Debug, thiserror::Error)]
pub enum PackageFailure {
    #[error(transparent)]
    Fetch(#[from] FetchFailure),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the interpreter is not allowed: {detail}")]
    Interpreter { detail: String },
    #[error(
        "{} exists, and Node would load modules from it as well as from the verified tree; remove or rename it (or keep Gatehouse's data directory elsewhere)",
        path.display()
    )]
    Isolation { path: PathBuf },
    #[error("the bound entry point cannot be used: {detail}")]
    Entry { detail: String },
}

impl PackageFailure {
    pub fn code(&self) -> crate::ErrorCode {
        use crate::ErrorCode as C;
        match self {
            PackageFailure::Fetch(f) => f.code(),
            PackageFailure::Store(e) => store_code(e),
            PackageFailure::Interpreter { .. } => C::InterpreterNotAllowed,
            PackageFailure::Isolation { .. } => C::PackageIsolationFailed,
            PackageFailure::Entry { .. } => C::PackageEntryInvalid,
        }
    }
}

/// The one code of each store refusal.
pub fn store_code(error: &StoreError) -> crate::ErrorCode {
    use crate::ErrorCode as C;
    match error {
        StoreError::ArtifactDigestInvalid { .. } | StoreError::ArtifactMismatch { .. } => {
            C::ArtifactMismatch
        }
        StoreError::ArchiveUnsafePath { .. }
        | StoreError::ArchiveLink { .. }
        | StoreError::ArchiveEntryType { .. } => C::ArchiveUnsafe,
        StoreError::ArchiveTooLarge { .. } => C::ArchiveTooLarge,
        StoreError::ArchiveMalformed { .. } => C::ArchiveMalformed,
        StoreError::StoreEntryChanged { .. } | StoreError::StoreManifestInvalid { .. } => {
            C::StoreEntryChanged
        }
        StoreError::StoreKeyInvalid { .. }
        | StoreError::StoreEntryMissing { .. }
        | StoreError::StoreIo { .. } => C::StoreUnavailable,
    }
}

/// What runs: the interpreter (or the stored binary) and its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackageLaunch {
    pub program: PathBuf,
    pub args: Vec<String>,
    /// The verified tree the modules come from.
    pub tree: PathBuf,
    /// Files the manifest lists (all checked at this launch).
    pub files: usize,
    /// Installed by this admission (fetched now), not found already installed.
    pub installed_now: bool,
}

/// The host's package runtime: its store, where artifacts come from, the user's home (for
/// user-argument rules) and the interpreter digests it already knows.
#[derive(Debug)]
pub struct Packages {
    store_root: PathBuf,
    fetcher: Fetcher,
    home: PathBuf,
    digests: DigestCache,
    /// One install at a time in this process: two connects of the same server must not both
    /// fetch and unpack it.
    installing: tokio::sync::Mutex<()>,
}

impl Packages {
    pub fn new(store_root: PathBuf, sources: PackageSources, home: PathBuf) -> Packages {
        Packages {
            store_root,
            fetcher: Fetcher::new(sources, FETCH_TIMEOUT),
            home,
            digests: DigestCache::default(),
            installing: tokio::sync::Mutex::new(()),
        }
    }

    pub fn home(&self) -> &Path {
        &self.home
    }

    pub fn store_root(&self) -> &Path {
        &self.store_root
    }

    pub fn sources(&self) -> &PackageSources {
        self.fetcher.sources()
    }

    /// Installs `binding`'s closure unless it is installed, checks the tree against its
    /// manifest, checks the interpreter, and says what to run with `user_args` (already
    /// checked against the binding's rules). `mcpb_file` is the `.mcpb` the config names.
    pub async fn prepare(
        &self,
        binding: &PackageBinding,
        user_args: &[String],
        mcpb_file: Option<&Path>,
    ) -> Result<PackageLaunch, PackageFailure> {
        if binding.ecosystem == Ecosystem::Mcpb {
            check_mcpb(binding, mcpb_file).await?;
        }
        let key = layout::store_key(binding);
        let (tree, files, installed_now) = self.install(binding, &key, mcpb_file).await?;
        let path_env = std::env::var_os("PATH");
        let mut args = Vec::new();
        let program = match (&binding.interpreter, &binding.entry) {
            (Interpreter::Binary, EntryPoint::Path(entry)) => tree.join(entry),
            (Interpreter::Node { .. }, EntryPoint::Path(_)) => {
                let node = self.node(&binding.interpreter, path_env.as_deref()).await?;
                if let Some(path) = interpreter::node_escape(&tree, &self.home, &node) {
                    return Err(PackageFailure::Isolation { path });
                }
                let entry = layout::entry_file(binding).ok_or_else(|| PackageFailure::Entry {
                    detail: "the binding names no entry file".into(),
                })?;
                args.push(tree.join(entry).display().to_string());
                node
            }
            (Interpreter::Python { .. }, entry) => {
                let python = interpreter::system_interpreter(
                    &binding.interpreter,
                    &self.digests,
                    path_env.as_deref(),
                )?;
                let (module, attr, argv0) = match entry {
                    EntryPoint::ConsoleScript(script) => {
                        let (module, attr) =
                            layout::console_script(&tree, &binding.package.name, script).map_err(
                                |e| PackageFailure::Entry {
                                    detail: e.to_string(),
                                },
                            )?;
                        (module, attr, script.clone())
                    }
                    EntryPoint::Callable { module, function } => {
                        (module.clone(), function.clone(), module.clone())
                    }
                    EntryPoint::Path(path) => {
                        return Err(PackageFailure::Entry {
                            detail: format!(
                                "a Python script entry ({path}) is not run yet: bind a console script or module:function"
                            ),
                        });
                    }
                };
                let program =
                    layout::python_bootstrap_as(&tree, &module, &attr, &argv0).map_err(|e| {
                        PackageFailure::Entry {
                            detail: e.to_string(),
                        }
                    })?;
                // -B as well as the bootstrap: nothing may write bytecode into the verified tree.
                args.extend(["-I".into(), "-S".into(), "-B".into(), "-c".into(), program]);
                python
            }
            (interpreter, entry) => {
                return Err(PackageFailure::Entry {
                    detail: format!(
                        "a {} interpreter cannot run the entry {entry:?}",
                        interpreter.kind()
                    ),
                });
            }
        };
        args.extend(binding.args.iter().cloned());
        args.extend(user_args.iter().cloned());
        Ok(PackageLaunch {
            program,
            args,
            tree,
            files,
            installed_now,
        })
    }

    /// Node: the system's when its digest is allowed, else the pinned npm package of Node
    /// from the store.
    async fn node(
        &self,
        interpreter: &Interpreter,
        path_env: Option<&std::ffi::OsStr>,
    ) -> Result<PathBuf, PackageFailure> {
        let Interpreter::Node { package, .. } = interpreter else {
            return interpreter::system_interpreter(interpreter, &self.digests, path_env);
        };
        let system = interpreter::system_interpreter(interpreter, &self.digests, path_env);
        match (system, package) {
            (Ok(node), _) => Ok(node),
            (Err(_), Some(pinned)) => {
                let node_binding = PackageBinding {
                    ecosystem: Ecosystem::Npm,
                    package: pinned.clone(),
                    closure: Vec::new(),
                    entry: EntryPoint::Path("bin/node".into()),
                    interpreter: Interpreter::Binary,
                    args: Vec::new(),
                    user_args: Vec::new(),
                    attestation: serde_json::Value::Null,
                };
                let key = interpreter_key(&node_binding);
                let (tree, _, _) = self.install(&node_binding, &key, None).await?;
                let entry = layout::entry_file(&node_binding).ok_or_else(|| {
                    PackageFailure::Interpreter {
                        detail: "the pinned Node package has no bin/node".into(),
                    }
                })?;
                Ok(tree.join(entry))
            }
            (Err(error), None) => Err(error),
        }
    }

    /// The tree of `key`, installed first when missing, and checked against its manifest.
    async fn install(
        &self,
        binding: &PackageBinding,
        key: &str,
        mcpb_file: Option<&Path>,
    ) -> Result<(PathBuf, usize, bool), PackageFailure> {
        let root = self.store_root.clone();
        let _one = self.installing.lock().await;
        let store = blocking(move || Store::open(root)).await?;
        let store = Arc::new(store);
        let installed = {
            let (store, key) = (store.clone(), key.to_string());
            blocking(move || store.contains(&key)).await?
        };
        let mut installed_now = false;
        if !installed {
            let plan = layout::plan(binding);
            // One fetch per distinct artifact (npm installs one version at several paths),
            // each checked as it arrives: a wrong dependency stops the install at once.
            let fetch_all = async {
                let mut bytes_of: std::collections::BTreeMap<String, Arc<Vec<u8>>> =
                    Default::default();
                let mut fetched = Vec::with_capacity(plan.len());
                for artifact in &plan {
                    let expected = artifact.artifact.to_text();
                    let bytes = match bytes_of.get(&expected) {
                        Some(bytes) => bytes.clone(),
                        None => {
                            let bytes = match (binding.ecosystem, mcpb_file) {
                                (Ecosystem::Mcpb, Some(file)) => tokio::fs::read(file)
                                    .await
                                    .map_err(|e| FetchFailure::Unreachable {
                                        package: artifact.name.clone(),
                                        url: file.display().to_string(),
                                        detail: e.to_string(),
                                    })?,
                                _ => self.fetcher.fetch(binding.ecosystem, artifact).await?,
                            };
                            gatehouse_store::verify_artifact(&bytes, &expected)?;
                            let bytes = Arc::new(bytes);
                            bytes_of.insert(expected, bytes.clone());
                            bytes
                        }
                    };
                    fetched.push((artifact.clone(), bytes));
                }
                Ok::<_, PackageFailure>(fetched)
            };
            // Only fetching is bounded: nothing is written before every artifact has arrived,
            // so giving up leaves nothing behind (and the store's install below, once begun,
            // runs to its atomic end).
            let fetched = match tokio::time::timeout(CLOSURE_FETCH_TIMEOUT, fetch_all).await {
                Ok(result) => result?,
                Err(_) => {
                    let sources = self.fetcher.sources();
                    return Err(FetchFailure::Unreachable {
                        package: format!("{}@{}", binding.package.name, binding.package.version),
                        url: match (binding.ecosystem, mcpb_file) {
                            (Ecosystem::Mcpb, Some(file)) => file.display().to_string(),
                            (Ecosystem::Npm, _) => sources.npm_registry.to_string(),
                            _ => sources.pypi_index.to_string(),
                        },
                        detail: format!(
                            "its closure of {} artifacts as a whole was not fetched within {}s \
                             (each artifact may take {}s); nothing was installed",
                            plan.iter()
                                .map(|a| a.artifact.to_text())
                                .collect::<std::collections::BTreeSet<_>>()
                                .len(),
                            CLOSURE_FETCH_TIMEOUT.as_secs(),
                            FETCH_TIMEOUT.as_secs()
                        ),
                    }
                    .into());
                }
            };
            let (store, key) = (store.clone(), key.to_string());
            blocking(move || {
                let texts: Vec<String> =
                    fetched.iter().map(|(a, _)| a.artifact.to_text()).collect();
                let artifacts: Vec<Artifact<'_>> = fetched
                    .iter()
                    .zip(&texts)
                    .map(|((a, bytes), expected)| Artifact {
                        dest: &a.dest,
                        kind: a.kind,
                        expected,
                        bytes,
                    })
                    .collect();
                store.install(&key, &artifacts)
            })
            .await?;
            installed_now = true;
        }
        let (verify_store, verify_key) = (store.clone(), key.to_string());
        let manifest = blocking(move || verify_store.verify(&verify_key)).await?;
        let tree = store.tree_path(key)?;
        Ok((tree, manifest.files.len(), installed_now))
    }
}

/// An MCPB server runs only while the file its config names is the reviewed one: checked at
/// every launch, not only at install, so a file replaced after the first install is refused
/// instead of silently running the old tree. Its manifest's server type must be the bound
/// interpreter kind and its entry a file in it.
async fn check_mcpb(binding: &PackageBinding, file: Option<&Path>) -> Result<(), PackageFailure> {
    let Some(file) = file else {
        return Err(PackageFailure::Entry {
            detail: "an MCPB binding runs the .mcpb file its config names, and none was given; write the path to the .mcpb as the command".into(),
        });
    };
    let bytes = tokio::fs::read(file)
        .await
        .map_err(|e| FetchFailure::Unreachable {
            package: binding.package.name.clone(),
            url: file.display().to_string(),
            detail: e.to_string(),
        })?;
    gatehouse_store::verify_artifact(&bytes, &binding.package.artifact.to_text())?;
    let entry = layout::entry_file(binding);
    let manifest =
        gatehouse_package::mcpb::read_mcpb_as(&bytes, entry.as_deref()).map_err(|e| {
            PackageFailure::Entry {
                detail: e.to_string(),
            }
        })?;
    let kind = manifest.server_type.interpreter_kind();
    if kind != binding.interpreter.kind() {
        return Err(PackageFailure::Entry {
            detail: format!(
                "the .mcpb's manifest says server.type {kind:?}, the binding interpreter {:?}; bind it again from the file",
                binding.interpreter.kind()
            ),
        });
    }
    Ok(())
}

/// The store key of Node fetched as a package: its own namespace, so it can never collide
/// with a server's tree.
fn interpreter_key(binding: &PackageBinding) -> String {
    let mut hasher = Sha256::new();
    hasher.update(b"gatehouse-interpreter\0");
    hasher.update(layout::store_key(binding).as_bytes());
    hex::encode(hasher.finalize())
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, StoreError> + Send + 'static,
) -> Result<T, StoreError> {
    tokio::task::spawn_blocking(work).await.unwrap_or_else(|e| {
        Err(StoreError::StoreIo {
            path: PathBuf::from("(store)"),
            source: std::io::Error::other(e.to_string()),
        })
    })
}
