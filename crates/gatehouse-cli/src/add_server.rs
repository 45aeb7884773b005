//! `gatehouse bundle add-server`: the admin's whole journey from a package to a signed entry.
//! The closure comes from what the admin reviewed (a lockfile, a hashed requirements file),
//! never from a range; the tools pinned are the ones the installed server lists.

use std::path::Path;

use gatehouse_attest::package::{PackageBinding, parse_package};
use gatehouse_attest::pins::tool_pin;
use gatehouse_attest::sign_document;
use gatehouse_host::host::{Host, PackagePreview};
use gatehouse_host::system_clock;
use gatehouse_package::lockfile::{Platform, npm_closure};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::admin::{load_signing_key, read_json, write_atomic};
use crate::cli::AddServerArgs;
use crate::commands::{Context, report};
use crate::failure::Failure;

/// The bundle version that carries package bindings.
const PACKAGE_SPEC_VERSION: u64 = 4;

pub async fn run(context: &Context, args: &AddServerArgs) -> Result<u8, Failure> {
    let mut document = read_json(&args.bundle)?;
    let signed = document
        .get_mut("signed")
        .and_then(Value::as_object_mut)
        .ok_or_else(|| {
            Failure::usage(format!(
                "{} is not a bundle (no \"signed\" object); start one with `gatehouse bundle init`",
                args.bundle.display()
            ))
        })?;
    let (key_id, signing) = load_signing_key(&args.signer_key)?;
    check_signer(signed, &key_id, &args.clearance)?;

    let (name, version, mut binding) = if let Some(spec) = &args.npm {
        npm_binding(spec, args)?
    } else {
        return Err(Failure::usage(
            "--pypi is not handled by add-server yet; write the entry by hand (trust-roots/README.md)",
        ));
    };
    if !args.args.is_empty() {
        binding["args"] = json!(args.args);
    }
    let rules = args
        .user_args
        .iter()
        .map(|r| user_arg_rule(r))
        .collect::<Result<Vec<_>, _>>()?;
    if !rules.is_empty() {
        binding["userArgs"] = Value::Array(rules);
    }
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
        None,
        system_clock(),
    )
    .await?;
    let (allowed, pins) = choose_tools(&preview, args)?;

    let mut entry = json!({"id": args.id, "package": binding, "allowedTools": allowed});
    if !pins.is_empty() {
        entry["toolPins"] = Value::Object(pins);
    }
    if !args.prompts.is_empty() {
        entry["allowedPrompts"] = json!(args.prompts);
    }
    if !args.resource_prefixes.is_empty() {
        entry["allowedResourcePrefixes"] = json!(args.resource_prefixes);
    }
    let servers = signed
        .entry("servers")
        .or_insert_with(|| json!([]))
        .as_array_mut()
        .ok_or_else(|| Failure::usage("the bundle's \"servers\" is not a list"))?;
    let replaced = match servers.iter().position(|s| s["id"] == json!(args.id)) {
        Some(i) => {
            servers[i] = entry;
            true
        }
        None => {
            servers.push(entry);
            false
        }
    };
    let spec = signed
        .get("specVersion")
        .and_then(Value::as_u64)
        .unwrap_or(1);
    if spec < PACKAGE_SPEC_VERSION {
        signed.insert("specVersion".into(), json!(PACKAGE_SPEC_VERSION));
    }
    document["signatures"] = json!([]);
    let text = format!(
        "{}\n",
        serde_json::to_string_pretty(&document).expect("json")
    );
    write_atomic(&args.bundle, text.as_bytes(), 0o644)?;

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

/// The allowed tools written for `id`, read back from what was written.
fn entry_names(bundle: &Path, id: &str) -> Vec<String> {
    std::fs::read(bundle)
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .and_then(|d| {
            d["signed"]["servers"]
                .as_array()?
                .iter()
                .find(|s| s["id"] == json!(id))
                .and_then(|s| s["allowedTools"].as_array().cloned())
        })
        .unwrap_or_default()
        .iter()
        .filter_map(|v| v.as_str().map(String::from))
        .collect()
}

/// The signer key must be in the bundle and approved for the clearance, or every admission
/// of this entry would be refused later, far from the mistake.
fn check_signer(signed: &Map<String, Value>, key_id: &str, clearance: &str) -> Result<(), Failure> {
    let key = signed
        .get("keys")
        .and_then(Value::as_array)
        .and_then(|keys| keys.iter().find(|k| k["id"] == json!(key_id)))
        .ok_or_else(|| {
            Failure::usage(format!(
                "the signer key {key_id:?} is not one of the bundle's attestation keys; add its .pub.json with `bundle init --signer-key` (or to \"keys\")"
            ))
        })?;
    let approved = key["approvedClearances"]
        .as_array()
        .is_some_and(|l| l.iter().any(|c| c == &json!(clearance)));
    if approved {
        Ok(())
    } else {
        Err(Failure::usage(format!(
            "the signer key {key_id:?} is not approved for clearance {clearance:?} in this bundle; pick one of its approvedClearances"
        )))
    }
}

/// `NAME@VERSION`, the scope's `@` not counting.
fn split_npm(spec: &str) -> Result<(String, String), Failure> {
    let at = spec[1..].rfind('@').map(|i| i + 1).ok_or_else(|| {
        Failure::usage(format!(
            "--npm {spec:?} names no version; write NAME@VERSION with the exact version the lockfile installs"
        ))
    })?;
    Ok((spec[..at].to_string(), spec[at + 1..].to_string()))
}

