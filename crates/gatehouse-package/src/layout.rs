//! Where a binding's artifacts go in its store tree, the store key that names the tree, and
//! what runs from it: the entry file for Node and binaries, or, for Python, a console script
//! resolved from the installed wheel's metadata and started by a fixed bootstrap program.
//!
//! Python runs as `python -I -S -c PROGRAM ARGS…`: `-I` ignores `PYTHON*` variables, the user
//! site and the current directory, `-S` skips `site` (so no site-packages and no `.pth` code),
//! leaving the standard library and the store tree as the only places modules come from. The
//! program is generated here from validated identifiers and escaped string literals only.

use std::io::{ErrorKind, Read};
use std::path::{Path, PathBuf};

use gatehouse_attest::package::{ArtifactHash, Ecosystem, EntryPoint, PackageBinding};
use gatehouse_store::ArchiveKind;
use sha2::{Digest, Sha256};

use crate::names::{is_dotted, normalize_pypi_name};

/// Bumped whenever [`plan`] puts artifacts elsewhere or the store-key encoding changes, so an
/// old tree is never taken for a new layout.
pub const LAYOUT_VERSION: u32 = 1;

/// Largest `entry_points.txt` read (real ones are well under a kilobyte).
pub const MAX_ENTRY_POINTS_BYTES: u64 = 1024 * 1024;

/// One artifact of a binding and where it is unpacked in the store tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedArtifact {
    pub name: String,
    pub version: String,
    pub artifact: ArtifactHash,
    /// Relative to the tree: `node_modules/<name>` (npm), `""` (wheels and `.mcpb`).
    pub dest: String,
    pub kind: ArchiveKind,
}

fn planned(
    p: &gatehouse_attest::package::PinnedPackage,
    dest: String,
    kind: ArchiveKind,
) -> PlannedArtifact {
    PlannedArtifact {
        name: p.name.clone(),
        version: p.version.clone(),
        artifact: p.artifact,
        dest,
        kind,
    }
}

/// Every artifact of the binding's tree, the bound package first. npm: the package at
/// `node_modules/<name>`, closure entries at their lockfile `path` (or `node_modules/<name>`);
/// PyPI: every wheel at the top (the tree is a site-packages directory); MCPB: the `.mcpb` at
/// the top. Node as an npm package (`interpreter.package`) is not part of the tree.
pub fn plan(binding: &PackageBinding) -> Vec<PlannedArtifact> {
    let root = &binding.package;
    match binding.ecosystem {
        Ecosystem::Npm => std::iter::once(planned(
            root,
            format!("node_modules/{}", root.name),
            ArchiveKind::NpmTgz,
        ))
        .chain(binding.closure.iter().map(|p| {
            let dest = p
                .path
                .clone()
                .unwrap_or_else(|| format!("node_modules/{}", p.name));
            planned(p, dest, ArchiveKind::NpmTgz)
        }))
        .collect(),
        Ecosystem::Pypi => std::iter::once(root)
            .chain(&binding.closure)
            .map(|p| planned(p, String::new(), ArchiveKind::Zip))
            .collect(),
        // A .mcpb carries its own dependencies; the parser's closure rules apply to it but
        // there is nowhere else to unpack one.
        Ecosystem::Mcpb => vec![planned(root, String::new(), ArchiveKind::Zip)],
    }
}

fn kind_code(kind: ArchiveKind) -> &'static str {
    match kind {
        ArchiveKind::NpmTgz => "npm_tgz",
        ArchiveKind::Zip => "zip",
    }
}

