//! `POST /oauth2/token` (docs/api.md §11, RFC 6749 §3.2): the code exchange, the refresh of a
//! client's session, and a client's token for itself. OAuth's own JSON, never the envelope, and
//! never cached.

use std::net::SocketAddr;

use axum::body::Bytes;
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::errors::{self, OAuthErrorBody, failed, no_store};
use super::{ClientRefused, calling_client, form_parameters, single};
use crate::http::AppState;
use crate::http::extract::{Caller, client_ip};
use crate::provider::{OAuthError, OAuthFailure, TokenRequest};

pub(super) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(token))
}

/// RFC 6749 §5.1.
#[derive(Serialize, ToSchema)]
struct TokenAnswer {
    access_token: String,
    #[schema(example = "Bearer")]
    token_type: &'static str,
    /// Seconds the access token lives.
    expires_in: i64,
    /// The granted scopes, space-separated.
    #[schema(example = "openid profile email offline_access")]
    scope: String,
    /// With the `openid` scope (not for `client_credentials`).
    #[serde(skip_serializing_if = "Option::is_none")]
    id_token: Option<String>,
    /// With the `offline_access` scope (not for `client_credentials`).
    #[serde(skip_serializing_if = "Option::is_none")]
    refresh_token: Option<String>,
}

/// A refusal of the client's request, described.
fn refusal(error: OAuthError, description: impl Into<String>) -> Response {
    errors::answer(error, Some(description.into()))
}

/// Exchange a grant for tokens (RFC 6749 §3.2; OpenID Connect Core §3.1.3).
///
/// Form-encoded. The client authenticates with `client_secret_basic` (HTTP Basic, id and secret
/// each form-urlencoded), `client_secret_post` (`client_id` and `client_secret` in the form), or,
/// for a public client, `client_id` alone. Grants: `authorization_code` (`code`, `redirect_uri`,
/// `code_verifier`), `refresh_token` (`refresh_token`, optional narrower `scope`),
/// `client_credentials` (optional `scope`). Every answer carries `Cache-Control: no-store`.
#[utoipa::path(post, path = "/oauth2/token", tag = "oauth",
    request_body(content = String, content_type = "application/x-www-form-urlencoded",
        description = "grant_type=authorization_code&code=…&redirect_uri=…&code_verifier=…"),
    responses(
        (status = 200, description = "The tokens", body = TokenAnswer),
        (status = 400, description = "invalid_request, invalid_grant, unauthorized_client, unsupported_grant_type, invalid_scope", body = OAuthErrorBody),
        (status = 401, description = "invalid_client, with WWW-Authenticate: Basic", body = OAuthErrorBody),
        (status = 404, description = "The OpenID provider is off"),
        (status = 429, description = "Too many wrong client credentials from this address", body = OAuthErrorBody)))]
async fn token(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Caller(from): Caller,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Err(error) = state.require_provider() {
        return error.into_response();
    }
    let Some(form) = form_parameters(&headers, &body) else {
        return refusal(
            OAuthError::InvalidRequest,
            "the body must be application/x-www-form-urlencoded",
        );
    };
    let ip = client_ip(peer.ip(), &headers, &state.trusted_proxies);
    let client = match calling_client(&state, &headers, Some(&form), ip, true).await {
        Ok(client) => client,
        Err(ClientRefused::Invalid(why)) => return refusal(OAuthError::InvalidClient, why),
        Err(ClientRefused::Ambiguous) => {
            return refusal(
                OAuthError::InvalidRequest,
                "the client authenticated by more than one method, or a parameter was repeated",
            );
        }
        Err(ClientRefused::Failed(error)) => return failed(error),
    };
    let param = |name: &str| single(&form, name).map(|v| v.map(str::to_owned));
    let request = (|| {
        Ok::<_, ()>(TokenRequest {
            grant_type: param("grant_type")?,
            code: param("code")?,
            redirect_uri: param("redirect_uri")?,
            code_verifier: param("code_verifier")?,
            refresh_token: param("refresh_token")?,
            scope: param("scope")?,
            resource: crate::http::resource::audience_of(&state, param("resource")?),
        })
    })();
    let Ok(request) = request else {
        return refusal(OAuthError::InvalidRequest, "a parameter was repeated");
    };
    match state.auth.oauth.token(&client, &request, &from).await {
        Ok(answer) => no_store(
            StatusCode::OK,
            TokenAnswer {
                access_token: answer.access_token,
                token_type: "Bearer",
                expires_in: answer.expires_in,
                scope: answer.scope,
                id_token: answer.id_token,
                refresh_token: answer.refresh_token,
            },
        ),
        Err(OAuthFailure::Refused { error, description }) => refusal(error, description),
        Err(OAuthFailure::Failed(error)) => failed(error),
    }
}
