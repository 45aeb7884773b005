//! Admin and operator commands over gatehouse-attest: key files, bundles, attestations.
//! The crate decides; this module reads and writes files and reads the clock.

use std::io::Write;
use std::path::Path;

use ed25519_dalek::SigningKey;
use gatehouse_attest::bundle::{AuditDurability, Bundle, BundleError, VerifiedBundle, sign_bundle};
use gatehouse_attest::keys::{parse_private_key, private_key_document, public_key_document};
use gatehouse_attest::package::{Access, EntryPoint, Interpreter, PackageBinding, UserArgRule};
use gatehouse_attest::{TrustRoot, VerifyContext, sign_document, verify};
use gatehouse_host::fetch::{
    AttestationSource, DEFAULT_FETCH_TIMEOUT, FetchError, fetch_attestation,
};
use gatehouse_host::files::write_atomically;
use gatehouse_host::host::Host;
use gatehouse_host::system_clock;
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::cli::{AttestCommand, BundleCommand};
use crate::commands::{Context, report};
use crate::failure::Failure;
use crate::output;

fn read(path: &Path) -> Result<Vec<u8>, Failure> {
    std::fs::read(path).map_err(|e| Failure::usage(format!("cannot read {}: {e}", path.display())))
}

pub(crate) fn read_json(path: &Path) -> Result<Value, Failure> {
    serde_json::from_slice(&read(path)?).map_err(|e| {
        Failure::usage(format!(
            "{}: not JSON: line {} column {}: {e}",
            path.display(),
            e.line(),
            e.column()
        ))
    })
}

fn now_or(given: Option<&str>) -> Result<OffsetDateTime, Failure> {
    match given {
        Some(text) => OffsetDateTime::parse(text, &Rfc3339).map_err(|_| {
            Failure::usage(format!(
                "--now {text:?} is not an RFC 3339 time like 2026-06-01T12:00:00Z"
            ))
        }),
        None => Ok(OffsetDateTime::now_utc()),
    }
}

pub(crate) fn write_atomic(path: &Path, text: &[u8], mode: u32) -> Result<(), Failure> {
    write_atomically(path, text, mode)
        .map_err(|e| Failure::usage(format!("cannot write {}: {e}", path.display())))
}

fn bundle_failure(path: &Path, error: BundleError) -> Failure {
    Failure {
        code: (&error).into(),
        message: format!("{}: {error}", path.display()),
        exit: 1,
    }
}

pub(crate) fn load_signing_key(path: &Path) -> Result<(String, SigningKey), Failure> {
    parse_private_key(&read(path)?).map_err(|e| Failure::usage(format!("{}: {e}", path.display())))
}

fn verify_bundle_file(
    path: &Path,
    now: OffsetDateTime,
    previous: Option<&Path>,
) -> Result<VerifiedBundle, Failure> {
    let installed = match previous {
        Some(old) => Some(
            Bundle::parse(&read(old)?)
                .and_then(|b| b.verify_as_installed())
                .map_err(|e| bundle_failure(old, e))?,
        ),
        None => None,
    };
    let bundle = Bundle::parse(&read(path)?).map_err(|e| bundle_failure(path, e))?;
    let highest = installed.as_ref().map(|b| b.content().version);
    bundle
        .verify(now, installed.as_ref(), highest)
        .map_err(|e| bundle_failure(path, e))
}

/// `bundle install`: the host decides (threshold, expiry, rotation, rollback), records the
/// decision in the audit log and writes the bundle; this prints what it did.
fn install(context: &Context, path: &Path, now: OffsetDateTime) -> Result<u8, Failure> {
    let accepted = Host::install_bundle(
        path,
        &context.trust.system_dir,
        &context.audit_path,
        now,
        system_clock(),
    )?;
    let replaced = accepted
        .replaces
        .as_ref()
        .map(|old| format!(", replacing {old}"))
        .unwrap_or_default();
    report(
        context,
        json!({"installed": accepted.bundle, "path": accepted.into, "signers": accepted.signers, "replaces": accepted.replaces}),
        &format!(
            "installed {} into {} (signed by {}){replaced}",
            accepted.bundle,
            accepted.into.display(),
            accepted.signers.join(", ")
        ),
    );
    Ok(0)
}

