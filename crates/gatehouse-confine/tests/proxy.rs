//! The egress proxy's reading of request heads.

use gatehouse_confine::{
    CONNECT_ESTABLISHED, HeadError, MAX_HEAD_BYTES, ProxyRequest, head_end, parse_head,
    refusal_response,
};
use proptest::prelude::*;

fn parse(head: &str) -> Result<ProxyRequest, HeadError> {
    parse_head(head.as_bytes())
}

fn http(head: &str) -> (String, u16, String) {
    match parse(head) {
        Ok(ProxyRequest::Http { host, port, head }) => {
            (host, port, String::from_utf8(head).unwrap())
        }
        other => panic!("{head:?} gave {other:?}"),
    }
}

fn code(head: &str) -> &'static str {
    match parse(head) {
        Ok(ok) => panic!("{head:?} accepted as {ok:?}"),
        Err(e) => e.code(),
    }
}

#[test]
fn head_end_finds_the_empty_line() {
    assert_eq!(
        head_end(b"GET http://a/ HTTP/1.1\r\nHost: a\r\n\r\nbody"),
        Some(35)
    );
    assert_eq!(head_end(b"CONNECT a:1 HTTP/1.1\r\n\r\n"), Some(24));
    assert_eq!(head_end(b"GET http://a/ HTTP/1.1\r\nHost: a\r\n"), None);
    assert_eq!(head_end(b""), None);
    assert_eq!(head_end(b"\r\n\r"), None);
    // Bare LF ends the head too, so the proxy stops reading and refuses it.
    assert_eq!(head_end(b"GET / HTTP/1.1\n\nrest"), Some(16));
    assert_eq!(head_end(b"GET / HTTP/1.1\n\r\nrest"), Some(17));
    let head = b"GET http://a/ HTTP/1.1\n\n";
    assert_eq!(
        code(std::str::from_utf8(&head[..head_end(head).unwrap()]).unwrap()),
        "malformed_request"
    );
}

#[test]
fn connect_is_a_tunnel_to_host_and_port() {
    assert_eq!(
        parse("CONNECT api.example.com:443 HTTP/1.1\r\nHost: api.example.com:443\r\n\r\n").unwrap(),
        ProxyRequest::Connect {
            host: "api.example.com".into(),
            port: 443
        }
    );
    let r = parse("CONNECT EXAMPLE.com.:443 HTTP/1.0\r\n\r\n").unwrap();
    assert_eq!((r.host(), r.port()), ("example.com", 443));
    let r = parse("CONNECT [::1]:8443 HTTP/1.1\r\n\r\n").unwrap();
    assert_eq!((r.host(), r.port()), ("::1", 8443));
    let r = parse("CONNECT 127.0.0.1:9 HTTP/1.1\r\nUser-Agent: x\r\n\r\n").unwrap();
    assert_eq!((r.host(), r.port()), ("127.0.0.1", 9));
}

#[test]
fn connect_targets_must_be_host_and_port() {
    assert_eq!(
        code("CONNECT api.example.com HTTP/1.1\r\n\r\n"),
        "bad_target"
    );
    assert_eq!(
        code("CONNECT api.example.com:0 HTTP/1.1\r\n\r\n"),
        "bad_target"
    );
    assert_eq!(
        code("CONNECT api.example.com:65536 HTTP/1.1\r\n\r\n"),
        "bad_target"
    );
    assert_eq!(code("CONNECT a@b:1 HTTP/1.1\r\n\r\n"), "userinfo_in_target");
    assert_eq!(
        code("CONNECT user:pw@api.example.com:443 HTTP/1.1\r\n\r\n"),
        "userinfo_in_target"
    );
    assert_eq!(
        code("CONNECT *.example.com:443 HTTP/1.1\r\n\r\n"),
        "bad_target"
    );
    assert_eq!(code("CONNECT ::1:443 HTTP/1.1\r\n\r\n"), "bad_target");
    assert_eq!(code("CONNECT 127.1:443 HTTP/1.1\r\n\r\n"), "bad_target");
    assert_eq!(
        code("CONNECT https://a.example:443 HTTP/1.1\r\n\r\n"),
        "bad_target"
    );
    assert_eq!(
        code("CONNECT a.example:443/x HTTP/1.1\r\n\r\n"),
        "bad_target"
    );
    assert_eq!(code("CONNECT host:443\r\n\r\n"), "malformed_request");
    assert_eq!(
        code("connect host:443 HTTP/1.1\r\n\r\n"),
        "malformed_request"
    );
    assert_eq!(
        code("Connect host:443 HTTP/1.1\r\n\r\n"),
        "malformed_request"
    );
    assert_eq!(
        code("CONNECT  host:443 HTTP/1.1\r\n\r\n"),
        "malformed_request"
    );
    assert_eq!(
        code("CONNECT host:443 HTTP/2.0\r\n\r\n"),
        "malformed_request"
    );
    assert_eq!(
        code("CONNECT host:443 HTTP/1.1 \r\n\r\n"),
        "malformed_request"
    );
}

