//! The declaration: modes, path and host grants, widening, and the JSON form.

use std::path::{Path, PathBuf};

use gatehouse_confine::{
    ConfinementMode, DEFAULT_MEMORY_MIB, GrantError, Grants, HostGrant, MAX_HOST_GRANTS,
    MAX_MEMORY_MIB, MAX_PATH_GRANTS, MAX_PROCESSES, Network, PathGrant, confinement_to_json,
    normalize_host, parse_confinement,
};
use proptest::prelude::*;
use serde_json::{Value, json};

fn host(s: &str) -> HostGrant {
    HostGrant::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
}

fn path(s: &str) -> PathGrant {
    PathGrant::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
}

fn path_code(s: &str) -> &'static str {
    match PathGrant::parse(s) {
        Ok(p) => panic!("{s:?} accepted as {p:?}"),
        Err(e) => e.code(),
    }
}

fn host_code(s: &str) -> &'static str {
    match HostGrant::parse(s) {
        Ok(h) => panic!("{s:?} accepted as {h:?}"),
        Err(e) => e.code(),
    }
}

// ---- modes ----

#[test]
fn modes_are_ordered_and_strictest_is_the_maximum() {
    use ConfinementMode::*;
    assert!(Off < Preferred && Preferred < Required);
    assert_eq!(Off.strictest(Required), Required);
    assert_eq!(Required.strictest(Off), Required);
    assert_eq!(Off.strictest(Preferred), Preferred);
    assert_eq!(Off.strictest(Off), Off);
    assert_eq!(ConfinementMode::default(), Preferred);
}

#[test]
fn modes_round_trip_through_text_and_serde() {
    for mode in ConfinementMode::ALL {
        assert_eq!(ConfinementMode::parse(mode.as_str()), Some(mode));
        let json = serde_json::to_value(mode).unwrap();
        assert_eq!(json, Value::String(mode.as_str().into()));
        assert_eq!(
            serde_json::from_value::<ConfinementMode>(json).unwrap(),
            mode
        );
    }
    for bad in ["Required", "REQUIRED", "", " off", "on", "strict"] {
        assert_eq!(ConfinementMode::parse(bad), None, "{bad:?}");
    }
}

// ---- path grants ----

#[test]
fn path_grants_accept_absolute_and_home_paths() {
    assert_eq!(path("/srv/data").as_str(), "/srv/data");
    assert_eq!(path("/srv/data/").as_str(), "/srv/data");
    assert_eq!(path("~").as_str(), "~");
    assert_eq!(path("~/").as_str(), "~");
    assert_eq!(path("~/notes").as_str(), "~/notes");
    assert_eq!(path("~/notes/").as_str(), "~/notes");
    assert_eq!(path("/run/user/1000/bus").as_str(), "/run/user/1000/bus");
    assert_eq!(path("/home/x/.config..d").as_str(), "/home/x/.config..d");
    assert_eq!(path("~/.ssh").as_str(), "~/.ssh");
    assert!(path("~/a").is_under_home());
    assert!(!path("/a").is_under_home());
    let long = format!("/{}", "a".repeat(1023));
    assert_eq!(path(&long).as_str().len(), 1024);
}