pub fn bundle(context: &Context, command: BundleCommand) -> Result<u8, Failure> {
    match command {
        BundleCommand::Install { bundle, now } => {
            install(context, &bundle, now_or(now.as_deref())?)
        }
        BundleCommand::Keygen { out, id } => {
            if id.is_empty()
                || !id
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
            {
                return Err(Failure::usage(format!(
                    "--id {id:?}: use A-Z a-z 0-9 . _ -"
                )));
            }
            std::fs::create_dir_all(&out)
                .map_err(|e| Failure::usage(format!("cannot create {}: {e}", out.display())))?;
            let private = out.join(format!("{id}.key"));
            let public = out.join(format!("{id}.pub.json"));
            if private.exists() || public.exists() {
                return Err(Failure::usage(format!(
                    "{} or {} exists; refusing to overwrite a key",
                    private.display(),
                    public.display()
                )));
            }
            let mut seed = [0u8; 32];
            getrandom::fill(&mut seed)
                .map_err(|e| Failure::usage(format!("no randomness from the OS: {e}")))?;
            let key = SigningKey::from_bytes(&seed);
            // Private first and created exclusively, readable by the owner only.
            let mut options = std::fs::OpenOptions::new();
            options.write(true).create_new(true);
            std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
            let mut file = options
                .open(&private)
                .map_err(|e| Failure::usage(format!("cannot create {}: {e}", private.display())))?;
            file.write_all(private_key_document(&id, &key).as_bytes())
                .and_then(|()| file.sync_all())
                .map_err(|e| Failure::usage(format!("cannot write {}: {e}", private.display())))?;
            let public_doc = public_key_document(&id, &key.verifying_key());
            write_atomic(
                &public,
                format!(
                    "{}\n",
                    serde_json::to_string_pretty(&public_doc).expect("json")
                )
                .as_bytes(),
                0o644,
            )?;
            report(
                context,
                json!({"id": id, "private_key_file": private, "public_key_file": public, "publicKey": public_doc["publicKey"]}),
                &format!(
                    "created key {id:?}\n  private: {} (mode 0600; keep it offline)\n  public:  {}",
                    private.display(),
                    public.display()
                ),
            );
            Ok(0)
        }
        BundleCommand::Init {
            bundle_id,
            root_keys,
            threshold,
            signer_keys,
            expires,
            out,
        } => {
            if out.exists() {
                return Err(Failure::usage(format!(
                    "{} exists; refusing to overwrite it",
                    out.display()
                )));
            }
            let roots = root_keys
                .iter()
                .map(|p| read_json(p))
                .collect::<Result<Vec<_>, _>>()?;
            let expires = match expires {
                Some(e) => e,
                None => (OffsetDateTime::now_utc() + time::Duration::days(365))
                    .replace_nanosecond(0)
                    .expect("valid")
                    .format(&Rfc3339)
                    .expect("formats"),
            };
            // Signer keys expire with the bundle unless the admin says otherwise: ATSA
            // assertions have no expiry of their own, so the key's notAfter carries it.
            let signers: Vec<Value> = signer_keys
                .iter()
                .map(|p| {
                    let mut key = read_json(p)?;
                    key["approvedClearances"] =
                        json!(["public", "internal", "confidential", "secret"]);
                    key["notAfter"] = json!(expires);
                    Ok(key)
                })
                .collect::<Result<_, Failure>>()?;
            let threshold = threshold.unwrap_or(roots.len() as u64 / 2 + 1);
            let signed = json!({
                "type": "gatehouse-trust-root", "specVersion": 2, "bundleId": bundle_id, "version": 1,
                "expires": expires,
                "root": {"threshold": threshold, "keys": roots},
                "posture": "deny-by-default", "locked": false, "requiredClearance": "internal",
                "scheme": {"name": "gatehouse-default", "levels": [
                    {"name": "public", "rank": 0, "aliases": ["unclassified"]},
                    {"name": "internal", "rank": 10},
                    {"name": "confidential", "rank": 20},
                    {"name": "secret", "rank": 30}
                ]},
                "keys": signers,
                "servers": []
            });
            let document = json!({"signed": signed, "signatures": []});
            // Parse what we wrote, so `init` never produces a bundle `verify` would call invalid.
            let text = format!(
                "{}\n",
                serde_json::to_string_pretty(&document).expect("json")
            );
            Bundle::parse(text.as_bytes()).map_err(|e| bundle_failure(&out, e))?;
            write_atomic(&out, text.as_bytes(), 0o644)?;
            report(
                context,
                json!({"written": out}),
                &format!(
                    "wrote {} (unsigned; add servers, then `gatehouse bundle sign`)",
                    out.display()
                ),
            );
            Ok(0)
        }
        BundleCommand::Sign { key, bundle } => {
            let (key_id, signing) = load_signing_key(&key)?;
            let mut document = read_json(&bundle)?;
            // Refuse to sign something malformed: a signature is an admin's word.
            Bundle::parse(&read(&bundle)?).map_err(|e| bundle_failure(&bundle, e))?;
            let signature = sign_bundle(&document["signed"], &key_id, &signing)
                .map_err(|e| bundle_failure(&bundle, e))?;
            let signatures = document["signatures"]
                .as_array_mut()
                .ok_or_else(|| Failure::usage("\"signatures\" is not an array"))?;
            signatures.retain(|s| s["keyid"] != json!(key_id));
            signatures.push(signature);
            write_atomic(
                &bundle,
                format!(
                    "{}\n",
                    serde_json::to_string_pretty(&document).expect("json")
                )
                .as_bytes(),
                0o644,
            )?;
            report(
                context,
                json!({"signed_by": key_id, "bundle": bundle}),
                &format!("signed {} as {key_id:?}", bundle.display()),
            );
            Ok(0)
        }
        BundleCommand::Verify {
            bundle,
            previous,
            now,
        } => {
            let now = now_or(now.as_deref())?;
            let verified = verify_bundle_file(&bundle, now, previous.as_deref())?;
            let content = verified.content();
            report(
                context,
                json!({"valid": true, "bundle": verified.label(), "signers": verified.signers(), "threshold": content.threshold, "sha256": verified.signed_sha256_hex()}),
                &format!(
                    "{}: valid; signed by {} of {} required ({})",
                    verified.label(),
                    verified.signers().len(),
                    content.threshold,
                    verified.signers().join(", ")
                ),
            );
            Ok(0)
        }
        BundleCommand::AddServer(_) => Err(Failure::usage("bundle add-server runs asynchronously")),
        BundleCommand::Diff { old, new } => crate::bundle_diff::run(context, &old, &new),
        BundleCommand::Inspect { bundle, now } => {
            let now = now_or(now.as_deref())?;
            let parsed = Bundle::parse(&read(&bundle)?).map_err(|e| bundle_failure(&bundle, e))?;
            let verdict = parsed.verify(now, None, None);
            let c = parsed.content();
            let findings: Vec<Value> = c.servers.iter().map(|s| carried_findings(c, s)).collect();
            let servers: Vec<Value> = c
                .servers
                .iter()
                .map(|s| json!({"id": s.id, "origins": s.origins, "stdio": s.stdio.as_ref().map(|b| json!({"command": b.command, "args": b.args, "sha256": hex_encode(&b.sha256)})), "allowedTools": s.allowed_tools, "toolPins": s.tool_pins, "allowedPrompts": s.allowed_prompts, "promptPins": s.prompt_pins, "allowedResources": s.allowed_resources, "allowedResourcePrefixes": s.allowed_resource_prefixes, "package": s.package.as_ref().map(package_json), "vouched": s.vouched.as_ref().map(|v| json!({"endpoints": v.endpoints, "expires": v.expires.format(&Rfc3339).unwrap_or_default(), "identity": VOUCHED_IDENTITY})), "toolDefinitions": s.tool_definitions.len(), "promptDefinitions": s.prompt_definitions.len(), "confinement": s.confinement.as_ref().map(|c| gatehouse_attest::gatehouse_confine::confinement_to_json(c.mode, &c.grants))}))
                .zip(&findings)
                .map(|(mut entry, found)| {
                    entry["findings"] = found.clone();
                    entry
                })
                .collect();
            let data = json!({
                "bundle": format!("{}@{}", c.bundle_id, c.version),
                "specVersion": c.spec_version,
                "expires": c.expires.format(&Rfc3339).unwrap_or_default(),
                "posture": c.posture.as_str(), "locked": c.locked, "requiredClearance": c.required_clearance,
                "root": {"threshold": c.threshold, "keys": c.root_keys.iter().map(|k| &k.id).collect::<Vec<_>>()},
                "signerKeys": c.trust_root.keys.iter().map(|k| json!({"id": k.id, "approvedClearances": k.approved_clearances})).collect::<Vec<_>>(),
                "servers": servers,
                "audit": c.audit.map(|a| match a {
                    AuditDurability::Sync => json!({"durability": "sync"}),
                    AuditDurability::Batched { flush_ms, flush_records } => json!({"durability": "batched", "flushMs": flush_ms, "flushRecords": flush_records}),
                }),
                "retainDays": c.audit_retain_days,
                "confinement": c.confinement_mode.map(|m| json!({"mode": m.as_str()})),
                "valid": verdict.is_ok(),
                "problem": verdict.as_ref().err().map(|e| json!({"code": e.code(), "message": e.to_string()})),
            });
            if context.json {
                output::print_json(&data);
            } else {
                println!("{}", serde_json::to_string_pretty(&data).expect("json"));
                // The package bindings once more, one line each, where a reviewer reads them.
                for s in &c.servers {
                    if let Some(binding) = &s.package {
                        println!("{}: {}", s.id, package_line(binding));
                    }
                    // Vouched entries say how their identity was established, never "attested".
                    if let Some(vouched) = &s.vouched {
                        println!(
                            "{}: {VOUCHED_IDENTITY}; endpoints {}; vouch expires {}",
                            s.id,
                            vouched.endpoints.join(", "),
                            vouched.expires.format(&Rfc3339).unwrap_or_default()
                        );
                    }
                    // What the server may read, write and reach once admitted.
                    if let Some(confinement) = &s.confinement {
                        println!(
                            "{}: {}",
                            s.id,
                            crate::confinement_text::confinement_line(confinement)
                        );
                    }
                    // What a reviewer can read of the pins without connecting (nothing to say
                    // of an entry that pins nothing).
                    if !s.tool_pins.is_empty() || !s.prompt_pins.is_empty() {
                        println!(
                            "{}: definitions carried: {} of {} pinned tool(s), {} of {} pinned prompt(s)",
                            s.id,
                            s.tool_definitions.len(),
                            s.tool_pins.len(),
                            s.prompt_definitions.len(),
                            s.prompt_pins.len()
                        );
                    }
                }
                // The definition review of every carried definition, under its entry.
                for (s, found) in c.servers.iter().zip(&findings) {
                    for item in found.as_array().into_iter().flatten() {
                        println!(
                            "{}: {} {}:",
                            s.id,
                            item["kind"].as_str().unwrap_or_default(),
                            output::safe_name(item["name"].as_str().unwrap_or_default())
                        );
                        let list: Vec<gatehouse_review::Finding> =
                            serde_json::from_value(item["findings"].clone()).unwrap_or_default();
                        output::print_findings(&list, "  ");
                    }
                }
            }
            Ok(if verdict.is_ok() { 0 } else { 1 })
        }
    }
}

