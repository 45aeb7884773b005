//! The one closed set of error codes: what `HostError::code` returns, what the window gets
//! over IPC (`ApiError`), what the CLI prints as `{"error":{"code":…}}` and what the gate's
//! denial records carry. Each code is a stable snake_case name that scripts and users depend
//! on: never rename one. Every code is documented in docs/error-codes.md (a test holds the
//! table to this list).
//!
//! The pure crates keep their own reason enums (the ATSA registry, the gate's reasons, bundle
//! and audit-log errors); `convert.rs` maps each onto the code of the same name here, so a code
//! is spelled once per vocabulary and compared as a value, never as a string.

mod convert;

#[cfg(test)]
pub(crate) use convert::EVERY_SIGN_IN_CODE;

use serde::{Deserialize, Serialize};

/// Declares [`ErrorCode`], its name and [`ErrorCode::ALL`] from one list, so that no code can
/// be left out of `ALL` or given a second spelling.
macro_rules! error_codes {
    ($($(#[$doc:meta])* $variant:ident => $name:literal,)*) => {
        /// A stable error code. Serialized as its snake_case name, exactly
        /// [`ErrorCode::as_str`].
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        pub enum ErrorCode {
            $($(#[$doc])* #[serde(rename = $name)] $variant,)*
        }

        impl ErrorCode {
            /// Every code, in declaration order.
            pub const ALL: [ErrorCode; [$($name),*].len()] = [$(ErrorCode::$variant),*];

            /// The code as printed and sent.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(ErrorCode::$variant => $name,)*
                }
            }
        }
    };
}

error_codes! {
    // The host's own errors (`HostError`).
    ConfigInvalid => "config_invalid",
    UnknownServer => "unknown_server",
    SecretUnavailable => "secret_unavailable",
    SpawnFailed => "spawn_failed",
    ConnectFailed => "connect_failed",
    TransportFailed => "transport_failed",
    Timeout => "timeout",
    Cancelled => "cancelled",
    ServerError => "server_error",
    ProtocolError => "protocol_error",
    NotOffered => "not_offered",
    SubscriptionLimit => "subscription_limit",
    AuditUnavailable => "audit_unavailable",
    PostureForbids => "posture_forbids",
    /// Approving a tool or prompt whose current definition has a high finding of the
    /// definition review, without acknowledging it (issue 27).
    FindingNotAcknowledged => "finding_not_acknowledged",
    LockedByAdmin => "locked_by_admin",
    ServerSuspended => "server_suspended",
    KillSessionOnElicitationAbuse => "kill_session_on_elicitation_abuse",
    ElicitationIncomplete => "elicitation_incomplete",
    /// A refused admission without a more precise reason.
    NotAdmitted => "not_admitted",

    // Admission: the ATSA registry (`gatehouse_attest::Reason`), then the host's own checks.
    UnsupportedVersion => "unsupported_version",
    NotMcpServer => "not_mcp_server",
    Unsigned => "unsigned",
    SignerNotTrusted => "signer_not_trusted",
    SignerExpired => "signer_expired",
    SignerNotApproved => "signer_not_approved",
    BadSignature => "bad_signature",
    BelowRequired => "below_required",
    HostNotBound => "host_not_bound",
    /// Registry code 9, and the gate's refusal of a tool not on the allow-list.
    ToolNotAdmitted => "tool_not_admitted",
    BinaryChanged => "binary_changed",
    StdioBindingMismatch => "stdio_binding_mismatch",
    AttestationUnavailable => "attestation_unavailable",
    /// A vouched entry's `expires` has passed (issue 27).
    VouchExpired => "vouch_expired",
    /// A document fetched from an origin verifies as an id the admins vouch for only at
    /// other endpoints.
    VouchedElsewhere => "vouched_elsewhere",

    // Package servers (issue 25): the config against the binding, the closure, the store, the
    // interpreter.
    PackageVersionNotBound => "package_version_not_bound",
    PackageUserArgRefused => "package_user_arg_refused",
    PackageUnavailable => "package_unavailable",
    PackageSourceOnly => "package_source_only",
    ArtifactMismatch => "artifact_mismatch",
    ArchiveUnsafe => "archive_unsafe",
    ArchiveTooLarge => "archive_too_large",
    ArchiveMalformed => "archive_malformed",
    StoreEntryChanged => "store_entry_changed",
    StoreUnavailable => "store_unavailable",
    InterpreterNotAllowed => "interpreter_not_allowed",
    PackageIsolationFailed => "package_isolation_failed",
    PackageEntryInvalid => "package_entry_invalid",
    PackageResolveFailed => "package_resolve_failed",
    PinUnsupported => "pin_unsupported",

    // Confinement (issue 28).
    /// Confinement is required (by the policy, a bundle or the entry), but this machine
    /// cannot confine the server: bubblewrap missing, user namespaces refused, the init
    /// missing, or the sandbox's self-check failed.
    ConfinementUnavailable => "confinement_unavailable",

    // The gate (`gatehouse_attest::gate::GateReason`; `tool_not_admitted` above).
    ToolPinMismatch => "tool_pin_mismatch",
    ToolNotListed => "tool_not_listed",
    PromptNotAdmitted => "prompt_not_admitted",
    PromptPinMismatch => "prompt_pin_mismatch",
    PromptNotListed => "prompt_not_listed",
    ResourceNotAdmitted => "resource_not_admitted",
    ResourceUriRefused => "resource_uri_refused",

    // Content the host does not pass on (`content::ContentFault`).
    ContentTooLarge => "content_too_large",
    ContentNotBase64 => "content_not_base64",

    // Signing in (`auth::SignInCode`).
    AuthRequired => "auth_required",
    IssuerNotAllowed => "issuer_not_allowed",
    IssuerUnknown => "issuer_unknown",
    InsecureAuthorizationUrl => "insecure_authorization_url",
    AuthorizationUrlMismatch => "authorization_url_mismatch",
    LocalAuthorizationUrl => "local_authorization_url",
    PkceUnsupported => "pkce_unsupported",
    IssuerMismatch => "issuer_mismatch",
    RegistrationFailed => "registration_failed",
    TokenExchangeFailed => "token_exchange_failed",
    RefreshFailed => "refresh_failed",
    KeychainFailed => "keychain_failed",
    DiscoveryFailed => "discovery_failed",
    SignInFailed => "sign_in_failed",
    SignInCancelled => "sign_in_cancelled",
    SignInTimedOut => "sign_in_timed_out",
    AuthorizationDenied => "authorization_denied",
    BrowserFailed => "browser_failed",
    RedirectUnavailable => "redirect_unavailable",

    // The host API's own refusals (`host::ApiError`).
    AuditUnreadable => "audit_unreadable",
    Connecting => "connecting",
    DemoUnavailable => "demo_unavailable",
    PolicyInvalid => "policy_invalid",
    ServerExists => "server_exists",
    ServerInvalid => "server_invalid",
    ServerNotConnected => "server_not_connected",
    TrafficLogUnavailable => "traffic_log_unavailable",
    /// The scratch directory of an ephemeral host (the conformance client's) could not be made.
    ScratchUnavailable => "scratch_unavailable",
    /// `servers remove` named the built-in demo server in demo mode: it is not an entry.
    DemoNotRemovable => "demo_not_removable",
    UnknownPrompt => "unknown_prompt",
    UnknownSignIn => "unknown_sign_in",
    SignInNotAsking => "sign_in_not_asking",

    // The desktop's cards and saved reads (`gatehouse-desk`).
    AnswerInvalid => "answer_invalid",
    PromptNotAForm => "prompt_not_a_form",
    PromptNotAsking => "prompt_not_asking",
    PromptNotFinished => "prompt_not_finished",
    PromptNotRetryable => "prompt_not_retryable",
    PromptNotWaiting => "prompt_not_waiting",
    NoDownloadDir => "no_download_dir",
    NotBinary => "not_binary",
    ReadItemMissing => "read_item_missing",
    ReadNotKept => "read_not_kept",
    ReadTargetInvalid => "read_target_invalid",
    SaveFailed => "save_failed",

    // A broken audit chain (`gatehouse_audit::BreakKind`).
    BadJson => "bad_json",
    BadPrev => "bad_prev",
    BadSeq => "bad_seq",
    TornTail => "torn_tail",
    Truncated => "truncated",

    // The audit log's own errors (`gatehouse_audit::AuditError`).
    CreateDir => "create_dir",
    Open => "open",
    NotARegularFile => "not_a_regular_file",
    ReadOnly => "read_only",
    NotFound => "not_found",
    Lock => "lock",
    Read => "read",
    Write => "write",
    Export => "export",
    Head => "head",
    SaveTorn => "save_torn",
    Unrecoverable => "unrecoverable",
    BadRecord => "bad_record",
    BadEvent => "bad_event",
    ReservedEvent => "reserved_event",
    BadServer => "bad_server",
    DataNotObject => "data_not_object",
    RecordTooLarge => "record_too_large",
    Unreadable => "unreadable",
    BadTime => "bad_time",
    SeqExhausted => "seq_exhausted",
    FlushFailed => "flush_failed",
    BadDurability => "bad_durability",

    // Fetching an attestation (`fetch::FetchError`).
    InsecureOrigin => "insecure_origin",
    InvalidUrl => "invalid_url",
    CrossOriginRedirect => "cross_origin_redirect",
    TooManyRedirects => "too_many_redirects",
    AttestationTooLarge => "attestation_too_large",
    FetchTimeout => "fetch_timeout",
    HttpStatus => "http_status",
    Network => "network",

    // Trust-root bundles (`gatehouse_attest::bundle::BundleError`, the CLI's installs).
    BundleInvalid => "bundle_invalid",
    BundleExpired => "bundle_expired",
    BundleThresholdNotMet => "bundle_threshold_not_met",
    BundleRollback => "bundle_rollback",
    BundleVersionReused => "bundle_version_reused",
    BundleRotationNotAuthorized => "bundle_rotation_not_authorized",
    BundleConflict => "bundle_conflict",
    BundleUnreadable => "bundle_unreadable",
    /// `bundle add-server` would pin a definition with a high finding of the definition
    /// review, and `--accept-findings` was not given (issue 27).
    DefinitionFindings => "definition_findings",

    // Importing servers with `bundle add-server --from-registry` (an MCP Registry
    // `server.json`: `gatehouse_package::registry::RegistryErrorCode`, then the download's own
    // check) and `--from-client` (an AI client's config).
    RegistryDocumentInvalid => "registry_document_invalid",
    RegistryTypeUnsupported => "registry_type_unsupported",
    RegistrySourceUnsupported => "registry_source_unsupported",
    RegistryVersionNotExact => "registry_version_not_exact",
    RegistryHashMissing => "registry_hash_missing",
    RegistryHashInvalid => "registry_hash_invalid",
    RegistryTransportUnsupported => "registry_transport_unsupported",
    RegistryArgumentUnsupported => "registry_argument_unsupported",
    RegistryUrlInvalid => "registry_url_invalid",
    /// A downloaded MCPB's bytes are not the `fileSha256` its server.json gives.
    RegistryHashMismatch => "registry_hash_mismatch",
    /// A client config runs a package without a version (whatever is newest).
    VersionRequired => "version_required",
    /// A client config's launcher uses an option that changes what runs.
    LauncherUnsupported => "launcher_unsupported",
    /// A client config's server is neither a command nor a URL Gatehouse can bind.
    ClientServerUnrecognized => "client_server_unrecognized",

    // AI clients' config files (`gatehouse_clients::ClientErrorCode`).
    ClientConfigMissing => "client_config_missing",
    ClientConfigInvalid => "client_config_invalid",
    ClientAlreadyConnected => "client_already_connected",
    ClientBackupExists => "client_backup_exists",
    ClientImportIncomplete => "client_import_incomplete",
    ClientServerConflict => "client_server_conflict",
    ClientBackupMissing => "client_backup_missing",
    ClientChangedSinceConnect => "client_changed_since_connect",
    ClientIo => "client_io",
    ClientLockdownForeignFile => "client_lockdown_foreign_file",

    // The command line's own.
    Usage => "usage",
    ClientTokenFailed => "client_token_failed",
    NothingToSave => "nothing_to_save",
    OutUnwritable => "out_unwritable",
    ServeFailed => "serve_failed",

    // The desktop app's bridge (`gatehouse_gateway::bridge::BridgeCode`).
    BridgeNoRuntimeDir => "bridge_no_runtime_dir",
    BridgeUnsafeDir => "bridge_unsafe_dir",
    BridgeInUse => "bridge_in_use",
    BridgePeerNotSameUser => "bridge_peer_not_same_user",
    BridgeBadHello => "bridge_bad_hello",
    BridgeRefused => "bridge_refused",
    BridgeBusy => "bridge_busy",
    BridgeIo => "bridge_io",
}

impl ErrorCode {
    /// The code named `name`, if it is one.
    pub fn parse(name: &str) -> Option<ErrorCode> {
        ErrorCode::ALL.into_iter().find(|c| c.as_str() == name)
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests;
