//! Origin matching for rule 8: scheme, host and port, with default ports normalized, hosts
//! compared as the URL standard normalizes them (lower case, IPv6 canonical form), paths
//! ignored. The host's stricter rule for HTTP admission is [`crate::http_origin`].

/// True when `entry` (a `netAllowedHosts` member) names the same origin as `connected`.
/// Anything that does not parse as a URL with a host (an opaque origin) matches nothing.
pub fn same_origin(entry: &str, connected: &str) -> bool {
    let (Ok(entry), Ok(connected)) = (url::Url::parse(entry), url::Url::parse(connected)) else {
        return false;
    };
    let (entry, connected) = (entry.origin(), connected.origin());
    entry.is_tuple() && entry == connected
}

#[cfg(test)]
mod tests {
    use super::same_origin;

    #[test]
    fn matches_the_same_origin_however_written() {
        let base = "https://tools.example.com";
        for same in [
            "https://tools.example.com",
            "https://TOOLS.Example.COM",
            "https://tools.example.com:443",
            "https://tools.example.com/mcp?x=1",
            "HTTPS://tools.example.com/",
        ] {
            assert!(same_origin(same, base), "{same}");
        }
        assert!(same_origin("http://[0:0::1]:80/", "http://[::1]"));
    }

    #[test]
    fn refuses_other_origins() {
        let base = "https://tools.example.com";
        for other in [
            "http://tools.example.com",
            "https://tools.example.com:8443",
            "https://tools.example.com.evil.net",
            "https://evil.net/tools.example.com",
            "https://user@tools.example.com.evil.net",
            "tools.example.com",
            "https://tools.example.com.",
            "mcp+stdio://tools.example.com",
            "",
        ] {
            assert!(!same_origin(other, base), "{other}");
        }
        assert!(!same_origin("https://a.example", "not a url"));
    }
}
