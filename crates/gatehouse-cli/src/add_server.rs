//! `gatehouse bundle add-server`: the admin's whole journey from a package to a signed entry.
//! The closure comes from what the admin reviewed (a lockfile, a hashed requirements file),
//! never from a range; the tools pinned are the ones the installed server lists.

use std::path::Path;

use gatehouse_attest::package::{Ecosystem, PackageBinding, parse_package};
use gatehouse_attest::sign_document;
use gatehouse_host::host::Host;
use gatehouse_host::system_clock;
use gatehouse_package::binding::{
    BindingError, Common, mcpb_binding, npm_binding, parse_user_arg_rule, pypi_binding,
};
use gatehouse_package::mcpb::{ServerType, read_mcpb};
use gatehouse_package::wheels::{self, parse_requirements};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::admin::read_json;
use crate::cli::AddServerArgs;
use crate::commands::{Context, report};
use crate::entry::{
    DEFINITIONS_SPEC_VERSION, choose_tools, confinement_of, entry_names, findings_json,
    finish_entry, open_bundle, write_entry,
};
use crate::failure::Failure;

pub async fn run(context: &Context, args: &AddServerArgs) -> Result<u8, Failure> {
    // The confinement flags are checked (and refused with --url) before anything is read or
    // started.
    let confinement = confinement_of(args)?;
    let (mut document, key_id, signing) = open_bundle(args)?;
    if let Some(url) = &args.url {
        return crate::add_server_remote::run(context, args, url, &mut document, &key_id, &signing)
            .await;
    }
    if let Some(command_line) = &args.stdio {
        return stdio(
            context,
            args,
            command_line,
            confinement,
            &mut document,
            &key_id,
            &signing,
        )
        .await;
    }

    let rules = args
        .user_args
        .iter()
        .map(|r| parse_user_arg_rule(r).map_err(|e| Failure::usage(format!("--user-arg {e}"))))
        .collect::<Result<Vec<_>, _>>()?;
    let common = Common {
        entry: args.entry.clone(),
        args: args.args.clone(),
        user_args: rules,
        interpreter_sha256: Vec::new(),
    };
    let (name, version, mut binding, mcpb_file) = if let Some(spec) = &args.npm {
        let (name, version, binding) = npm(context, spec, args, common).await?;
        (name, version, binding, None)
    } else if let Some(spec) = &args.pypi {
        let (name, version, binding) = pypi(context, spec, args, common).await?;
        (name, version, binding, None)
    } else if let Some(file) = &args.mcpb {
        let (name, version, binding, file) = mcpb(file, args, common)?;
        (name, version, binding, Some(file))
    } else {
        return Err(Failure::usage(
            "name what to bind with --npm, --pypi, --mcpb or --stdio",
        ));
    };
    let sad = json!({
        "v": "1.0", "id": args.id,
        "publisher": args.publisher.clone().unwrap_or_else(|| name.clone()),
        "version": version, "clearance": args.clearance, "capabilities": ["mcp-server"],
    });
    let attestation = sign_document(sad.as_object().expect("an object"), &key_id, &signing)
        .map_err(|e| Failure::usage(format!("cannot sign the attestation: {e}")))?;
    binding["attestation"] = Value::Object(attestation);
    let parsed: PackageBinding = parse_package(&binding, "package")
        .map_err(|e| Failure::usage(format!("the binding is not valid: {e}")))?;

    let preview = Host::preview_package(
        &parsed,
        context.package_sources.as_deref(),
        mcpb_file.as_deref(),
        system_clock(),
    )
    .await?;
    let (allowed, pins) = choose_tools(&preview.tools, args)?;

    let mut entry = json!({"id": args.id, "package": binding});
    finish_entry(&mut entry, args, &preview.tools, &allowed, pins);
    if let Some(confinement) = confinement {
        entry["confinement"] = confinement;
    }
    let replaced = write_entry(args, &mut document, entry, DEFINITIONS_SPEC_VERSION)?;

    let tools: Vec<&str> = preview
        .tools
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    report(
        context,
        json!({
            "bundle": args.bundle, "id": args.id, "replaced": replaced,
            "package": name, "version": version, "closure": preview.closure,
            "files": preview.files, "interpreter": preview.interpreter,
            "tools_listed": tools, "tools_allowed": entry_names(&args.bundle, &args.id),
            "findings": findings_json(&preview.tools, &allowed, args),
        }),
        &format!(
            "{} {} in {}: {name}@{version}, {} packages ({} files) installed and started; {} of {} tools allowed and pinned. Signatures dropped: sign it again (gatehouse bundle sign --key ROOT_KEY {}).",
            if replaced { "Replaced" } else { "Added" },
            args.id,
            args.bundle.display(),
            preview.closure,
            preview.files,
            entry_names(&args.bundle, &args.id).len(),
            tools.len(),
            args.bundle.display()
        ),
    );
    Ok(0)
}

