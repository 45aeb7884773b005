//! The confinement egress proxy's reading of request heads (`gatehouse_confine::head_end` and
//! `parse_head`), on what a confined server sends. Properties: the head ends where `head_end`
//! says (on an empty line); a CONNECT or http:// target names a normalised host and a port
//! 1..=65535 that a host grant for exactly that host and port matches; a forwarded head is
//! CRLF-only, ends with "\r\n\r\n", starts in origin-form, holds exactly one Host header, no
//! Proxy-* header, and ends with "Connection: close".
#![no_main]

use gatehouse_confine::{
    HostGrant, MAX_HEAD_BYTES, ProxyRequest, head_end, normalize_host, parse_head,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let end = head_end(data);
    if let Some(end) = end {
        assert!(end <= data.len() && end >= 2);
        assert_eq!(data[end - 1], b'\n');
    }
    // As the proxy does: the head up to its end, or everything it read.
    let head = &data[..end.unwrap_or(data.len())];
    let Ok(request) = parse_head(head) else {
        return;
    };
    assert!(head.len() <= MAX_HEAD_BYTES);
    assert!(head.ends_with(b"\r\n\r\n"));
    let (host, port) = (request.host(), request.port());
    assert_ne!(port, 0);
    assert_eq!(
        normalize_host(host).as_deref(),
        Some(host),
        "host not normalised"
    );
    let grant = HostGrant {
        host: host.to_string(),
        port,
    };
    assert!(grant.matches(host, port));
    assert_eq!(HostGrant::parse(&grant.to_string()).as_ref(), Ok(&grant));
    if let ProxyRequest::Http { head: out, .. } = &request {
        assert!(out.ends_with(b"\r\n\r\n"));
        assert!(out.ends_with(b"\r\nConnection: close\r\n\r\n"));
        // Every line of the head but the final empty one, each without its CRLF.
        let body = &out[..out.len() - 2];
        let mut lines: Vec<&[u8]> = body.split_inclusive(|&b| b == b'\n').collect();
        for line in &mut lines {
            *line = line
                .strip_suffix(b"\r\n")
                .expect("a forwarded line ends with CRLF");
        }
        for (i, line) in lines.iter().enumerate() {
            assert!(
                !line.contains(&b'\r') && !line.contains(&b'\n') && !line.is_empty(),
                "line {i}"
            );
            if i > 0 {
                let name = line.split(|&b| b == b':').next().unwrap_or_default();
                assert!(
                    !name.to_ascii_lowercase().starts_with(b"proxy-"),
                    "a Proxy- header is forwarded"
                );
            }
        }
        let request_line = lines[0];
        let target = request_line.split(|&b| b == b' ').nth(1).expect("a target");
        assert_eq!(target.first(), Some(&b'/'), "not origin-form");
        let hosts = lines[1..]
            .iter()
            .filter(|l| l.len() >= 5 && l[..5].eq_ignore_ascii_case(b"host:"))
            .count();
        assert_eq!(hosts, 1);
    }
});
