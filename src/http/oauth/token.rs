//! `POST /oauth2/token` (docs/api.md §11, RFC 6749 §3.2): the code exchange, the refresh of a
//! client's session, a client's token for itself, and a device's poll (RFC 8628). OAuth's own JSON, never the envelope, and
//! never cached.

use std::net::SocketAddr;

use axum::body::Bytes;
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::errors::{self, OAuthErrorBody, failed, no_store};
use super::{client_form, single};
use crate::http::AppState;
use crate::http::extract::Caller;
use crate::provider::{OAuthError, OAuthFailure, TokenRequest};

pub(super) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(token))
}

/// RFC 6749 §5.1.
#[derive(Serialize, ToSchema)]
struct TokenAnswer {
    access_token: String,
    /// `DPoP` for tokens bound to the key of the request's DPoP proof (RFC 9449).
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
    /// A token exchange's (RFC 8693): `urn:ietf:params:oauth:token-type:access_token`.
    #[serde(skip_serializing_if = "Option::is_none")]
    issued_token_type: Option<&'static str>,
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
/// `client_credentials` (optional `scope`), `urn:ietf:params:oauth:grant-type:device_code`
/// (`device_code`; RFC 8628 §3.5's `authorization_pending`, `slow_down`, `expired_token`),
/// `urn:ietf:params:oauth:grant-type:token-exchange` (RFC 8693: `subject_token`, an access token
/// of a person; `subject_token_type`; optional `scope`, `resource`): a token whose `act` names
/// the client. A `DPoP` header (RFC 9449: a proof of the client's key for `POST` here) binds the
/// tokens to that key (`token_type: DPoP`, `cnf.jkt`); a bad one is `invalid_dpop_proof`, and with
/// `GATEHOUSE_OAUTH_DPOP_NONCE=required` one without this server's nonce is `use_dpop_nonce`
/// (every answer then carries `DPoP-Nonce`). Every answer carries `Cache-Control: no-store`.
#[utoipa::path(post, path = "/oauth2/token", tag = "oauth",
    request_body(content = String, content_type = "application/x-www-form-urlencoded",
        description = "grant_type=authorization_code&code=…&redirect_uri=…&code_verifier=…"),
    responses(
        (status = 200, description = "The tokens", body = TokenAnswer),
        (status = 400, description = "invalid_request, invalid_grant, unauthorized_client, unsupported_grant_type, invalid_scope, authorization_pending, slow_down, access_denied, expired_token", body = OAuthErrorBody),
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
    let (form, _, client) = match client_form(&state, peer, &headers, &body).await {
        Ok(called) => called,
        Err(refused) => return refused,
    };
    let dpop = match crate::http::dpop::proof_header(&headers) {
        Ok(proof) => proof.map(str::to_owned),
        Err(why) => return refusal(OAuthError::InvalidDpopProof, why),
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
            device_code: param("device_code")?,
            subject_token: param("subject_token")?,
            subject_token_type: param("subject_token_type")?,
            actor_token: param("actor_token")?,
            requested_token_type: param("requested_token_type")?,
            dpop,
        })
    })();
    let Ok(request) = request else {
        return refusal(OAuthError::InvalidRequest, "a parameter was repeated");
    };
    let mut response = match state.auth.oauth.token(&client, &request, &from).await {
        Ok(answer) => no_store(
            StatusCode::OK,
            TokenAnswer {
                access_token: answer.access_token,
                token_type: answer.token_type,
                expires_in: answer.expires_in,
                scope: answer.scope,
                id_token: answer.id_token,
                refresh_token: answer.refresh_token,
                issued_token_type: answer.issued_token_type,
            },
        ),
        Err(OAuthFailure::Refused { error, description }) => refusal(error, description),
        Err(OAuthFailure::Failed(error)) => failed(error),
    };
    // RFC 9449 §8: every answer gives the nonce the next proof must carry, when one is asked.
    if let Some(nonce) = state.auth.oauth.dpop_nonce() {
        if let Ok(value) = axum::http::HeaderValue::from_str(&nonce) {
            response.headers_mut().insert("dpop-nonce", value);
        }
    }
    response
}
