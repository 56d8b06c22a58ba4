//! `GET|POST /oauth2/userinfo` (OpenID Connect Core §5.3): the claims of an access token's
//! scopes, with RFC 6750's errors.

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::errors::{self, Bearer, OAuthErrorBody};
use crate::http::AppState;
use crate::provider::{OAuthError, UserInfoError, scopes};

pub(super) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(userinfo_get, userinfo_post))
}

/// `sub` and the claims of the token's scopes.
#[derive(Serialize, ToSchema)]
struct UserInfoAnswer {
    #[schema(format = Uuid)]
    sub: String,
    /// With `profile`.
    name: Option<String>,
    /// With `profile`: seconds since the epoch.
    updated_at: Option<i64>,
    /// With `email`.
    email: Option<String>,
    /// With `email`.
    email_verified: Option<bool>,
    /// With `roles`.
    roles: Option<Vec<String>>,
}

/// RFC 6750 §3: the challenge, and the error in the body where there is one (OpenID Connect Core
/// §5.3.3).
fn bearer_refusal(error: Option<OAuthError>, scope: Option<&str>) -> Response {
    let challenge = Bearer {
        realm: true,
        error,
        scope,
        ..Bearer::default()
    }
    .challenge();
    let mut response = match error {
        Some(error) => errors::answer(error, None),
        None => StatusCode::UNAUTHORIZED.into_response(),
    };
    let headers = response.headers_mut();
    headers.insert(header::WWW_AUTHENTICATE, challenge);
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

async fn answer(state: AppState, method: axum::http::Method, headers: HeaderMap) -> Response {
    if let Err(error) = state.require_provider() {
        return error.into_response();
    }
    let Some(presented) = crate::http::dpop::presented(&headers) else {
        return bearer_refusal(None, None);
    };
    let token = presented.token();
    let binding = crate::http::dpop::binding(&state, token);
    let request = (method.as_str(), "/oauth2/userinfo");
    if let Err(why) =
        crate::http::dpop::own_request_checked(&state, &headers, presented, &binding, request).await
    {
        tracing::debug!(why, "userinfo's DPoP was refused");
        return bearer_refusal(Some(OAuthError::InvalidToken), None);
    }
    match state.auth.oauth.userinfo(token).await {
        Ok(info) => {
            let mut response = axum::Json(info).into_response();
            response
                .headers_mut()
                .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            response
        }
        Err(UserInfoError::InvalidToken) => bearer_refusal(Some(OAuthError::InvalidToken), None),
        Err(UserInfoError::InsufficientScope) => {
            bearer_refusal(Some(OAuthError::InsufficientScope), Some(scopes::OPENID))
        }
        Err(UserInfoError::Failed(error)) => errors::failed(error),
    }
}

/// The person's claims for an access token granted `openid` (OpenID Connect Core §5.3).
///
/// `Authorization: Bearer <access token>`, or `Authorization: DPoP <access token>` with a `DPoP`
/// proof for this request for a token bound to a key (RFC 9449). Errors per RFC 6750: 401 with
/// `WWW-Authenticate:
/// Bearer error="invalid_token"` for an expired, revoked or unknown token; 403 with
/// `error="insufficient_scope"` for a token without `openid`.
#[utoipa::path(get, path = "/oauth2/userinfo", tag = "oauth", security(("bearer" = [])),
    responses(
        (status = 200, description = "The claims", body = UserInfoAnswer),
        (status = 401, description = "No token, or an invalid one", body = OAuthErrorBody),
        (status = 403, description = "The token lacks the openid scope", body = OAuthErrorBody),
        (status = 404, description = "The OpenID provider is off")))]
async fn userinfo_get(State(state): State<AppState>, headers: HeaderMap) -> Response {
    answer(state, axum::http::Method::GET, headers).await
}

/// `GET /oauth2/userinfo`, by POST (OpenID Connect Core §5.3.1).
#[utoipa::path(post, path = "/oauth2/userinfo", tag = "oauth", security(("bearer" = [])),
    responses(
        (status = 200, description = "The claims", body = UserInfoAnswer),
        (status = 401, description = "No token, or an invalid one", body = OAuthErrorBody),
        (status = 403, description = "The token lacks the openid scope", body = OAuthErrorBody),
        (status = 404, description = "The OpenID provider is off")))]
async fn userinfo_post(State(state): State<AppState>, headers: HeaderMap) -> Response {
    answer(state, axum::http::Method::POST, headers).await
}