#[test]
fn path_grants_refuse_what_is_ambiguous_or_too_wide() {
    assert_eq!(path_code(""), "path_empty");
    assert_eq!(path_code("/"), "path_root");
    assert_eq!(path_code("//"), "path_empty_segment");
    assert_eq!(path_code("relative/dir"), "path_relative");
    assert_eq!(path_code("./x"), "path_relative");
    assert_eq!(path_code("~root/x"), "path_other_users_home");
    assert_eq!(path_code("~root"), "path_other_users_home");
    assert_eq!(path_code("/a/../b"), "path_dot_segment");
    assert_eq!(path_code("/a/./b"), "path_dot_segment");
    assert_eq!(path_code("~/.."), "path_dot_segment");
    assert_eq!(path_code("~/../other"), "path_dot_segment");
    assert_eq!(path_code("/a//b"), "path_empty_segment");
    assert_eq!(path_code("//etc"), "path_empty_segment");
    assert_eq!(path_code("~//x"), "path_empty_segment");
    assert_eq!(path_code("/a/b//"), "path_empty_segment");
    assert_eq!(path_code("/a\0b"), "path_control_character");
    assert_eq!(path_code("/a\nb"), "path_control_character");
    assert_eq!(path_code("/a\u{7f}"), "path_control_character");
    assert_eq!(
        path_code(&format!("/{}", "a".repeat(1024))),
        "path_too_long"
    );
    assert_eq!(path_code("/proc"), "path_reserved");
    assert_eq!(path_code("/proc/self/root"), "path_reserved");
    assert_eq!(path_code("/run"), "path_reserved");
    assert_eq!(path_code("/run/gatehouse"), "path_reserved");
    assert_eq!(path_code("/run/gatehouse/init"), "path_reserved");
    // Only whole segments are reserved.
    assert_eq!(path("/processes").as_str(), "/processes");
    assert_eq!(
        path("/run/gatehouse-other").as_str(),
        "/run/gatehouse-other"
    );
}

#[test]
fn path_errors_say_what_to_write() {
    let e = PathGrant::parse("~root/x").unwrap_err().to_string();
    assert!(e.contains("~root/x") && e.contains("~/"), "{e}");
    let e = PathGrant::parse("notes").unwrap_err().to_string();
    assert!(e.contains("relative") && e.contains("absolute"), "{e}");
    // Control characters are shown escaped, never raw.
    let e = PathGrant::parse("/a\nb").unwrap_err().to_string();
    assert!(!e.contains('\n') && e.contains("\\n"), "{e}");
}

#[test]
fn path_grants_resolve_against_the_home() {
    let home = Path::new("/home/alice");
    assert_eq!(path("~").resolve(home), PathBuf::from("/home/alice"));
    assert_eq!(
        path("~/notes/a").resolve(home),
        PathBuf::from("/home/alice/notes/a")
    );
    assert_eq!(path("/srv/data").resolve(home), PathBuf::from("/srv/data"));
}

#[test]
fn path_grants_serialize_as_strings_and_deserialize_through_parse() {
    assert_eq!(serde_json::to_value(path("~/x/")).unwrap(), json!("~/x"));
    let back: PathGrant = serde_json::from_value(json!("/srv/")).unwrap();
    assert_eq!(back, path("/srv"));
    assert!(serde_json::from_value::<PathGrant>(json!("/a/../b")).is_err());
}

// ---- host grants ----

#[test]
fn host_grants_accept_names_and_addresses() {
    assert_eq!(
        host("api.example.com:443"),
        HostGrant {
            host: "api.example.com".into(),
            port: 443
        }
    );
    assert_eq!(host("EXAMPLE.com.:443").host, "example.com");
    assert_eq!(
        host("xn--bcher-kva.example:80").host,
        "xn--bcher-kva.example"
    );
    assert_eq!(host("127.0.0.1:8080").host, "127.0.0.1");
    assert_eq!(host("[::1]:80").host, "::1");
    assert_eq!(host("[0:0:0:0:0:0:0:1]:80").host, "::1");
    assert_eq!(host("[2001:DB8::1]:443").host, "2001:db8::1");
    assert_eq!(host("localhost:1").port, 1);
    assert_eq!(host("a-b.c:65535").port, 65535);
    assert_eq!(host("[::1]:80").to_string(), "[::1]:80");
    assert_eq!(host("Example.COM:443").to_string(), "example.com:443");
}

