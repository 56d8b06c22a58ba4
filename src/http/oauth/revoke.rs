//! RFC 7009 token revocation (docs/api.md §11), for the clients of the registry: a confidential
//! client with its secret, a public one with its `client_id`.

use std::net::SocketAddr;

use axum::body::Bytes;
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::errors::{self, OAuthErrorBody};
use super::{calling_client, form_parameters, single};
use crate::http::AppState;
use crate::http::extract::client_ip;
use crate::provider::OAuthError;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(revoke))
}

/// Revoke a token (RFC 7009).
///
/// Form-encoded `token=…` (`token_type_hint` is accepted and not needed), with the client's
/// credentials as at the token endpoint. A refresh or an access token the client was given ends
/// its session: every token of that authorization stops working (on every instance within 2 s)
/// and the client is told by back-channel logout. A token that is unknown, malformed, expired
/// long ago or another client's changes nothing and answers 200 all the same (RFC 7009 §2.2).
#[utoipa::path(post, path = "/oauth2/revoke", tag = "oauth",
    request_body(content = String, content_type = "application/x-www-form-urlencoded",
        description = "token=…[&token_type_hint=refresh_token|access_token]"),
    responses(
        (status = 200, description = "Revoked, or nothing to revoke"),
        (status = 400, description = "No token, not a form, or two ways of client authentication", body = OAuthErrorBody),
        (status = 401, description = "Bad client credentials", body = OAuthErrorBody),
        (status = 429, description = "Too many wrong client credentials from this address", body = OAuthErrorBody)))]
async fn revoke(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let ip = client_ip(peer.ip(), &headers, &state.trusted_proxies);
    let form = form_parameters(&headers, &body);
    let client = match calling_client(&state, &headers, form.as_deref(), ip, true).await {
        Ok(client) => client,
        Err(refused) => return refused.into_plain_response(),
    };
    let token = form.as_deref().map(|f| single(f, "token"));
    let Some(Ok(Some(token))) = token else {
        return errors::answer(OAuthError::InvalidRequest, None);
    };
    match state.auth.logouts.revoke(&client, token).await {
        Ok(_) => (StatusCode::OK, [(header::CACHE_CONTROL, "no-store")]).into_response(),
        Err(error) => error.into_response(),
    }
}
