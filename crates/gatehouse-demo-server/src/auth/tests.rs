//! Unit tests of the pure token checks, with keys generated here.

use std::sync::OnceLock;

use aws_lc_rs::{
    encoding::AsDer,
    rand::SystemRandom,
    rsa::{KeyPair, KeySize},
    signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair},
};
use base64::{
    Engine,
    engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD},
};
use jsonwebtoken::{EncodingKey, Header, jwk::Jwk};
use serde_json::{Value, json};

use super::*;

const ISSUER: &str = "https://issuer.example";
const RESOURCE: &str = "http://127.0.0.1:4000/mcp";
const NOW: u64 = 1_800_000_000;

struct Signer {
    kid: String,
    alg: Algorithm,
    key: EncodingKey,
    jwk: Value,
}

impl Signer {
    fn rsa(kid: &str) -> Self {
        let pair = KeyPair::generate(KeySize::Rsa2048).expect("RSA key");
        let pkcs8 = AsDer::<aws_lc_rs::encoding::Pkcs8V1Der>::as_der(&pair).expect("PKCS#8");
        let base64 = STANDARD.encode(pkcs8.as_ref());
        let lines: Vec<&str> = base64
            .as_bytes()
            .chunks(64)
            .map(|line| std::str::from_utf8(line).unwrap())
            .collect();
        let pem = format!(
            "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
            lines.join("\n")
        );
        let key = EncodingKey::from_rsa_pem(pem.as_bytes()).expect("RSA PEM");
        Self::new(kid, Algorithm::RS256, key)
    }

    fn ec(kid: &str) -> Self {
        let pkcs8 =
            EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &SystemRandom::new())
                .expect("EC key");
        Self::new(
            kid,
            Algorithm::ES256,
            EncodingKey::from_ec_der(pkcs8.as_ref()),
        )
    }

    fn new(kid: &str, alg: Algorithm, key: EncodingKey) -> Self {
        let mut jwk = Jwk::from_encoding_key(&key, alg).expect("JWK");
        jwk.common.key_id = Some(kid.to_owned());
        let jwk = serde_json::to_value(jwk).unwrap();
        Self {
            kid: kid.to_owned(),
            alg,
            key,
            jwk,
        }
    }

    fn sign(&self, claims: &Value) -> String {
        let mut header = Header::new(self.alg);
        header.kid = Some(self.kid.clone());
        header.typ = Some("at+jwt".into());
        jsonwebtoken::encode(&header, claims, &self.key).expect("sign")
    }
}

/// One RSA key for the whole test binary: generating it is the slow part.
fn rsa() -> &'static Signer {
    static RSA: OnceLock<Signer> = OnceLock::new();
    RSA.get_or_init(|| Signer::rsa("rsa-1"))
}

fn ec() -> &'static Signer {
    static EC: OnceLock<Signer> = OnceLock::new();
    EC.get_or_init(|| Signer::ec("ec-1"))
}

fn keys() -> Keys {
    Keys::from_jwks(&json!({"keys": [rsa().jwk, ec().jwk]})).expect("JWKS")
}

fn config() -> AuthConfig {
    AuthConfig::new(
        ISSUER,
        "http://127.0.0.1:4000",
        "/mcp",
        BASE_SCOPE,
        [
            ("add".to_owned(), "mcp:admin".to_owned()),
            ("echo".to_owned(), "mcp:echo".to_owned()),
        ],
    )
}

fn claims(scope: &str) -> Value {
    json!({
        "iss": ISSUER,
        "aud": RESOURCE,
        "sub": "alice",
        "client_id": "gatehouse",
        "scope": scope,
        "iat": NOW - 10,
        "exp": NOW + 600,
    })
}

fn with(mut claims: Value, key: &str, value: Value) -> Value {
    claims[key] = value;
    claims
}

fn without(mut claims: Value, key: &str) -> Value {
    claims.as_object_mut().unwrap().remove(key);
    claims
}

fn check_token(token: &str, tools: &[&str]) -> Result<Claims, Refusal> {
    check(Some(token), tools, NOW, &keys(), &config())
}

fn invalid(result: Result<Claims, Refusal>) -> String {
    match result {
        Err(Refusal::InvalidToken(why)) => why,
        other => panic!("expected invalid_token, got {other:?}"),
    }
}

fn b64(value: &Value) -> String {
    URL_SAFE_NO_PAD.encode(value.to_string())
}