#[test]
fn plain_http_is_rewritten_to_origin_form() {
    let (host, port, head) = http(
        "GET http://Example.COM./path?q=1 HTTP/1.1\r\nHost: example.com\r\nUser-Agent: t/1\r\n\
         Proxy-Authorization: Basic eDp5\r\nProxy-Connection: keep-alive\r\nConnection: keep-alive\r\n\
         Keep-Alive: 5\r\nAccept: */*\r\n\r\n",
    );
    assert_eq!((host.as_str(), port), ("example.com", 80));
    assert_eq!(
        head,
        "GET /path?q=1 HTTP/1.1\r\nHost: example.com\r\nUser-Agent: t/1\r\nAccept: */*\r\nConnection: close\r\n\r\n"
    );
    let (host, port, head) =
        http("POST http://127.0.0.1:8080 HTTP/1.0\r\nContent-Length: 2\r\n\r\n");
    assert_eq!((host.as_str(), port), ("127.0.0.1", 8080));
    assert_eq!(
        head,
        "POST / HTTP/1.0\r\nHost: 127.0.0.1:8080\r\nContent-Length: 2\r\nConnection: close\r\n\r\n"
    );
    let (host, port, head) = http("GET http://[::1]:81?x HTTP/1.1\r\n\r\n");
    assert_eq!((host.as_str(), port), ("::1", 81));
    assert!(
        head.starts_with("GET /?x HTTP/1.1\r\nHost: [::1]:81\r\n"),
        "{head}"
    );
    let (_, port, _) = http("HEAD HTTP://a.example/ HTTP/1.1\r\n\r\n");
    assert_eq!(port, 80);
}

#[test]
fn the_target_decides_the_host_not_the_host_header() {
    let (host, _, head) =
        http("GET http://allowed.example/ HTTP/1.1\r\nHost: evil.example\r\n\r\n");
    assert_eq!(host, "allowed.example");
    assert!(
        head.contains("Host: allowed.example\r\n") && !head.contains("evil"),
        "{head}"
    );
}

