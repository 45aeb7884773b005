//! The admission decision: an HTTP server by the attestation fetched from its origin, a stdio
//! server by an installed bundle's binding of its command line and executable; and the key a
//! server not admitted is known by.

use std::path::Path;
use std::time::Duration;

use gatehouse_attest::bundle::{Posture, ServerPolicy, VerifiedBundle};
use gatehouse_attest::{Admitted, Reason, VerifyContext};
use time::OffsetDateTime;

use gatehouse_package::launcher::{PackageRequest, Parsed};

use super::claimed::{ClaimedDocument, required_clearance};
use super::executable::{StdioCheck, stdio_check};
use super::{
    AdmissionReason, BundleSource, Identity, IdentitySource, Status, Trust, Verdict,
    working_directory,
};
use crate::config::ServerSpec;
use crate::fetch::{AttestationSource, fetch_attestation};

impl Trust {
    /// Decides whether `spec` is admitted, at `now`. HTTP servers: the attestation is fetched
    /// from the endpoint's origin. stdio servers: an installed bundle must bind the command,
    /// its arguments and the SHA-256 of the resolved executable.
    pub async fn admit(
        &self,
        server: &str,
        spec: &ServerSpec,
        now: OffsetDateTime,
        fetch_timeout: Duration,
        packages: Option<&crate::packages::Packages>,
    ) -> Verdict {
        let mut verdict = match spec {
            ServerSpec::Http(http) => {
                self.admit_http(server, http.url.as_str(), now, fetch_timeout)
                    .await
            }
            ServerSpec::Stdio(stdio) => {
                // Read once: a package a bundle binds is admitted as a package; any other
                // command (an unbound package's launcher included) by its executable.
                let request = match gatehouse_package::launcher::parse_launcher(
                    &stdio.command,
                    &stdio.args,
                ) {
                    Parsed::Request(request) => Some(request),
                    Parsed::NotALauncher | Parsed::Unsupported { .. } => None,
                };
                match (packages, request) {
                    (Some(packages), Some(request))
                        if !self.package_candidates(&request).is_empty() =>
                    {
                        self.admit_package(server, spec, request, packages, now)
                            .await
                    }
                    (_, request) => {
                        self.admit_command(server, spec, stdio, request.as_ref(), now)
                            .await
                    }
                }
            }
        };
        verdict.posture = self.posture;
        verdict.proceeds = verdict.status == Status::Admitted || self.posture == Posture::Warn;
        verdict
    }

    /// A stdio server no package binding covers: admitted by its resolved executable (a stdio
    /// binding), or unattested; `request` is the package its config names, if any.
    async fn admit_command(
        &self,
        server: &str,
        spec: &ServerSpec,
        stdio: &crate::config::StdioSpec,
        request: Option<&PackageRequest>,
        now: OffsetDateTime,
    ) -> Verdict {
        let path_env = stdio
            .env
            .iter()
            .find(|(k, _)| k == "PATH")
            .map(|(_, v)| v.clone().into())
            .or_else(|| std::env::var_os("PATH"));
        let (command, args, cwd) = (stdio.command.clone(), stdio.args.clone(), stdio.cwd.clone());
        let this = self.stdio_candidates();
        let (resolved, workdir) = tokio::task::spawn_blocking(move || {
            (
                stdio_check(&this, &command, &args, cwd.as_deref(), path_env.as_deref()),
                working_directory(cwd.as_deref()),
            )
        })
        .await
        .unwrap_or_else(|e| {
            (
                StdioCheck::Failed {
                    program: None,
                    detail: format!("the executable check failed: {e}"),
                },
                None,
            )
        });
        // A package launcher that is not even installed (`uvx` without uv): the
        // package is what matters, and it is unbound (never run through the launcher).
        let verdict = match resolved {
            StdioCheck::Failed { program: None, .. } if request.is_some() => {
                let mut verdict = Verdict::new(server, crate::config::ServerKind::Stdio);
                verdict.command = Some(spec.describe());
                verdict.approval_key = unattested_stdio_key(spec, None, workdir.as_deref());
                verdict.unattested(String::new())
            }
            resolved => self.admit_stdio(server, spec, resolved, workdir.as_deref(), now),
        };
        self.unbound_package_hint(verdict, request)
    }