#[test]
fn a_good_token_passes() {
    let verified = check_token(&rsa().sign(&claims("mcp:tools")), &[]).expect("RS256 passes");
    assert_eq!(
        verified,
        Claims {
            sub: Some("alice".into()),
            client_id: Some("gatehouse".into()),
            scopes: vec!["mcp:tools".into()],
            exp: NOW + 600,
        }
    );
    check_token(&ec().sign(&claims("openid mcp:tools")), &["fail"]).expect("ES256 passes");
    // An audience array naming the resource, and `scp` instead of `scope`.
    let token = rsa().sign(&with(
        claims("mcp:tools"),
        "aud",
        json!(["other", RESOURCE]),
    ));
    check_token(&token, &[]).expect("an audience array");
    let scp = with(
        without(claims(""), "scope"),
        "scp",
        json!(["mcp:tools", "mcp:admin"]),
    );
    let verified = check_token(&rsa().sign(&scp), &["add"]).expect("scp array");
    assert_eq!(verified.scopes, ["mcp:tools", "mcp:admin"]);
}

#[test]
fn expired_tokens_are_refused_after_the_leeway() {
    let expired = with(claims("mcp:tools"), "exp", json!(NOW - LEEWAY_SECS));
    assert!(invalid(check_token(&rsa().sign(&expired), &[])).contains("expired"));
    let within_leeway = with(claims("mcp:tools"), "exp", json!(NOW - LEEWAY_SECS + 1));
    check_token(&rsa().sign(&within_leeway), &[]).expect("within the leeway");
    let no_exp = without(claims("mcp:tools"), "exp");
    assert!(invalid(check_token(&rsa().sign(&no_exp), &[])).contains("exp"));
    let early = with(claims("mcp:tools"), "nbf", json!(NOW + LEEWAY_SECS + 1));
    assert!(invalid(check_token(&rsa().sign(&early), &[])).contains("nbf"));
    let nbf_ok = with(claims("mcp:tools"), "nbf", json!(NOW + LEEWAY_SECS));
    check_token(&rsa().sign(&nbf_ok), &[]).expect("nbf within the leeway");
}

#[test]
fn the_audience_must_be_this_resource() {
    for aud in [
        json!("http://127.0.0.1:4001/mcp"),
        json!("http://127.0.0.1:4000/mcp/"),
        json!(["gatehouse"]),
        json!([]),
    ] {
        let token = rsa().sign(&with(claims("mcp:tools"), "aud", aud.clone()));
        assert!(
            invalid(check_token(&token, &[])).contains("audience"),
            "{aud}"
        );
    }
    let no_aud = without(claims("mcp:tools"), "aud");
    assert!(invalid(check_token(&rsa().sign(&no_aud), &[])).contains("audience"));
}

#[test]
fn the_issuer_must_match_exactly() {
    for iss in ["https://issuer.example/", "https://evil.example"] {
        let token = rsa().sign(&with(claims("mcp:tools"), "iss", json!(iss)));
        assert!(
            invalid(check_token(&token, &[])).contains("issued by"),
            "{iss}"
        );
    }
    let no_iss = without(claims("mcp:tools"), "iss");
    assert!(invalid(check_token(&rsa().sign(&no_iss), &[])).contains("iss"));
}

#[test]
fn a_bad_signature_is_refused() {
    // Same kid, another key.
    let impostor = Signer::ec("ec-1");
    let token = impostor.sign(&claims("mcp:tools"));
    assert_eq!(invalid(check_token(&token, &[])), "bad signature");
    // A token whose claims were altered after signing.
    let token = rsa().sign(&claims("mcp:tools"));
    let mut parts: Vec<&str> = token.split('.').collect();
    let altered = b64(&claims("mcp:tools mcp:admin"));
    parts[1] = &altered;
    assert_eq!(invalid(check_token(&parts.join("."), &[])), "bad signature");
}

#[test]
fn an_unknown_kid_asks_for_the_keys_again() {
    let stranger = Signer::ec("ec-2");
    assert_eq!(
        check_token(&stranger.sign(&claims("mcp:tools")), &[]),
        Err(Refusal::UnknownKey("ec-2".into()))
    );
    let refusal = Refusal::UnknownKey("ec-2".into());
    assert_eq!(refusal.status(), StatusCode::UNAUTHORIZED);
    assert!(
        refusal
            .www_authenticate(&config())
            .starts_with("Bearer error=\"invalid_token\"")
    );
    // No kid: only a one-key set will do.
    let mut header = Header::new(Algorithm::ES256);
    header.kid = None;
    let token = jsonwebtoken::encode(&header, &claims("mcp:tools"), &ec().key).unwrap();
    assert!(invalid(check_token(&token, &[])).contains("kid"));
    let one = Keys::from_jwks(&json!({"keys": [ec().jwk]})).unwrap();
    check(Some(&token), &[], NOW, &one, &config()).expect("the only key");
}

