//! Each check of the ID token, on tokens signed here with Ed25519 keys.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ed25519_dalek::{Signer as _, SigningKey};
use serde_json::{Value, json};

use super::*;

const NOW: i64 = 1_800_000_000;

fn signing_key(seed: u8) -> SigningKey {
    SigningKey::from_bytes(&[seed; 32])
}

fn jwk(key: &SigningKey, kid: &str) -> Value {
    json!({
        "kty": "OKP", "crv": "Ed25519", "use": "sig", "alg": "EdDSA", "kid": kid,
        "x": URL_SAFE_NO_PAD.encode(key.verifying_key().as_bytes()),
    })
}

fn jwt(key: &SigningKey, header: Value, claims: &Value) -> String {
    let message = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let signature = key.sign(message.as_bytes());
    format!("{message}.{}", URL_SAFE_NO_PAD.encode(signature.to_bytes()))
}

fn claims() -> Value {
    json!({
        "iss": "https://idp.example", "sub": "248289761001", "aud": "gatehouse",
        "exp": NOW + 300, "iat": NOW, "nonce": "n-0S6_WzA2Mj",
        "email": "jane@acme.example", "email_verified": true, "name": "Jane Doe",
        "amr": ["pwd", "otp"],
    })
}

fn expected() -> Expected<'static> {
    Expected {
        issuer: "https://idp.example",
        client_id: "gatehouse",
        nonce: "n-0S6_WzA2Mj",
        now: NOW,
    }
}

/// The token's outcome against a set holding key 1 as "k1".
fn check(token: &str) -> Result<UpstreamIdentity, UpstreamError> {
    let keys = keys_of(&json!({ "keys": [jwk(&signing_key(1), "k1")] })).unwrap();
    let head = head(token)?;
    let candidates = candidates(&keys, &head);
    validate(token, &head, &candidates, &expected())
}

fn signed(claims: &Value) -> String {
    jwt(
        &signing_key(1),
        json!({"alg": "EdDSA", "kid": "k1"}),
        claims,
    )
}

fn refusal(claims: &Value) -> String {
    match check(&signed(claims)) {
        Err(UpstreamError::InvalidToken(reason)) => reason,
        other => panic!("not refused as invalid: {other:?}"),
    }
}

#[test]
fn a_good_token_gives_the_identity() {
    let identity = check(&signed(&claims())).unwrap();
    assert_eq!(
        identity,
        UpstreamIdentity {
            subject: "248289761001".into(),
            email: Some("jane@acme.example".into()),
            email_verified: true,
            name: Some("Jane Doe".into()),
            amr: vec!["pwd".into(), "otp".into()],
            auth_time: None,
        }
    );
}

#[test]
fn a_token_signed_by_another_key_is_refused() {
    let token = jwt(
        &signing_key(2),
        json!({"alg": "EdDSA", "kid": "k1"}),
        &claims(),
    );
    assert!(
        matches!(check(&token), Err(UpstreamError::InvalidToken(r)) if r.starts_with("signature"))
    );
    // Without a kid every fitting key is tried, and none fits.
    let token = jwt(&signing_key(2), json!({"alg": "EdDSA"}), &claims());
    assert!(check(&token).is_err());
    let token = jwt(&signing_key(1), json!({"alg": "EdDSA"}), &claims());
    assert!(check(&token).is_ok());
}

#[test]
fn symmetric_and_none_algorithms_are_refused() {
    for alg in ["HS256", "none"] {
        let token = jwt(&signing_key(1), json!({"alg": alg, "kid": "k1"}), &claims());
        assert!(
            matches!(check(&token), Err(UpstreamError::InvalidToken(_))),
            "{alg}"
        );
    }
    // A key published for EdDSA is not a candidate for a token saying ES256.
    let keys = keys_of(&json!({ "keys": [jwk(&signing_key(1), "k1")] })).unwrap();
    let head = Head {
        alg: Algorithm::ES256,
        kid: Some("k1".into()),
    };
    assert!(candidates(&keys, &head).is_empty());
}

#[test]
fn an_unknown_kid_has_no_candidates() {
    let keys = keys_of(&json!({ "keys": [jwk(&signing_key(1), "k1")] })).unwrap();
    let head = Head {
        alg: Algorithm::EdDSA,
        kid: Some("k2".into()),
    };
    assert!(candidates(&keys, &head).is_empty());
}

#[test]
fn each_claim_is_checked() {
    let cases: &[(&str, Value, &str)] = &[
        ("iss", json!("https://evil.example"), "iss"),
        ("aud", json!("another-client"), "aud"),
        (
            "aud",
            json!(["gatehouse", "another-client"]),
            "several audiences and no azp",
        ),
        ("azp", json!("another-client"), "azp"),
        ("exp", json!(NOW), "expired"),
        ("iat", json!(NOW + 61), "iat is in the future"),
        ("nonce", json!("another-flow"), "nonce"),
        ("sub", json!(""), "sub"),
    ];
    for (claim, value, reason) in cases {
        let mut c = claims();
        c[*claim] = value.clone();
        let got = refusal(&c);
        assert!(got.contains(reason), "{claim}: {got}");
    }
    for missing in ["exp", "iat", "nonce", "sub", "aud", "iss"] {
        let mut c = claims();
        c.as_object_mut().unwrap().remove(missing);
        refusal(&c);
    }
}

#[test]
fn the_leeway_and_several_audiences_with_azp_are_accepted() {
    let mut c = claims();
    c["iat"] = json!(NOW + 60);
    c["aud"] = json!(["gatehouse", "api"]);
    c["azp"] = json!("gatehouse");
    assert!(check(&signed(&c)).is_ok());
}

#[test]
fn odd_optional_claims_count_as_absent() {
    let mut c = claims();
    c["email"] = json!(7);
    c["email_verified"] = json!("true");
    c["name"] = json!("  ");
    c["amr"] = json!("otp");
    let identity = check(&signed(&c)).unwrap();
    assert_eq!(identity.email, None);
    assert!(identity.email_verified);
    assert_eq!(identity.name, None);
    assert!(identity.amr.is_empty());
}

#[test]
fn a_set_without_usable_keys_is_refused_and_others_are_skipped() {
    assert!(keys_of(&json!({})).is_err());
    assert!(keys_of(&json!({"keys": [{"kty": "oct", "k": "c2VjcmV0"}]})).is_err());
    let mixed = json!({"keys": [
        {"kty": "RSA", "use": "enc", "alg": "RSA-OAEP", "n": "AQAB", "e": "AQAB"},
        {"kty": "weird"},
        jwk(&signing_key(1), "k1"),
    ]});
    assert_eq!(keys_of(&mixed).unwrap().len(), 1);
}
