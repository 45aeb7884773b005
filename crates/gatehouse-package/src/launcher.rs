//! Recognising how AI clients write package servers (`npx -y NAME@VERSION ARGS`, `uvx NAME`,
//! `uvx --from NAME==VERSION CMD`, a path to a `.mcpb`), so the host can run the bound bytes
//! from its store instead of the launcher.
//!
//! Strict on purpose: any launcher option that changes what runs or where it comes from
//! (another package, a registry, an index, a shell command, interpreter options) makes the
//! request [`Parsed::Unsupported`] rather than being dropped, since dropping it would run
//! something other than what the config says.

use std::path::PathBuf;

use gatehouse_attest::package::Ecosystem;

use crate::names::{
    is_file_stem, is_npm_name, is_pep440, is_script_name, is_semver, normalize_pypi_name,
};

/// The launcher a config names. Stable snake_case codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LauncherKind {
    Npx,
    Uvx,
    Mcpb,
}

impl LauncherKind {
    pub fn code(self) -> &'static str {
        match self {
            LauncherKind::Npx => "npx",
            LauncherKind::Uvx => "uvx",
            LauncherKind::Mcpb => "mcpb",
        }
    }
}

/// A package server as the config asks for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackageRequest {
    pub launcher: LauncherKind,
    pub ecosystem: Ecosystem,
    /// npm: as written (npm's lower-case rules checked); PyPI: PEP 503-normalised; MCPB: the
    /// file's stem.
    pub name: String,
    /// The exact version asked for, if any.
    pub version: Option<String>,
    /// `uvx --from NAME CMD`: the console script CMD.
    pub script: Option<String>,
    /// MCPB: the `.mcpb` path as the config writes it.
    pub mcpb_file: Option<PathBuf>,
    /// Everything after the package spec: the binding's fixed args, then the user's.
    pub args: Vec<String>,
}

/// What a config's command and args are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    /// Not npx, uvx or a `.mcpb`: an ordinary stdio command.
    NotALauncher,
    Request(PackageRequest),
    /// A launcher, written in a way Gatehouse does not run from a binding; `reason` says what
    /// to change.
    Unsupported {
        launcher: LauncherKind,
        reason: String,
    },
}

/// The last path component, for either separator (configs are written on every platform).
fn file_name(command: &str) -> &str {
    command.rsplit(['/', '\\']).next().unwrap_or(command)
}

pub fn parse_launcher(command: &str, args: &[String]) -> Parsed {
    let file = file_name(command);
    match file {
        "npx" | "npx.cmd" => parse_npx(args),
        "uvx" | "uvx.exe" => parse_uvx(args),
        "uv" | "uv.exe" if args.len() >= 2 && args[0] == "tool" && args[1] == "run" => {
            parse_uvx(&args[2..])
        }
        _ => match file.strip_suffix(".mcpb") {
            Some(stem) => parse_mcpb(command, stem, args),
            None => Parsed::NotALauncher,
        },
    }
}

fn unsupported(launcher: LauncherKind, reason: String) -> Parsed {
    Parsed::Unsupported { launcher, reason }
}

fn parse_mcpb(command: &str, stem: &str, args: &[String]) -> Parsed {
    if !is_file_stem(stem) {
        return unsupported(
            LauncherKind::Mcpb,
            format!(
                "{command:?}: the .mcpb file name {stem:?} is not a bundle name (letters, digits, - _ ., not starting with .); rename the file to the name the bundle binds"
            ),
        );
    }
    Parsed::Request(PackageRequest {
        launcher: LauncherKind::Mcpb,
        ecosystem: Ecosystem::Mcpb,
        name: stem.to_string(),
        version: None,
        script: None,
        mcpb_file: Some(PathBuf::from(command)),
        args: args.to_vec(),
    })
}

/// The option name of `--opt=value` or `--opt`.
fn option_name(arg: &str) -> &str {
    arg.split_once('=').map_or(arg, |(name, _)| name)
}

fn npx_option_reason(option: &str) -> &'static str {
    match option {
        "-p" | "--package" => "installs another package beside the one named",
        "-c" | "--call" => "runs a shell command",
        "--registry" => "fetches from another registry",
        "--node-options" => "passes options to node",
        _ => "is not one Gatehouse runs from a binding",
    }
}

