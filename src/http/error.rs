//! The error envelope: every failure, from a handler or from the framework, answers
//! `{"success": false, "error": {"code", "message", "details"?}}` from here.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::oauth::errors::Bearer;
use crate::error::Error;
use crate::provider::OAuthError;

/// Failures of the HTTP exchange itself, met before any flow runs.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    #[error("the request body is not valid JSON")]
    MalformedJson(String),
    #[error("this method is not allowed here")]
    MethodNotAllowed,
    #[error("the request body is larger than {limit} bytes")]
    PayloadTooLarge { limit: usize },
    #[error("the request body must be JSON: send Content-Type: application/json")]
    UnsupportedMediaType,
    /// The client did not send the whole body within the body deadline.
    #[error("the request body took too long to arrive")]
    BodyTimeout,
}

/// What an answer reports: a failure of a flow, or of the exchange.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error(transparent)]
    Flow(#[from] Error),
    #[error(transparent)]
    Request(#[from] RequestError),
}

impl RequestError {
    fn status_and_code(&self) -> (StatusCode, &'static str) {
        match self {
            RequestError::MalformedJson(_) => (StatusCode::BAD_REQUEST, "VALIDATION_ERROR"),
            RequestError::MethodNotAllowed => {
                (StatusCode::METHOD_NOT_ALLOWED, "METHOD_NOT_ALLOWED")
            }
            RequestError::PayloadTooLarge { .. } => {
                (StatusCode::PAYLOAD_TOO_LARGE, "PAYLOAD_TOO_LARGE")
            }
            RequestError::UnsupportedMediaType => {
                (StatusCode::UNSUPPORTED_MEDIA_TYPE, "UNSUPPORTED_MEDIA_TYPE")
            }
            RequestError::BodyTimeout => (StatusCode::REQUEST_TIMEOUT, "REQUEST_TIMEOUT"),
        }
    }

    fn details(&self) -> Option<Value> {
        match self {
            RequestError::MalformedJson(reason) => Some(json!({ "reason": reason })),
            RequestError::PayloadTooLarge { limit } => Some(json!({ "limit": limit })),
            _ => None,
        }
    }
}

impl ApiError {
    pub fn status_and_code(&self) -> (StatusCode, &'static str) {
        match self {
            ApiError::Flow(e) => e.status_and_code(),
            ApiError::Request(e) => e.status_and_code(),
        }
    }

    /// The envelope of this error, as answered (and as the API document shows it).
    pub fn body(&self, code: &str) -> Value {
        let mut error = json!({ "code": code, "message": self.to_string() });
        let details = match self {
            ApiError::Flow(e) => e.details(),
            ApiError::Request(e) => e.details(),
        };
        if let Some(details) = details {
            error["details"] = details;
        }
        json!({ "success": false, "error": error })
    }
}

impl IntoResponse for RequestError {
    fn into_response(self) -> Response {
        ApiError::Request(self).into_response()
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        match self {
            ApiError::Flow(e) => e.into_response(),
            ApiError::Request(e) => {
                let (status, code) = e.status_and_code();
                let body = ApiError::Request(e).body(code);
                (status, axum::Json(body)).into_response()
            }
        }
    }
}

impl Error {
    pub fn status_and_code(&self) -> (StatusCode, &'static str) {
        use Error::*;
        match self {
            Validation(_) => (StatusCode::BAD_REQUEST, "VALIDATION_ERROR"),
            WeakPassword(_) => (StatusCode::BAD_REQUEST, "WEAK_PASSWORD"),
            InvalidCredentials => (StatusCode::UNAUTHORIZED, "INVALID_CREDENTIALS"),
            Unauthenticated => (StatusCode::UNAUTHORIZED, "UNAUTHENTICATED"),
            TokenExpired => (StatusCode::UNAUTHORIZED, "TOKEN_EXPIRED"),
            TokenInvalid => (StatusCode::UNAUTHORIZED, "TOKEN_INVALID"),
            Invalid2faCode { .. } => (StatusCode::UNAUTHORIZED, "INVALID_2FA_CODE"),
            TempTokenInvalid => (StatusCode::UNAUTHORIZED, "TEMP_TOKEN_INVALID"),
            RefreshTokenInvalid => (StatusCode::UNAUTHORIZED, "REFRESH_TOKEN_INVALID"),
            AccountDisabled => (StatusCode::FORBIDDEN, "ACCOUNT_DISABLED"),
            PasswordRecheckFailed => (StatusCode::FORBIDDEN, "INVALID_CREDENTIALS"),
            CodeRecheckFailed => (StatusCode::FORBIDDEN, "INVALID_2FA_CODE"),
            RegistrationClosed => (StatusCode::FORBIDDEN, "REGISTRATION_CLOSED"),
            NotFound => (StatusCode::NOT_FOUND, "NOT_FOUND"),
            EmailTaken => (StatusCode::CONFLICT, "EMAIL_TAKEN"),
            TwoFactorAlreadyEnabled => (StatusCode::CONFLICT, "TWO_FACTOR_ALREADY_ENABLED"),
            TwoFactorNotEnabled => (StatusCode::CONFLICT, "TWO_FACTOR_NOT_ENABLED"),
            TwoFactorNotSetUp => (StatusCode::CONFLICT, "TWO_FACTOR_NOT_SET_UP"),
            RateLimited { .. } => (StatusCode::TOO_MANY_REQUESTS, "RATE_LIMITED"),
            Unavailable(_) | Overloaded { .. } => {
                (StatusCode::SERVICE_UNAVAILABLE, "SERVICE_UNAVAILABLE")
            }
            Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL_ERROR"),
            PasskeyInvalid => (StatusCode::UNAUTHORIZED, "PASSKEY_INVALID"),
            PasskeyRecheckFailed => (StatusCode::FORBIDDEN, "PASSKEY_INVALID"),
            PasskeysOff => (StatusCode::NOT_FOUND, "NOT_FOUND"),
            LinkInvalid => (StatusCode::BAD_REQUEST, "LINK_INVALID"),
            EmailNotVerified => (StatusCode::FORBIDDEN, "EMAIL_NOT_VERIFIED"),
            Forbidden => (StatusCode::FORBIDDEN, "FORBIDDEN"),
            TwoFactorRequired => (StatusCode::FORBIDDEN, "TWO_FACTOR_REQUIRED"),
            InsufficientScope(_) | ClientToken => (StatusCode::FORBIDDEN, "INSUFFICIENT_SCOPE"),
            Conflict(_) => (StatusCode::CONFLICT, "CONFLICT"),
            SsoRequired { .. } => (StatusCode::FORBIDDEN, "SSO_REQUIRED"),
            ProviderUnavailable => (StatusCode::SERVICE_UNAVAILABLE, "SERVICE_UNAVAILABLE"),
        }
    }

    fn details(&self) -> Option<Value> {
        match self {
            Error::Validation(fields) => Some(json!({ "fields": fields })),
            Error::Invalid2faCode { attempts_remaining } => {
                Some(json!({ "attemptsRemaining": attempts_remaining }))
            }
            Error::RateLimited { retry_after } | Error::Overloaded { retry_after } => {
                Some(json!({ "retryAfter": retry_after }))
            }
            Error::SsoRequired { provider } => Some(json!({ "provider": provider })),
            _ => None,
        }
    }
}

impl Error {
    /// The envelope of this error, as answered (and as the API document shows it).
    pub fn body(&self, code: &str) -> Value {
        let mut error = json!({ "code": code, "message": self.to_string() });
        if let Some(details) = self.details() {
            error["details"] = details;
        }
        json!({ "success": false, "error": error })
    }
}

impl IntoResponse for Error {
    fn into_response(self) -> Response {
        let (status, code) = self.status_and_code();
        match &self {
            // Logged once, with the whole cause chain; the client learns nothing of it.
            Error::Internal(cause) => tracing::error!(error = ?cause, "internal error"),
            Error::Unavailable(cause) => tracing::warn!(error = %cause, "database unavailable"),
            _ => {}
        }
        let mut response = (status, axum::Json(self.body(code))).into_response();
        let headers = response.headers_mut();
        // RFC 6750 §3: a bearer challenge, with error="invalid_token" where a token was presented.
        let challenge = match &self {
            Error::Unauthenticated => Some(Bearer::default()),
            Error::TokenExpired => Some(Bearer::described(
                OAuthError::InvalidToken,
                "the access token expired",
            )),
            Error::TokenInvalid => Some(Bearer::error(OAuthError::InvalidToken)),
            Error::ClientToken => Some(Bearer::error(OAuthError::InsufficientScope)),
            // RFC 6750 §3.1: which scope the call needs.
            Error::InsufficientScope(scope) => Some(Bearer {
                scope: Some(scope),
                ..Bearer::error(OAuthError::InsufficientScope)
            }),
            _ => None,
        };
        if let Some(challenge) = challenge {
            headers.insert(header::WWW_AUTHENTICATE, challenge.challenge());
        }
        if let Error::RateLimited { retry_after } | Error::Overloaded { retry_after } = self {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(retry_after));
        }
        response
    }
}