#[test]
fn requests_that_are_not_proxy_requests_are_refused() {
    assert_eq!(
        code("GET https://a.example/ HTTP/1.1\r\n\r\n"),
        "https_without_connect"
    );
    assert_eq!(
        code("GET HTTPS://a.example/ HTTP/1.1\r\n\r\n"),
        "https_without_connect"
    );
    assert_eq!(
        code("GET /relative HTTP/1.1\r\nHost: a.example\r\n\r\n"),
        "bad_target"
    );
    assert_eq!(code("GET * HTTP/1.1\r\n\r\n"), "bad_target");
    assert_eq!(
        code("GET ftp://a.example/ HTTP/1.1\r\n\r\n"),
        "unsupported_scheme"
    );
    assert_eq!(
        code("GET ws://a.example/ HTTP/1.1\r\n\r\n"),
        "unsupported_scheme"
    );
    assert_eq!(
        code("GET http://user:pw@a.example/ HTTP/1.1\r\n\r\n"),
        "userinfo_in_target"
    );
    assert_eq!(
        code("GET http://a.example@evil.example/ HTTP/1.1\r\n\r\n"),
        "userinfo_in_target"
    );
    assert_eq!(code("GET http:///path HTTP/1.1\r\n\r\n"), "bad_target");
    assert_eq!(
        code("GET http://a.example:0/ HTTP/1.1\r\n\r\n"),
        "bad_target"
    );
    assert_eq!(
        code("GET http://a.example:99999/ HTTP/1.1\r\n\r\n"),
        "bad_target"
    );
    assert_eq!(
        code("GET http://a.example/#frag HTTP/1.1\r\n\r\n"),
        "bad_target"
    );
    assert_eq!(
        code("GET http://exa%6dple.com/ HTTP/1.1\r\n\r\n"),
        "bad_target"
    );
    assert_eq!(
        code("GET http://bücher.de/ HTTP/1.1\r\n\r\n"),
        "malformed_request"
    );
    assert_eq!(
        code("get http://a.example/ HTTP/1.1\r\n\r\n"),
        "malformed_request"
    );
    assert_eq!(
        code("G-T http://a.example/ HTTP/1.1\r\n\r\n"),
        "malformed_request"
    );
    assert_eq!(code("GET http://a.example/\r\n\r\n"), "malformed_request");
    assert_eq!(
        code("GET http://a.example/ HTTP/1.1\r\n"),
        "malformed_request"
    );
    assert_eq!(code("\r\n\r\n"), "malformed_request");
    assert_eq!(code(""), "malformed_request");
}

#[test]
fn smuggling_shapes_are_refused() {
    let base = "GET http://a.example/ HTTP/1.1\r\n";
    let with = |headers: &str| format!("{base}{headers}\r\n");
    assert_eq!(
        code(&with("Host: a.example\r\nHost: b.example\r\n")),
        "malformed_request"
    );
    assert_eq!(
        code(&with("host: a.example\r\nHOST: a.example\r\n")),
        "malformed_request"
    );
    assert_eq!(
        code(&with("Content-Length: 1\r\nContent-Length: 2\r\n")),
        "malformed_request"
    );
    assert_eq!(
        code(&with("Content-Length: 1\r\nTransfer-Encoding: chunked\r\n")),
        "malformed_request"
    );
    assert_eq!(code(&with("Host : a.example\r\n")), "malformed_request");
    assert_eq!(code(&with("X: a\r\n folded\r\n")), "malformed_request");
    assert_eq!(code(&with("NoColon\r\n")), "malformed_request");
    assert_eq!(code(&with(": empty-name\r\n")), "malformed_request");
    assert_eq!(code(&with("X: a\rb\r\n")), "malformed_request");
    assert_eq!(code(&with("X: a\nb\r\n")), "malformed_request");
    assert_eq!(code(&with("X: a\0b\r\n")), "malformed_request");
    assert_eq!(
        code("GET http://a.example/ HTTP/1.1\nHost: a\n\n"),
        "malformed_request"
    );
    assert_eq!(
        code("GET http://a.example/ HTTP/1.1\r\nHost: a\n\r\n"),
        "malformed_request"
    );
    assert_eq!(
        code("GET http://a.example/ HTTP/1.1\r\n\r\nGET http://b/ HTTP/1.1\r\n\r\n"),
        "malformed_request"
    );
    // One of each framing header, and a tab and obs-text in a value, are fine.
    http(&with("Transfer-Encoding: chunked\r\nX: a\tb\r\n"));
    assert!(parse_head(with("X: caf\u{e9}\r\n").as_bytes()).is_ok());
    assert!(parse_head(b"GET http://a/ HTTP/1.1\r\nX: \xff\r\n\r\n").is_ok());
}

#[test]
fn heads_over_the_limit_are_too_large() {
    let filler = |n: usize| {
        format!(
            "GET http://a.example/ HTTP/1.1\r\nX: {}\r\n\r\n",
            "a".repeat(n)
        )
    };
    let base = filler(0).len();
    assert!(parse(&filler(MAX_HEAD_BYTES - base)).is_ok());
    assert_eq!(code(&filler(MAX_HEAD_BYTES - base + 1)), "head_too_large");
    assert_eq!(code(&"x".repeat(MAX_HEAD_BYTES * 2)), "head_too_large");
}

