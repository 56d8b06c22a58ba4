//! Validating an upstream provider's ID token (OpenID Connect Core §3.1.3.7), given its keys.
//! Pure: no I/O, the time passed in, so every refusal is unit-tested here.
//!
//! Hand-written on jsonwebtoken (the crate that verifies Gatehouse's own tokens) rather than on
//! openidconnect's `IdTokenVerifier`. That verifier could do most of it (it names an unknown `kid`
//! `NoMatchingKey`, takes an `iat` hook, checks `azp`), but the refetch wrapper and the `iat` rule
//! would be ours anyway, and its claim types refuse a whole token over one optional claim of an
//! odd shape (`email_verified: "true"` needs a cargo feature; other shapes have none), while here
//! an odd optional claim counts as absent and only the claims §3.1.3.7 names can refuse a token.
//! Its discovery type also requires fields this flow never reads (`subject_types_supported`…).
//! openidconnect stays a dev-dependency: the test relying party of Gatehouse's own provider.

use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use subtle::ConstantTimeEq as _;

use super::{UpstreamError, UpstreamIdentity};

/// `iat` may be this far ahead of our clock (clock skew), and no more.
pub(super) const LEEWAY_SECS: i64 = 60;

/// Only asymmetric algorithms: a symmetric one would verify with the client secret, which the
/// provider and every copy of our configuration share (and `none` is no signature at all).
const ALLOWED: &[Algorithm] = &[
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// One signing key of a provider's JWK Set.
pub(super) struct Key {
    kid: Option<String>,
    /// The key's `alg`, when the set names one: then only that algorithm may use it.
    alg: Option<String>,
    key: DecodingKey,
}

/// The usable signing keys of a JWK Set document. Keys this code cannot use (encryption keys,
/// symmetric keys, unknown types) are skipped, not fatal: providers publish such keys beside
/// their signing keys.
pub(super) fn keys_of(document: &serde_json::Value) -> Result<Vec<Key>, String> {
    let Some(keys) = document.get("keys").and_then(|k| k.as_array()) else {
        return Err("the JWK Set has no \"keys\" array".into());
    };
    let keys: Vec<Key> = keys
        .iter()
        .filter(|k| k.get("use").and_then(|u| u.as_str()) != Some("enc"))
        .filter(|k| k.get("kty").and_then(|t| t.as_str()) != Some("oct"))
        .filter_map(|k| {
            let jwk: Jwk = serde_json::from_value(k.clone()).ok()?;
            Some(Key {
                kid: jwk.common.key_id.clone(),
                alg: k.get("alg").and_then(|a| a.as_str()).map(str::to_owned),
                key: DecodingKey::from_jwk(&jwk).ok()?,
            })
        })
        .collect();
    if keys.is_empty() {
        return Err("the JWK Set has no usable signing key".into());
    }
    Ok(keys)
}

/// What the header says: the algorithm (checked to be allowed) and the key id.
pub(super) struct Head {
    pub(super) alg: Algorithm,
    pub(super) kid: Option<String>,
}

pub(super) fn head(token: &str) -> Result<Head, UpstreamError> {
    let header = jsonwebtoken::decode_header(token)
        .map_err(|e| invalid(format!("unreadable header ({e})")))?;
    if !ALLOWED.contains(&header.alg) {
        return Err(invalid(format!(
            "algorithm {:?} is not accepted",
            header.alg
        )));
    }
    Ok(Head {
        alg: header.alg,
        kid: header.kid,
    })
}

/// The keys that may have signed a token with this header: the one with its `kid`, or, without a
/// `kid`, every key whose `alg` allows the header's. Empty when the `kid` is unknown.
pub(super) fn candidates<'k>(keys: &'k [Key], head: &Head) -> Vec<&'k Key> {
    let alg = alg_name(head.alg);
    keys.iter()
        .filter(|k| match &head.kid {
            Some(kid) => k.kid.as_deref() == Some(kid.as_str()),
            None => true,
        })
        .filter(|k| k.alg.as_deref().is_none_or(|a| a == alg))
        .collect()
}

fn alg_name(alg: Algorithm) -> String {
    serde_json::to_value(alg)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// What the token must say.
pub(super) struct Expected<'a> {
    /// The issuer exactly as the provider's discovery document spells it.
    pub(super) issuer: &'a str,
    pub(super) client_id: &'a str,
    pub(super) nonce: &'a str,
    /// Seconds since the epoch.
    pub(super) now: i64,
}

