//! `gatehouse bundle add-server --url`: an entry that vouches for a remote server which
//! publishes no attestation of its own (specVersion 6). The tools pinned are the ones the
//! live server lists now; the attestation is the admins', signed with --signer-key and bound
//! to the endpoint's origin, and the endpoint (origin and path) is what admits it.

use ed25519_dalek::SigningKey;
use gatehouse_attest::sign_document;
use gatehouse_host::host::Host;
use gatehouse_host::system_clock;
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::cli::AddServerArgs;
use crate::commands::{Context, report};
use crate::failure::Failure;

/// The bundle version that carries `vouched` entries.
const VOUCHED_SPEC_VERSION: u64 = 6;
/// How long a vouch lasts unless --vouch-days says otherwise: long enough to be practical,
/// short enough that a server nobody looks at again lapses.
const DEFAULT_VOUCH_DAYS: u32 = 90;
/// The longest vouch: the admins' word about a server they do not control should be renewed.
const MAX_VOUCH_DAYS: u32 = 3650;

/// The endpoint a vouch binds, from the URL the admin gave: `url::Url`'s normal form without
/// query and fragment (they never identify a server), refusing what cannot be an endpoint.
/// Returns the endpoint, its origin, and whether a query was dropped.
pub(crate) fn vouched_endpoint(text: &str) -> Result<(url::Url, String, String, bool), Failure> {
    let url = url::Url::parse(text)
        .map_err(|e| Failure::usage(format!("--url {text:?} is not a URL ({e})")))?;
    if !matches!(url.scheme(), "https" | "http") {
        return Err(Failure::usage(format!(
            "--url {text:?}: a remote MCP server is an http(s) URL"
        )));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(Failure::usage(format!(
            "--url {text:?} carries credentials (user:password@); give them with --header, which is used to list the tools and never written"
        )));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(Failure::usage(format!("--url {text:?} names no host")));
    }
    let mut endpoint = url.clone();
    endpoint.set_query(None);
    endpoint.set_fragment(None);
    let origin = url.origin().ascii_serialization();
    let dropped_query = url.query().is_some();
    Ok((url, endpoint.to_string(), origin, dropped_query))
}

/// `--header 'NAME: VALUE'`, for listing only.
fn parse_headers(headers: &[String]) -> Result<Vec<(String, String)>, Failure> {
    headers
        .iter()
        .map(|h| match h.split_once(':') {
            Some((name, value))
                if !name.trim().is_empty() && name.trim().bytes().all(|b| b.is_ascii_graphic()) =>
            {
                Ok((name.trim().to_string(), value.trim().to_string()))
            }
            _ => Err(Failure::usage(
                "--header must be 'NAME: VALUE' (a header name, a colon, the value)",
            )),
        })
        .collect()
}

pub async fn run(
    context: &Context,
    args: &AddServerArgs,
    url: &str,
    document: &mut Value,
    key_id: &str,
    signing: &SigningKey,
) -> Result<u8, Failure> {
    let (url, endpoint, origin, dropped_query) = vouched_endpoint(url)?;
    let days = args.vouch_days.unwrap_or(DEFAULT_VOUCH_DAYS);
    if !(1..=MAX_VOUCH_DAYS).contains(&days) {
        return Err(Failure::usage(format!(
            "--vouch-days {days}: give 1 to {MAX_VOUCH_DAYS} days; review the server again before it lapses"
        )));
    }
    let headers = parse_headers(&args.headers)?;
    let preview = Host::preview_remote(&url, &headers, system_clock()).await?;
    let (allowed, pins) = crate::entry::choose_tools(&preview.tools, args)?;

    let version = preview
        .server_version
        .clone()
        .unwrap_or_else(|| "unknown".into());
    let publisher = args.publisher.clone().unwrap_or_else(|| {
        url.host_str()
            .expect("checked by vouched_endpoint")
            .to_string()
    });
    let sad = json!({
        "v": "1.0", "id": args.id, "publisher": publisher, "version": version,
        "clearance": args.clearance, "capabilities": ["mcp-server"],
        // The admins' attestation names the origin, so verification's host rule binds it too.
        "netAllowedHosts": [origin],
    });
    let attestation = sign_document(sad.as_object().expect("an object"), key_id, signing)
        .map_err(|e| Failure::usage(format!("cannot sign the attestation: {e}")))?;
    let expires = (OffsetDateTime::now_utc() + time::Duration::days(i64::from(days)))
        .replace_nanosecond(0)
        .unwrap_or_else(|_| OffsetDateTime::now_utc())
        .format(&Rfc3339)
        .map_err(|e| Failure::usage(format!("cannot write the vouch's expiry: {e}")))?;

    let mut entry = json!({
        "id": args.id,
        "origins": [origin],
        "vouched": {"endpoints": [endpoint], "expires": expires, "attestation": attestation},
    });
    if !args.authorization_servers.is_empty() {
        entry["authorizationServers"] = json!(args.authorization_servers);
    }
    if !args.url_domains.is_empty() {
        entry["urlElicitationDomains"] = json!(args.url_domains);
    }
    crate::entry::finish_entry(&mut entry, args, &preview.tools, &allowed, pins);
    let replaced = crate::entry::write_entry(args, document, entry, VOUCHED_SPEC_VERSION)?;

    let listed: Vec<&str> = preview
        .tools
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    let query_note = if dropped_query {
        " The URL's query was used to list the tools but is not written: the endpoint is matched without it."
    } else {
        ""
    };
    report(
        context,
        json!({
            "bundle": args.bundle, "id": args.id, "replaced": replaced,
            "endpoint": endpoint, "origin": origin, "expires": expires,
            "server_name": preview.server_name, "server_version": version,
            "query_dropped": dropped_query,
            "tools_listed": listed, "tools_allowed": allowed,
        }),
        &format!(
            "{} {} in {}: vouched for at {endpoint} until {expires} (the server publishes no attestation; this entry is the admins' word for it); {} of {} tools allowed and pinned.{query_note} Signatures dropped: sign it again (gatehouse bundle sign --key ROOT_KEY {}).",
            if replaced { "Replaced" } else { "Added" },
            args.id,
            args.bundle.display(),
            allowed.len(),
            listed.len(),
            args.bundle.display()
        ),
    );
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_endpoint_is_the_normal_form_without_query() {
        let (_, endpoint, origin, dropped) =
            vouched_endpoint("HTTPS://MCP.Example.com:443/mcp?key=1#x").unwrap();
        assert_eq!(endpoint, "https://mcp.example.com/mcp");
        assert_eq!(origin, "https://mcp.example.com");
        assert!(dropped);
        let (_, endpoint, origin, dropped) = vouched_endpoint("http://127.0.0.1:8080/mcp").unwrap();
        assert_eq!(endpoint, "http://127.0.0.1:8080/mcp");
        assert_eq!(origin, "http://127.0.0.1:8080");
        assert!(!dropped);
    }

    #[test]
    fn urls_that_cannot_be_endpoints_are_refused() {
        for bad in [
            "https://user:pw@mcp.example.com/mcp",
            "https://user@mcp.example.com/mcp",
            "ftp://mcp.example.com/mcp",
            "file:///mcp",
            "not a url",
        ] {
            assert!(vouched_endpoint(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn headers_need_a_name_and_a_colon() {
        assert_eq!(
            parse_headers(&["X-Api-Key: abc: def".into()]).unwrap(),
            [("X-Api-Key".to_string(), "abc: def".to_string())]
        );
        for bad in ["no colon", ": value", "bad name: v"] {
            assert!(parse_headers(&[bad.into()]).is_err(), "{bad}");
        }
    }
}