#[test]
fn host_grants_refuse_everything_but_host_and_port() {
    assert_eq!(host_code("example.com"), "host_missing_port");
    assert_eq!(host_code("[::1]"), "host_missing_port");
    assert_eq!(host_code("::1"), "host_missing_port");
    assert_eq!(host_code("::1:80"), "host_missing_port");
    assert_eq!(host_code("example.com:0"), "host_bad_port");
    assert_eq!(host_code("example.com:65536"), "host_bad_port");
    assert_eq!(host_code("example.com:"), "host_bad_port");
    assert_eq!(host_code("example.com:+80"), "host_bad_port");
    assert_eq!(host_code("example.com:080"), "host_bad_port");
    assert_eq!(host_code("example.com: 80"), "host_bad_port");
    assert_eq!(host_code("*.example.com:443"), "host_wildcard");
    assert_eq!(host_code("a@b:1"), "host_userinfo");
    assert_eq!(host_code("user:pw@example.com:443"), "host_userinfo");
    assert_eq!(host_code("https://example.com:443"), "host_scheme");
    assert_eq!(host_code("example.com:443/path"), "host_path");
    assert_eq!(host_code("example.com:443?x"), "host_path");
    assert_eq!(host_code("bücher.example:443"), "host_non_ascii");
    assert_eq!(host_code(""), "host_invalid");
    assert_eq!(host_code(":443"), "host_invalid");
    assert_eq!(host_code("-a.example:443"), "host_invalid");
    assert_eq!(host_code("a-.example:443"), "host_invalid");
    assert_eq!(host_code("a..example:443"), "host_invalid");
    assert_eq!(host_code("a_b.example:443"), "host_invalid");
    assert_eq!(host_code("example.com..:443"), "host_invalid");
    assert_eq!(
        host_code(&format!("{}.example:443", "a".repeat(64))),
        "host_invalid"
    );
    assert_eq!(host_code("[::1%eth0]:80"), "host_invalid");
    assert_eq!(host_code("[example.com]:80"), "host_invalid");
    assert_eq!(host_code("exa mple.com:80"), "host_invalid");
    assert_eq!(host_code("exa\0mple.com:80"), "host_invalid");
    // Numbers that loose resolvers read as addresses are not names.
    assert_eq!(host_code("127.1:80"), "host_invalid");
    assert_eq!(host_code("0x7f.0.0.1:80"), "host_invalid");
    assert_eq!(host_code("127.000.0.1:80"), "host_invalid");
    assert_eq!(host_code("2130706433:80"), "host_invalid");
    assert_eq!(host_code("256.0.0.1:80"), "host_invalid");
}

#[test]
fn host_matching_is_exact_after_normalising() {
    let grant = host("api.example.com:443");
    assert!(grant.matches("api.example.com", 443));
    assert!(grant.matches("API.Example.COM.", 443));
    assert!(!grant.matches("api.example.com", 80));
    assert!(!grant.matches("api.example.com.evil.test", 443));
    assert!(!grant.matches("evilapi.example.com", 443));
    assert!(!grant.matches("example.com", 443));
    assert!(!grant.matches("x.api.example.com", 443));
    assert!(!grant.matches("api.example.com..", 443));
    assert!(!grant.matches("api.example.com\0", 443));
    assert!(
        !grant.matches("аpi.example.com", 443),
        "Cyrillic a look-alike"
    );
    let v6 = host("[::1]:8080");
    assert!(v6.matches("[::1]", 8080));
    assert!(v6.matches("[0::1]", 8080));
    assert!(v6.matches("::1", 8080));
    assert!(!v6.matches("127.0.0.1", 8080));
    assert!(!v6.matches("[::1]", 8081));
    let v4 = host("127.0.0.1:8080");
    assert!(v4.matches("127.0.0.1", 8080));
    assert!(!v4.matches("127.1", 8080));
    assert!(!v4.matches("[::ffff:127.0.0.1]", 8080));
    assert!(!v4.matches("localhost", 8080));
}

#[test]
fn normalize_host_handles_client_spellings() {
    assert_eq!(
        normalize_host("EXAMPLE.com.").as_deref(),
        Some("example.com")
    );
    assert_eq!(normalize_host("[::1]").as_deref(), Some("::1"));
    assert_eq!(normalize_host("::1").as_deref(), Some("::1"));
    assert_eq!(normalize_host("10.0.0.1").as_deref(), Some("10.0.0.1"));
    for bad in [
        "", ".", "[::1", "::1]", "a..b", "exa mple", "ex@mple", "1.2.3", "01.2.3.4", "é.com",
    ] {
        assert_eq!(normalize_host(bad), None, "{bad:?}");
    }
}

