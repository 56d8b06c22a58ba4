//! The error codes of OAuth 2.0 and OpenID Connect as one type, so that a misspelt code does not
//! compile, and the refusal a flow answers with. Which status and headers each code goes out with
//! is the HTTP layer's (`http::oauth::errors`), in one place.

use std::fmt;

use crate::error::Error;

/// An error code of the OAuth and OpenID specifications Gatehouse answers with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OAuthError {
    /// RFC 6749 §4.1.2.1, §5.2: a parameter missing, repeated, malformed or unsupported.
    InvalidRequest,
    /// RFC 6749 §5.2: the client's credentials are wrong or missing.
    InvalidClient,
    /// RFC 6749 §5.2: the code or refresh token is unknown, used, expired or another client's.
    InvalidGrant,
    /// RFC 6749 §4.1.2.1, §5.2: the client may not use this grant or endpoint.
    UnauthorizedClient,
    /// RFC 6749 §5.2.
    UnsupportedGrantType,
    /// RFC 6749 §4.1.2.1.
    UnsupportedResponseType,
    /// RFC 6749 §4.1.2.1, §5.2.
    InvalidScope,
    /// RFC 6749 §4.1.2.1: the person (or the upstream provider) said no.
    AccessDenied,
    /// RFC 6749 §4.1.2.1, §5.2: not the client's doing.
    ServerError,
    /// RFC 6749 §4.1.2.1: the database is out of reach.
    TemporarilyUnavailable,
    /// RFC 8707 §2: a `resource` this service issues no tokens for.
    InvalidTarget,
    /// OpenID Connect Core §3.1.2.6: `prompt=none` and no one is signed in.
    LoginRequired,
    /// OpenID Connect Core §3.1.2.6: `prompt=none` and the person has not allowed the client.
    ConsentRequired,
    /// RFC 6750 §3.1: the bearer token is expired, revoked, malformed or unknown.
    InvalidToken,
    /// RFC 6750 §3.1: the token lacks a scope the call needs.
    InsufficientScope,
    /// RFC 9470 §3: the call needs a stronger sign-in (a second factor).
    InsufficientUserAuthentication,
    /// RFC 7591 §3.2.2.
    InvalidRedirectUri,
    /// RFC 7591 §3.2.2.
    InvalidClientMetadata,
    /// Gatehouse's own, with `Retry-After`: too many attempts from one address.
    RateLimited,
    /// RFC 8628 §3.5: the person has not answered the device's request yet.
    AuthorizationPending,
    /// RFC 8628 §3.5: polled sooner than the interval; it grows by 5 s.
    SlowDown,
    /// RFC 8628 §3.5: the device code expired.
    ExpiredToken,
    /// RFC 9449 §5, §7.1: the DPoP proof is missing where required, or not valid.
    InvalidDpopProof,
    /// RFC 9449 §8: the proof must carry the nonce of the `DPoP-Nonce` header.
    UseDpopNonce,
}

impl OAuthError {
    pub const fn as_str(self) -> &'static str {
        match self {
            OAuthError::InvalidRequest => "invalid_request",
            OAuthError::InvalidClient => "invalid_client",
            OAuthError::InvalidGrant => "invalid_grant",
            OAuthError::UnauthorizedClient => "unauthorized_client",
            OAuthError::UnsupportedGrantType => "unsupported_grant_type",
            OAuthError::UnsupportedResponseType => "unsupported_response_type",
            OAuthError::InvalidScope => "invalid_scope",
            OAuthError::AccessDenied => "access_denied",
            OAuthError::ServerError => "server_error",
            OAuthError::TemporarilyUnavailable => "temporarily_unavailable",
            OAuthError::InvalidTarget => "invalid_target",
            OAuthError::LoginRequired => "login_required",
            OAuthError::ConsentRequired => "consent_required",
            OAuthError::InvalidToken => "invalid_token",
            OAuthError::InsufficientScope => "insufficient_scope",
            OAuthError::InsufficientUserAuthentication => "insufficient_user_authentication",
            OAuthError::InvalidRedirectUri => "invalid_redirect_uri",
            OAuthError::InvalidClientMetadata => "invalid_client_metadata",
            OAuthError::RateLimited => "rate_limited",
            OAuthError::AuthorizationPending => "authorization_pending",
            OAuthError::SlowDown => "slow_down",
            OAuthError::ExpiredToken => "expired_token",
            OAuthError::InvalidDpopProof => "invalid_dpop_proof",
            OAuthError::UseDpopNonce => "use_dpop_nonce",
        }
    }
}

impl fmt::Display for OAuthError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for OAuthError {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// A refusal that goes back to the client: its code and a sentence for developers.
pub type Refusal = (OAuthError, String);

/// An OAuth error answer (RFC 6749 §4.1.2.1 and §5.2): its code and a sentence for developers.
#[derive(Debug)]
pub enum OAuthFailure {
    Refused {
        error: OAuthError,
        description: String,
    },
    /// Not the client's doing (the database, a bug): the endpoint's own error answer.
    Failed(Error),
}

impl OAuthFailure {
    pub fn refused(error: OAuthError, description: impl Into<String>) -> Self {
        OAuthFailure::Refused {
            error,
            description: description.into(),
        }
    }
}

impl From<Error> for OAuthFailure {
    fn from(error: Error) -> Self {
        OAuthFailure::Failed(error)
    }
}

impl From<Refusal> for OAuthFailure {
    fn from((error, description): Refusal) -> Self {
        OAuthFailure::Refused { error, description }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_the_specifications_words() {
        assert_eq!(OAuthError::InvalidGrant.to_string(), "invalid_grant");
        assert_eq!(
            serde_json::to_value(OAuthError::InsufficientUserAuthentication).unwrap(),
            "insufficient_user_authentication"
        );
    }
}
