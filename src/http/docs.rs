//! The OpenAPI 3.1 document, generated from the handlers' `#[utoipa::path]` annotations and the
//! types they take and answer with, and the human docs page that renders it offline.
//!
//! Error answers are documented from the `Error` values themselves: each operation names the errors
//! it can give (`error_responses!`), and their status, code, message and details in the document are
//! what `Error::body` answers, so the document cannot drift from the service.

use std::collections::BTreeMap;

use axum::http::StatusCode;
use serde::Serialize;
use utoipa::openapi::example::ExampleBuilder;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{ContentBuilder, Ref, RefOr, Response, ResponseBuilder};
use utoipa::{Modify, OpenApi, ToSchema};

use super::error::{ApiError, RequestError};
use crate::error::{Error, FieldErrors};

/// The name of the bearer security scheme in the document.
pub const BEARER: &str = "bearer";

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Gatehouse",
        description = "Authentication for business APIs: password login with optional TOTP second \
            factor, rotating refresh tokens, sessions that really end, and a CRM contacts API behind \
            the access token.\n\nEvery answer is JSON. A success is `{\"success\": true, \"data\": …}` \
            (except the JWK Set and this document, which are bare); every failure is the error \
            envelope `{\"success\": false, \"error\": {\"code\", \"message\", \"details\"?}}` with a \
            stable `code`. Bearer calls take `Authorization: Bearer <accessToken>`.",
        license(name = "MIT OR Apache-2.0"),
    ),
    tags(
        (name = "auth", description = "Login, second factor, tokens, sessions and the caller's account"),
        (name = "passkeys", description = "Passkeys (WebAuthn): adding and managing them, and signing in with one"),
        (name = "crm", description = "The caller's contacts (their active organisation's, with one)"),
        (name = "orgs", description = "Organisations: members with roles, invitations by mail"),
        (name = "admin", description = "Accounts and the audit trail, for admins (the `admin` role) signed in with a second factor"),
        (name = "authz", description = "Forward-auth for reverse proxies guarding other services (no envelope: status and Remote-* headers)"),
        (name = "oauth", description = "RFC 7662 introspection for registered clients and RFC 8414 metadata (OAuth's JSON, no envelope)"),
        (name = "service", description = "Health, readiness, public keys and this document"),
    ),
    components(schemas(ErrorEnvelope, ErrorBody)),
    modifiers(&BearerScheme),
)]
pub struct ApiDoc;

struct BearerScheme;

impl Modify for BearerScheme {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            BEARER,
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("JWT")
                    .description(Some(
                        "The `accessToken` of a token set: an Ed25519 JWT (`typ: at+jwt`), valid \
                         24 h unless its session ends first.",
                    ))
                    .build(),
            ),
        );
        // Counted at forward-auth and auth-request only (docs/api.md §6b).
        components.add_security_scheme(
            "session_cookie",
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::with_description(
                "gatehouse_session",
                "The session cookie set by `POST /api/v1/auth/browser-session` \
                 (`GATEHOUSE_COOKIE_NAME`, default `gatehouse_session`).",
            ))),
        );
    }
}

/// `{"success": false, "error": {...}}`: every failure.
#[derive(Serialize, ToSchema)]
pub struct ErrorEnvelope {
    /// Always `false`.
    #[schema(example = false)]
    pub success: bool,
    pub error: ErrorBody,
}

#[derive(Serialize, ToSchema)]
pub struct ErrorBody {
    /// Stable machine-readable code, e.g. `VALIDATION_ERROR`.
    #[schema(example = "VALIDATION_ERROR")]
    pub code: String,
    /// A sentence for humans; may change between versions.
    pub message: String,
    /// Depends on the code: `fields` (field → reason) for `VALIDATION_ERROR`, `attemptsRemaining`
    /// for `INVALID_2FA_CODE` at login, `retryAfter` (seconds) for `RATE_LIMITED`.
    #[schema(value_type = Option<Object>)]
    pub details: Option<serde_json::Value>,
}