/// `--stdio 'CMD ARGS'`: the executable resolved on PATH and hashed, started in a throwaway
/// home to list its tools, and bound by command line and SHA-256 (a stdio binding, any bundle
/// version).
async fn stdio(
    context: &Context,
    args: &AddServerArgs,
    command_line: &str,
    confinement: Option<Value>,
    document: &mut Value,
    key_id: &str,
    signing: &ed25519_dalek::SigningKey,
) -> Result<u8, Failure> {
    let words = shlex::split(command_line)
        .filter(|w| !w.is_empty())
        .ok_or_else(|| {
            Failure::usage(format!(
                "--stdio {command_line:?}: write the command and its arguments, quoted as a shell would"
            ))
        })?;
    let (command, command_args) = words.split_first().expect("not empty");
    let program = if command.contains('/') {
        std::fs::canonicalize(command).ok()
    } else {
        which(command)
    }
    .filter(|p| p.is_file())
    .ok_or_else(|| {
        Failure::usage(format!(
            "--stdio: {command:?} is not an executable file here (looked on PATH); give its absolute path"
        ))
    })?;
    let sha256 = sha256_hex(&program)?;
    let tools = Host::preview_stdio(&program, command_args, system_clock()).await?;
    let (allowed, pins) = choose_tools(&tools, args)?;
    let sad = json!({
        "v": "1.0", "id": args.id,
        "publisher": args.publisher.clone().unwrap_or_else(|| program.display().to_string()),
        "version": sha256[..12].to_string(), "clearance": args.clearance,
        "capabilities": ["mcp-server"],
    });
    let attestation = sign_document(sad.as_object().expect("an object"), key_id, signing)
        .map_err(|e| Failure::usage(format!("cannot sign the attestation: {e}")))?;
    let mut entry = json!({
        "id": args.id,
        "stdio": {"command": program, "args": command_args, "sha256": sha256,
                  "attestation": attestation},
    });
    finish_entry(&mut entry, args, &tools, &allowed, pins);
    if let Some(confinement) = confinement {
        entry["confinement"] = confinement;
    }
    // A stdio binding is read by every bundle version; only carried definitions need 6 (and
    // a confinement 7, which `write_entry` sees to).
    let spec = if entry.get("toolDefinitions").is_some() {
        DEFINITIONS_SPEC_VERSION
    } else {
        1
    };
    let replaced = write_entry(args, document, entry, spec)?;
    let listed: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    let allowed_now = entry_names(&args.bundle, &args.id);
    report(
        context,
        json!({
            "bundle": args.bundle, "id": args.id, "replaced": replaced,
            "command": program, "sha256": sha256,
            "tools_listed": listed, "tools_allowed": allowed_now,
            "findings": findings_json(&tools, &allowed, args),
        }),
        &format!(
            "{} {} in {}: {} (SHA-256 {sha256}) started; {} of {} tools allowed and pinned. Signatures dropped: sign it again (gatehouse bundle sign --key ROOT_KEY {}).",
            if replaced { "Replaced" } else { "Added" },
            args.id,
            args.bundle.display(),
            program.display(),
            allowed_now.len(),
            listed.len(),
            args.bundle.display()
        ),
    );
    Ok(0)
}

/// The allowed tools written for `id`, read back from what was written.
/// `NAME@VERSION`, the scope's `@` not counting.
fn split_npm(spec: &str) -> Result<(String, String), Failure> {
    let at = spec[1..].rfind('@').map(|i| i + 1).ok_or_else(|| {
        Failure::usage(format!(
            "--npm {spec:?} names no version; write NAME@VERSION with the exact version the lockfile installs"
        ))
    })?;
    Ok((spec[..at].to_string(), spec[at + 1..].to_string()))
}

