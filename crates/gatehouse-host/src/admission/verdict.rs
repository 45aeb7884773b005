//! The verdict of an admission: admitted (with the verified identity), refused (with why) or
//! unattested, as shown and audited.

use std::path::{Path, PathBuf};

use gatehouse_attest::bundle::{Posture, ServerPolicy, VerifiedBundle};
use gatehouse_attest::http_origin::OriginBinding;
use gatehouse_attest::{Admitted, Reason, Refusal};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::BundleSource;

/// Why a server was not admitted: an ATSA registry reason, or one of the host's own checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdmissionReason {
    Atsa(Reason),
    /// The stdio executable's SHA-256 differs from the bundle's binding.
    BinaryChanged,
    /// The command line differs from the binding, or the binding is inconsistent.
    StdioBindingMismatch,
    /// The attestation could not be fetched (insecure origin, redirect elsewhere, too large,
    /// timeout, HTTP or network error).
    AttestationUnavailable,
    /// A package server's config, user arguments, closure, store entry or interpreter was
    /// refused (issue 25): the code says which.
    Package(crate::ErrorCode),
    /// The endpoint is vouched for by a bundle, but the vouch has expired.
    VouchExpired,
    /// The document served at an origin verifies as an id whose entry vouches for it only at
    /// other endpoints: a copied vouched attestation admits nothing.
    VouchedElsewhere,
    /// Confinement is required and this machine cannot confine the server (issue 28).
    ConfinementUnavailable,
}

impl AdmissionReason {
    pub fn as_str(self) -> &'static str {
        match self {
            AdmissionReason::Atsa(reason) => reason.as_str(),
            AdmissionReason::BinaryChanged => "binary_changed",
            AdmissionReason::StdioBindingMismatch => "stdio_binding_mismatch",
            AdmissionReason::AttestationUnavailable => "attestation_unavailable",
            AdmissionReason::Package(code) => code.as_str(),
            AdmissionReason::VouchExpired => "vouch_expired",
            AdmissionReason::VouchedElsewhere => "vouched_elsewhere",
            AdmissionReason::ConfinementUnavailable => "confinement_unavailable",
        }
    }
    /// The ATSA registry code, for registry reasons.
    pub fn code(self) -> Option<u8> {
        match self {
            AdmissionReason::Atsa(reason) => Some(reason.code()),
            AdmissionReason::BinaryChanged
            | AdmissionReason::StdioBindingMismatch
            | AdmissionReason::AttestationUnavailable
            | AdmissionReason::Package(_)
            | AdmissionReason::VouchExpired
            | AdmissionReason::VouchedElsewhere
            | AdmissionReason::ConfinementUnavailable => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Admitted,
    Refused,
    /// The server publishes no attestation (HTTP) or no bundle binds it (stdio).
    Unattested,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Admitted => "admitted",
            Status::Refused => "refused",
            Status::Unattested => "unattested",
        }
    }
}

/// How an admitted server's identity was established: what every place that shows identity
/// must say, so that an admins' vouch is never shown as the server's own statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IdentitySource {
    /// The server's own attestation, fetched from its origin. The default for audit records
    /// written before the source was recorded (the only remote kind then).
    #[default]
    Server,
    /// The attestation in a bundle's stdio or package binding.
    BundleBinding,
    /// An admins' attestation for a remote server that publishes none (a `vouched` entry).
    Vouched,
}

impl IdentitySource {
    pub fn as_str(self) -> &'static str {
        match self {
            IdentitySource::Server => "server",
            IdentitySource::BundleBinding => "bundle_binding",
            IdentitySource::Vouched => "vouched",
        }
    }

    /// How the identity was established, for people: `bundle` is `bundleId@version`.
    pub fn describe(self, bundle: &str) -> String {
        match self {
            IdentitySource::Server => format!("attested by the server, trusted through {bundle}"),
            IdentitySource::BundleBinding => format!("bound by {bundle}"),
            IdentitySource::Vouched => {
                format!("vouched for by {bundle}; the server publishes no attestation")
            }
        }
    }
}

/// The verified identity of an admitted server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    pub id: String,
    pub clearance: String,
    pub asserted_clearance: String,
    pub signer_key_id: String,
    /// `bundleId@version`.
    pub bundle: String,
    pub bundle_source: BundleSource,
    /// Admitted through the demo bundle: label it "demo" wherever it is shown.
    pub demo: bool,
    pub body_sha256: String,
    /// Whose statement the attestation is: the server's, a binding's, or the admins' vouch.
    #[serde(default)]
    pub attested_by: IdentitySource,
}

/// What the server says about itself and nobody verified.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claimed {
    /// The attestation's `publisher`: signed, but not bound to the key.
    pub publisher: Option<String>,
    /// `serverInfo` from the handshake.
    pub server_name: Option<String>,
    pub server_version: Option<String>,
}

