//! The pure checks of a sign-in, each failing closed: which authorization servers an admin's
//! bundle allows, and which authorization URLs may be shown to the user and opened.

use gatehouse_policy::{HostClass, host_class};

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
    /// The authorization URL leads to this machine or a local network, and the MCP server is
    /// not there: its metadata may not point the user's browser at a local service.
    LocalAuthorizationUrl,
}

impl Refusal {
    pub fn code(self) -> &'static str {
        match self {
            Refusal::IssuerNotAllowed => "issuer_not_allowed",
            Refusal::IssuerUnknown => "issuer_unknown",
            Refusal::InsecureAuthorizationUrl => "insecure_authorization_url",
            Refusal::AuthorizationUrlMismatch => "authorization_url_mismatch",
            Refusal::LocalAuthorizationUrl => "local_authorization_url",
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

/// Whether an MCP server at `server` may send the user's browser to `host`, by the
/// elicitation policy's classification of hosts ([`gatehouse_policy::host_class`]): a host on
/// the internet (a name, a public address) always; this machine (`localhost`, 127.0.0.0/8,
/// `::1`, `*.localhost`, `0.0.0.0`, `::ffff:127.0.0.1`…) only when the server is on this
/// machine too; an address on a local network (private, shared, link-local, ULA…) only when it
/// is the server's own address. So a remote server's metadata cannot aim the consented browser,
/// with a path and query of its choosing, at a local service (a printer's admin page, a
/// router, cloud metadata).
fn reachable_from(host: &url::Host<&str>, server: &url::Url) -> bool {
    let Some(server_host) = server.host() else {
        return false;
    };
    match host_class(host) {
        HostClass::PublicAddress | HostClass::Name => true,
        HostClass::Loopback | HostClass::ThisMachine => host_class(&server_host).is_this_machine(),
        HostClass::LocalNetwork => *host == server_host,
    }
}

/// The authorization URL the user is asked to open for the MCP server at `server`: https (or
/// http to loopback), without credentials, at a host that server may send the browser to
/// ([`reachable_from`]), at the origin and path of the endpoint the authorization server
/// published.
pub fn check_authorization_url(
    url: &str,
    endpoint: &str,
    server: &url::Url,
) -> Result<url::Url, Refusal> {
    let parsed = url::Url::parse(url).map_err(|_| Refusal::InsecureAuthorizationUrl)?;
    let Some(host) = parsed.host() else {
        return Err(Refusal::InsecureAuthorizationUrl);
    };
    let secure = match parsed.scheme() {
        "https" => true,
        "http" => host_class(&host) == HostClass::Loopback,
        _ => false,
    };
    if !secure || !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(Refusal::InsecureAuthorizationUrl);
    }
    if !reachable_from(&host, server) {
        return Err(Refusal::LocalAuthorizationUrl);
    }
    let endpoint = url::Url::parse(endpoint).map_err(|_| Refusal::AuthorizationUrlMismatch)?;
    if parsed.origin() != endpoint.origin() || parsed.path() != endpoint.path() {
        return Err(Refusal::AuthorizationUrlMismatch);
    }
    Ok(parsed)
}

/// Why a sign-in did not complete: stable snake_case codes shared by the CLI's JSON, the
/// audit log and the UI (serialized as [`SignInCode::code`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SignInCode {
    AuthRequired,
    IssuerNotAllowed,
    IssuerUnknown,
    InsecureAuthorizationUrl,
    AuthorizationUrlMismatch,
    LocalAuthorizationUrl,
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
            SignInCode::LocalAuthorizationUrl => "local_authorization_url",
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
            SignInCode::LocalAuthorizationUrl => true,
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
            Refusal::LocalAuthorizationUrl => SignInCode::LocalAuthorizationUrl,
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

    fn server(url: &str) -> url::Url {
        url::Url::parse(url).unwrap()
    }

    #[test]
    fn authorization_urls_must_be_secure_and_at_the_published_endpoint() {
        let endpoint = "https://as.example/authorize";
        let remote = server("https://mcp.example/mcp");
        assert!(
            check_authorization_url("https://as.example/authorize?x=1", endpoint, &remote).is_ok()
        );
        assert!(
            check_authorization_url(
                "http://127.0.0.1:9/authorize?x=1",
                "http://127.0.0.1:9/authorize",
                &server("http://127.0.0.1:8/mcp"),
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
                check_authorization_url(url, endpoint, &remote).err(),
                Some(why),
                "{url}"
            );
        }
    }