/// The errors every call with a JSON body can give.
pub fn body_errors() -> Vec<ApiError> {
    vec![
        Error::Validation(FieldErrors::from([(
            "email".to_owned(),
            "is not a valid e-mail address".to_owned(),
        )]))
        .into(),
        RequestError::PayloadTooLarge {
            limit: super::BODY_LIMIT,
        }
        .into(),
        RequestError::UnsupportedMediaType.into(),
        RequestError::BodyTimeout.into(),
    ]
}

/// The errors every bearer call can give.
pub fn bearer_errors() -> Vec<Error> {
    vec![
        Error::Unauthenticated,
        Error::TokenExpired,
        Error::TokenInvalid,
    ]
}

/// The errors of a call that checks a password or code: throttled (per account or address).
pub fn throttle_errors() -> Vec<Error> {
    vec![Error::RateLimited { retry_after: 18 }]
}

/// The errors any call that reaches the database can give.
pub fn server_errors() -> Vec<Error> {
    vec![
        Error::Unavailable(anyhow::anyhow!("example")),
        Error::Internal(anyhow::anyhow!("example")),
    ]
}

/// The responses of `errors`, grouped by status, each code an example of its status.
pub fn responses_for(errors: Vec<ApiError>) -> BTreeMap<String, RefOr<Response>> {
    let mut by_status: BTreeMap<u16, Vec<(&'static str, ApiError)>> = BTreeMap::new();
    for error in errors {
        let (status, code) = error.status_and_code();
        let same = by_status.entry(status.as_u16()).or_default();
        if !same.iter().any(|(c, _)| *c == code) {
            same.push((code, error));
        }
    }
    by_status
        .into_iter()
        .map(|(status, errors)| {
            let codes: Vec<String> = errors
                .iter()
                .map(|(code, error)| format!("`{code}`: {error}"))
                .collect();
            let reason = StatusCode::from_u16(status)
                .ok()
                .and_then(|s| s.canonical_reason())
                .unwrap_or("Error");
            let content = ContentBuilder::new()
                .schema(Some(Ref::from_schema_name("ErrorEnvelope")))
                .examples_from_iter(errors.iter().map(|(code, error)| {
                    (
                        *code,
                        ExampleBuilder::new().value(Some(error.body(code))).build(),
                    )
                }))
                .build();
            let response = ResponseBuilder::new()
                .description(format!("{reason}. {}", codes.join("; ")))
                .content("application/json", content)
                .build();
            (status.to_string(), RefOr::T(response))
        })
        .collect()
}

/// Declares a type listing the error answers of one operation, for its `responses(...)`.
macro_rules! error_responses {
    ($name:ident: $($errors:expr),+ $(,)?) => {
        pub struct $name;

        impl utoipa::IntoResponses for $name {
            fn responses(
            ) -> std::collections::BTreeMap<String, utoipa::openapi::RefOr<utoipa::openapi::Response>>
            {
                let mut errors: Vec<$crate::http::error::ApiError> = Vec::new();
                $(errors.extend($errors.into_iter().map($crate::http::error::ApiError::from));)+
                $crate::http::docs::responses_for(errors)
            }
        }
    };
}
pub(crate) use error_responses;

/// Swagger UI's own policy: its scripts and styles are files served beside it, the document it
/// renders is fetched from this origin, and no inline script runs. Its React components set
/// `style` attributes, hence inline styles; with images and fonts from this origin only, an
/// injected style has nowhere to send what it could select.
const DOCS_CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
                        img-src 'self' data:; font-src 'self'; connect-src 'self'; \
                        form-action 'none'; frame-ancestors 'none'; base-uri 'none'";

/// The pages' headers for `/docs`, which shares the tokens' origin: no framing, no sniffing, no
/// Referer, and a CSP of its own.
pub async fn docs_headers(
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let mut response = next.run(req).await;
    let headers = response.headers_mut();
    for (name, value) in [
        ("content-security-policy", DOCS_CSP),
        ("x-frame-options", "DENY"),
        ("referrer-policy", "no-referrer"),
        ("x-content-type-options", "nosniff"),
        ("cross-origin-opener-policy", "same-origin"),
    ] {
        headers.insert(name, axum::http::HeaderValue::from_static(value));
    }
    response
}
