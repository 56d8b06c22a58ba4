//! OAuth's and OpenID's errors on the wire, in one place: each code's status, the JSON answer of
//! RFC 6749 §5.2 (with or without a description), the `Basic` and `Bearer` (RFC 6750 §3)
//! challenges, and the answer for a failure that is not the client's.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

use crate::error::Error;
use crate::provider::OAuthError;

/// RFC 6749 §5.2's error answer.
#[derive(Serialize, ToSchema)]
pub(crate) struct OAuthErrorBody {
    #[schema(value_type = String, example = "invalid_grant")]
    error: OAuthError,
    #[serde(skip_serializing_if = "Option::is_none")]
    error_description: Option<String>,
}

/// The status a code goes out with, where its endpoint has no reason to differ: 401 for wrong
/// credentials (RFC 6749 §5.2, RFC 6750 §3.1), 403 for a token without the scope, 429 and the
/// server's own failures as they are, 400 for the rest.
pub(crate) fn status(code: OAuthError) -> StatusCode {
    match code {
        OAuthError::InvalidClient | OAuthError::InvalidToken => StatusCode::UNAUTHORIZED,
        OAuthError::InsufficientScope | OAuthError::InsufficientUserAuthentication => {
            StatusCode::FORBIDDEN
        }
        OAuthError::RateLimited => StatusCode::TOO_MANY_REQUESTS,
        OAuthError::ServerError => StatusCode::INTERNAL_SERVER_ERROR,
        OAuthError::TemporarilyUnavailable => StatusCode::SERVICE_UNAVAILABLE,
        // Named, not a wildcard: a new code must be given its status here.
        OAuthError::InvalidRequest
        | OAuthError::InvalidGrant
        | OAuthError::UnauthorizedClient
        | OAuthError::UnsupportedGrantType
        | OAuthError::UnsupportedResponseType
        | OAuthError::InvalidScope
        | OAuthError::AccessDenied
        | OAuthError::InvalidTarget
        | OAuthError::LoginRequired
        | OAuthError::ConsentRequired
        | OAuthError::InvalidRedirectUri
        | OAuthError::InvalidClientMetadata
        | OAuthError::AuthorizationPending
        | OAuthError::SlowDown
        | OAuthError::ExpiredToken
        | OAuthError::InvalidDpopProof
        | OAuthError::UseDpopNonce => StatusCode::BAD_REQUEST,
    }
}

/// The challenge a 401 carries: HTTP Basic for a client's credentials (RFC 6749 §5.2), `Bearer`
/// for a token (RFC 6750 §3).
fn challenge(code: OAuthError) -> Option<HeaderValue> {
    match code {
        OAuthError::InvalidClient => Some(HeaderValue::from_static(r#"Basic realm="gatehouse""#)),
        OAuthError::InvalidToken => Some(Bearer::error(code).challenge()),
        _ => None,
    }
}

/// The answer for `code` (its status and challenge), with a sentence for developers where the
/// endpoint describes its errors (token, registration), none where it does not (introspection,
/// revocation). No cache may keep it (RFC 6749 §5.1).
pub(crate) fn answer(code: OAuthError, description: Option<String>) -> Response {
    answer_as(status(code), code, description)
}

/// `answer` with a status of the endpoint's own (introspection's 403 for a client not let in).
pub(crate) fn answer_as(
    status: StatusCode,
    code: OAuthError,
    description: Option<String>,
) -> Response {
    let body = OAuthErrorBody {
        error: code,
        error_description: description,
    };
    let mut response = no_store(status, body);
    if let Some(challenge) = challenge(code) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, challenge);
    }
    response
}

/// A successful OAuth answer or an error that no cache may keep (RFC 6749 §5.1).
pub(crate) fn no_store(status: StatusCode, body: impl Serialize) -> Response {
    let mut response = (status, axum::Json(body)).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
    response
}

/// Too many attempts from the address: 429 with `Retry-After`.
pub(crate) fn rate_limited(retry_after: u64, description: Option<String>) -> Response {
    let mut response = answer(OAuthError::RateLimited, description);
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(retry_after));
    response
}

/// A failure that is not the client's: the status it has everywhere, in OAuth's form.
pub(crate) fn failed(error: Error) -> Response {
    let status = match &error {
        Error::RateLimited { retry_after } | Error::Overloaded { retry_after } => {
            return rate_limited(
                *retry_after,
                Some("too many attempts: try again later".into()),
            );
        }
        Error::NotFound => return error.into_response(),
        _ => error.into_response().status(),
    };
    let code = if status == StatusCode::SERVICE_UNAVAILABLE {
        OAuthError::TemporarilyUnavailable
    } else {
        OAuthError::ServerError
    };
    answer_as(status, code, None)
}

/// RFC 6750 §3's `WWW-Authenticate: Bearer` challenge, its parameters in the RFC's order.
#[derive(Default)]
pub(crate) struct Bearer<'a> {
    pub realm: bool,
    pub error: Option<OAuthError>,
    pub description: Option<&'a str>,
    pub scope: Option<&'a str>,
}

impl<'a> Bearer<'a> {
    pub(crate) fn error(code: OAuthError) -> Self {
        Bearer {
            error: Some(code),
            ..Bearer::default()
        }
    }

    pub(crate) fn described(code: OAuthError, description: &'a str) -> Self {
        Bearer {
            description: Some(description),
            ..Bearer::error(code)
        }
    }

    pub(crate) fn text(&self) -> String {
        let mut params = Vec::with_capacity(4);
        if self.realm {
            params.push(r#"realm="gatehouse""#.to_owned());
        }
        if let Some(code) = self.error {
            params.push(format!(r#"error="{code}""#));
        }
        if let Some(description) = self.description {
            params.push(format!(r#"error_description="{description}""#));
        }
        if let Some(scope) = self.scope {
            params.push(format!(r#"scope="{scope}""#));
        }
        if params.is_empty() {
            "Bearer".to_owned()
        } else {
            format!("Bearer {}", params.join(", "))
        }
    }

    /// The header. Descriptions are the service's own sentences and scope names printable ASCII
    /// without quotes (`resources::scope_name_ok`); were one not, the challenge keeps its code.
    pub(crate) fn challenge(&self) -> HeaderValue {
        HeaderValue::from_str(&self.text()).unwrap_or_else(|_| {
            let plain = Bearer {
                realm: self.realm,
                error: self.error,
                ..Bearer::default()
            };
            HeaderValue::from_str(&plain.text()).unwrap_or(HeaderValue::from_static("Bearer"))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_challenges_read_as_rfc_6750_writes_them() {
        assert_eq!(Bearer::default().text(), "Bearer");
        assert_eq!(
            Bearer::error(OAuthError::InvalidToken).text(),
            r#"Bearer error="invalid_token""#
        );
        let scoped = Bearer {
            realm: true,
            scope: Some("openid"),
            ..Bearer::error(OAuthError::InsufficientScope)
        };
        assert_eq!(
            scoped.text(),
            r#"Bearer realm="gatehouse", error="insufficient_scope", scope="openid""#
        );
        let odd = Bearer {
            scope: Some("a\nb"),
            ..Bearer::error(OAuthError::InsufficientScope)
        };
        assert_eq!(odd.challenge(), r#"Bearer error="insufficient_scope""#);
    }
}
