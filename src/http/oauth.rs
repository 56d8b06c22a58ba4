//! OAuth 2.0 for services that introspect tokens rather than verify them offline: RFC 7662
//! introspection for registered clients, and RFC 8414 metadata naming it (docs/api.md §6). These
//! speak OAuth's own JSON (`{"active": …}`, `{"error": …}`), not the envelope, so that stock
//! OAuth libraries can call them.

use std::net::SocketAddr;

use axum::body::Bytes;
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::AppState;
use super::extract::client_ip;
use crate::error::Error;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(introspect))
        .routes(routes!(metadata))
}

/// RFC 7662 §2.2. Inactive tokens say nothing else: no reason, no claims.
#[derive(Serialize, ToSchema, Default)]
struct IntrospectionAnswer {
    active: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(format = Uuid)]
    sub: Option<String>,
    /// The account's e-mail address.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "ada@example.com")]
    username: Option<String>,
    /// Whether the address is verified (OpenID Connect's claim name): with open registration,
    /// anyone may register any address.
    #[serde(skip_serializing_if = "Option::is_none")]
    email_verified: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "Ada Lovelace")]
    name: Option<String>,
    /// The account's roles now (not as issued).
    #[serde(skip_serializing_if = "Option::is_none")]
    roles: Option<Vec<String>>,
    /// The token's active organisation (docs/api.md §13); absent without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(format = Uuid)]
    org_id: Option<String>,
    /// The holder's roles in `org_id` now (not as issued); absent without an organisation.
    #[serde(skip_serializing_if = "Option::is_none")]
    org_roles: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(format = Uuid)]
    sid: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    amr: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    iss: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    aud: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    exp: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    iat: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(format = Uuid)]
    jti: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "Bearer")]
    token_type: Option<&'static str>,
}

/// RFC 6749 §5.2's error answer.
#[derive(Serialize, ToSchema)]
struct OAuthError {
    #[schema(example = "invalid_client")]
    error: &'static str,
}

/// Introspect a token (RFC 7662), as a client registered with `gatehouse clients add`.
///
/// Form-encoded `token=…` (`token_type_hint` is accepted and not needed), the client's id and
/// secret as HTTP Basic credentials. A live access token answers its claims with the account's
/// current e-mail, name and roles; anything else (expired, revoked, a refresh token, garbage)
/// answers `{"active": false}` alone. Wrong client credentials count against the caller's address
/// like failed logins.
#[utoipa::path(post, path = "/oauth2/introspect", tag = "oauth",
    request_body(content = String, content_type = "application/x-www-form-urlencoded",
        description = "token=…[&token_type_hint=access_token]"),
    responses(
        (status = 200, description = "The token's state", body = IntrospectionAnswer),
        (status = 400, description = "No token, or not a form", body = OAuthError),
        (status = 401, description = "Bad client credentials", body = OAuthError),
        (status = 429, description = "Too many wrong client credentials from this address", body = OAuthError)))]
async fn introspect(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let ip = client_ip(peer.ip(), &headers, &state.trusted_proxies);
    // Missing or unreadable credentials are wrong credentials: checked (and counted) the same way.
    let (id, secret) = basic_credentials(&headers).unwrap_or_default();
    match state
        .auth
        .clients
        .authenticate_client(&id, &secret, Some(ip))
        .await
    {
        Ok(Some(_)) => {}
        Ok(None) => return invalid_client(),
        Err(Error::RateLimited { retry_after }) => {
            return (
                StatusCode::TOO_MANY_REQUESTS,
                [(header::RETRY_AFTER, retry_after.to_string())],
                axum::Json(OAuthError {
                    error: "rate_limited",
                }),
            )
                .into_response();
        }
        Err(error) => return error.into_response(),
    }
    let Some(token) = token_parameter(&headers, &body) else {
        return (
            StatusCode::BAD_REQUEST,
            axum::Json(OAuthError {
                error: "invalid_request",
            }),
        )
            .into_response();
    };
    let answer = match state.auth.guard.introspect(&token).await {
        Ok(Some(live)) => IntrospectionAnswer {
            active: true,
            sub: Some(live.claims.sub.to_string()),
            username: Some(live.identity.email),
            email_verified: Some(live.identity.email_verified),
            name: Some(live.identity.full_name),
            roles: Some(live.identity.roles),
            org_id: live.identity.org.as_ref().map(|o| o.id.to_string()),
            org_roles: live.identity.org.map(|o| o.roles),
            sid: Some(live.claims.sid.to_string()),
            amr: Some(live.claims.amr),
            iss: Some(live.claims.iss),
            aud: Some(live.claims.aud),
            exp: Some(live.claims.exp),
            iat: Some(live.claims.iat),
            jti: Some(live.claims.jti.to_string()),
            token_type: Some("Bearer"),
        },
        Ok(None) => IntrospectionAnswer::default(),
        Err(error) => return error.into_response(),
    };
    axum::Json(answer).into_response()
}

fn invalid_client() -> Response {
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, r#"Basic realm="gatehouse""#)],
        axum::Json(OAuthError {
            error: "invalid_client",
        }),
    )
        .into_response()
}

/// `Authorization: Basic base64(id:secret)`, each part form-urlencoded (RFC 6749 §2.3.1).
fn basic_credentials(headers: &HeaderMap) -> Option<(String, String)> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, encoded) = value.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()?;
    let decoded = String::from_utf8(decoded).ok()?;
    let (id, secret) = decoded.split_once(':')?;
    let unescape = |s: &str| -> Option<String> {
        let plus = s.replace('+', " ");
        percent_encoding::percent_decode_str(&plus)
            .decode_utf8()
            .ok()
            .map(|c| c.into_owned())
    };
    Some((unescape(id)?, unescape(secret)?))
}

/// The one `token` of a form body; `None` without a form content type, without a token, with an
/// empty one, or with two (RFC 6749 §3.2: a parameter must not be repeated).
fn token_parameter(headers: &HeaderMap, body: &[u8]) -> Option<String> {
    let form = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| {
            v.trim()
                .eq_ignore_ascii_case("application/x-www-form-urlencoded")
        });
    if !form {
        return None;
    }
    let mut tokens = form_urlencoded::parse(body).filter(|(k, _)| k == "token");
    let (_, token) = tokens.next()?;
    if tokens.next().is_some() || token.is_empty() {
        return None;
    }
    Some(token.into_owned())
}

/// RFC 8414 metadata.
#[derive(Serialize, ToSchema)]
struct Metadata {
    /// The `iss` of the access tokens (`GATEHOUSE_ISSUER`).
    issuer: String,
    jwks_uri: String,
    introspection_endpoint: String,
    #[schema(example = json!(["client_secret_basic"]))]
    introspection_endpoint_auth_methods_supported: [&'static str; 1],
    /// Required by RFC 8414; empty, as there is no authorization endpoint.
    response_types_supported: [&'static str; 0],
}

/// Authorization server metadata (RFC 8414): where the keys and the introspection endpoint are.
#[utoipa::path(get, path = "/.well-known/oauth-authorization-server", tag = "oauth",
    responses((status = 200, description = "The metadata", body = Metadata)))]
async fn metadata(State(state): State<AppState>) -> impl IntoResponse {
    let base = &state.public_url;
    (
        [(header::CACHE_CONTROL, "public, max-age=60")],
        axum::Json(Metadata {
            issuer: state.issuer.to_string(),
            jwks_uri: format!("{base}/.well-known/jwks.json"),
            introspection_endpoint: format!("{base}/oauth2/introspect"),
            introspection_endpoint_auth_methods_supported: ["client_secret_basic"],
            response_types_supported: [],
        }),
    )
}
