//! PKCE (RFC 7636, S256 only) at the authorization: what a client must send, and whether a
//! verifier answers a challenge (the exchange's half is `code_exchange::pkce_proved`).

use subtle::ConstantTimeEq as _;

use super::{OAuthError, Refusal, scopes};
use crate::crypto::{b64url, sha256};
use crate::model::Client;

/// PKCE (RFC 7636, S256 only) as the client must use it: always, unless an operator let a
/// confidential client off (a legacy relying party); then a code without a challenge must be one
/// of an OpenID sign-in with a `nonce`, which is what defends such a client against code
/// injection (RFC 9700 §2.1.1, OpenID Connect Core §3.1.2.1).
pub(super) fn check_pkce(
    client: &Client,
    challenge: Option<&str>,
    method: Option<&str>,
    nonce_given: bool,
    scopes: &[String],
) -> std::result::Result<(), Refusal> {
    let Some(challenge) = challenge else {
        if client.pkce_required {
            return Err((
                OAuthError::InvalidRequest,
                "code_challenge is required (PKCE with S256)".into(),
            ));
        }
        if !scopes.iter().any(|s| s == scopes::OPENID) || !nonce_given {
            return Err((
                OAuthError::InvalidRequest,
                "without PKCE (code_challenge), an OpenID request with a nonce is required".into(),
            ));
        }
        return Ok(());
    };
    if method != Some("S256") {
        return Err((
            OAuthError::InvalidRequest,
            "code_challenge_method must be S256 (plain is refused)".into(),
        ));
    }
    if challenge.len() != 43 || !pkce_shaped(challenge) {
        return Err((
            OAuthError::InvalidRequest,
            "code_challenge must be the base64url SHA-256 of the verifier (43 characters)".into(),
        ));
    }
    Ok(())
}

/// RFC 7636 §4.1: 43 to 128 unreserved characters (a challenge, base64url of 32 bytes, is 43).
fn pkce_shaped(text: &str) -> bool {
    (43..=128).contains(&text.len())
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'))
}

/// Whether `verifier` is the one whose S256 challenge is `challenge` (compared in constant time).
pub(super) fn pkce_matches(verifier: &str, challenge: &str) -> bool {
    pkce_shaped(verifier)
        && bool::from(
            b64url(&sha256(verifier.as_bytes()))
                .as_bytes()
                .ct_eq(challenge.as_bytes()),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pkce_s256() {
        // RFC 7636 Appendix B.
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        let challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
        assert!(pkce_matches(verifier, challenge));
        assert!(!pkce_matches(challenge, challenge));
        assert!(!pkce_matches("short", challenge));
    }
}