#[test]
fn origins_become_host_grants() {
    assert_eq!(
        HostGrant::from_origin("https://api.example.com").unwrap(),
        host("api.example.com:443")
    );
    assert_eq!(
        HostGrant::from_origin("https://api.example.com/").unwrap(),
        host("api.example.com:443")
    );
    assert_eq!(
        HostGrant::from_origin("http://api.example.com").unwrap(),
        host("api.example.com:80")
    );
    assert_eq!(
        HostGrant::from_origin("http://127.0.0.1:8123").unwrap(),
        host("127.0.0.1:8123")
    );
    assert_eq!(
        HostGrant::from_origin("https://[::1]:8443").unwrap(),
        host("[::1]:8443")
    );
    assert_eq!(
        HostGrant::from_origin("HTTPS://Example.com.").unwrap(),
        host("example.com:443")
    );
    let code = |s: &str| HostGrant::from_origin(s).unwrap_err().code();
    assert_eq!(code("ftp://example.com"), "origin_scheme");
    assert_eq!(code("wss://example.com"), "origin_scheme");
    assert_eq!(code("example.com:443"), "origin_invalid");
    assert_eq!(code("https://example.com/api"), "host_path");
    assert_eq!(code("https://example.com/?q"), "host_path");
    assert_eq!(code("https://example.com#x"), "host_path");
    assert_eq!(code("https://user@example.com"), "host_userinfo");
    assert_eq!(code("https://*.example.com"), "host_wildcard");
    assert_eq!(code("https://example.com:0"), "host_bad_port");
    assert_eq!(code("https://example.com:"), "host_bad_port");
    assert_eq!(code("https://"), "host_invalid");
    assert_eq!(code("https://::1"), "host_invalid");
    assert_eq!(code("https://[::1"), "host_invalid");
    assert_eq!(code("https://bücher.de"), "host_non_ascii");
}

#[test]
fn host_grants_serialize_as_host_port() {
    assert_eq!(
        serde_json::to_value(host("[::1]:80")).unwrap(),
        json!("[::1]:80")
    );
    let back: HostGrant = serde_json::from_value(json!("Example.com:443")).unwrap();
    assert_eq!(back, host("example.com:443"));
    assert!(serde_json::from_value::<HostGrant>(json!("*.example.com:443")).is_err());
}

// ---- grants ----

#[test]
fn default_grants_are_nothing() {
    let g = Grants::default();
    assert!(g.read.is_empty() && g.write.is_empty());
    assert_eq!(g.network, Network::None);
    assert_eq!((g.processes, g.memory_mib), (0, DEFAULT_MEMORY_MIB));
    assert!(!g.allows("example.com", 443));
    assert!(g.hosts().is_empty());
}

#[test]
fn allows_follows_the_network() {
    let mut g = Grants {
        network: Network::Hosts(vec![host("a.example:443")]),
        ..Grants::default()
    };
    assert!(g.allows("A.example.", 443));
    assert!(!g.allows("a.example", 80));
    assert!(!g.allows("b.example", 443));
    assert_eq!(g.hosts(), &[host("a.example:443")]);
    g.network = Network::Any;
    assert!(g.allows("anything.example", 1));
    assert!(g.hosts().is_empty());
    g.network = Network::None;
    assert!(!g.allows("a.example", 443));
}