#[test]
fn alg_none_is_refused() {
    let header = json!({"alg": "none", "typ": "JWT", "kid": "rsa-1"});
    let token = format!("{}.{}.", b64(&header), b64(&claims("mcp:tools")));
    assert!(invalid(check_token(&token, &[])).contains("malformed"));
    let header = json!({"alg": "None", "kid": "rsa-1"});
    let token = format!("{}.{}.", b64(&header), b64(&claims("mcp:tools")));
    assert!(check_token(&token, &[]).is_err());
}

#[test]
fn hmac_with_the_public_key_as_secret_is_refused() {
    for signer in [rsa(), ec()] {
        let secret = signer.jwk.to_string();
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some(signer.kid.clone());
        let token = jsonwebtoken::encode(
            &header,
            &claims("mcp:tools"),
            &EncodingKey::from_secret(secret.as_bytes()),
        )
        .unwrap();
        assert!(
            invalid(check_token(&token, &[])).contains("not allowed"),
            "{}",
            signer.kid
        );
    }
    // ES256 named for the RSA key is refused the same way.
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some("rsa-1".into());
    let token = jsonwebtoken::encode(&header, &claims("mcp:tools"), &ec().key).unwrap();
    assert!(invalid(check_token(&token, &[])).contains("not allowed"));
}

#[test]
fn the_base_scope_is_required() {
    for scope in ["", "openid", "mcp:admin", "mcp:toolsx"] {
        let result = check_token(&rsa().sign(&claims(scope)), &[]);
        let Err(refusal @ Refusal::InsufficientScope { .. }) = result else {
            panic!("{scope:?}: expected insufficient_scope, got {result:?}");
        };
        assert_eq!(refusal.status(), StatusCode::FORBIDDEN);
        let expected = if scope == "mcp:admin" {
            "mcp:tools mcp:admin"
        } else {
            "mcp:tools"
        };
        assert_eq!(
            refusal.www_authenticate(&config()),
            format!(
                "Bearer error=\"insufficient_scope\", scope=\"{expected}\", \
                 resource_metadata=\"http://127.0.0.1:4000/.well-known/oauth-protected-resource/mcp\""
            ),
            "{scope:?}"
        );
    }
}

#[test]
fn tool_scopes_ask_for_step_up() {
    let token = rsa().sign(&claims("openid mcp:tools mcp:echo"));
    check_token(&token, &["echo", "fail"]).expect("echo's scope is granted");
    let refusal = check_token(&token, &["add"]).expect_err("add needs mcp:admin");
    assert_eq!(
        refusal,
        Refusal::InsufficientScope {
            // Base, the missing scope, then what the token has that this server knows
            // (not `openid`).
            scope: "mcp:tools mcp:admin mcp:echo".into(),
            missing: vec!["mcp:admin".into()],
        }
    );
    assert_eq!(refusal.status(), StatusCode::FORBIDDEN);
    assert_eq!(
        refusal.www_authenticate(&config()),
        "Bearer error=\"insufficient_scope\", scope=\"mcp:tools mcp:admin mcp:echo\", \
         resource_metadata=\"http://127.0.0.1:4000/.well-known/oauth-protected-resource/mcp\""
    );
    assert_eq!(
        refusal.body(),
        json!({"error": "insufficient scope: this request needs mcp:admin"})
    );
    // A batch calling both protected tools with neither scope.
    let token = rsa().sign(&claims("mcp:tools"));
    let Err(Refusal::InsufficientScope { scope, missing }) = check_token(&token, &["echo", "add"])
    else {
        panic!("expected insufficient_scope");
    };
    assert_eq!(scope, "mcp:tools mcp:echo mcp:admin");
    assert_eq!(missing, ["mcp:echo", "mcp:admin"]);
    let admin = rsa().sign(&claims("mcp:tools mcp:admin"));
    check_token(&admin, &["add"]).expect("with mcp:admin");
}

