//! The pure checks of a sign-in, each failing closed: which authorization servers an admin's
//! bundle allows, and which authorization URLs may be shown to the user and opened.

/// Why a sign-in was refused before any browser opened. Stable snake_case codes, shared by
/// the CLI's JSON, the audit log and the UI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The bundle pins the authorization servers for this server and this one is not listed.
    IssuerNotAllowed,
    /// The authorization server published no issuer, and the bundle pins issuers.
    IssuerUnknown,
    /// The authorization URL is not https (or http to loopback).
    InsecureAuthorizationUrl,
    /// The authorization URL is not at the authorization server's published endpoint.
    AuthorizationUrlMismatch,
}

impl Refusal {
    pub fn code(self) -> &'static str {
        match self {
            Refusal::IssuerNotAllowed => "issuer_not_allowed",
            Refusal::IssuerUnknown => "issuer_unknown",
            Refusal::InsecureAuthorizationUrl => "insecure_authorization_url",
            Refusal::AuthorizationUrlMismatch => "authorization_url_mismatch",
        }
    }
}

/// An issuer as compared: RFC 8414 issuers are compared as strings; only a trailing slash is
/// ignored (admins write `https://as.example` and `https://as.example/` for the same server).
fn normalized(issuer: &str) -> &str {
    issuer.strip_suffix('/').unwrap_or(issuer)
}

/// `allowed` empty: the bundle does not pin authorization servers (any issuer the server's
/// metadata names counts). Otherwise the issuer must be listed, byte for byte but for a
/// trailing slash: no case folding, no prefix match, so a look-alike host never passes.
pub fn check_issuer(allowed: &[String], issuer: Option<&str>) -> Result<(), Refusal> {
    if allowed.is_empty() {
        return Ok(());
    }
    let Some(issuer) = issuer else {
        return Err(Refusal::IssuerUnknown);
    };
    if allowed.iter().any(|a| normalized(a) == normalized(issuer)) {
        Ok(())
    } else {
        Err(Refusal::IssuerNotAllowed)
    }
}

pub(crate) fn is_loopback(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// The authorization URL the user is asked to open: https (or http to loopback), without
/// credentials, at the origin and path of the endpoint the authorization server published.
pub fn check_authorization_url(url: &str, endpoint: &str) -> Result<url::Url, Refusal> {
    let parsed = url::Url::parse(url).map_err(|_| Refusal::InsecureAuthorizationUrl)?;
    let secure = match parsed.scheme() {
        "https" => true,
        "http" => is_loopback(&parsed),
        _ => false,
    };
    if !secure || !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(Refusal::InsecureAuthorizationUrl);
    }
    let endpoint = url::Url::parse(endpoint).map_err(|_| Refusal::AuthorizationUrlMismatch)?;
    if parsed.origin() != endpoint.origin() || parsed.path() != endpoint.path() {
        return Err(Refusal::AuthorizationUrlMismatch);
    }
    Ok(parsed)
}

/// Why a sign-in did not complete: stable snake_case codes shared by the CLI's JSON, the
/// audit log and the UI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignInCode {
    AuthRequired,
    IssuerNotAllowed,
    IssuerUnknown,
    InsecureAuthorizationUrl,
    AuthorizationUrlMismatch,
    PkceUnsupported,
    IssuerMismatch,
    RegistrationFailed,
    TokenExchangeFailed,
    RefreshFailed,
    KeychainFailed,
    DiscoveryFailed,
    SignInFailed,
    SignInCancelled,
    SignInTimedOut,
    AuthorizationDenied,
    BrowserFailed,
    RedirectUnavailable,
}