/// The store key of the binding's tree: 64 lower-case hex digits, the SHA-256 of a
/// length-prefixed encoding of [`LAYOUT_VERSION`], the ecosystem and every planned artifact
/// (name, version, artifact hash, destination, archive kind), sorted. Equal trees share a key
/// whatever the closure's order or the entry, arguments and interpreter; any change to what
/// is unpacked where gives another key.
pub fn store_key(binding: &PackageBinding) -> String {
    let mut items: Vec<[String; 5]> = plan(binding)
        .into_iter()
        .map(|a| {
            [
                a.dest,
                a.name,
                a.version,
                a.artifact.to_text(),
                kind_code(a.kind).to_string(),
            ]
        })
        .collect();
    items.sort();
    let mut hash = Sha256::new();
    let mut field = |bytes: &[u8]| {
        hash.update((bytes.len() as u64).to_be_bytes());
        hash.update(bytes);
    };
    field(b"gatehouse-package-layout");
    field(&LAYOUT_VERSION.to_be_bytes());
    field(binding.ecosystem.as_str().as_bytes());
    field(&(items.len() as u64).to_be_bytes());
    for item in &items {
        for part in item {
            field(part.as_bytes());
        }
    }
    hex::encode(hash.finalize())
}

/// The file that runs, relative to the tree: npm `node_modules/<name>/<entry>`, MCPB
/// `<entry>`; `None` for PyPI (see [`console_script`] and [`python_bootstrap`]).
pub fn entry_file(binding: &PackageBinding) -> Option<String> {
    match (&binding.ecosystem, &binding.entry) {
        (Ecosystem::Npm, EntryPoint::Path(entry)) => {
            Some(format!("node_modules/{}/{entry}", binding.package.name))
        }
        (Ecosystem::Mcpb, EntryPoint::Path(entry)) => Some(entry.clone()),
        _ => None,
    }
}

/// Why a Python entry point cannot be resolved or started. Stable snake_case codes.
#[derive(Debug, thiserror::Error)]
pub enum LayoutError {
    #[error(
        "no {package}-<version>.dist-info directory in the installed tree; the wheel of {package} is not installed there (reinstall the binding)"
    )]
    NoDistInfo { package: String },
    #[error(
        "more than one .dist-info directory for {package} in the installed tree ({found:?}); a binding installs one version of each project"
    )]
    AmbiguousDistInfo { package: String, found: Vec<String> },
    #[error("{} cannot be read: {source}", path.display())]
    Unreadable {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is over {MAX_ENTRY_POINTS_BYTES} bytes or not UTF-8; it is not an entry-points file", path.display())]
    EntryPointsUnreadable { path: PathBuf },
    #[error(
        "{package} declares no console script {script:?} in its entry_points.txt [console_scripts]; bind one it declares, or module:function"
    )]
    NoConsoleScript { package: String, script: String },
    #[error(
        "{package} declares the console script {script:?} twice; which one runs would be a guess"
    )]
    DuplicateConsoleScript { package: String, script: String },
    #[error(
        "the console script {script:?} is {value:?}, not module:attribute of plain identifiers (extras and expressions are not run)"
    )]
    BadEntryPoint { script: String, value: String },
    #[error("{module:?}:{attr:?} is not module:attribute of dotted ASCII identifiers")]
    InvalidTarget { module: String, attr: String },
    #[error("the store tree {} {why}; it cannot be placed in the bootstrap program", tree.display())]
    UnsafeTreePath { tree: PathBuf, why: &'static str },
}

impl LayoutError {
    pub fn code(&self) -> &'static str {
        match self {
            LayoutError::NoDistInfo { .. } => "no_dist_info",
            LayoutError::AmbiguousDistInfo { .. } => "ambiguous_dist_info",
            LayoutError::Unreadable { .. } => "unreadable",
            LayoutError::EntryPointsUnreadable { .. } => "entry_points_unreadable",
            LayoutError::NoConsoleScript { .. } => "no_console_script",
            LayoutError::DuplicateConsoleScript { .. } => "duplicate_console_script",
            LayoutError::BadEntryPoint { .. } => "bad_entry_point",
            LayoutError::InvalidTarget { .. } => "invalid_target",
            LayoutError::UnsafeTreePath { .. } => "unsafe_tree_path",
        }
    }
}