fn npm_binding(spec: &str, args: &AddServerArgs) -> Result<(String, String, Value), Failure> {
    let (name, version) = split_npm(spec)?;
    let lockfile = args.lockfile.as_ref().ok_or_else(|| {
        Failure::usage(format!(
            "--npm needs --lockfile: the closure is bound from what you reviewed. Generate one with `npm install --package-lock-only --ignore-scripts {name}@{version}` in an empty directory and pass its package-lock.json"
        ))
    })?;
    let lock = read_json(lockfile)?;
    let closure = npm_closure(&lock, &name, &version, Platform::current())
        .map_err(|e| Failure::usage(format!("{}: {e}", lockfile.display())))?;
    let entry = match &args.entry {
        Some(entry) => entry.clone(),
        None => npm_bin(&lock, &name).map_err(|why| {
            Failure::usage(format!(
                "{}: {why}; name the file with --entry",
                lockfile.display()
            ))
        })?,
    };
    let node = which("node").ok_or_else(|| {
        Failure::usage("no `node` on PATH: the binding allows the digest of the Node that runs it; install the Node you reviewed, or pass its digest with --interpreter-sha256 and run add-server where it is installed")
    })?;
    let mut digests = vec![sha256_hex(&node)?];
    digests.extend(args.interpreter_sha256.iter().map(|d| d.to_lowercase()));
    digests.dedup();
    let binding = json!({
        "ecosystem": "npm", "name": name, "version": version,
        "artifact": closure.package.artifact.to_text(),
        "closure": closure.closure.iter().map(|p| json!({
            "name": p.name, "version": p.version, "artifact": p.artifact.to_text(), "path": p.path,
        })).collect::<Vec<_>>(),
        "entry": entry,
        "interpreter": {"kind": "node", "sha256": digests},
    });
    Ok((name, version, binding))
}

/// The package's only `bin` file, from its lockfile entry.
fn npm_bin(lock: &Value, name: &str) -> Result<String, String> {
    let entry = &lock["packages"][format!("node_modules/{name}")];
    match &entry["bin"] {
        Value::Object(bins) if bins.len() == 1 => bins
            .values()
            .next()
            .and_then(Value::as_str)
            .map(|p| p.trim_start_matches("./").to_string())
            .ok_or_else(|| "its bin is not a path".to_string()),
        Value::Object(bins) if bins.len() > 1 => Err(format!(
            "{name} has several bins ({})",
            bins.keys().cloned().collect::<Vec<_>>().join(", ")
        )),
        _ => Err(format!("{name} declares no bin in the lockfile")),
    }
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

/// `existing_directory_under_home[:ACCESS][:MIN:MAX]` or `one_of:V1,V2[:MIN:MAX]`.
fn user_arg_rule(text: &str) -> Result<Value, Failure> {
    let parts: Vec<&str> = text.split(':').collect();
    let bad = || {
        Failure::usage(format!(
            "--user-arg {text:?} is not a rule; write existing_directory_under_home[:read_only|read_write][:MIN:MAX] or one_of:V1,V2[:MIN:MAX]"
        ))
    };
    let counts = |rest: &[&str]| -> Result<(u64, u64), Failure> {
        match rest {
            [] => Ok((1, 1)),
            [min, max] => Ok((
                min.parse().map_err(|_| bad())?,
                max.parse().map_err(|_| bad())?,
            )),
            _ => Err(bad()),
        }
    };
    match parts.as_slice() {
        ["existing_directory_under_home", rest @ ..] => {
            let (access, rest) = match rest.first().copied() {
                Some(a @ ("read_only" | "read_write")) => (a, &rest[1..]),
                _ => ("read_only", rest),
            };
            let (min, max) = counts(rest)?;
            Ok(
                json!({"rule": "existing_directory_under_home", "access": access, "min": min, "max": max}),
            )
        }
        ["one_of", values, rest @ ..] => {
            let (min, max) = counts(rest)?;
            Ok(
                json!({"rule": "one_of", "values": values.split(',').collect::<Vec<_>>(), "min": min, "max": max}),
            )
        }
        _ => Err(bad()),
    }
}

/// The tools to allow and their pins, from what the server listed.
fn choose_tools(
    preview: &PackagePreview,
    args: &AddServerArgs,
) -> Result<(Vec<String>, Map<String, Value>), Failure> {
    let listed: Vec<(&str, &Value)> = preview
        .tools
        .iter()
        .filter_map(|t| t["name"].as_str().map(|n| (n, t)))
        .collect();
    let wanted: Vec<String> = if args.all_tools {
        listed.iter().map(|(n, _)| n.to_string()).collect()
    } else {
        args.tools.clone()
    };
    let mut pins = Map::new();
    for name in &wanted {
        let Some((_, definition)) = listed.iter().find(|(n, _)| n == name) else {
            return Err(Failure::usage(format!(
                "--tool {name:?}: the server does not list it; it lists {}",
                listed
                    .iter()
                    .map(|(n, _)| *n)
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        };
        pins.insert(name.clone(), json!(tool_pin(definition)));
    }
    Ok((wanted, pins))
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
    fn user_arg_rules_parse_and_bad_ones_are_refused() {
        assert_eq!(
            user_arg_rule("existing_directory_under_home:read_write:1:8").unwrap(),
            json!({"rule": "existing_directory_under_home", "access": "read_write", "min": 1, "max": 8})
        );
        assert_eq!(
            user_arg_rule("existing_directory_under_home").unwrap()["access"],
            "read_only"
        );
        assert_eq!(
            user_arg_rule("one_of:utc,local").unwrap(),
            json!({"rule": "one_of", "values": ["utc", "local"], "min": 1, "max": 1})
        );
        for bad in [
            "any_path",
            "one_of",
            "existing_directory_under_home:1",
            "one_of:a:x:2",
        ] {
            assert!(user_arg_rule(bad).is_err(), "{bad}");
        }
    }
}