/// The definition review of `entry`'s carried definitions (`toolDefinitions`,
/// `promptDefinitions`), against the tools the bundle's other entries allow: a list of
/// `{"kind": "tool"|"prompt", "name", "findings"}`, definitions without findings left out.
fn carried_findings(
    content: &gatehouse_attest::bundle::BundleContent,
    entry: &gatehouse_attest::bundle::ServerPolicy,
) -> Value {
    use gatehouse_review::Primitive;
    let others: Vec<(String, String)> = content
        .servers
        .iter()
        .filter(|other| other.id != entry.id)
        .flat_map(|other| {
            other
                .allowed_tools
                .iter()
                .map(|tool| (other.id.clone(), tool.clone()))
        })
        .collect();
    let own: Vec<String> = entry
        .allowed_tools
        .iter()
        .chain(entry.tool_definitions.keys())
        .cloned()
        .collect();
    let reviewer = crate::gated::Reviewer::new(others, &own);
    let tools = entry
        .tool_definitions
        .iter()
        .map(|(name, d)| ("tool", name, reviewer.findings(Primitive::Tool, d)));
    let prompts = entry
        .prompt_definitions
        .iter()
        .map(|(name, d)| ("prompt", name, reviewer.findings(Primitive::Prompt, d)));
    Value::Array(
        tools
            .chain(prompts)
            .filter(|(_, _, findings)| !findings.is_empty())
            .map(|(kind, name, findings)| json!({"kind": kind, "name": name, "findings": findings}))
            .collect(),
    )
}