/// The `.dist-info` directory of `package` at the top of `tree`. Its name is
/// `<dist>-<version>.dist-info`, where the wheel spec escapes `-` and `.` in the name to `_`
/// and tools vary the case; both sides are compared PEP 503-normalised.
fn dist_info(tree: &Path, package: &str) -> Result<PathBuf, LayoutError> {
    let unreadable = |path: &Path| {
        let path = path.to_path_buf();
        move |source| LayoutError::Unreadable { path, source }
    };
    let wanted = normalize_pypi_name(package);
    let mut found = Vec::new();
    for entry in std::fs::read_dir(tree).map_err(unreadable(tree))? {
        let entry = entry.map_err(unreadable(tree))?;
        let Ok(file) = entry.file_name().into_string() else {
            continue;
        };
        let Some((dist, _version)) = file
            .strip_suffix(".dist-info")
            .and_then(|stem| stem.rsplit_once('-'))
        else {
            continue;
        };
        // file_type does not follow links; the store never makes one.
        if wanted.is_some()
            && normalize_pypi_name(dist) == wanted
            && entry.file_type().map_err(unreadable(tree))?.is_dir()
        {
            found.push(file);
        }
    }
    match found.len() {
        0 => Err(LayoutError::NoDistInfo {
            package: package.to_string(),
        }),
        1 => Ok(tree.join(&found[0])),
        _ => {
            found.sort();
            Err(LayoutError::AmbiguousDistInfo {
                package: package.to_string(),
                found,
            })
        }
    }
}

/// `module:attr` of a console-script value, both dotted identifiers and nothing else.
fn parse_target(value: &str) -> Option<(String, String)> {
    let (module, attr) = value.split_once(':')?;
    (is_dotted(module) && is_dotted(attr)).then(|| (module.to_string(), attr.to_string()))
}

/// The `(module, attribute path)` the bound package's console script `script` runs, from
/// `<tree>/<dist>-<version>.dist-info/entry_points.txt`.
pub fn console_script(
    tree: &Path,
    package: &str,
    script: &str,
) -> Result<(String, String), LayoutError> {
    let path = dist_info(tree, package)?.join("entry_points.txt");
    let file = match std::fs::File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == ErrorKind::NotFound => {
            return Err(LayoutError::NoConsoleScript {
                package: package.to_string(),
                script: script.to_string(),
            });
        }
        Err(source) => return Err(LayoutError::Unreadable { path, source }),
    };
    let mut bytes = Vec::new();
    file.take(MAX_ENTRY_POINTS_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|source| LayoutError::Unreadable {
            path: path.clone(),
            source,
        })?;
    if bytes.len() as u64 > MAX_ENTRY_POINTS_BYTES {
        return Err(LayoutError::EntryPointsUnreadable { path });
    }
    let Ok(text) = String::from_utf8(bytes) else {
        return Err(LayoutError::EntryPointsUnreadable { path });
    };
    let mut section = "";
    let mut value: Option<&str> = None;
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with(['#', ';']) {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = name.trim();
            continue;
        }
        if section != "console_scripts" {
            continue;
        }
        let Some((key, v)) = line.split_once('=') else {
            continue;
        };
        if key.trim() == script {
            if value.is_some() {
                return Err(LayoutError::DuplicateConsoleScript {
                    package: package.to_string(),
                    script: script.to_string(),
                });
            }
            value = Some(v.trim());
        }
    }
    let Some(value) = value else {
        return Err(LayoutError::NoConsoleScript {
            package: package.to_string(),
            script: script.to_string(),
        });
    };
    parse_target(value).ok_or_else(|| LayoutError::BadEntryPoint {
        script: script.to_string(),
        value: value.to_string(),
    })
}

/// A Python string literal for `text`, ASCII only: quotes and backslashes escaped, everything
/// outside printable ASCII written as `\x`/`\u`/`\U` escapes, so nothing in `text` can end
/// the literal or depend on how the interpreter decodes its arguments.
fn python_literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('\'');
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            ' '..='~' => out.push(c),
            c if (c as u32) <= 0xff => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if (c as u32) <= 0xffff => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
    out.push('\'');
    out
}