    /// An npx/uvx server no bundle binds: say what the person can do about it.
    fn unbound_package_hint(
        &self,
        mut verdict: Verdict,
        request: Option<&PackageRequest>,
    ) -> Verdict {
        if verdict.status != Status::Unattested {
            return verdict;
        }
        if let Some(request) = request {
            let what = format!(
                "no installed bundle binds the {} package {}",
                request.ecosystem.as_str(),
                request.name
            );
            verdict.detail = match (self.locked_by(), request.ecosystem) {
                (Some(bundle), _) => format!(
                    "{what}, and your admin's bundle {bundle} is locked (pins of your own do not apply): ask your admin to bind it"
                ),
                (
                    None,
                    gatehouse_attest::package::Ecosystem::Npm
                    | gatehouse_attest::package::Ecosystem::Pypi,
                ) => format!(
                    "{what}: pin it yourself with `gatehouse servers pin {}` (or the Pin button in the app), which binds the version it resolves to now, or ask your admin to bind it",
                    verdict.server
                ),
                (None, _) => {
                    format!("{what}: ask your admin to bind it (gatehouse bundle add-server)")
                }
            };
        }
        verdict
    }

    async fn admit_http(
        &self,
        server: &str,
        endpoint: &str,
        now: OffsetDateTime,
        fetch_timeout: Duration,
    ) -> Verdict {
        let mut verdict = Verdict::new(server, crate::config::ServerKind::Http);
        // Credentials in the query are not part of what identifies the server, and the key is
        // written to the audit log (suspensions).
        verdict.approval_key = match url::Url::parse(endpoint) {
            Ok(url) => format!("url:{}", crate::launch_risk::redact_url(&url)),
            Err(_) => format!("url:{endpoint}"),
        };
        let source = match AttestationSource::for_endpoint(endpoint) {
            Ok(source) => source,
            Err(error) => {
                return verdict.refused(
                    AdmissionReason::AttestationUnavailable,
                    format!("{error} ({})", error.code()),
                );
            }
        };
        verdict.origin = Some(source.origin.clone());
        // An endpoint the admins vouch for is admitted by their attestation alone: the
        // server's own document is not fetched, so nothing it serves can widen the vouch.
        if let Ok(url) = url::Url::parse(endpoint) {
            let endpoint = super::vouched::endpoint_of(&url);
            if let Some((bundle, policy)) = self.vouched_for(&endpoint) {
                return self.admit_vouched(verdict, bundle, policy, &endpoint, &source.origin, now);
            }
        }
        let bytes = match fetch_attestation(&source, fetch_timeout).await {
            Ok(Some(bytes)) => bytes,
            Ok(None) => {
                return verdict.unattested(format!(
                    "no attestation document: {} answered 404",
                    source.url
                ));
            }
            Err(error) => {
                return verdict.refused(
                    AdmissionReason::AttestationUnavailable,
                    format!("{error} ({})", error.code()),
                );
            }
        };
        let claimed = ClaimedDocument::parse(&bytes);
        verdict.claimed.publisher = claimed.publisher.clone();
        let Some(bundle) = self.bundle_for_document(&claimed) else {
            return self.no_trust_roots(verdict);
        };
        let policy = bundle
            .content()
            .servers
            .iter()
            .find(|s| Some(&s.id) == claimed.id.as_ref());
        let required = required_clearance(bundle, policy);
        let context = VerifyContext {
            origin: Some(&source.origin),
            required_clearance: &required,
            now,
        };
        match gatehouse_attest::verify(Some(&bytes), &bundle.content().trust_root, &context) {
            Err(refusal) => verdict.refused_by(&refusal, Some(bundle)),
            Ok(admitted) => {
                // A vouched id is admitted only at its endpoints: a copy of the admins'
                // attestation served here (another path, another tenant) admits nothing.
                if let Some(detail) = self.vouched_elsewhere(admitted.id()) {
                    verdict.bundle = Some(bundle.label());
                    return verdict.refused(AdmissionReason::VouchedElsewhere, detail);
                }
                // The entry that governs the *verified* id, not the one the bytes claimed.
                let policy = bundle
                    .content()
                    .servers
                    .iter()
                    .find(|s| s.id == admitted.id());
                let origins = policy.map(|p| p.origins.as_slice()).unwrap_or_default();
                match gatehouse_attest::http_origin::bind_http_origin(&admitted, origins) {
                    Err(refusal) => verdict.refused_by(&refusal, Some(bundle)),
                    Ok(binding) => {
                        verdict.origin_binding = Some(binding);
                        self.admitted(verdict, admitted, bundle, policy.cloned())
                    }
                }
            }
        }
    }

