//! Admission of a package server: a config written the way AI clients write it (`npx -y
//! NAME@VERSION`, `uvx NAME`, a `.mcpb`) matched to an installed bundle's package binding,
//! its user arguments checked, its attestation verified, and its closure installed and
//! checked, ending in a launch from the store (never through `npx` or `uvx`).

use gatehouse_attest::VerifyContext;
use gatehouse_attest::bundle::{ServerPolicy, VerifiedBundle};
use gatehouse_attest::package::PackageBinding;
use gatehouse_package::launcher::PackageRequest;
use time::OffsetDateTime;

use super::claimed::{ClaimedDocument, required_clearance};
use super::{AdmissionReason, Trust, Verdict};
use crate::ErrorCode;
use crate::audit_event::gate::PackageSummary;
use crate::config::ServerSpec;
use crate::packages::Packages;

impl Trust {
    /// The installed package bindings for the package `request` names.
    pub(super) fn package_candidates(
        &self,
        request: &PackageRequest,
    ) -> Vec<(&VerifiedBundle, &ServerPolicy)> {
        self.store
            .bundles()
            .iter()
            .flat_map(|b| b.content().servers.iter().map(move |s| (b, s)))
            .filter(|(_, s)| {
                s.package.as_ref().is_some_and(|p| {
                    p.ecosystem == request.ecosystem && same_name(p, &request.name)
                })
            })
            .collect()
    }

    /// Whether an installed bundle binds the package `request` names: `Some(true)` when the
    /// binding is the person's own pin, `Some(false)` an admin's.
    pub fn package_bound_by(&self, request: &PackageRequest) -> Option<bool> {
        self.package_candidates(request).first().map(|(bundle, _)| {
            bundle.content().bundle_id == crate::host::PIN_BUNDLE_ID
                && self.source(&bundle.content().bundle_id) == Some(super::BundleSource::User)
        })
    }