fn parse_npx(args: &[String]) -> Parsed {
    let npx = LauncherKind::Npx;
    let mut i = 0;
    let spec = loop {
        let Some(arg) = args.get(i) else {
            return unsupported(
                npx,
                "npx names no package; write npx -y NAME@VERSION followed by its arguments"
                    .to_string(),
            );
        };
        i += 1;
        match arg.as_str() {
            "-y" | "--yes" => continue,
            "--" => match args.get(i) {
                Some(spec) => {
                    i += 1;
                    break spec;
                }
                None => {
                    return unsupported(
                        npx,
                        "npx names no package after --; write npx -y NAME@VERSION".to_string(),
                    );
                }
            },
            a if a.starts_with('-') => {
                return unsupported(
                    npx,
                    format!(
                        "npx option {a} {} and changes what runs; remove it (only -y/--yes is accepted before the package)",
                        npx_option_reason(option_name(a))
                    ),
                );
            }
            _ => break arg,
        }
    };
    // A scoped name's own `@` is its first character; a version follows the next one.
    let (name, version) = match spec.strip_prefix('@') {
        Some(rest) => match rest.split_once('@') {
            Some((name, version)) => (&spec[..name.len() + 1], Some(version)),
            None => (spec.as_str(), None),
        },
        None => match spec.split_once('@') {
            Some((name, version)) => (name, Some(version)),
            None => (spec.as_str(), None),
        },
    };
    if !is_npm_name(name) {
        return unsupported(
            npx,
            format!(
                "npx {spec:?}: {name:?} is not an npm package name (lower-case a-z 0-9 - . _ ~, optionally @scope/name); URLs, paths, git and aliases are not run from a binding"
            ),
        );
    }
    if let Some(version) = version
        && !is_semver(version)
    {
        return unsupported(
            npx,
            format!(
                "npx {spec:?}: {version:?} is not one exact version, and a tag or range can move; write the exact version, such as {name}@1.2.3, or name no version to run the bound one"
            ),
        );
    }
    Parsed::Request(PackageRequest {
        launcher: npx,
        ecosystem: Ecosystem::Npm,
        name: name.to_string(),
        version: version.map(str::to_string),
        script: None,
        mcpb_file: None,
        args: args[i..].to_vec(),
    })
}

fn uvx_option_reason(option: &str) -> &'static str {
    match option {
        "--with" | "--with-editable" | "--with-requirements" | "-w" => {
            "installs more packages beside the one named"
        }
        "--python" | "-p" => "chooses another interpreter",
        "--index-url" | "-i" | "--extra-index-url" | "--index" | "--default-index"
        | "--find-links" | "-f" => "fetches from another index",
        _ => "is not one Gatehouse runs from a binding",
    }
}

/// `NAME`, `NAME@VERSION` or `NAME==VERSION`: (normalised name, version).
fn parse_pypi_spec(spec: &str, context: &str) -> Result<(String, Option<String>), String> {
    if spec.contains("://")
        || spec.starts_with("git+")
        || spec.contains(['/', '\\'])
        || spec.starts_with('.')
        || spec.starts_with('~')
    {
        return Err(format!(
            "{context} {spec:?} is a URL, git source or path, not a PyPI package; a binding runs only the reviewed wheel from the registry"
        ));
    }
    if spec.contains('[') {
        return Err(format!(
            "{context} {spec:?} asks for extras, which install more packages; remove [..] (the binding's closure is what is installed)"
        ));
    }
    let (name, version) = match spec.split_once("==") {
        Some((name, version)) => (name, Some(version)),
        None => match spec.split_once('@') {
            Some((name, version)) => (name, Some(version)),
            None => (spec, None),
        },
    };
    let Some(normalized) = normalize_pypi_name(name) else {
        return Err(format!(
            "{context} {spec:?}: {name:?} is not a PyPI project name (ASCII letters, digits, - _ ., starting and ending with a letter or digit); ranges such as >= are not run from a binding"
        ));
    };
    if let Some(version) = version
        && !is_pep440(version)
    {
        return Err(format!(
            "{context} {spec:?}: {version:?} is not one exact version, and a tag or range can move; write the exact normalised version, such as {name}==1.2.0, or name no version to run the bound one"
        ));
    }
    Ok((normalized, version.map(str::to_string)))
}