/// How `bundle inspect` names a vouched entry's identity: the bundle's word, not the server's.
const VOUCHED_IDENTITY: &str = "vouched for by this bundle; the server publishes no attestation";

/// A bundle entry's package binding as `bundle inspect` shows it: what is pinned, not the
/// hashes of every closure entry (the bundle file has those).
fn package_json(binding: &PackageBinding) -> Value {
    let (digests, node_package) = match &binding.interpreter {
        Interpreter::Node { sha256, package } => (sha256.len(), package.as_ref()),
        Interpreter::Python { sha256 } => (sha256.len(), None),
        Interpreter::Binary => (0, None),
    };
    json!({
        "ecosystem": binding.ecosystem,
        "name": binding.package.name,
        "version": binding.package.version,
        "artifact": binding.package.artifact.to_text(),
        // The bound package and every other one installed with it.
        "closure": binding.closure.len() + 1,
        "entry": entry_text(&binding.entry),
        "interpreter": {
            "kind": binding.interpreter.kind(),
            "allowedDigests": digests,
            "package": node_package.map(|p| format!("{}@{}", p.name, p.version)),
        },
        "args": binding.args,
        "userArgs": binding.user_args.iter().map(user_arg_json).collect::<Vec<_>>(),
    })
}

fn entry_text(entry: &EntryPoint) -> String {
    match entry {
        EntryPoint::Path(path) => path.clone(),
        EntryPoint::ConsoleScript(script) => script.clone(),
        EntryPoint::Callable { module, function } => format!("{module}:{function}"),
    }
}