#[test]
fn widen_unions_and_takes_the_larger() {
    let mut g = Grants {
        read: vec![path("~/a"), path("/b")],
        write: vec![path("~/w")],
        network: Network::Hosts(vec![host("a.example:443")]),
        processes: 2,
        memory_mib: 512,
    };
    let other = Grants {
        read: vec![path("/b"), path("/c")],
        write: vec![path("~/w"), path("~/w2")],
        network: Network::Hosts(vec![host("b.example:443"), host("a.example:443")]),
        processes: 1,
        memory_mib: 1024,
    };
    g.widen(&other);
    assert_eq!(g.read, vec![path("~/a"), path("/b"), path("/c")]);
    assert_eq!(g.write, vec![path("~/w"), path("~/w2")]);
    assert_eq!(
        g.network,
        Network::Hosts(vec![host("a.example:443"), host("b.example:443")])
    );
    assert_eq!((g.processes, g.memory_mib), (2, 1024));

    let mut none = Grants::default();
    none.widen(&Grants {
        network: Network::Hosts(vec![host("x.example:1")]),
        ..Grants::default()
    });
    assert_eq!(none.hosts(), &[host("x.example:1")]);
    none.widen(&Grants {
        network: Network::Any,
        ..Grants::default()
    });
    assert_eq!(none.network, Network::Any);
    none.widen(&Grants {
        network: Network::Hosts(vec![host("y.example:1")]),
        ..Grants::default()
    });
    assert_eq!(none.network, Network::Any, "Any dominates");
    let mut hosts = Grants {
        network: Network::Hosts(vec![host("x.example:1")]),
        ..Grants::default()
    };
    hosts.widen(&Grants::default());
    assert_eq!(hosts.hosts(), &[host("x.example:1")]);
}

// ---- JSON ----

const AT: &str = "signed.servers[0].confinement";

fn refused(value: Value) -> GrantError {
    match parse_confinement(&value, AT) {
        Ok(ok) => panic!("{value} accepted as {ok:?}"),
        Err(e) => e,
    }
}

#[test]
fn the_json_form_parses() {
    let (mode, g) = parse_confinement(
        &json!({
            "mode": "required",
            "read": ["~/docs", "/srv/ro/", "~/docs"],
            "write": ["~/out"],
            "hosts": ["api.example.com:443", "API.example.com.:443", "[::1]:8080"],
            "processes": 4,
            "memoryMiB": 1024
        }),
        AT,
    )
    .unwrap();
    assert_eq!(mode, Some(ConfinementMode::Required));
    assert_eq!(g.read, vec![path("~/docs"), path("/srv/ro")]);
    assert_eq!(g.write, vec![path("~/out")]);
    assert_eq!(
        g.network,
        Network::Hosts(vec![host("api.example.com:443"), host("[::1]:8080")])
    );
    assert_eq!((g.processes, g.memory_mib), (4, 1024));

    let (mode, g) = parse_confinement(&json!({}), AT).unwrap();
    assert_eq!((mode, g), (None, Grants::default()));
    let (_, g) = parse_confinement(&json!({"hosts": "any"}), AT).unwrap();
    assert_eq!(g.network, Network::Any);
    let (_, g) = parse_confinement(&json!({"hosts": []}), AT).unwrap();
    assert_eq!(g.network, Network::None);
    let (mode, _) = parse_confinement(&json!({"mode": "off"}), AT).unwrap();
    assert_eq!(mode, Some(ConfinementMode::Off));
    let (_, g) = parse_confinement(
        &json!({"processes": MAX_PROCESSES, "memoryMiB": MAX_MEMORY_MIB}),
        AT,
    )
    .unwrap();
    assert_eq!((g.processes, g.memory_mib), (MAX_PROCESSES, MAX_MEMORY_MIB));
    let (_, g) = parse_confinement(&json!({"processes": 0, "memoryMiB": 1}), AT).unwrap();
    assert_eq!((g.processes, g.memory_mib), (0, 1));
}

#[test]
fn unknown_keys_are_refused_naming_the_key_and_the_known_ones() {
    let e = refused(json!({"read": [], "hostz": ["a:1"]}));
    assert_eq!(e.code(), "confinement_unknown_key");
    let text = e.to_string();
    assert!(text.contains(AT) && text.contains("hostz"), "{text}");
    for known in ["mode", "read", "write", "hosts", "processes", "memoryMiB"] {
        assert!(text.contains(known), "{text} lacks {known}");
    }
    assert_eq!(
        refused(json!({"memoryMib": 1})).code(),
        "confinement_unknown_key"
    );
}