#[derive(Deserialize)]
struct Claims {
    iss: Option<String>,
    sub: Option<String>,
    aud: Option<Audience>,
    azp: Option<String>,
    exp: Option<f64>,
    iat: Option<f64>,
    nonce: Option<String>,
    email: Option<serde_json::Value>,
    email_verified: Option<serde_json::Value>,
    name: Option<serde_json::Value>,
    amr: Option<serde_json::Value>,
    auth_time: Option<f64>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Audience {
    One(String),
    Many(Vec<String>),
}

/// The identity in the token once the signature (by one of `keys`) and every claim check pass.
pub(super) fn validate(
    token: &str,
    head: &Head,
    keys: &[&Key],
    expected: &Expected<'_>,
) -> Result<UpstreamIdentity, UpstreamError> {
    // The signature only: the claims are checked below, against `expected.now`, with the rules
    // of OpenID Connect rather than those of jsonwebtoken's defaults.
    let mut validation = Validation::new(head.alg);
    validation.required_spec_claims.clear();
    validation.validate_exp = false;
    validation.validate_nbf = false;
    validation.validate_aud = false;
    let mut last = None;
    let mut claims = None;
    for key in keys {
        match jsonwebtoken::decode::<Claims>(token, &key.key, &validation) {
            Ok(data) => {
                claims = Some(data.claims);
                break;
            }
            Err(e) => last = Some(e),
        }
    }
    let Some(claims) = claims else {
        return Err(match last {
            Some(e) => invalid(format!("signature not verified ({e})")),
            None => invalid("no key of the provider may sign with this algorithm"),
        });
    };
    check_claims(claims, expected)
}

fn check_claims(c: Claims, expected: &Expected<'_>) -> Result<UpstreamIdentity, UpstreamError> {
    if c.iss.as_deref() != Some(expected.issuer) {
        return Err(invalid(format!("iss {:?} is not the provider's", c.iss)));
    }
    let audiences = match c.aud {
        Some(Audience::One(a)) => vec![a],
        Some(Audience::Many(a)) => a,
        None => Vec::new(),
    };
    if !audiences.iter().any(|a| a == expected.client_id) {
        return Err(invalid("aud does not hold our client_id"));
    }
    // §3.1.3.7 (4, 5): with several audiences, azp says which one the token was issued to.
    match c.azp.as_deref() {
        Some(azp) if azp != expected.client_id => {
            return Err(invalid("azp is another client"));
        }
        None if audiences.len() > 1 => return Err(invalid("several audiences and no azp")),
        _ => {}
    }
    let exp = c.exp.ok_or_else(|| invalid("exp is missing"))?;
    if exp <= expected.now as f64 {
        return Err(invalid("expired"));
    }
    let iat = c.iat.ok_or_else(|| invalid("iat is missing"))?;
    if iat > (expected.now + LEEWAY_SECS) as f64 {
        return Err(invalid("iat is in the future"));
    }
    // The nonce ties the token to the flow this browser started (replay of another flow's token).
    let nonce = c.nonce.unwrap_or_default();
    let nonce_ok: bool = nonce.as_bytes().ct_eq(expected.nonce.as_bytes()).into();
    if !nonce_ok || expected.nonce.is_empty() {
        return Err(invalid("nonce is not this flow's"));
    }
    let subject = c.sub.unwrap_or_default();
    if subject.is_empty() || subject.len() > 255 {
        return Err(invalid("sub is missing or longer than 255 characters"));
    }
    Ok(UpstreamIdentity {
        subject,
        email: text(c.email.as_ref()),
        email_verified: verified(c.email_verified.as_ref()),
        name: text(c.name.as_ref()),
        amr: strings(c.amr.as_ref()),
        auth_time: c.auth_time.map(|t| t as i64),
    })
}

/// A non-empty string claim; anything else counts as absent.
pub(super) fn text(value: Option<&serde_json::Value>) -> Option<String> {
    value
        .and_then(|v| v.as_str())
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// `email_verified`: `true`, or the string "true" some providers send; anything else is false.
pub(super) fn verified(value: Option<&serde_json::Value>) -> bool {
    match value {
        Some(serde_json::Value::Bool(b)) => *b,
        Some(serde_json::Value::String(s)) => s == "true",
        _ => false,
    }
}

fn strings(value: Option<&serde_json::Value>) -> Vec<String> {
    value
        .and_then(|v| v.as_array())
        .map(|items| {
            items
                .iter()
                .filter_map(|i| i.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn invalid(reason: impl Into<String>) -> UpstreamError {
    UpstreamError::InvalidToken(reason.into())
}

#[cfg(test)]
#[path = "id_token_tests.rs"]
mod tests;