fn user_arg_json(rule: &UserArgRule) -> Value {
    let (min, max) = rule.count();
    match rule {
        UserArgRule::ExistingDirectoryUnderHome { access, .. } => {
            json!({"rule": rule.rule(), "access": access, "min": min, "max": max})
        }
        UserArgRule::OneOf { values, .. } => {
            json!({"rule": rule.rule(), "values": values, "min": min, "max": max})
        }
    }
}

/// One line: `npm NAME@VERSION · 104 packages · entry dist/index.js · node (1 allowed digest)
/// · user args: existing_directory_under_home read_write 1..4`.
fn package_line(binding: &PackageBinding) -> String {
    let value = package_json(binding);
    let digests = value["interpreter"]["allowedDigests"].as_u64().unwrap_or(0);
    let mut interpreter = binding.interpreter.kind().to_string();
    if !matches!(binding.interpreter, Interpreter::Binary) {
        interpreter.push_str(&format!(
            " ({digests} allowed digest{})",
            if digests == 1 { "" } else { "s" }
        ));
    }
    if let Some(node) = value["interpreter"]["package"].as_str() {
        interpreter.push_str(&format!(", or {node} from the store"));
    }
    let rules: Vec<String> = binding
        .user_args
        .iter()
        .map(|rule| {
            let (min, max) = rule.count();
            match rule {
                UserArgRule::ExistingDirectoryUnderHome { access, .. } => {
                    let access = match access {
                        Access::ReadOnly => "read_only",
                        Access::ReadWrite => "read_write",
                    };
                    format!("{} {access} {min}..{max}", rule.rule())
                }
                UserArgRule::OneOf { values, .. } => {
                    format!("{} [{}] {min}..{max}", rule.rule(), values.join(", "))
                }
            }
        })
        .collect();
    format!(
        "{} {}@{} · {} packages · entry {} · {interpreter} · user args: {}",
        binding.ecosystem.as_str(),
        binding.package.name,
        binding.package.version,
        binding.closure.len() + 1,
        entry_text(&binding.entry),
        if rules.is_empty() {
            "none".to_string()
        } else {
            rules.join("; ")
        }
    )
}

