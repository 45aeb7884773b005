//! A bundle entry as `gatehouse bundle add-server` writes it, whatever it binds (a package, a
//! stdio command, a vouched endpoint): the bundle opened and the signer checked, the tools
//! chosen from a live listing and reviewed, the pins and carried definitions, and the atomic
//! write. Below every kind's module, so each kind (and the proposals that run them) imports
//! down to it.

use std::path::Path;

use ed25519_dalek::SigningKey;
use gatehouse_attest::confinement::CONFINEMENT_SPEC_VERSION;
use gatehouse_attest::gatehouse_confine::{
    ConfinementMode, Grants, HostGrant, MAX_MEMORY_MIB, MAX_PROCESSES, Network, PathGrant,
    confinement_to_json, parse_confinement,
};
use gatehouse_attest::pins::tool_pin;
use gatehouse_host::ErrorCode;
use serde_json::{Map, Value, json};

use crate::admin::{load_signing_key, read_json, write_atomic};
use crate::cli::AddServerArgs;
use crate::failure::Failure;
use crate::gated::Reviewer;
use crate::output;

/// The bundle version that carries package bindings (4) and the pinned tools' whole
/// definitions, `toolDefinitions` (6).
pub(crate) const DEFINITIONS_SPEC_VERSION: u64 = 6;

/// The bundle document, the signer key's id and the key: refused before any server is
/// started when the file is not a bundle or the key may not sign this clearance in it.
pub(crate) fn open_bundle(args: &AddServerArgs) -> Result<(Value, String, SigningKey), Failure> {
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
    Ok((document, key_id, signing))
}

/// The parts of an entry every kind writes alike: the allowed tools, their pins and the pinned
/// definitions carried for reviewers, the allowed prompts and resource prefixes.
pub(crate) fn finish_entry(
    entry: &mut Value,
    args: &AddServerArgs,
    tools: &[Value],
    allowed: &[String],
    pins: Map<String, Value>,
) {
    let definitions = (!pins.is_empty()).then(|| chosen_definitions(tools, allowed));
    entry["allowedTools"] = json!(allowed);
    if let Some(definitions) = definitions {
        entry["toolPins"] = Value::Object(pins);
        entry["toolDefinitions"] = Value::Object(definitions);
    }
    if !args.prompts.is_empty() {
        entry["allowedPrompts"] = json!(args.prompts);
    }
    if !args.resource_prefixes.is_empty() {
        entry["allowedResourcePrefixes"] = json!(args.resource_prefixes);
    }
}

/// The confinement flags given (`--confinement`, `--read`, `--write`, `--host`, `--any-host`,
/// `--processes`, `--memory-mib`), by name, in that order.
fn confinement_flags(args: &AddServerArgs) -> Vec<&'static str> {
    [
        ("--confinement", args.confinement.is_some()),
        ("--read", !args.read.is_empty()),
        ("--write", !args.write.is_empty()),
        ("--host", !args.hosts.is_empty()),
        ("--any-host", args.any_host),
        ("--processes", args.processes.is_some()),
        ("--memory-mib", args.memory_mib.is_some()),
    ]
    .into_iter()
    .filter_map(|(flag, given)| given.then_some(flag))
    .collect()
}

/// The entry's `confinement` object from the confinement flags, each value checked by the
/// same parsers the host reads the bundle with (an error names the flag); `None` when no
/// flag is given. Checked before any server is started. A remote server (`--url`) is refused:
/// it runs elsewhere, where nothing of this machine confines it.
pub(crate) fn confinement_of(args: &AddServerArgs) -> Result<Option<Value>, Failure> {
    let given = confinement_flags(args);
    if given.is_empty() {
        return Ok(None);
    }
    if args.url.is_some() {
        return Err(Failure::usage(format!(
            "{}: a remote server (--url) runs elsewhere, so this machine cannot confine it; leave the confinement flags out (they apply to --stdio, --npm, --pypi and --mcpb)",
            given.join(", ")
        )));
    }
    let modes = ConfinementMode::ALL.map(ConfinementMode::as_str).join(", ");
    let mode = match &args.confinement {
        None => None,
        Some(text) => Some(ConfinementMode::parse(text).ok_or_else(|| {
            Failure::usage(format!("--confinement {text:?} is not one of {modes}"))
        })?),
    };
    let paths = |flag: &str, list: &[String]| -> Result<Vec<PathGrant>, Failure> {
        list.iter()
            .map(|p| PathGrant::parse(p).map_err(|e| Failure::usage(format!("{flag} {p:?}: {e}"))))
            .collect()
    };
    let mut grants = Grants {
        read: paths("--read", &args.read)?,
        write: paths("--write", &args.write)?,
        ..Grants::default()
    };
    if args.any_host {
        grants.network = Network::Any;
    } else if !args.hosts.is_empty() {
        grants.network = Network::Hosts(
            args.hosts
                .iter()
                .map(|h| {
                    HostGrant::parse(h).map_err(|e| Failure::usage(format!("--host {h:?}: {e}")))
                })
                .collect::<Result<_, _>>()?,
        );
    }
    if let Some(n) = args.processes {
        if n > MAX_PROCESSES {
            return Err(Failure::usage(format!(
                "--processes {n}: at most {MAX_PROCESSES} (0, the default, lets the server start no process, threads only)"
            )));
        }
        grants.processes = n;
    }
    if let Some(n) = args.memory_mib {
        if !(1..=MAX_MEMORY_MIB).contains(&n) {
            return Err(Failure::usage(format!(
                "--memory-mib {n}: give 1 to {MAX_MEMORY_MIB} MiB"
            )));
        }
        grants.memory_mib = n;
    }
    // The whole object once more through the bundle's own parser, so what is written is
    // exactly what a host reads back (limits on counts included).
    let written = confinement_to_json(mode, &grants);
    parse_confinement(&written, "confinement").map_err(|e| {
        Failure::usage(format!(
            "the confinement flags ({}) do not make a valid confinement: {e}",
            given.join(", ")
        ))
    })?;
    Ok(Some(written))
}