impl SignInCode {
    pub fn code(self) -> &'static str {
        match self {
            SignInCode::AuthRequired => "auth_required",
            SignInCode::IssuerNotAllowed => "issuer_not_allowed",
            SignInCode::IssuerUnknown => "issuer_unknown",
            SignInCode::InsecureAuthorizationUrl => "insecure_authorization_url",
            SignInCode::AuthorizationUrlMismatch => "authorization_url_mismatch",
            SignInCode::PkceUnsupported => "pkce_unsupported",
            SignInCode::IssuerMismatch => "issuer_mismatch",
            SignInCode::RegistrationFailed => "registration_failed",
            SignInCode::TokenExchangeFailed => "token_exchange_failed",
            SignInCode::RefreshFailed => "refresh_failed",
            SignInCode::KeychainFailed => "keychain_failed",
            SignInCode::DiscoveryFailed => "discovery_failed",
            SignInCode::SignInFailed => "sign_in_failed",
            SignInCode::SignInCancelled => "sign_in_cancelled",
            SignInCode::SignInTimedOut => "sign_in_timed_out",
            SignInCode::AuthorizationDenied => "authorization_denied",
            SignInCode::BrowserFailed => "browser_failed",
            SignInCode::RedirectUnavailable => "redirect_unavailable",
        }
    }

    /// A refusal (by the admin's pin, the user, the authorization server or the rules of the
    /// protocol) rather than a failure of the network, the keychain or the browser.
    pub fn is_refusal(self) -> bool {
        match self {
            SignInCode::AuthRequired => true,
            SignInCode::IssuerNotAllowed => true,
            SignInCode::IssuerUnknown => true,
            SignInCode::InsecureAuthorizationUrl => true,
            SignInCode::AuthorizationUrlMismatch => true,
            SignInCode::PkceUnsupported => true,
            SignInCode::IssuerMismatch => true,
            SignInCode::RegistrationFailed => false,
            SignInCode::TokenExchangeFailed => false,
            SignInCode::RefreshFailed => false,
            SignInCode::KeychainFailed => false,
            SignInCode::DiscoveryFailed => false,
            SignInCode::SignInFailed => false,
            SignInCode::SignInCancelled => true,
            SignInCode::SignInTimedOut => false,
            SignInCode::AuthorizationDenied => true,
            SignInCode::BrowserFailed => false,
            SignInCode::RedirectUnavailable => false,
        }
    }
}

impl From<Refusal> for SignInCode {
    fn from(refusal: Refusal) -> SignInCode {
        match refusal {
            Refusal::IssuerNotAllowed => SignInCode::IssuerNotAllowed,
            Refusal::IssuerUnknown => SignInCode::IssuerUnknown,
            Refusal::InsecureAuthorizationUrl => SignInCode::InsecureAuthorizationUrl,
            Refusal::AuthorizationUrlMismatch => SignInCode::AuthorizationUrlMismatch,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn no_pin_allows_any_issuer() {
        assert_eq!(check_issuer(&[], Some("https://any.example")), Ok(()));
        assert_eq!(check_issuer(&[], None), Ok(()));
    }

    #[test]
    fn a_pinned_issuer_passes_and_look_alikes_do_not() {
        let allowed = list(&["https://login.example.com"]);
        assert_eq!(
            check_issuer(&allowed, Some("https://login.example.com")),
            Ok(())
        );
        assert_eq!(
            check_issuer(&allowed, Some("https://login.example.com/")),
            Ok(())
        );
        for other in [
            "https://login.example.com.evil.test",
            "https://LOGIN.example.com",
            "http://login.example.com",
            "https://login.example.com/tenant",
            "https://login.examp1e.com",
        ] {
            assert_eq!(
                check_issuer(&allowed, Some(other)),
                Err(Refusal::IssuerNotAllowed),
                "{other}"
            );
        }
        assert_eq!(check_issuer(&allowed, None), Err(Refusal::IssuerUnknown));
    }

    #[test]
    fn authorization_urls_must_be_secure_and_at_the_published_endpoint() {
        let endpoint = "https://as.example/authorize";
        assert!(check_authorization_url("https://as.example/authorize?x=1", endpoint).is_ok());
        assert!(
            check_authorization_url(
                "http://127.0.0.1:9/authorize?x=1",
                "http://127.0.0.1:9/authorize"
            )
            .is_ok()
        );
        for (url, why) in [
            (
                "http://as.example/authorize",
                Refusal::InsecureAuthorizationUrl,
            ),
            ("javascript:alert(1)", Refusal::InsecureAuthorizationUrl),
            (
                "https://user:pw@as.example/authorize",
                Refusal::InsecureAuthorizationUrl,
            ),
            (
                "https://evil.example/authorize",
                Refusal::AuthorizationUrlMismatch,
            ),
            (
                "https://as.example/other",
                Refusal::AuthorizationUrlMismatch,
            ),
        ] {
            assert_eq!(
                check_authorization_url(url, endpoint).err(),
                Some(why),
                "{url}"
            );
        }
    }
}