/// The `-c` program for `python -I -S -c PROGRAM ARGS…`, with `sys.argv[0]` the module name
/// (see [`python_bootstrap_as`] to set the console script's name instead).
pub fn python_bootstrap(tree: &Path, module: &str, attr: &str) -> Result<String, LayoutError> {
    python_bootstrap_as(tree, module, attr, module)
}

/// The `-c` program: `tree` on `sys.path` after the standard library (where a normal install's
/// site-packages is, so a wheel never shadows the standard library), `sys.argv[0]` set to
/// `argv0` (the console script's name, as its wrapper would), then `module` imported, `attr`
/// resolved on it and `sys.exit(result())`. `module` and `attr` must be dotted identifiers;
/// `tree` an absolute UTF-8 path without control characters.
pub fn python_bootstrap_as(
    tree: &Path,
    module: &str,
    attr: &str,
    argv0: &str,
) -> Result<String, LayoutError> {
    if !is_dotted(module) || !is_dotted(attr) {
        return Err(LayoutError::InvalidTarget {
            module: module.to_string(),
            attr: attr.to_string(),
        });
    }
    let unsafe_tree = |why| LayoutError::UnsafeTreePath {
        tree: tree.to_path_buf(),
        why,
    };
    let Some(text) = tree.to_str() else {
        return Err(unsafe_tree("is not UTF-8"));
    };
    if !tree.is_absolute() {
        return Err(unsafe_tree("is not absolute"));
    }
    if text.chars().any(char::is_control) {
        return Err(unsafe_tree("contains a control character"));
    }
    // importlib is imported before the tree is on sys.path, so the tree cannot replace it.
    // No bytecode is written: a `__pycache__` in the tree would be a file its manifest lacks,
    // refused at the next launch (and `-I` ignores PYTHONDONTWRITEBYTECODE).
    Ok(format!(
        "import sys, importlib\n\
         sys.dont_write_bytecode = True\n\
         sys.path[:] = [p for p in sys.path if p not in ('', '.')] + [{tree}]\n\
         sys.argv[0] = {argv0}\n\
         target = importlib.import_module({module})\n\
         for name in {attr}.split('.'):\n    target = getattr(target, name)\n\
         sys.exit(target())\n",
        tree = python_literal(text),
        argv0 = python_literal(argv0),
        module = python_literal(module),
        attr = python_literal(attr),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{binding, hex256, mcpb_json, npm_json, pypi_json, sri, with};
    use serde_json::json;

    #[test]
    fn npm_artifacts_go_to_their_lockfile_paths() {
        let b = binding(&npm_json());
        let plan = plan(&b);
        let dests: Vec<&str> = plan.iter().map(|a| a.dest.as_str()).collect();
        assert_eq!(
            dests,
            [
                "node_modules/@modelcontextprotocol/server-filesystem",
                "node_modules/@modelcontextprotocol/sdk",
                "node_modules/@modelcontextprotocol/sdk/node_modules/zod",
            ]
        );
        assert!(plan.iter().all(|a| a.kind == ArchiveKind::NpmTgz));
        assert_eq!(plan[2].name, "zod");
        assert_eq!(plan[2].version, "3.25.76");
        assert_eq!(plan[0].artifact, b.package.artifact);
        let flat = binding(&with(
            npm_json(),
            "/closure",
            json!([{"name": "zod", "version": "3.25.76", "artifact": sri(3)}]),
        ));
        assert_eq!(super::plan(&flat)[1].dest, "node_modules/zod");
        assert_eq!(
            entry_file(&b).as_deref(),
            Some("node_modules/@modelcontextprotocol/server-filesystem/dist/index.js")
        );
    }

    #[test]
    fn wheels_and_mcpb_unpack_at_the_top() {
        let b = binding(&pypi_json());
        let plan = plan(&b);
        assert_eq!(plan.len(), 3);
        assert!(
            plan.iter()
                .all(|a| a.dest.is_empty() && a.kind == ArchiveKind::Zip)
        );
        assert_eq!(
            plan.iter().map(|a| a.name.as_str()).collect::<Vec<_>>(),
            ["mcp-server-time", "mcp", "tzdata"]
        );
        assert_eq!(entry_file(&b), None);
        let m = binding(&mcpb_json());
        let plan = super::plan(&m);
        assert_eq!(plan.len(), 1);
        assert_eq!(
            (plan[0].dest.as_str(), plan[0].kind),
            ("", ArchiveKind::Zip)
        );
        assert_eq!(entry_file(&m).as_deref(), Some("server/index.js"));
    }

    #[test]
    fn the_store_key_changes_with_anything_unpacked_and_only_then() {
        let key = store_key(&binding(&npm_json()));
        assert_eq!(key.len(), 64);
        assert!(
            key.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        );
        assert_eq!(key, store_key(&binding(&npm_json())));
        // Not what runs or how: the same tree serves them all.
        for (pointer, value) in [
            ("/entry", json!("dist/other.js")),
            ("/args", json!(["--x"])),
            ("/interpreter/sha256", json!([hex256(40)])),
        ] {
            let raw = if npm_json().pointer(pointer).is_some() {
                with(npm_json(), pointer, value)
            } else {
                let mut raw = npm_json();
                raw[&pointer[1..]] = value;
                raw
            };
            assert_eq!(store_key(&binding(&raw)), key, "{pointer}");
        }
        let mut keys = std::collections::BTreeSet::from([key.clone()]);
        for (pointer, value) in [
            ("/version", json!("2026.8.30")),
            ("/artifact", json!(sri(9))),
            ("/name", json!("@modelcontextprotocol/server-filesytem")),
            ("/closure/1/version", json!("3.25.75")),
            ("/closure/1/artifact", json!(sri(8))),
            ("/closure/1/path", json!("node_modules/zod")),
            ("/closure/1/name", json!("zoe")),
        ] {
            let mut raw = with(npm_json(), pointer, value);
            if pointer == "/closure/1/name" {
                raw = with(raw, "/closure/1/path", json!("node_modules/zoe"));
            }
            assert!(
                keys.insert(store_key(&binding(&raw))),
                "{pointer} kept the key"
            );
        }
        let mut raw = npm_json();
        raw["closure"].as_array_mut().unwrap().pop();
        assert!(keys.insert(store_key(&binding(&raw))));
        // Order does not change what is unpacked where.
        let pypi = pypi_json();
        let mut swapped = pypi.clone();
        swapped["closure"].as_array_mut().unwrap().reverse();
        assert_eq!(store_key(&binding(&pypi)), store_key(&binding(&swapped)));
        // The same name/version/hash in another ecosystem is another tree.
        let as_mcpb = with(
            with(mcpb_json(), "/name", json!("mcp-server-time")),
            "/artifact",
            pypi["artifact"].clone(),
        );
        let as_mcpb = with(as_mcpb, "/version", json!("2026.10.19"));
        let mut lone = pypi.clone();
        lone["closure"] = json!([]);
        assert_ne!(store_key(&binding(&lone)), store_key(&binding(&as_mcpb)));
    }

    /// A wheel-shaped tree: `fixture_pkg` with a `cli.main` and an `App.main`, and its
    /// dist-info named as a wheel escapes `Fixture.Pkg`.
    fn tree_at(root: &Path, entry_points: &str) {
        std::fs::create_dir_all(root.join("fixture_pkg")).unwrap();
        std::fs::write(root.join("fixture_pkg/__init__.py"), "").unwrap();
        std::fs::write(
            root.join("fixture_pkg/cli.py"),
            "import sys, json, fixture_pkg\n\
             def main():\n    print(json.dumps({'argv': sys.argv, 'file': fixture_pkg.__file__, 'json': json.__file__}))\n    return 3\n\
             class App:\n    @staticmethod\n    def main():\n        print('app')\n",
        )
        .unwrap();
        let dist = root.join("Fixture_Pkg-1.0.dist-info");
        std::fs::create_dir_all(&dist).unwrap();
        std::fs::write(dist.join("entry_points.txt"), entry_points).unwrap();
    }

    const ENTRY_POINTS: &str = "# comment\n[gui_scripts]\nfixture-cli = evil:main\n\n[console_scripts]\nfixture-cli = fixture_pkg.cli:main\nfixture-app=fixture_pkg.cli:App.main\n";

    #[test]
    fn console_scripts_are_read_from_the_bound_dist_info() {
        let dir = tempfile::tempdir().unwrap();
        tree_at(dir.path(), ENTRY_POINTS);
        // Another project's dist-info in the same tree is not consulted.
        let other = dir.path().join("fixture_pkg_extra-2.0.dist-info");
        std::fs::create_dir_all(&other).unwrap();
        std::fs::write(
            other.join("entry_points.txt"),
            "[console_scripts]\nfixture-cli = evil:main\n",
        )
        .unwrap();
        for package in ["fixture-pkg", "Fixture.Pkg", "fixture_pkg"] {
            assert_eq!(
                console_script(dir.path(), package, "fixture-cli").unwrap(),
                ("fixture_pkg.cli".to_string(), "main".to_string())
            );
        }
        assert_eq!(
            console_script(dir.path(), "fixture-pkg", "fixture-app").unwrap(),
            ("fixture_pkg.cli".to_string(), "App.main".to_string())
        );
        let e = console_script(dir.path(), "fixture-pkg", "fixture-cl").unwrap_err();
        assert_eq!(e.code(), "no_console_script");
        let e = console_script(dir.path(), "fixture", "fixture-cli").unwrap_err();
        assert_eq!(e.code(), "no_dist_info");
        let e = console_script(dir.path(), "fixture-pkg-extr", "fixture-cli").unwrap_err();
        assert_eq!(e.code(), "no_dist_info");

        // Two versions of one project: ambiguous, never a guess.
        std::fs::create_dir_all(dir.path().join("fixture_pkg-1.1.dist-info")).unwrap();
        let e = console_script(dir.path(), "fixture-pkg", "fixture-cli").unwrap_err();
        assert_eq!(e.code(), "ambiguous_dist_info");
    }

    #[test]
    fn console_script_values_other_than_module_attr_are_refused() {
        for (value, ok) in [
            ("os:system(\"x\")", false),
            ("__import__('os').system:x", false),
            ("x:__import__('os').system('id')", false),
            ("mod:main; import os", false),
            ("mod:main [extra]", false),
            ("mod", false),
            ("mod:", false),
            (":main", false),
            ("mod:main:x", false),
            ("mod.:main", false),
            ("mód:main", false),
            ("9mod:main", false),
            ("mod:main\\", false),
            ("mod:main", true),
            ("_a.b_2:C.d", true),
        ] {
            let dir = tempfile::tempdir().unwrap();
            tree_at(dir.path(), &format!("[console_scripts]\nrun = {value}\n"));
            let got = console_script(dir.path(), "fixture-pkg", "run");
            assert_eq!(got.is_ok(), ok, "{value}: {got:?}");
            if let Err(e) = got {
                assert_eq!(e.code(), "bad_entry_point", "{value}");
            }
        }
        let dir = tempfile::tempdir().unwrap();
        tree_at(dir.path(), "[console_scripts]\nrun = a:b\nrun = c:d\n");
        assert_eq!(
            console_script(dir.path(), "fixture-pkg", "run")
                .unwrap_err()
                .code(),
            "duplicate_console_script"
        );
        let dir = tempfile::tempdir().unwrap();
        tree_at(dir.path(), &"#".repeat(MAX_ENTRY_POINTS_BYTES as usize + 1));
        assert_eq!(
            console_script(dir.path(), "fixture-pkg", "run")
                .unwrap_err()
                .code(),
            "entry_points_unreadable"
        );
    }

    fn run(tree: &Path, module: &str, attr: &str, argv0: &str, cwd: &Path) -> std::process::Output {
        let program = python_bootstrap_as(tree, module, attr, argv0).unwrap();
        std::process::Command::new("python3")
            .args(["-I", "-S", "-c", &program, "a b", "--x=1"])
            .current_dir(cwd)
            .env("PYTHONPATH", cwd)
            .env("PYTHONSTARTUP", cwd.join("fixture_pkg/cli.py"))
            .output()
            .expect("python3 runs")
    }

    #[test]
    fn the_bootstrap_runs_the_script_from_the_tree_only() {
        let base = tempfile::tempdir().unwrap();
        // A tree path a naive quote would break: quotes, backslash, $(), non-ASCII.
        let tree = base.path().join("tr'ee \"\\ $(id) é✓");
        tree_at(&tree, ENTRY_POINTS);
        // A wheel's top-level json.py does not replace the standard library's (the tree comes
        // after it, as site-packages does).
        std::fs::write(tree.join("json.py"), "raise SystemExit(96)\n").unwrap();
        // A shadowing fixture_pkg and json in the working directory and on PYTHONPATH.
        let shadow = base.path().join("shadow");
        std::fs::create_dir_all(shadow.join("fixture_pkg")).unwrap();
        std::fs::write(
            shadow.join("fixture_pkg/__init__.py"),
            "raise SystemExit(99)\n",
        )
        .unwrap();
        std::fs::write(shadow.join("fixture_pkg/cli.py"), "raise SystemExit(98)\n").unwrap();
        std::fs::write(shadow.join("json.py"), "raise SystemExit(97)\n").unwrap();

        let (module, attr) = console_script(&tree, "fixture-pkg", "fixture-cli").unwrap();
        let out = run(&tree, &module, &attr, "fixture-cli", &shadow);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(3),
            "{stdout} {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let seen: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
        assert_eq!(seen["argv"], json!(["fixture-cli", "a b", "--x=1"]));
        let file = seen["file"].as_str().unwrap();
        assert_eq!(Path::new(file), tree.join("fixture_pkg/__init__.py"));
        // The standard library comes from the standard library.
        assert!(!seen["json"].as_str().unwrap().contains("shadow"), "{seen}");

        let out = run(&tree, "fixture_pkg.cli", "App.main", "fixture-app", &shadow);
        assert_eq!(out.status.code(), Some(0));
        // Nothing was written into the tree (its manifest would no longer match).
        assert!(!tree.join("fixture_pkg/__pycache__").exists());
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "app");
        // python_bootstrap names argv[0] after the module.
        let program = python_bootstrap(&tree, "fixture_pkg.cli", "main").unwrap();
        assert!(
            program.contains("sys.argv[0] = 'fixture_pkg.cli'"),
            "{program}"
        );
    }

    #[test]
    fn the_bootstrap_refuses_what_it_cannot_place_safely() {
        let ok = Path::new("/srv/store/key/tree");
        python_bootstrap(ok, "a.b", "c.d").unwrap();
        for (module, attr) in [
            ("os", "system(\"x\")"),
            ("__import__('os')", "system"),
            ("a')\nimport os\n('", "main"),
            ("a", "b;c"),
            ("", "main"),
            ("a", ""),
        ] {
            assert_eq!(
                python_bootstrap(ok, module, attr).unwrap_err().code(),
                "invalid_target",
                "{module:?}:{attr:?}"
            );
        }
        for tree in ["relative/tree", "/store/tr\nee", "/store/\u{7f}x"] {
            assert_eq!(
                python_bootstrap(Path::new(tree), "a", "b")
                    .unwrap_err()
                    .code(),
                "unsafe_tree_path",
                "{tree:?}"
            );
        }
        assert_eq!(
            python_literal("a'b\\c\"é\u{1F600}\n"),
            "'a\\'b\\\\c\"\\xe9\\U0001f600\\x0a'"
        );
    }
}
