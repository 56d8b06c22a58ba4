//! The error envelope: every failure, from a handler or from the framework, answers
//! `{"success": false, "error": {"code", "message", "details"?}}` from here.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::error::Error;

impl Error {
    pub fn status_and_code(&self) -> (StatusCode, &'static str) {
        use Error::*;
        match self {
            Validation(_) | MalformedJson(_) => (StatusCode::BAD_REQUEST, "VALIDATION_ERROR"),
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
            MethodNotAllowed => (StatusCode::METHOD_NOT_ALLOWED, "METHOD_NOT_ALLOWED"),
            EmailTaken => (StatusCode::CONFLICT, "EMAIL_TAKEN"),
            TwoFactorAlreadyEnabled => (StatusCode::CONFLICT, "TWO_FACTOR_ALREADY_ENABLED"),
            TwoFactorNotEnabled => (StatusCode::CONFLICT, "TWO_FACTOR_NOT_ENABLED"),
            TwoFactorNotSetUp => (StatusCode::CONFLICT, "TWO_FACTOR_NOT_SET_UP"),
            PayloadTooLarge { .. } => (StatusCode::PAYLOAD_TOO_LARGE, "PAYLOAD_TOO_LARGE"),
            UnsupportedMediaType => (StatusCode::UNSUPPORTED_MEDIA_TYPE, "UNSUPPORTED_MEDIA_TYPE"),
            BodyTimeout => (StatusCode::REQUEST_TIMEOUT, "REQUEST_TIMEOUT"),
            RateLimited { .. } => (StatusCode::TOO_MANY_REQUESTS, "RATE_LIMITED"),
            Unavailable(_) | Overloaded { .. } => {
                (StatusCode::SERVICE_UNAVAILABLE, "SERVICE_UNAVAILABLE")
            }
            Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL_ERROR"),
            PasskeyInvalid => (StatusCode::UNAUTHORIZED, "PASSKEY_INVALID"),
            PasskeysOff => (StatusCode::NOT_FOUND, "NOT_FOUND"),
            LinkInvalid => (StatusCode::BAD_REQUEST, "LINK_INVALID"),
            EmailNotVerified => (StatusCode::FORBIDDEN, "EMAIL_NOT_VERIFIED"),
            Forbidden => (StatusCode::FORBIDDEN, "FORBIDDEN"),
            TwoFactorRequired => (StatusCode::FORBIDDEN, "TWO_FACTOR_REQUIRED"),
            Conflict(_) => (StatusCode::CONFLICT, "CONFLICT"),
        }
    }

    fn details(&self) -> Option<Value> {
        match self {
            Error::Validation(fields) => Some(json!({ "fields": fields })),
            Error::MalformedJson(reason) => Some(json!({ "reason": reason })),
            Error::Invalid2faCode { attempts_remaining } => {
                Some(json!({ "attemptsRemaining": attempts_remaining }))
            }
            Error::RateLimited { retry_after } | Error::Overloaded { retry_after } => {
                Some(json!({ "retryAfter": retry_after }))
            }
            Error::PayloadTooLarge { limit } => Some(json!({ "limit": limit })),
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
        let challenge = match self {
            Error::Unauthenticated => Some("Bearer"),
            Error::TokenExpired => Some(
                r#"Bearer error="invalid_token", error_description="the access token expired""#,
            ),
            Error::TokenInvalid => Some(r#"Bearer error="invalid_token""#),
            _ => None,
        };
        if let Some(challenge) = challenge {
            headers.insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static(challenge),
            );
        }
        if let Error::RateLimited { retry_after } | Error::Overloaded { retry_after } = self {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(retry_after));
        }
        response
    }
}