#[test]
fn wrong_shapes_are_refused_with_their_location() {
    assert_eq!(refused(json!(["~/a"])).code(), "confinement_not_object");
    assert_eq!(refused(json!(null)).code(), "confinement_not_object");
    let e = refused(json!({"read": "~/a"}));
    assert_eq!(e.code(), "confinement_wrong_type");
    assert!(e.to_string().contains(&format!("{AT}.read")), "{e}");
    assert_eq!(
        refused(json!({"write": [1]})).code(),
        "confinement_wrong_type"
    );
    assert_eq!(
        refused(json!({"hosts": "all"})).code(),
        "confinement_wrong_type"
    );
    assert_eq!(
        refused(json!({"hosts": "ANY"})).code(),
        "confinement_wrong_type"
    );
    assert_eq!(
        refused(json!({"hosts": {"a": 1}})).code(),
        "confinement_wrong_type"
    );
    assert_eq!(refused(json!({"mode": 1})).code(), "confinement_wrong_type");
    assert_eq!(
        refused(json!({"mode": "strict"})).code(),
        "confinement_bad_mode"
    );
}

#[test]
fn bad_entries_are_refused_at_their_index() {
    let e = refused(json!({"read": ["~/ok", "~root/x"]}));
    assert_eq!(e.code(), "path_other_users_home");
    assert!(e.to_string().starts_with(&format!("{AT}.read[1]: ")), "{e}");
    let e = refused(json!({"write": ["/a/../b"]}));
    assert_eq!(e.code(), "path_dot_segment");
    assert!(e.to_string().contains(&format!("{AT}.write[0]")), "{e}");
    let e = refused(json!({"hosts": ["a.example:443", "*.example.com:443"]}));
    assert_eq!(e.code(), "host_wildcard");
    assert!(e.to_string().contains(&format!("{AT}.hosts[1]")), "{e}");
}

#[test]
fn numbers_and_counts_are_bounded() {
    let e = refused(json!({"memoryMiB": 0}));
    assert_eq!(e.code(), "confinement_out_of_range");
    assert!(e.to_string().contains("memoryMiB"), "{e}");
    assert_eq!(
        refused(json!({"memoryMiB": MAX_MEMORY_MIB + 1})).code(),
        "confinement_out_of_range"
    );
    assert_eq!(
        refused(json!({"processes": MAX_PROCESSES + 1})).code(),
        "confinement_out_of_range"
    );
    assert_eq!(
        refused(json!({"processes": -1})).code(),
        "confinement_out_of_range"
    );
    assert_eq!(
        refused(json!({"processes": 1.5})).code(),
        "confinement_out_of_range"
    );
    assert_eq!(
        refused(json!({"processes": "4"})).code(),
        "confinement_out_of_range"
    );
    assert_eq!(
        refused(json!({"memoryMiB": u64::MAX})).code(),
        "confinement_out_of_range"
    );

    let paths: Vec<String> = (0..=MAX_PATH_GRANTS).map(|i| format!("/p{i}")).collect();
    assert_eq!(
        refused(json!({"read": paths})).code(),
        "confinement_too_many"
    );
    assert_eq!(
        refused(json!({"write": paths})).code(),
        "confinement_too_many"
    );
    let (_, g) = parse_confinement(&json!({"read": &paths[..MAX_PATH_GRANTS]}), AT).unwrap();
    assert_eq!(g.read.len(), MAX_PATH_GRANTS);
    let hosts: Vec<String> = (0..=MAX_HOST_GRANTS)
        .map(|i| format!("h{i}.example:443"))
        .collect();
    assert_eq!(
        refused(json!({"hosts": hosts})).code(),
        "confinement_too_many"
    );
    let (_, g) = parse_confinement(&json!({"hosts": &hosts[..MAX_HOST_GRANTS]}), AT).unwrap();
    assert_eq!(g.hosts().len(), MAX_HOST_GRANTS);
}