    /// The attack: a remote server's metadata names an authorization endpoint on this machine
    /// or the user's network, so the consented browser opens a local service's page with a path
    /// and query the server chose (CUPS's admin page, a router, cloud metadata).
    #[test]
    fn a_remote_server_cannot_aim_the_sign_in_browser_at_this_machine_or_a_local_network() {
        for remote in [
            "https://mcp.example.com/mcp",
            "https://93.184.216.34/mcp",
            "https://[2606:2800:220:1:248:1893:25c8:1946]/mcp",
        ] {
            let remote = server(remote);
            for endpoint in [
                "http://127.0.0.1:631/admin",
                "http://localhost/authorize",
                "https://localhost/authorize",
                "http://[::1]:8080/authorize",
                "https://[::1]/",
                "https://192.168.1.1/",
                "https://10.0.0.1/authorize",
                "https://172.16.5.4/authorize",
                "https://100.64.0.1/authorize",
                "https://169.254.169.254/latest/meta-data/",
                "https://[fd00::1]/authorize",
                "https://[fe80::1]/authorize",
                "https://0.0.0.0:631/admin",
                "https://cups.localhost:631/admin",
                "https://localhost.:631/admin",
                "https://[::ffff:127.0.0.1]/admin",
                "https://[::ffff:192.168.1.1]/",
                "https://[2002:c0a8:101::]/",
                // Other spellings the URL parser reads as the same addresses.
                "http://2130706433:631/admin",
                "http://0x7f.1:631/admin",
                "http://127.1/admin",
                "https://3232235777/",
                "https://0xa9.0xfe.0xa9.0xfe/latest/meta-data/",
                "https://0300.0250.0001.0001/",
            ] {
                let url = format!("{endpoint}?response_type=code&state=s&x=1");
                assert_eq!(
                    check_authorization_url(&url, endpoint, &remote).err(),
                    Some(Refusal::LocalAuthorizationUrl),
                    "{endpoint} for {remote}"
                );
                assert_eq!(
                    SignInCode::from(Refusal::LocalAuthorizationUrl).code(),
                    "local_authorization_url"
                );
                assert!(SignInCode::LocalAuthorizationUrl.is_refusal());
            }
            // Plain http to a local network is refused as insecure, as before.
            assert_eq!(
                check_authorization_url(
                    "http://169.254.169.254/?state=s",
                    "http://169.254.169.254/",
                    &remote
                )
                .err(),
                Some(Refusal::InsecureAuthorizationUrl)
            );
            // Authorization servers on the internet are still allowed, by name or address.
            for endpoint in [
                "https://login.example.com/authorize",
                "https://accounts.example.org/o/oauth2/v2/auth",
                "https://93.184.216.34/authorize",
                "https://[2606:2800:220:1:248:1893:25c8:1946]/authorize",
                "https://localhost.example.com/authorize",
            ] {
                let url = format!("{endpoint}?response_type=code&state=s");
                assert!(
                    check_authorization_url(&url, endpoint, &remote).is_ok(),
                    "{endpoint} for {remote}"
                );
            }
        }
    }

    /// The other side: a server that is itself on this machine may sign in on this machine,
    /// and a server at a local-network address may sign in at that same address.
    #[test]
    fn a_server_on_this_machine_or_a_local_address_may_sign_in_there() {
        let allowed: &[(&str, &str)] = &[
            ("http://127.0.0.1:3000/mcp", "http://127.0.0.1:9/authorize"),
            ("http://127.0.0.1:3000/mcp", "http://localhost:9/authorize"),
            ("http://127.0.0.1:3000/mcp", "https://[::1]/authorize"),
            (
                "http://127.0.0.1:3000/mcp",
                "https://auth.localhost/authorize",
            ),
            ("http://localhost:3000/mcp", "http://127.0.0.1:9/authorize"),
            ("http://[::1]:3000/mcp", "http://localhost:9/authorize"),
            (
                "http://mcp.localhost:3000/mcp",
                "http://127.0.0.1:9/authorize",
            ),
            (
                "http://127.0.0.1:3000/mcp",
                "https://login.example.com/authorize",
            ),
            (
                "https://192.168.1.10/mcp",
                "https://192.168.1.10:8443/authorize",
            ),
            (
                "https://192.168.1.10/mcp",
                "https://3232235786:8443/authorize",
            ),
            (
                "https://192.168.1.10/mcp",
                "https://login.example.com/authorize",
            ),
            ("https://[fd00::5]/mcp", "https://[fd00::5]:9443/authorize"),
            ("https://10.1.2.3/mcp", "https://10.1.2.3/authorize"),
        ];
        for (mcp, endpoint) in allowed {
            let url = format!("{endpoint}?response_type=code&state=s");
            assert!(
                check_authorization_url(&url, endpoint, &server(mcp)).is_ok(),
                "{endpoint} for {mcp}"
            );
        }
        let refused: &[(&str, &str, Refusal)] = &[
            // Another device on the network is not the server's own address.
            (
                "https://192.168.1.10/mcp",
                "https://192.168.1.1/",
                Refusal::LocalAuthorizationUrl,
            ),
            (
                "https://[fd00::5]/mcp",
                "https://[fd00::6]/authorize",
                Refusal::LocalAuthorizationUrl,
            ),
            (
                "http://127.0.0.1:3000/mcp",
                "https://192.168.1.1/",
                Refusal::LocalAuthorizationUrl,
            ),
            (
                "http://127.0.0.1:3000/mcp",
                "https://169.254.169.254/latest/meta-data/",
                Refusal::LocalAuthorizationUrl,
            ),
            // A server on the network is not on this machine.
            (
                "https://192.168.1.10/mcp",
                "http://127.0.0.1:631/admin",
                Refusal::LocalAuthorizationUrl,
            ),
            (
                "https://192.168.1.10/mcp",
                "https://localhost/authorize",
                Refusal::LocalAuthorizationUrl,
            ),
            // Plain http stays loopback-only, even to the server's own address.
            (
                "http://192.168.1.10/mcp",
                "http://192.168.1.10:8080/authorize",
                Refusal::InsecureAuthorizationUrl,
            ),
            (
                "http://127.0.0.1:3000/mcp",
                "http://cups.localhost:631/admin",
                Refusal::InsecureAuthorizationUrl,
            ),
        ];
        for (mcp, endpoint, why) in refused {
            let url = format!("{endpoint}?response_type=code&state=s");
            assert_eq!(
                check_authorization_url(&url, endpoint, &server(mcp)).err(),
                Some(*why),
                "{endpoint} for {mcp}"
            );
        }
    }
}