fn parse_uvx(args: &[String]) -> Parsed {
    let uvx = LauncherKind::Uvx;
    let mut from: Option<(String, Option<String>)> = None;
    let mut i = 0;
    let positional = loop {
        let Some(arg) = args.get(i) else {
            return unsupported(
                uvx,
                "uvx names no package; write uvx NAME@VERSION followed by its arguments"
                    .to_string(),
            );
        };
        i += 1;
        let a = arg.as_str();
        if a == "--" {
            match args.get(i) {
                Some(p) => {
                    i += 1;
                    break p;
                }
                None => {
                    return unsupported(uvx, "uvx names no package after --".to_string());
                }
            }
        }
        if a == "--from" || a.starts_with("--from=") {
            let value = match a.strip_prefix("--from=") {
                Some(v) => v,
                None => match args.get(i) {
                    Some(v) => {
                        i += 1;
                        v.as_str()
                    }
                    None => {
                        return unsupported(uvx, "uvx --from names no package".to_string());
                    }
                },
            };
            if from.is_some() {
                return unsupported(
                    uvx,
                    "uvx --from is given twice; name the package once".to_string(),
                );
            }
            match parse_pypi_spec(value, "uvx --from") {
                Ok(spec) => from = Some(spec),
                Err(reason) => return unsupported(uvx, reason),
            }
            continue;
        }
        if a.starts_with('-') {
            return unsupported(
                uvx,
                format!(
                    "uvx option {a} {} and changes what runs; remove it (only --from NAME==VERSION is accepted before the package)",
                    uvx_option_reason(option_name(a))
                ),
            );
        }
        break arg;
    };
    let (name, version, script) = match from {
        Some((name, version)) => {
            if !is_script_name(positional) {
                return unsupported(
                    uvx,
                    format!(
                        "uvx --from: {positional:?} is not a console-script name; write the command the package declares, such as uvx --from {name} {name}"
                    ),
                );
            }
            (name, version, Some(positional.clone()))
        }
        None => match parse_pypi_spec(positional, "uvx") {
            Ok((name, version)) => (name, version, None),
            Err(reason) => return unsupported(uvx, reason),
        },
    };
    Parsed::Request(PackageRequest {
        launcher: uvx,
        ecosystem: Ecosystem::Pypi,
        name,
        version,
        script,
        mcpb_file: None,
        args: args[i..].to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    fn request(command: &str, args: &[&str]) -> PackageRequest {
        match parse_launcher(command, &strings(args)) {
            Parsed::Request(r) => r,
            other => panic!("{command} {args:?}: {other:?}"),
        }
    }

    /// The launcher and reason of an unsupported request; every needle must be in the reason.
    fn refused(command: &str, args: &[&str], needles: &[&str]) -> LauncherKind {
        match parse_launcher(command, &strings(args)) {
            Parsed::Unsupported { launcher, reason } => {
                for needle in needles {
                    assert!(reason.contains(needle), "{needle:?} not in {reason}");
                }
                launcher
            }
            other => panic!("{command} {args:?} was not refused: {other:?}"),
        }
    }

    const FS: &str = "@modelcontextprotocol/server-filesystem";

    #[test]
    fn npx_specs_are_read_with_and_without_scope_version_and_yes() {
        let r = request(
            "npx",
            &[
                "-y",
                "@modelcontextprotocol/server-filesystem@2026.8.31",
                "/home/u/docs",
            ],
        );
        assert_eq!(r.launcher, LauncherKind::Npx);
        assert_eq!(r.launcher.code(), "npx");
        assert_eq!(r.ecosystem, Ecosystem::Npm);
        assert_eq!(r.name, FS);
        assert_eq!(r.version.as_deref(), Some("2026.8.31"));
        assert_eq!(r.args, ["/home/u/docs"]);
        assert_eq!((r.script, r.mcpb_file), (None, None));

        let r = request("/usr/local/bin/npx", &[FS]);
        assert_eq!((r.name.as_str(), r.version), (FS, None));
        assert!(r.args.is_empty());

        let r = request(
            "C:\\Program Files\\nodejs\\npx.cmd",
            &["--yes", "--", "left-pad@1.3.0", "-y", "--registry=x"],
        );
        assert_eq!(r.name, "left-pad");
        assert_eq!(r.version.as_deref(), Some("1.3.0"));
        // After the spec everything is the server's own, options included.
        assert_eq!(r.args, ["-y", "--registry=x"]);

        // The look-alike is read as written; matching refuses it against the real name.
        let r = request("npx", &["-y", "@modelcontextprotocol/server-filesytem"]);
        assert_eq!(r.name, "@modelcontextprotocol/server-filesytem");
        assert_eq!(
            request("npx", &["server-filesystem"]).name,
            "server-filesystem"
        );
    }

    #[test]
    fn npx_tags_ranges_and_junk_versions_are_refused_naming_them() {
        for spec in [
            "left-pad@latest",
            "left-pad@next",
            "left-pad@^1.3.0",
            "left-pad@~1.2",
            "left-pad@1.x",
            "left-pad@>=1",
            "left-pad@2026.8.31 ",
            "left-pad@",
            "left-pad@v1.3.0",
            "@modelcontextprotocol/server-filesystem@latest",
        ] {
            let version = spec.rsplit_once('@').unwrap().1;
            refused(
                "npx",
                &["-y", spec],
                &[
                    &format!("{version:?}"),
                    "a tag or range can move",
                    "exact version",
                ],
            );
        }
    }

    #[test]
    fn npx_options_that_change_what_runs_are_refused_by_name() {
        for (args, option) in [
            (&["-p", "evil", "left-pad"][..], "-p"),
            (&["--package=evil", "left-pad"], "--package=evil"),
            (&["-c", "rm -rf /"], "-c"),
            (&["--call", "sh"], "--call"),
            (
                &["--registry", "https://evil.example", "left-pad"],
                "--registry",
            ),
            (
                &["--node-options=--require=/x.js", "left-pad"],
                "--node-options=--require=/x.js",
            ),
            (&["-x", "left-pad"], "-x"),
            (&["--yes=false", "left-pad"], "--yes=false"),
            (
                &["-y", "--ignore-scripts=false", "left-pad"],
                "--ignore-scripts=false",
            ),
        ] {
            assert_eq!(
                refused("npx", args, &[&format!("npx option {option} ")]),
                LauncherKind::Npx
            );
        }
        refused("npx", &["-y"], &["names no package"]);
        refused("npx", &["--"], &["after --"]);
        for spec in [
            "Left-Pad",
            "github:user/repo",
            "./local",
            "https://evil.example/x.tgz",
            "@scope",
            "@Scope/x",
        ] {
            refused("npx", &[spec], &["npm package name"]);
        }
        // `alias@npm:left-pad` splits to a valid name and a non-version: still refused.
        refused("npx", &["alias@npm:left-pad"], &["exact version"]);
    }

    #[test]
    fn uvx_specs_read_as_pypi_names_normalised() {
        let r = request("uvx", &["mcp-server-time", "--local-timezone", "UTC"]);
        assert_eq!(r.launcher, LauncherKind::Uvx);
        assert_eq!(r.ecosystem, Ecosystem::Pypi);
        assert_eq!(r.name, "mcp-server-time");
        assert_eq!(r.version, None);
        assert_eq!(r.args, ["--local-timezone", "UTC"]);

        let r = request("/opt/bin/uvx", &["MCP_Server.time@2026.10.19"]);
        assert_eq!(r.name, "mcp-server-time");
        assert_eq!(r.version.as_deref(), Some("2026.10.19"));
        let r = request("uvx.exe", &["mcp-server-time==2026.10.19"]);
        assert_eq!(r.version.as_deref(), Some("2026.10.19"));

        let r = request(
            "uvx",
            &[
                "--from",
                "mcp-server-time==2026.10.19",
                "mcp-server-time",
                "x",
            ],
        );
        assert_eq!(r.script.as_deref(), Some("mcp-server-time"));
        assert_eq!(r.version.as_deref(), Some("2026.10.19"));
        assert_eq!(r.args, ["x"]);
        let r = request("uvx", &["--from=Mcp-Server-Time@1.0", "srv"]);
        assert_eq!(
            (r.name.as_str(), r.script.as_deref()),
            ("mcp-server-time", Some("srv"))
        );
        let r = request("uvx", &["--from", "mcp-server-time", "srv"]);
        assert_eq!(r.version, None);

        let r = request("uv", &["tool", "run", "mcp-server-time"]);
        assert_eq!(
            (r.launcher, r.name.as_str()),
            (LauncherKind::Uvx, "mcp-server-time")
        );
        assert_eq!(
            parse_launcher("uv", &strings(&["run", "x.py"])),
            Parsed::NotALauncher
        );
        assert_eq!(
            parse_launcher("uv", &strings(&["tool"])),
            Parsed::NotALauncher
        );
    }

    #[test]
    fn uvx_options_sources_extras_and_inexact_versions_are_refused() {
        for (args, option) in [
            (&["--with", "evil", "mcp-server-time"][..], "--with"),
            (&["--python", "3.9", "x"], "--python"),
            (&["-p", "3.9", "x"], "-p"),
            (&["--index-url", "https://evil.example", "x"], "--index-url"),
            (
                &["--extra-index-url=https://evil.example", "x"],
                "--extra-index-url=https://evil.example",
            ),
            (&["--find-links", "./wheels", "x"], "--find-links"),
            (&["--from", "x==1.0", "--with", "y", "x"], "--with"),
            (&["--isolated", "x"], "--isolated"),
        ] {
            assert_eq!(
                refused("uvx", args, &[&format!("uvx option {option} ")]),
                LauncherKind::Uvx
            );
        }
        refused(
            "uvx",
            &["--from", "git+https://github.com/x/y", "y"],
            &["git source"],
        );
        refused("uvx", &["--from", "./local", "y"], &["path"]);
        refused("uvx", &["https://evil.example/x.whl"], &["URL"]);
        refused("uvx", &["mcp-server-time[cli]"], &["extras"]);
        refused(
            "uvx",
            &["--from", "a==1.0", "--from", "a==1.0", "a"],
            &["twice"],
        );
        refused("uvx", &["--from"], &["names no package"]);
        refused("uvx", &["--from", "a==1.0"], &["names no package"]);
        refused("uvx", &["--from", "a", "$(id)"], &["console-script"]);
        for (spec, version) in [
            ("mcp-server-time===1.0", "=1.0"),
            ("mcp-server-time@latest", "latest"),
            ("mcp-server-time==1.0 ", "1.0 "),
            ("mcp-server-time==1.0RC1", "1.0RC1"),
            ("mcp-server-time==", ""),
        ] {
            refused(
                "uvx",
                &[spec],
                &[&format!("{version:?}"), "tag or range can move"],
            );
        }
        for spec in ["mcp-server-time>=1.0", "mcp-server-time~=1.0", "-x", "é"] {
            let _ = refused("uvx", &["--", spec], &["PyPI project name"]);
        }
        refused("uvx", &[], &["names no package"]);
    }

    #[test]
    fn a_mcpb_path_is_a_request_by_stem_and_other_commands_are_not_launchers() {
        let r = request("/home/u/bundles/hello-world.mcpb", &["--verbose"]);
        assert_eq!(r.launcher, LauncherKind::Mcpb);
        assert_eq!(r.ecosystem, Ecosystem::Mcpb);
        assert_eq!(r.name, "hello-world");
        assert_eq!(
            r.mcpb_file,
            Some(PathBuf::from("/home/u/bundles/hello-world.mcpb"))
        );
        assert_eq!(r.args, ["--verbose"]);
        refused("/x/.mcpb", &[], &["not a bundle name"]);
        refused("/x/a b.mcpb", &[], &["not a bundle name"]);
        for (command, args) in [
            ("node", &["x.js"][..]),
            ("python", &["-m", "x"]),
            ("/usr/bin/npx-evil", &["x"]),
            ("npxx", &["x"]),
            ("my-npx", &["x"]),
            ("uvx.sh", &["x"]),
            ("hello.mcpb.sh", &[]),
            ("", &[]),
        ] {
            assert_eq!(
                parse_launcher(command, &strings(args)),
                Parsed::NotALauncher,
                "{command}"
            );
        }
    }
}