    pub(super) async fn admit_package(
        &self,
        server: &str,
        spec: &ServerSpec,
        request: PackageRequest,
        packages: &Packages,
        now: OffsetDateTime,
    ) -> Verdict {
        let mut verdict = Verdict::new(server, crate::config::ServerKind::Stdio);
        verdict.command = Some(spec.describe());
        verdict.approval_key = format!("package:{}:{}", request.ecosystem.as_str(), request.name);
        let refuse = |verdict: Verdict, code: ErrorCode, detail: String| {
            verdict.refused(AdmissionReason::Package(code), detail)
        };
        let candidates = self.package_candidates(&request);
        // A config that names a version picks the binding of that version; one that names none
        // runs the one bound version, and is ambiguous when several are bound.
        let chosen: Vec<_> = candidates
            .iter()
            .filter(|(_, s)| {
                request.version.is_none()
                    || s.package.as_ref().map(|p| &p.package.version) == request.version.as_ref()
            })
            .collect();
        let (bundle, policy) = match chosen.as_slice() {
            [one] => **one,
            [] => {
                // Every candidate differs in version: the matcher says which and what to write.
                let (_, policy) = candidates[0];
                let binding = policy.package.as_ref().expect("a candidate has a package");
                return match gatehouse_package::matching::match_request(&request, binding) {
                    Err(mismatch) => refuse(
                        verdict,
                        ErrorCode::PackageVersionNotBound,
                        mismatch.message(&request.name),
                    ),
                    Ok(_) => refuse(
                        verdict,
                        ErrorCode::PackageVersionNotBound,
                        format!(
                            "{} is not bound at the version the config names",
                            request.name
                        ),
                    ),
                };
            }
            many => {
                let versions: Vec<String> = many
                    .iter()
                    .filter_map(|(_, s)| s.package.as_ref().map(|p| p.package.version.clone()))
                    .collect();
                return refuse(
                    verdict,
                    ErrorCode::PackageVersionNotBound,
                    format!(
                        "{} is bound at more than one version ({}); name one in the config ({})",
                        request.name,
                        versions.join(", "),
                        example(&request, &versions[0])
                    ),
                );
            }
        };
        let binding = policy.package.as_ref().expect("a candidate has a package");
        let user_args = match gatehouse_package::matching::match_request(&request, binding) {
            Ok(args) => args,
            Err(mismatch) => {
                return refuse(
                    verdict,
                    ErrorCode::PackageVersionNotBound,
                    mismatch.message(&request.name),
                );
            }
        };
        // What changes what runs is refused as for a stdio binding: the binding cannot allow it.
        if let ServerSpec::Stdio(s) = spec {
            let settings = crate::launch_risk::risky_settings(
                s.env.iter().map(|(k, v)| (k, v)),
                s.cwd.as_ref().and_then(|c| c.to_str()),
            );
            if !settings.is_empty() {
                return refuse(
                    verdict,
                    ErrorCode::StdioBindingMismatch,
                    format!(
                        "{} is bound by an admin bundle, but its configuration also sets {}, which change what runs; a bound server runs with none of these: remove them from its entry",
                        request.name,
                        settings
                            .iter()
                            .map(ToString::to_string)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                );
            }
        }
        let user_args = match gatehouse_package::user_args::check_user_args(
            &binding.user_args,
            &user_args,
            packages.home(),
        ) {
            Ok(args) => args,
            Err(refusal) => {
                return refuse(
                    verdict,
                    ErrorCode::PackageUserArgRefused,
                    refusal.to_string(),
                );
            }
        };
        // The attestation first: nothing is fetched for a binding that does not verify.
        let document = serde_json::to_vec(&binding.attestation).expect("serializes");
        verdict.claimed.publisher = ClaimedDocument::of(&binding.attestation).publisher;
        let required = required_clearance(bundle, Some(policy));
        let context = VerifyContext {
            origin: None,
            required_clearance: &required,
            now,
        };
        let admitted =
            match gatehouse_attest::verify(Some(&document), &bundle.content().trust_root, &context)
            {
                Err(refusal) => return verdict.refused_by(&refusal, Some(bundle)),
                Ok(admitted) if admitted.id() != policy.id => {
                    return refuse(
                        verdict,
                        ErrorCode::StdioBindingMismatch,
                        format!(
                            "the bound attestation is for {:?}, but the bundle entry is {:?}",
                            admitted.id(),
                            policy.id
                        ),
                    );
                }
                Ok(admitted) => admitted,
            };
        let launch = match packages
            .prepare(binding, &user_args, request.mcpb_file.as_deref())
            .await
        {
            Ok(launch) => launch,
            Err(failure) => {
                let code = failure.code();
                return refuse(
                    verdict,
                    code,
                    format!(
                        "{}@{}: {failure}",
                        binding.package.name, binding.package.version
                    ),
                );
            }
        };
        verdict.command = Some(
            std::iter::once(launch.program.display().to_string())
                .chain(launch.args.iter().cloned())
                .collect::<Vec<_>>()
                .join(" "),
        );
        verdict.package = Some(PackageSummary {
            ecosystem: binding.ecosystem,
            package: binding.package.name.clone(),
            version: binding.package.version.clone(),
            closure: binding.closure.len() + 1,
            files_verified: launch.files,
            user_args: user_args.clone(),
            launcher: request.launcher,
        });
        verdict.launch = Some(launch);
        self.admitted(verdict, admitted, bundle, Some(policy.clone()))
    }
}

fn same_name(binding: &PackageBinding, name: &str) -> bool {
    gatehouse_package::normal_form(binding.ecosystem, &binding.package.name)
        == gatehouse_package::normal_form(binding.ecosystem, name)
}

/// How the config would name `version`, in the launcher it used.
fn example(request: &PackageRequest, version: &str) -> String {
    use gatehouse_package::launcher::LauncherKind;
    match request.launcher {
        LauncherKind::Npx => format!("npx -y {}@{version}", request.name),
        LauncherKind::Uvx => format!("uvx {}@{version}", request.name),
        LauncherKind::Mcpb => format!("the .mcpb of version {version}"),
    }
}