    fn admit_stdio(
        &self,
        server: &str,
        spec: &ServerSpec,
        check: StdioCheck,
        workdir: Option<&Path>,
        now: OffsetDateTime,
    ) -> Verdict {
        let mut verdict = Verdict::new(server, crate::config::ServerKind::Stdio);
        verdict.command = Some(spec.describe());
        // Until admitted, approvals and suspensions are keyed by what actually runs: the
        // resolved program (when it resolves), the arguments and the working directory it runs
        // in, so a symlink, a PATH change or another directory cannot inherit another server's
        // approvals or escape its suspension.
        let resolved = match &check {
            StdioCheck::Failed { program, .. } => program.clone(),
            StdioCheck::Unbound { program }
            | StdioCheck::ArgsDiffer { program, .. }
            | StdioCheck::BinaryChanged { program, .. }
            | StdioCheck::Ambiguous { program, .. }
            | StdioCheck::Bound { program, .. } => Some(program.clone()),
        };
        verdict.approval_key = unattested_stdio_key(spec, resolved.as_deref(), workdir);
        let (bundle_id, policy_id, program) = match check {
            StdioCheck::Failed { detail, .. } => {
                return verdict.refused(AdmissionReason::StdioBindingMismatch, detail);
            }
            StdioCheck::Unbound { program } => {
                return verdict.unattested(format!(
                    "no installed bundle binds the command {} (stdio servers are admitted only through an admin bundle's stdio binding)",
                    program.display()
                ));
            }
            StdioCheck::ArgsDiffer { program, bound } => {
                return verdict.refused(
                    AdmissionReason::StdioBindingMismatch,
                    format!(
                        "{} is bound with the arguments {bound:?}, but configured with others; the bundle binds the exact command line",
                        program.display()
                    ),
                );
            }
            StdioCheck::Ambiguous { program, bindings } => {
                return verdict.refused(
                    AdmissionReason::StdioBindingMismatch,
                    format!(
                        "{} with these arguments is bound under more than one server id ({}); Gatehouse will not pick an identity for it: ask the admins to keep one binding",
                        program.display(),
                        bindings.join(", ")
                    ),
                );
            }
            StdioCheck::BinaryChanged {
                program,
                expected,
                actual,
            } => {
                return verdict.refused(
                    AdmissionReason::BinaryChanged,
                    format!(
                        "{} has SHA-256 {actual}, but the bundle binds {expected}: the executable changed since the admin approved it; ask the admin to re-approve it (update stdio.sha256)",
                        program.display()
                    ),
                );
            }
            StdioCheck::Bound {
                bundle_id,
                policy_id,
                program,
            } => (bundle_id, policy_id, program),
        };
        // The binding hashes the executable, not its environment: a code-loading variable
        // (LD_PRELOAD, NODE_OPTIONS, PYTHONPATH, PATH…) or a working directory would change
        // what runs under the verified identity. The binding format cannot allow them, so a
        // bound server may not set them.
        if let ServerSpec::Stdio(s) = spec {
            let settings = crate::launch_risk::risky_settings(
                s.env.iter().map(|(k, v)| (k, v)),
                s.cwd.as_ref().and_then(|c| c.to_str()),
            );
            if !settings.is_empty() {
                return verdict.refused(
                    AdmissionReason::StdioBindingMismatch,
                    format!(
                        "{} is bound by an admin bundle, but its configuration also sets {}, which change what runs; a bound server runs with none of these: remove them from its entry",
                        program.display(),
                        settings
                            .iter()
                            .map(ToString::to_string)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                );
            }
        }
        verdict.program = Some(program.clone());
        verdict.command = Some(
            std::iter::once(program.display().to_string())
                .chain(match spec {
                    ServerSpec::Stdio(s) => s.args.clone(),
                    ServerSpec::Http(_) => Vec::new(),
                })
                .collect::<Vec<_>>()
                .join(" "),
        );
        let Some((bundle, policy)) = self
            .store
            .bundles()
            .iter()
            .filter(|b| b.content().bundle_id == bundle_id)
            .find_map(|b| {
                b.content()
                    .servers
                    .iter()
                    .find(|s| s.id == policy_id)
                    .map(|s| (b, s))
            })
        else {
            return verdict.refused(
                AdmissionReason::StdioBindingMismatch,
                "the binding vanished while checking".into(),
            );
        };
        let attestation = &policy
            .stdio
            .as_ref()
            .expect("a bound policy has a stdio binding")
            .attestation;
        let document = serde_json::to_vec(attestation).expect("serializes");
        verdict.claimed.publisher = ClaimedDocument::of(attestation).publisher;
        let required = required_clearance(bundle, Some(policy));
        let context = VerifyContext {
            origin: None,
            required_clearance: &required,
            now,
        };
        match gatehouse_attest::verify(Some(&document), &bundle.content().trust_root, &context) {
            Err(refusal) => verdict.refused_by(&refusal, Some(bundle)),
            Ok(admitted) if admitted.id() != policy.id => verdict.refused(
                AdmissionReason::StdioBindingMismatch,
                format!(
                    "the bound attestation is for {:?}, but the bundle entry is {:?}",
                    admitted.id(),
                    policy.id
                ),
            ),
            Ok(admitted) => self.admitted(verdict, admitted, bundle, Some(policy.clone())),
        }
    }

    pub(super) fn admitted(
        &self,
        mut verdict: Verdict,
        admitted: Admitted,
        bundle: &VerifiedBundle,
        policy: Option<ServerPolicy>,
    ) -> Verdict {
        let source = self
            .source(&bundle.content().bundle_id)
            .unwrap_or(BundleSource::System);
        verdict.status = Status::Admitted;
        verdict.detail = match &policy {
            Some(_) => format!("admitted by {}", bundle.label()),
            None => format!(
                "admitted by {}, which lists no tools for it: every tool is hidden until an admin adds an allow-list",
                bundle.label()
            ),
        };
        verdict.identity = Some(Identity {
            id: admitted.id().to_string(),
            clearance: admitted.clearance().to_string(),
            asserted_clearance: admitted.asserted_clearance().to_string(),
            signer_key_id: admitted.signer_key_id().to_string(),
            bundle: bundle.label(),
            bundle_source: source,
            demo: source == BundleSource::Demo,
            body_sha256: admitted.body_sha256_hex(),
            // A vouched admission overrides this (`admit_vouched`).
            attested_by: match verdict.transport {
                crate::config::ServerKind::Http => IdentitySource::Server,
                crate::config::ServerKind::Stdio => IdentitySource::BundleBinding,
            },
        });
        verdict.approval_key = format!("id:{}", admitted.id());
        verdict.bundle = Some(bundle.label());
        verdict.demo = source == BundleSource::Demo;
        verdict.policy = policy;
        verdict.proof = Some(admitted);
        verdict
    }

    fn no_trust_roots(&self, verdict: Verdict) -> Verdict {
        verdict.refused(
            AdmissionReason::Atsa(Reason::SignerNotTrusted),
            "no trust-root bundle is installed, so no signer is trusted; ask your admin for one (gatehouse bundle install)".into(),
        )
    }

    /// The bundle whose trust root judges a document: the one governing its claimed id, else
    /// the one holding its signer key, else any (so rules 0–3 still give the precise reason).
    fn bundle_for_document(&self, claimed: &ClaimedDocument) -> Option<&VerifiedBundle> {
        let bundles = self.store.bundles();
        if let Some(id) = &claimed.id
            && let Some((bundle, _)) = self.store.server(id)
        {
            return Some(bundle);
        }
        claimed
            .signer_key_id
            .as_ref()
            .and_then(|key| {
                bundles
                    .iter()
                    .find(|b| b.content().trust_root.key(key).is_some())
            })
            .or_else(|| bundles.first())
    }
}

/// The approval and suspension key of a stdio server that is not admitted, the one key
/// function for every such verdict: the whole command line (`python3 a.py` and `python3 b.py`
/// share an executable but are different servers), with the program as resolved when it
/// resolves, credentials redacted, and the directory it runs in (`workdir`, see
/// [`working_directory`]): `python3 -m srv` runs another `srv` in another directory.
fn unattested_stdio_key(
    spec: &ServerSpec,
    resolved: Option<&Path>,
    workdir: Option<&Path>,
) -> String {
    let ServerSpec::Stdio(s) = spec else {
        return format!("stdio:{}", spec.describe());
    };
    let program = resolved
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| s.command.clone());
    // Unknown (the host's own directory is gone): a key no known directory shares.
    let cwd = workdir.map_or_else(
        || "(unknown working directory)".to_string(),
        |d| d.display().to_string(),
    );
    let key = serde_json::json!({
        "program": program,
        "args": crate::launch_risk::redact_args(&s.args),
        "cwd": cwd,
    });
    format!("stdio:{key}")
}