#[test]
fn errors_have_distinct_codes_and_say_what_to_do() {
    let all = [
        HeadError::TooLarge,
        HeadError::NotHttp,
        HeadError::BadTarget("x".into()),
        HeadError::HttpsWithoutConnect,
        HeadError::UnsupportedScheme("ftp".into()),
        HeadError::UserInfo,
    ];
    let mut codes: Vec<&str> = all.iter().map(HeadError::code).collect();
    codes.sort_unstable();
    codes.dedup();
    assert_eq!(codes.len(), all.len());
    assert!(
        HeadError::HttpsWithoutConnect
            .to_string()
            .contains("CONNECT")
    );
}

#[test]
fn refusals_name_the_server_the_target_and_the_remedy() {
    let text =
        String::from_utf8(refusal_response("files", Some(("evil.example", 443)), 403)).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 403 Forbidden\r\n"), "{head}");
    assert!(
        head.contains(&format!("Content-Length: {}", body.len())),
        "{head}"
    );
    assert!(head.contains("Connection: close"));
    assert!(
        body.contains("\"files\"") && body.contains("evil.example:443"),
        "{body}"
    );
    assert!(
        body.contains("ask your admin to add evil.example:443 to the server's confinement.hosts"),
        "{body}"
    );

    let text = String::from_utf8(refusal_response("s", Some(("::1", 8080)), 403)).unwrap();
    assert!(text.contains("[::1]:8080"), "{text}");

    let text = String::from_utf8(refusal_response("s\r\nSet-Cookie: x", None, 400)).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 400 Bad Request\r\n"));
    assert!(!head.contains("Set-Cookie"), "{head}");
    assert!(!body.contains('\r') && body.contains("CONNECT"), "{body}");
    assert_eq!(
        CONNECT_ESTABLISHED,
        b"HTTP/1.1 200 Connection Established\r\n\r\n"
    );
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic_and_forwarded_heads_are_clean(
        data in prop::collection::vec(any::<u8>(), 0..300)
    ) {
        let end = head_end(&data);
        if let Some(end) = end {
            prop_assert!(end <= data.len());
        }
        let head = &data[..end.unwrap_or(data.len())];
        if let Ok(ProxyRequest::Http { head: out, .. }) = parse_head(head) {
            prop_assert!(out.ends_with(b"\r\n\r\n"));
            let text = String::from_utf8_lossy(&out).to_ascii_lowercase();
            prop_assert!(!text.contains("\r\nproxy-"));
        }
    }

    #[test]
    fn generated_requests_parse(
        method in "[A-Z]{1,7}",
        host in "[a-z]{1,10}(\\.[a-z]{2,5}){0,2}",
        port in 1u16..,
        path in "(/[a-zA-Z0-9._~%-]{0,8}){0,3}",
        headers in prop::collection::vec(("[A-Za-z][A-Za-z-]{0,10}", "[ -~]{0,20}"), 0..5),
    ) {
        let mut head = if method == "CONNECT" {
            format!("CONNECT {host}:{port} HTTP/1.1\r\n")
        } else {
            format!("{method} http://{host}:{port}{path} HTTP/1.1\r\n")
        };
        let mut hosts = 0;
        let mut framing = (0, 0);
        for (name, value) in &headers {
            match name.to_ascii_lowercase().as_str() {
                "host" => hosts += 1,
                "content-length" => framing.0 += 1,
                "transfer-encoding" => framing.1 += 1,
                _ => {}
            }
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        let smuggling = hosts > 1 || framing.0 > 1 || (framing.0 > 0 && framing.1 > 0);
        let got = parse_head(head.as_bytes());
        if smuggling {
            prop_assert!(got.is_err());
        } else {
            let got = got.unwrap();
            prop_assert_eq!(got.host(), host.as_str());
            prop_assert_eq!(got.port(), port);
            if let ProxyRequest::Http { head: out, .. } = got {
                let text = String::from_utf8(out).unwrap();
                let want_path = if path.is_empty() { "/" } else { path.as_str() };
                let want_start = format!("{method} {want_path} HTTP/1.1\r\nHost: ");
                prop_assert!(text.starts_with(&want_start), "{}", text);
                prop_assert!(text.ends_with("Connection: close\r\n\r\n"));
            }
        }
    }
}