#[test]
fn to_json_writes_only_what_differs_from_the_default() {
    assert_eq!(confinement_to_json(None, &Grants::default()), json!({}));
    assert_eq!(
        confinement_to_json(Some(ConfinementMode::Off), &Grants::default()),
        json!({"mode": "off"})
    );
    let g = Grants {
        read: vec![path("~/a")],
        write: vec![path("/w")],
        network: Network::Hosts(vec![host("[::1]:80"), host("a.example:443")]),
        processes: 3,
        memory_mib: 100,
    };
    let out = confinement_to_json(Some(ConfinementMode::Required), &g);
    assert_eq!(
        serde_json::to_string(&out).unwrap(),
        r#"{"mode":"required","read":["~/a"],"write":["/w"],"hosts":["[::1]:80","a.example:443"],"processes":3,"memoryMiB":100}"#
    );
    let any = Grants {
        network: Network::Any,
        ..Grants::default()
    };
    assert_eq!(confinement_to_json(None, &any), json!({"hosts": "any"}));
}

fn path_strategy() -> impl Strategy<Value = PathGrant> {
    (
        any::<bool>(),
        prop::collection::vec("[a-zA-Z0-9_.-]{1,8}", 0..4),
    )
        .prop_filter_map("valid grant", |(home, segments)| {
            let text = if home {
                std::iter::once("~".to_string())
                    .chain(segments)
                    .collect::<Vec<_>>()
                    .join("/")
            } else {
                format!("/{}", segments.join("/"))
            };
            PathGrant::parse(&text).ok()
        })
}

fn host_strategy() -> impl Strategy<Value = HostGrant> {
    let name = "[a-z][a-z0-9-]{0,10}[a-z0-9](\\.[a-z][a-z0-9]{0,5}){0,3}";
    let v4 = any::<[u8; 4]>().prop_map(|o| format!("{}.{}.{}.{}", o[0], o[1], o[2], o[3]));
    let v6 = any::<[u16; 8]>().prop_map(|s| format!("[{}]", std::net::Ipv6Addr::from(s)));
    (prop_oneof![name.prop_map(String::from), v4, v6], 1u16..)
        .prop_filter_map("valid host", |(h, p)| {
            HostGrant::parse(&format!("{h}:{p}")).ok()
        })
}

fn grants_strategy() -> impl Strategy<Value = (Option<ConfinementMode>, Grants)> {
    let network = prop_oneof![
        Just(Network::None),
        Just(Network::Any),
        prop::collection::vec(host_strategy(), 1..5).prop_map(|mut v| {
            v.dedup();
            let mut unique = Vec::new();
            for h in v {
                if !unique.contains(&h) {
                    unique.push(h);
                }
            }
            Network::Hosts(unique)
        }),
    ];
    let unique_paths = || {
        prop::collection::vec(path_strategy(), 0..5).prop_map(|v| {
            let mut unique = Vec::new();
            for p in v {
                if !unique.contains(&p) {
                    unique.push(p);
                }
            }
            unique
        })
    };
    (
        prop::option::of(prop::sample::select(ConfinementMode::ALL.to_vec())),
        unique_paths(),
        unique_paths(),
        network,
        0..=MAX_PROCESSES,
        1..=MAX_MEMORY_MIB,
    )
        .prop_map(|(mode, read, write, network, processes, memory_mib)| {
            (
                mode,
                Grants {
                    read,
                    write,
                    network,
                    processes,
                    memory_mib,
                },
            )
        })
}

proptest! {
    #[test]
    fn json_round_trips((mode, grants) in grants_strategy()) {
        let json = confinement_to_json(mode, &grants);
        let (mode2, grants2) = parse_confinement(&json, AT).unwrap();
        prop_assert_eq!(mode2, mode);
        prop_assert_eq!(grants2, grants);
    }

    #[test]
    fn host_grants_round_trip_through_display(grant in host_strategy()) {
        prop_assert_eq!(HostGrant::parse(&grant.to_string()).unwrap(), grant.clone());
        let bracketed = if grant.host.contains(':') { format!("[{}]", grant.host) } else { grant.host.clone() };
        prop_assert!(grant.matches(&bracketed, grant.port));
    }

    #[test]
    fn parsers_never_panic(s in "\\PC{0,40}") {
        let _ = PathGrant::parse(&s);
        let _ = HostGrant::parse(&s);
        let _ = HostGrant::from_origin(&s);
        let _ = normalize_host(&s);
    }
}