/// Puts `entry` into the bundle `document` (replacing the entry of the same id), raises its
/// specVersion to at least `spec` (and to 7 when the entry carries `confinement`), drops the
/// signatures (the content changed: `bundle sign` again) and writes the file atomically.
/// Whether an entry was replaced.
pub(crate) fn write_entry(
    args: &AddServerArgs,
    document: &mut Value,
    entry: Value,
    spec: u64,
) -> Result<bool, Failure> {
    let signed = document
        .get_mut("signed")
        .and_then(Value::as_object_mut)
        .ok_or_else(|| Failure::usage("the bundle has no \"signed\" object"))?;
    let confined = entry.get("confinement").is_some();
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
    let current = signed
        .get("specVersion")
        .and_then(Value::as_u64)
        .unwrap_or(1);
    let spec = if confined {
        spec.max(CONFINEMENT_SPEC_VERSION)
    } else {
        spec
    };
    if current < spec {
        signed.insert("specVersion".into(), json!(spec));
    }
    document["signatures"] = json!([]);
    let text = format!(
        "{}\n",
        serde_json::to_string_pretty(&document).expect("json")
    );
    write_atomic(&args.bundle, text.as_bytes(), 0o644)?;
    Ok(replaced)
}

pub(crate) fn entry_names(bundle: &Path, id: &str) -> Vec<String> {
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

/// The tools to allow and their pins, from what the server listed.
pub(crate) fn choose_tools(
    listed_tools: &[Value],
    args: &AddServerArgs,
) -> Result<(Vec<String>, Map<String, Value>), Failure> {
    let listed: Vec<(&str, &Value)> = listed_tools
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
    let reviewed = chosen_findings(listed_tools, &wanted, args);
    for (name, findings) in reviewed.iter().filter(|(_, f)| !f.is_empty()) {
        eprintln!("definition review of {}:", output::safe_name(name));
        for finding in findings {
            eprintln!("  {}", output::finding_line(finding));
        }
    }
    let high: Vec<&str> = reviewed
        .iter()
        .filter(|(_, findings)| gatehouse_review::has_high(findings))
        .map(|(name, _)| name.as_str())
        .collect();
    if !high.is_empty() && !args.accept_findings {
        return Err(Failure {
            code: ErrorCode::DefinitionFindings,
            message: format!(
                "not pinning {}: the definition review found something high in {} (printed above); nothing was written. Read the definitions; leave {} out (name the others with --tool), or pin anyway with --accept-findings if you trust {}",
                high.iter()
                    .map(|n| output::safe_name(n))
                    .collect::<Vec<_>>()
                    .join(", "),
                if high.len() == 1 {
                    "its definition"
                } else {
                    "their definitions"
                },
                if high.len() == 1 { "it" } else { "them" },
                if high.len() == 1 { "it" } else { "them" },
            ),
            exit: 1,
        });
    }
    Ok((wanted, pins))
}

/// The definition review of each chosen tool (in the order chosen), against the tools the
/// bundle's other entries allow: the servers this bundle configures besides this one. Names
/// the server itself lists are left out of those (two entries may serve one tool name).
pub(crate) fn chosen_findings(
    listed_tools: &[Value],
    chosen: &[String],
    args: &AddServerArgs,
) -> Vec<(String, Vec<gatehouse_review::Finding>)> {
    let own: Vec<String> = listed_tools
        .iter()
        .filter_map(|t| t["name"].as_str().map(String::from))
        .collect();
    // The bundle was read (and found to be one) before any server was started; read again
    // here so every kind of entry is reviewed alike. Unreadable now: no other servers known.
    let others: Vec<(String, String)> = read_json(&args.bundle)
        .ok()
        .and_then(|d| d["signed"]["servers"].as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter(|entry| entry["id"] != json!(args.id))
        .flat_map(|entry| {
            let id = entry["id"].as_str().unwrap_or_default().to_string();
            entry["allowedTools"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .filter_map(move |t| t.as_str().map(|t| (id.clone(), t.to_string())))
        })
        .collect();
    let reviewer = Reviewer::new(others, &own);
    chosen
        .iter()
        .filter_map(|name| {
            let definition = listed_tools
                .iter()
                .find(|t| t["name"].as_str() == Some(name))?;
            Some((
                name.clone(),
                reviewer.findings(gatehouse_review::Primitive::Tool, definition),
            ))
        })
        .collect()
}

/// The whole definitions of the chosen tools as listed, by name (`toolDefinitions`): what a
/// reviewer of the bundle reads next to each pin.
fn chosen_definitions(listed_tools: &[Value], chosen: &[String]) -> Map<String, Value> {
    listed_tools
        .iter()
        .filter_map(|t| {
            let name = t["name"].as_str()?;
            chosen
                .iter()
                .any(|c| c == name)
                .then(|| (name.to_string(), t.clone()))
        })
        .collect()
}

/// The chosen tools' findings for the JSON report: name → findings, the clean left out.
pub(crate) fn findings_json(
    listed_tools: &[Value],
    chosen: &[String],
    args: &AddServerArgs,
) -> Value {
    let map: Map<String, Value> = chosen_findings(listed_tools, chosen, args)
        .into_iter()
        .filter(|(_, findings)| !findings.is_empty())
        .map(|(name, findings)| (name, json!(findings)))
        .collect();
    Value::Object(map)
}