/// The admission decision for one server, as shown and audited.
#[derive(Debug, Serialize)]
pub struct Verdict {
    /// The configured name (or "adhoc").
    pub server: String,
    pub status: Status,
    /// Whether the host goes on to talk to the server: admitted, or not admitted under the
    /// warn posture (never treated as admitted: no bundle allow-list applies).
    pub proceeds: bool,
    pub posture: Posture,
    pub reason: Option<crate::error_code::ErrorCode>,
    pub code: Option<u8>,
    pub detail: String,
    pub identity: Option<Identity>,
    pub claimed: Claimed,
    pub transport: crate::config::ServerKind,
    pub origin: Option<String>,
    /// HTTP only: which signed list named the origin (the document's `netAllowedHosts`, the
    /// bundle entry's `origins`, or both).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin_binding: Option<OriginBinding>,
    pub command: Option<String>,
    /// A package server: what is bound and what was checked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub package: Option<crate::audit_event::gate::PackageSummary>,
    pub bundle: Option<String>,
    pub demo: bool,
    /// A stdio server's confinement: what it can read, write and reach, or unconfined and
    /// why (`None` for HTTP servers, and where no confinement was decided).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confinement: Option<crate::confine::view::ConfinementView>,
    /// Under which key user tool approvals are stored for this server.
    #[serde(skip)]
    pub approval_key: String,
    #[serde(skip)]
    pub(super) proof: Option<Admitted>,
    #[serde(skip)]
    pub(super) policy: Option<ServerPolicy>,
    #[serde(skip)]
    pub(super) program: Option<PathBuf>,
    /// A package server: the interpreter and arguments that run the verified tree.
    #[serde(skip)]
    pub(super) launch: Option<crate::packages::PackageLaunch>,
    /// What a confined server runs with (the checked tools and its grants).
    #[serde(skip)]
    pub(crate) sandbox: Option<crate::confine::view::Sandboxing>,
}

impl Verdict {
    pub(super) fn new(server: &str, transport: crate::config::ServerKind) -> Verdict {
        Verdict {
            server: server.to_string(),
            status: Status::Refused,
            proceeds: false,
            posture: Posture::DenyByDefault,
            reason: None,
            code: None,
            detail: String::new(),
            identity: None,
            claimed: Claimed::default(),
            transport,
            origin: None,
            origin_binding: None,
            command: None,
            package: None,
            bundle: None,
            demo: false,
            approval_key: String::new(),
            proof: None,
            policy: None,
            program: None,
            launch: None,
            confinement: None,
            sandbox: None,
        }
    }

    pub(crate) fn refused(mut self, reason: AdmissionReason, detail: String) -> Verdict {
        self.status = Status::Refused;
        self.reason = Some(reason.into());
        self.code = reason.code();
        self.detail = detail;
        self
    }

    pub(super) fn refused_by(
        mut self,
        refusal: &Refusal,
        bundle: Option<&VerifiedBundle>,
    ) -> Verdict {
        self.bundle = bundle.map(VerifiedBundle::label);
        self.refused(
            AdmissionReason::Atsa(refusal.reason),
            refusal.detail.clone(),
        )
    }

    pub(super) fn unattested(mut self, detail: String) -> Verdict {
        let reason = AdmissionReason::Atsa(Reason::NotMcpServer);
        self.status = Status::Unattested;
        self.reason = Some(reason.into());
        self.code = reason.code();
        self.detail = detail;
        self
    }

    /// Whether a proof of admission backs this verdict.
    pub fn is_admitted(&self) -> bool {
        self.proof.is_some()
    }

    /// The verified attestation, when admitted.
    pub(crate) fn admitted_proof(&self) -> Option<&Admitted> {
        self.proof.as_ref()
    }

    /// The bundle policy governing the admitted server.
    pub fn policy(&self) -> Option<&ServerPolicy> {
        self.policy.as_ref()
    }

    /// The resolved executable that was hashed: launch exactly this file.
    pub fn program(&self) -> Option<&Path> {
        self.program.as_deref()
    }

    /// A package server's launch from the store.
    pub fn package_launch(&self) -> Option<&crate::packages::PackageLaunch> {
        self.launch.as_ref()
    }

    /// Admitted through the person's own pin (`servers pin`), not an admin's bundle.
    pub fn pinned_by_you(&self) -> bool {
        self.identity.as_ref().is_some_and(|id| {
            id.bundle_source == BundleSource::User
                && id
                    .bundle
                    .strip_prefix(crate::host::PIN_BUNDLE_ID)
                    .is_some_and(|rest| rest.starts_with('@'))
        })
    }

    /// One line for people: "admitted as urn:… (clearance internal, signer k, bundle b@1) [DEMO]".
    pub fn headline(&self) -> String {
        let demo = if self.demo {
            " [DEMO trust root]"
        } else if self.pinned_by_you() {
            " [pinned by you]"
        } else {
            ""
        };
        match (&self.identity, self.status) {
            (Some(id), Status::Admitted) if id.attested_by == IdentitySource::Vouched => format!(
                "admitted as {} (clearance {}, signer {}; {}){demo}",
                id.id,
                id.clearance,
                id.signer_key_id,
                id.attested_by.describe(&id.bundle)
            ),
            (Some(id), Status::Admitted) => format!(
                "admitted as {} (clearance {}, signer {}, bundle {}){demo}",
                id.id, id.clearance, id.signer_key_id, id.bundle
            ),
            (_, status) => {
                let reason = match (self.reason, self.code) {
                    (Some(r), Some(c)) => format!("{r} (code {c})"),
                    (Some(r), None) => r.to_string(),
                    _ => "no reason".into(),
                };
                let proceeding = if self.proceeds {
                    " — allowed by the warn posture, not admitted"
                } else {
                    ""
                };
                format!("{}: {reason}{proceeding}", status.as_str())
            }
        }
    }

    /// The audit record's data: its [`crate::audit_event::gate::Admission`] payload.
    pub fn audit_data(&self) -> Value {
        serde_json::to_value(crate::audit_event::gate::Admission::from(self))
            .expect("an admission serializes")
    }

    /// The audit record's server field: the verified id when admitted, else the name.
    pub fn audit_server(&self) -> String {
        match &self.identity {
            Some(id) => id.id.clone(),
            None => self.server.clone(),
        }
    }
}
