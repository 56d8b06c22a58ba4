//! `GET|POST /oauth2/userinfo` (OpenID Connect Core §5.3): the claims of an access token's
//! scopes, with RFC 6750's errors.

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::oauth::UserInfoError;
use crate::http::AppState;
use crate::http::extract::bearer_token;

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

#[derive(Serialize, ToSchema)]
struct BearerError {
    #[schema(example = "invalid_token")]
    error: &'static str,
}

fn bearer_refusal(
    status: StatusCode,
    challenge: &'static str,
    error: Option<&'static str>,
) -> Response {
    let mut response = match error {
        Some(error) => (status, axum::Json(BearerError { error })).into_response(),
        None => status.into_response(),
    };
    let headers = response.headers_mut();
    headers.insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static(challenge),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

async fn answer(state: AppState, headers: HeaderMap) -> Response {
    if let Err(error) = state.require_provider() {
        return error.into_response();
    }
    let Some(token) = bearer_token(&headers) else {
        return bearer_refusal(
            StatusCode::UNAUTHORIZED,
            r#"Bearer realm="gatehouse""#,
            None,
        );
    };
    match state.auth.oauth.userinfo(token).await {
        Ok(info) => {
            let mut response = axum::Json(info).into_response();
            response
                .headers_mut()
                .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            response
        }
        Err(UserInfoError::InvalidToken) => bearer_refusal(
            StatusCode::UNAUTHORIZED,
            r#"Bearer realm="gatehouse", error="invalid_token""#,
            Some("invalid_token"),
        ),
        Err(UserInfoError::InsufficientScope) => bearer_refusal(
            StatusCode::FORBIDDEN,
            r#"Bearer realm="gatehouse", error="insufficient_scope", scope="openid""#,
            Some("insufficient_scope"),
        ),
        Err(UserInfoError::Failed(error)) => super::token::failed(error),
    }
}

/// The person's claims for an access token granted `openid` (OpenID Connect Core §5.3).
///
/// `Authorization: Bearer <access token>`. Errors per RFC 6750: 401 with `WWW-Authenticate:
/// Bearer error="invalid_token"` for an expired, revoked or unknown token; 403 with
/// `error="insufficient_scope"` for a token without `openid`.
#[utoipa::path(get, path = "/oauth2/userinfo", tag = "oauth", security(("bearer" = [])),
    responses(
        (status = 200, description = "The claims", body = UserInfoAnswer),
        (status = 401, description = "No token, or an invalid one", body = BearerError),
        (status = 403, description = "The token lacks the openid scope", body = BearerError),
        (status = 404, description = "The OpenID provider is off")))]
async fn userinfo_get(State(state): State<AppState>, headers: HeaderMap) -> Response {
    answer(state, headers).await
}

/// `GET /oauth2/userinfo`, by POST (OpenID Connect Core §5.3.1).
#[utoipa::path(post, path = "/oauth2/userinfo", tag = "oauth", security(("bearer" = [])),
    responses(
        (status = 200, description = "The claims", body = UserInfoAnswer),
        (status = 401, description = "No token, or an invalid one", body = BearerError),
        (status = 403, description = "The token lacks the openid scope", body = BearerError),
        (status = 404, description = "The OpenID provider is off")))]
async fn userinfo_post(State(state): State<AppState>, headers: HeaderMap) -> Response {
    answer(state, headers).await
}