fn binding_failure(source: &Path, error: BindingError) -> Failure {
    Failure::usage(format!("{}: {error} ({})", source.display(), error.code()))
}

/// The machine's digest of `command` on PATH, then the admin's extra ones.
fn interpreter_digests(command: &str, args: &AddServerArgs) -> Result<Vec<String>, Failure> {
    let path = which(command).ok_or_else(|| {
        Failure::usage(format!(
            "no `{command}` on PATH: the binding allows the digest of the {command} that runs it; install the {command} you reviewed and run add-server where it is on PATH"
        ))
    })?;
    let mut digests = vec![sha256_hex(&path)?];
    digests.extend(args.interpreter_sha256.iter().cloned());
    Ok(digests)
}

async fn npm(
    context: &Context,
    spec: &str,
    args: &AddServerArgs,
    mut common: Common,
) -> Result<(String, String, Value), Failure> {
    let (name, version) = split_npm(spec)?;
    // The lockfile the admin reviewed, or npm's resolution from the registry now.
    let (lock, source) = match &args.lockfile {
        Some(lockfile) => (read_json(lockfile)?, lockfile.clone()),
        None => (
            Host::resolve_npm_lockfile(&name, &version, context.package_sources.as_deref()).await?,
            std::path::PathBuf::from("(npm's resolution from the registry)"),
        ),
    };
    common.interpreter_sha256 = interpreter_digests("node", args)?;
    let binding =
        npm_binding(&lock, &name, &version, &common).map_err(|e| binding_failure(&source, e))?;
    Ok((name, version, binding))
}

/// `NAME==VERSION`.
fn split_pypi(spec: &str) -> Result<(String, String), Failure> {
    match spec.split_once("==") {
        Some((name, version))
            if !name.trim().is_empty() && !version.is_empty() && !version.starts_with('=') =>
        {
            Ok((name.trim().to_string(), version.to_string()))
        }
        _ => Err(Failure::usage(format!(
            "--pypi {spec:?} is not NAME==VERSION; write the exact version the requirements file pins"
        ))),
    }
}

async fn pypi(
    context: &Context,
    spec: &str,
    args: &AddServerArgs,
    mut common: Common,
) -> Result<(String, String, Value), Failure> {
    let (name, version) = split_pypi(spec)?;
    // The requirements the admin reviewed, or pip's resolution from the index now.
    let (text, file) = match &args.requirements {
        Some(file) => (
            std::fs::read_to_string(file)
                .map_err(|e| Failure::usage(format!("cannot read {}: {e}", file.display())))?,
            file.clone(),
        ),
        None => (
            Host::resolve_pypi_requirements(&name, &version, context.package_sources.as_deref())
                .await?,
            std::path::PathBuf::from("(pip's resolution from the index)"),
        ),
    };
    let file = &file;
    let requirements = parse_requirements(&text)
        .map_err(|e| binding_failure(file, BindingError::Requirements(e)))?;
    common.interpreter_sha256 = interpreter_digests("python3", args)?;
    let python = which("python3").ok_or_else(|| Failure::usage("no `python3` on PATH"))?;
    let env = python_environment(&python)?;
    let mut files = Vec::new();
    for requirement in requirements.iter().filter(|r| r.applies(&env)) {
        files.extend(
            Host::package_files(
                context.package_sources.as_deref(),
                Ecosystem::Pypi,
                &requirement.name,
            )
            .await?,
        );
    }
    let binding = pypi_binding(&text, &name, &version, &files, &env, &common)
        .map_err(|e| binding_failure(file, e))?;
    let name = binding["name"].as_str().unwrap_or(&name).to_string();
    Ok((name, version, binding))
}

