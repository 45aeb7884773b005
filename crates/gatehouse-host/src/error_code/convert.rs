//! Each reason enum onto the [`ErrorCode`] of the same name. The matches are exhaustive, so a
//! new reason does not compile until it has a code; the tests check that each maps to the code
//! spelled exactly as the reason's own name.

use gatehouse_attest::Reason;
use gatehouse_attest::bundle::BundleError;
use gatehouse_attest::gate::GateReason;
use gatehouse_audit::{AuditError, BreakKind};
use gatehouse_package::registry::RegistryErrorCode;

use super::ErrorCode;
use crate::admission::AdmissionReason;
use crate::auth::SignInCode;
use crate::content::ContentFault;
use crate::fetch::FetchError;

/// `From<$source>` for a fieldless enum, and (for the tests) every variant of it, from one
/// list of arms.
macro_rules! codes_from {
    ($source:ty, $every:ident, { $($from:ident => $to:ident,)* }) => {
        impl From<$source> for ErrorCode {
            fn from(reason: $source) -> ErrorCode {
                match reason {
                    $(<$source>::$from => ErrorCode::$to,)*
                }
            }
        }

        #[cfg(test)]
        pub(crate) const $every: &[$source] = &[$(<$source>::$from),*];
    };
}

codes_from!(Reason, EVERY_REASON, {
    UnsupportedVersion => UnsupportedVersion,
    NotMcpServer => NotMcpServer,
    Unsigned => Unsigned,
    SignerNotTrusted => SignerNotTrusted,
    SignerExpired => SignerExpired,
    SignerNotApproved => SignerNotApproved,
    BadSignature => BadSignature,
    BelowRequired => BelowRequired,
    HostNotBound => HostNotBound,
    ToolNotAdmitted => ToolNotAdmitted,
});

codes_from!(GateReason, EVERY_GATE_REASON, {
    ToolNotAdmitted => ToolNotAdmitted,
    ToolPinMismatch => ToolPinMismatch,
    ToolNotListed => ToolNotListed,
    PromptNotAdmitted => PromptNotAdmitted,
    PromptPinMismatch => PromptPinMismatch,
    PromptNotListed => PromptNotListed,
    ResourceNotAdmitted => ResourceNotAdmitted,
    ResourceUriRefused => ResourceUriRefused,
});

codes_from!(ContentFault, EVERY_CONTENT_FAULT, {
    ContentTooLarge => ContentTooLarge,
    ContentNotBase64 => ContentNotBase64,
});

codes_from!(SignInCode, EVERY_SIGN_IN_CODE, {
    AuthRequired => AuthRequired,
    IssuerNotAllowed => IssuerNotAllowed,
    IssuerUnknown => IssuerUnknown,
    InsecureAuthorizationUrl => InsecureAuthorizationUrl,
    AuthorizationUrlMismatch => AuthorizationUrlMismatch,
    LocalAuthorizationUrl => LocalAuthorizationUrl,
    PkceUnsupported => PkceUnsupported,
    IssuerMismatch => IssuerMismatch,
    RegistrationFailed => RegistrationFailed,
    TokenExchangeFailed => TokenExchangeFailed,
    RefreshFailed => RefreshFailed,
    KeychainFailed => KeychainFailed,
    DiscoveryFailed => DiscoveryFailed,
    SignInFailed => SignInFailed,
    SignInCancelled => SignInCancelled,
    SignInTimedOut => SignInTimedOut,
    AuthorizationDenied => AuthorizationDenied,
    BrowserFailed => BrowserFailed,
    RedirectUnavailable => RedirectUnavailable,
});

codes_from!(BreakKind, EVERY_BREAK_KIND, {
    BadJson => BadJson,
    BadPrev => BadPrev,
    BadSeq => BadSeq,
    TornTail => TornTail,
    Truncated => Truncated,
});

codes_from!(RegistryErrorCode, EVERY_REGISTRY_CODE, {
    DocumentInvalid => RegistryDocumentInvalid,
    RegistryTypeUnsupported => RegistryTypeUnsupported,
    RegistrySourceUnsupported => RegistrySourceUnsupported,
    VersionNotExact => RegistryVersionNotExact,
    HashMissing => RegistryHashMissing,
    HashInvalid => RegistryHashInvalid,
    TransportUnsupported => RegistryTransportUnsupported,
    ArgumentUnsupported => RegistryArgumentUnsupported,
    UrlInvalid => RegistryUrlInvalid,
});