#[test]
fn challenges_have_the_documented_shape() {
    let cfg = config();
    assert_eq!(
        Refusal::MissingToken.www_authenticate(&cfg),
        "Bearer resource_metadata=\"http://127.0.0.1:4000/.well-known/oauth-protected-resource/mcp\", \
         scope=\"mcp:tools\""
    );
    assert_eq!(
        Refusal::InvalidToken("x".into()).www_authenticate(&cfg),
        "Bearer error=\"invalid_token\", \
         resource_metadata=\"http://127.0.0.1:4000/.well-known/oauth-protected-resource/mcp\", \
         scope=\"mcp:tools\""
    );
    assert_eq!(
        check(None, &[], NOW, &keys(), &cfg),
        Err(Refusal::MissingToken)
    );
    assert_eq!(Refusal::MissingToken.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(quoted(r#"a"b\c"#), r#""a\"b\\c""#);
}

#[test]
fn bearer_tokens_are_read_from_the_header() {
    assert_eq!(bearer_token(None), Ok(None));
    assert_eq!(
        bearer_token(Some(b"Bearer abc.def.ghi")),
        Ok(Some("abc.def.ghi"))
    );
    assert_eq!(bearer_token(Some(b"bearer  abc")), Ok(Some("abc")));
    assert_eq!(bearer_token(Some(b"Basic dXNlcjpwYXNz")), Ok(None));
    assert!(bearer_token(Some(b"Bearer")).is_err());
    assert!(bearer_token(Some(b"Bearer a b")).is_err());
    assert!(bearer_token(Some(b"Bearer \xff")).is_err());
    assert!(invalid(check_token("not-a-jwt", &[])).contains("malformed"));
}

#[test]
fn called_tools_are_found_in_messages_and_batches() {
    let call = |name: &str| json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name}});
    assert_eq!(called_tools(call("add").to_string().as_bytes()), ["add"]);
    let batch =
        json!([call("echo"), {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, call("add")]);
    assert_eq!(called_tools(batch.to_string().as_bytes()), ["echo", "add"]);
    assert!(called_tools(b"not json").is_empty());
    assert!(called_tools(br#"{"method": "tools/list"}"#).is_empty());
    assert!(called_tools(br#"{"method": "tools/call", "params": {"name": 7}}"#).is_empty());
}

#[test]
fn resource_metadata_lists_every_scope_once() {
    let mut cfg = config();
    cfg.tool_scopes.insert("fail".into(), "mcp:admin".into());
    assert_eq!(
        cfg.resource_metadata_document(),
        json!({
            "resource": RESOURCE,
            "authorization_servers": [ISSUER],
            "scopes_supported": ["mcp:tools", "mcp:admin", "mcp:echo"],
            "bearer_methods_supported": ["header"],
            "resource_name": "Gatehouse demo server",
        })
    );
}

#[test]
fn unusable_jwks_keys_are_skipped() {
    let keys = Keys::from_jwks(&json!({"keys": [
        {"kty": "oct", "kid": "secret", "k": "c2VjcmV0"},
        with(rsa().jwk.clone(), "use", json!("enc")),
        with(ec().jwk.clone(), "alg", json!("RS256")),
        {"kty": "weird", "kid": "w"},
        rsa().jwk,
    ]}))
    .unwrap();
    assert_eq!(keys.len(), 1, "{keys:?}");
    assert_eq!(keys.skipped.len(), 4, "{keys:?}");
    assert!(keys.contains("rsa-1"));
    assert!(Keys::from_jwks(&json!({"nokeys": []})).is_err());
    // A key pinned to RS256 (as the issuer's are) refuses PS256 tokens signed with it; a key
    // without `alg` allows every RSA algorithm.
    assert_eq!(rsa().jwk["alg"], "RS256");
    let unpinned = Keys::from_jwks(&json!({"keys": [without(rsa().jwk.clone(), "alg")]})).unwrap();
    let mut header = Header::new(Algorithm::PS256);
    header.kid = Some("rsa-1".into());
    let token = jsonwebtoken::encode(&header, &claims("mcp:tools"), &rsa().key).unwrap();
    check(Some(&token), &[], NOW, &unpinned, &config()).expect("PS256 with an unpinned key");
    assert!(invalid(check_token(&token, &[])).contains("not allowed"));
}

#[test]
fn command_line_values_are_checked() {
    assert_eq!(
        parse_issuer("http://127.0.0.1:9000").unwrap(),
        "http://127.0.0.1:9000"
    );
    assert_eq!(
        parse_issuer("https://auth.example/tenant/").unwrap(),
        "https://auth.example/tenant/"
    );
    for bad in [
        "ftp://auth.example",
        "auth.example",
        "",
        "https://auth.example/?x=1",
        "https://auth.example/#f",
        "https://user:pw@auth.example",
        "file:///etc",
    ] {
        assert!(parse_issuer(bad).is_err(), "{bad:?}");
    }
    assert_eq!(
        parse_tool_scope("add=mcp:admin").unwrap(),
        ("add".to_owned(), "mcp:admin".to_owned())
    );
    for bad in ["add", "=mcp:admin", "add=", "add=a b", "add=a\"b"] {
        assert!(parse_tool_scope(bad).is_err(), "{bad:?}");
    }
}