fn hex_encode(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The trust root in a file: a bundle (which must itself verify) or a plain `{scheme, keys}`.
fn load_trust_root(path: &Path, now: OffsetDateTime) -> Result<TrustRoot, Failure> {
    let value = read_json(path)?;
    if value.get("signed").is_some() {
        let verified = verify_bundle_file(path, now, None)?;
        return Ok(verified.content().trust_root.clone());
    }
    TrustRoot::from_value(&value).map_err(|e| Failure::usage(format!("{}: {e}", path.display())))
}

async fn fetch(context: &Context, url: &str, out: Option<&Path>) -> Result<u8, Failure> {
    let fail = |e: FetchError| {
        let refusal = matches!(
            e,
            FetchError::InsecureOrigin { .. }
                | FetchError::CrossOriginRedirect { .. }
                | FetchError::TooManyRedirects { .. }
                | FetchError::TooLarge { .. }
                | FetchError::InvalidUrl { .. }
        );
        Failure {
            code: (&e).into(),
            message: e.to_string(),
            exit: if refusal { 1 } else { 2 },
        }
    };
    let source = AttestationSource::for_endpoint(url).map_err(fail)?;
    let Some(bytes) = fetch_attestation(&source, DEFAULT_FETCH_TIMEOUT)
        .await
        .map_err(fail)?
    else {
        return Err(Failure {
            code: gatehouse_host::ErrorCode::NotMcpServer,
            message: format!(
                "{} publishes no attestation (HTTP 404 at {})",
                source.origin, source.url
            ),
            exit: 1,
        });
    };
    match out {
        Some(path) => {
            write_atomic(path, &bytes, 0o644)?;
            if !context.json {
                eprintln!(
                    "saved {} bytes from {} to {}",
                    bytes.len(),
                    source.url,
                    path.display()
                );
            }
        }
        // Byte for byte, so `attest verify` sees exactly what was served.
        None => {
            let mut stdout = std::io::stdout().lock();
            stdout
                .write_all(&bytes)
                .and_then(|()| stdout.flush())
                .map_err(|e| Failure::usage(format!("cannot write to stdout: {e}")))?;
        }
    }
    Ok(0)
}

pub async fn attest_async(context: &Context, command: AttestCommand) -> Result<u8, Failure> {
    match command {
        AttestCommand::Fetch { url, out } => fetch(context, &url, out.as_deref()).await,
        other => attest(context, other),
    }
}

pub fn attest(context: &Context, command: AttestCommand) -> Result<u8, Failure> {
    match command {
        AttestCommand::Fetch { .. } => Err(Failure::usage("attest fetch runs asynchronously")),
        AttestCommand::Sign { key, sad, out } => {
            let (key_id, signing) = load_signing_key(&key)?;
            let document = read_json(&sad)?;
            let object = document
                .as_object()
                .ok_or_else(|| Failure::usage(format!("{}: not a JSON object", sad.display())))?;
            let signed = sign_document(object, &key_id, &signing)
                .map_err(|e| Failure::usage(format!("{}: {e}", sad.display())))?;
            let text = format!(
                "{}\n",
                serde_json::to_string_pretty(&Value::Object(signed)).expect("json")
            );
            match out {
                Some(path) => write_atomic(&path, text.as_bytes(), 0o644)?,
                None => print!("{text}"),
            }
            Ok(0)
        }
        AttestCommand::Verify {
            sad,
            trust_root,
            origin,
            required,
            now,
        } => {
            let now = now_or(now.as_deref())?;
            let root = load_trust_root(&trust_root, now)?;
            let document = read(&sad)?;
            let context_ = VerifyContext {
                origin: Some(&origin),
                required_clearance: &required,
                now,
            };
            let outcome = verify(Some(&document), &root, &context_);
            let (data, human, exit) = match &outcome {
                Ok(admitted) => {
                    let detail = format!(
                        "admitted {} at clearance {} (signed by {}; publisher {:?} is claimed, not verified)",
                        admitted.id(),
                        admitted.clearance(),
                        admitted.signer_key_id(),
                        admitted.publisher()
                    );
                    (
                        json!({"admitted": true, "reason": null, "code": null, "detail": detail}),
                        detail.clone(),
                        0,
                    )
                }
                Err(refusal) => (
                    json!({"admitted": false, "reason": refusal.reason.as_str(), "code": refusal.reason.code(), "detail": refusal.detail}),
                    format!("refused: {refusal}"),
                    1,
                ),
            };
            if context.json {
                output::print_json(&data);
            } else {
                println!("{human}");
            }
            Ok(exit)
        }
    }
}