impl From<AdmissionReason> for ErrorCode {
    fn from(reason: AdmissionReason) -> ErrorCode {
        match reason {
            AdmissionReason::Atsa(reason) => reason.into(),
            AdmissionReason::BinaryChanged => ErrorCode::BinaryChanged,
            AdmissionReason::StdioBindingMismatch => ErrorCode::StdioBindingMismatch,
            AdmissionReason::AttestationUnavailable => ErrorCode::AttestationUnavailable,
            AdmissionReason::VouchExpired => ErrorCode::VouchExpired,
            AdmissionReason::VouchedElsewhere => ErrorCode::VouchedElsewhere,
            AdmissionReason::Package(code) => code,
            AdmissionReason::ConfinementUnavailable => ErrorCode::ConfinementUnavailable,
        }
    }
}

impl From<&FetchError> for ErrorCode {
    fn from(error: &FetchError) -> ErrorCode {
        match error {
            FetchError::InsecureOrigin { .. } => ErrorCode::InsecureOrigin,
            FetchError::InvalidUrl { .. } => ErrorCode::InvalidUrl,
            FetchError::CrossOriginRedirect { .. } => ErrorCode::CrossOriginRedirect,
            FetchError::TooManyRedirects { .. } => ErrorCode::TooManyRedirects,
            FetchError::TooLarge { .. } => ErrorCode::AttestationTooLarge,
            FetchError::Timeout { .. } => ErrorCode::FetchTimeout,
            FetchError::Status { .. } => ErrorCode::HttpStatus,
            FetchError::Network { .. } => ErrorCode::Network,
        }
    }
}

impl From<&BundleError> for ErrorCode {
    fn from(error: &BundleError) -> ErrorCode {
        match error {
            BundleError::Invalid(_) => ErrorCode::BundleInvalid,
            BundleError::Expired { .. } => ErrorCode::BundleExpired,
            BundleError::ThresholdNotMet { .. } => ErrorCode::BundleThresholdNotMet,
            BundleError::Rollback { .. } => ErrorCode::BundleRollback,
            BundleError::SameVersionChanged { .. } => ErrorCode::BundleVersionReused,
            BundleError::RotationNotAuthorized { .. } => ErrorCode::BundleRotationNotAuthorized,
            BundleError::Conflict(_) => ErrorCode::BundleConflict,
        }
    }
}

impl From<&AuditError> for ErrorCode {
    fn from(error: &AuditError) -> ErrorCode {
        match error {
            AuditError::CreateDir { .. } => ErrorCode::CreateDir,
            AuditError::Open { .. } => ErrorCode::Open,
            AuditError::NotARegularFile { .. } => ErrorCode::NotARegularFile,
            AuditError::ReadOnly { .. } => ErrorCode::ReadOnly,
            AuditError::NotFound { .. } => ErrorCode::NotFound,
            AuditError::Lock { .. } => ErrorCode::Lock,
            AuditError::Read { .. } => ErrorCode::Read,
            AuditError::Write { .. } => ErrorCode::Write,
            AuditError::Export { .. } => ErrorCode::Export,
            AuditError::Head { .. } => ErrorCode::Head,
            AuditError::SaveTorn { .. } => ErrorCode::SaveTorn,
            AuditError::Unrecoverable { .. } => ErrorCode::Unrecoverable,
            AuditError::BadRecord { .. } => ErrorCode::BadRecord,
            AuditError::BadEvent { .. } => ErrorCode::BadEvent,
            AuditError::ReservedEvent { .. } => ErrorCode::ReservedEvent,
            AuditError::BadServer { .. } => ErrorCode::BadServer,
            AuditError::DataNotObject { .. } => ErrorCode::DataNotObject,
            AuditError::RecordTooLarge { .. } => ErrorCode::RecordTooLarge,
            AuditError::Unreadable { .. } => ErrorCode::Unreadable,
            AuditError::BadTime { .. } => ErrorCode::BadTime,
            AuditError::SeqExhausted { .. } => ErrorCode::SeqExhausted,
            AuditError::FlushFailed { .. } => ErrorCode::FlushFailed,
            AuditError::BadDurability { .. } => ErrorCode::BadDurability,
        }
    }
}

#[cfg(test)]
mod registry_tests {
    use super::{EVERY_REGISTRY_CODE, ErrorCode, RegistryErrorCode};

    /// Every registry code (the list above, and the crate's own `ALL`) maps to the code
    /// spelled as its own name.
    #[test]
    fn each_registry_code_maps_to_the_code_of_its_own_name() {
        assert_eq!(EVERY_REGISTRY_CODE, RegistryErrorCode::ALL.as_slice());
        for reason in RegistryErrorCode::ALL {
            assert_eq!(ErrorCode::from(reason).as_str(), reason.code());
        }
    }
}