/// What `wheels::choose` needs to know of the Python at `python`, asked of it (isolated, no
/// site): its version, and the C library it runs on.
fn python_environment(python: &Path) -> Result<wheels::Environment, Failure> {
    let out = std::process::Command::new(python)
        .args([
            "-I",
            "-S",
            "-c",
            "import platform, sys; print(sys.implementation.name, sys.version_info[0], sys.version_info[1]); print(*platform.libc_ver())",
        ])
        .output()
        .map_err(|e| Failure::usage(format!("cannot run {}: {e}", python.display())))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let refuse = |why: &str| {
        Failure::usage(format!(
            "{}: {why}; Gatehouse binds wheels for CPython 3 on glibc Linux",
            python.display()
        ))
    };
    if !out.status.success() {
        return Err(refuse("it did not report its version"));
    }
    let mut lines = text.lines();
    let version: Vec<&str> = lines.next().unwrap_or_default().split(' ').collect();
    let libc: Vec<&str> = lines.next().unwrap_or_default().split(' ').collect();
    let number = |t: &str| {
        t.parse::<u32>()
            .map_err(|_| refuse("its version does not parse"))
    };
    let python_version = match version.as_slice() {
        ["cpython", major, minor] => (number(major)?, number(minor)?),
        _ => return Err(refuse("it is not CPython")),
    };
    let glibc = match libc.as_slice() {
        ["glibc", v] => match v.split_once('.') {
            Some((major, minor)) => (
                number(major)?,
                number(minor.split('.').next().unwrap_or(minor))?,
            ),
            None => return Err(refuse("its glibc version does not parse")),
        },
        _ => return Err(refuse("it does not run on glibc")),
    };
    let arch = match std::env::consts::ARCH {
        "x86_64" => wheels::Arch::X86_64,
        "aarch64" => wheels::Arch::Aarch64,
        other => {
            return Err(refuse(&format!(
                "the {other} architecture has no wheel tags here"
            )));
        }
    };
    if std::env::consts::OS != "linux" {
        return Err(refuse("this is not Linux"));
    }
    Ok(wheels::Environment {
        python: python_version,
        implementation: wheels::Implementation::CPython,
        platform: wheels::Platform {
            os: wheels::Os::Linux,
            arch,
        },
        glibc,
    })
}

fn mcpb(
    file: &Path,
    args: &AddServerArgs,
    mut common: Common,
) -> Result<(String, String, Value, std::path::PathBuf), Failure> {
    let file = std::fs::canonicalize(file)
        .map_err(|e| Failure::usage(format!("cannot read {}: {e}", file.display())))?;
    let bytes = std::fs::read(&file)
        .map_err(|e| Failure::usage(format!("cannot read {}: {e}", file.display())))?;
    let stem = file
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_suffix(".mcpb"))
        .ok_or_else(|| {
            Failure::usage(format!(
                "{} is not a .mcpb file name; the config names the bundle by its path, NAME.mcpb",
                file.display()
            ))
        })?
        .to_string();
    let manifest = read_mcpb(&bytes).map_err(|e| binding_failure(&file, BindingError::Mcpb(e)))?;
    common.interpreter_sha256 = match manifest.server_type {
        ServerType::Node => interpreter_digests("node", args)?,
        ServerType::Python => interpreter_digests("python3", args)?,
        ServerType::Binary => args.interpreter_sha256.clone(),
    };
    let binding = mcpb_binding(&bytes, &stem, &common).map_err(|e| binding_failure(&file, e))?;
    Ok((stem, manifest.version, binding, file))
}

fn which(command: &str) -> Option<std::path::PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|dir| Path::new(dir).join(command))
        .find(|p| p.is_file())
        .and_then(|p| std::fs::canonicalize(p).ok())
}

fn sha256_hex(path: &Path) -> Result<String, Failure> {
    let bytes = std::fs::read(path)
        .map_err(|e| Failure::usage(format!("cannot read {}: {e}", path.display())))?;
    Ok(hex::encode(Sha256::digest(bytes)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npm_specs_split_after_the_scope() {
        assert_eq!(
            split_npm("@modelcontextprotocol/server-filesystem@2026.8.31").unwrap(),
            (
                "@modelcontextprotocol/server-filesystem".into(),
                "2026.8.31".into()
            )
        );
        assert_eq!(
            split_npm("zod@3.1.0").unwrap(),
            ("zod".into(), "3.1.0".into())
        );
        assert!(split_npm("@scope/name").is_err());
        assert!(split_npm("name").is_err());
    }

    #[test]
    fn pypi_specs_need_an_exact_version() {
        assert_eq!(
            split_pypi("mcp-server-time==2026.10.19").unwrap(),
            ("mcp-server-time".into(), "2026.10.19".into())
        );
        for bad in [
            "mcp-server-time",
            "mcp-server-time>=1",
            "==1.0",
            "x===1.0",
            "x==",
        ] {
            assert!(split_pypi(bad).is_err(), "{bad}");
        }
    }
}
