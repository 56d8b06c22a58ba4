//! `POST /oauth2/register` (RFC 7591, docs/api.md §12): dynamic client registration, under
//! `GATEHOUSE_OAUTH_REGISTRATION`. OAuth's own JSON, never the envelope, and never cached.

use std::net::SocketAddr;

use axum::body::Bytes;
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::errors::{self, OAuthErrorBody, failed, no_store};
use crate::http::AppState;
use crate::http::extract::{bearer_token, client_ip};
use crate::provider::ClientMetadata;
use crate::provider::{OAuthError, OAuthFailure};

pub(super) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(register))
}

/// RFC 7591 §3.2.1: the client's id, its secret (confidential clients, this once), and the
/// metadata as accepted.
#[derive(Serialize, ToSchema)]
struct RegisteredClient {
    #[schema(format = Uuid)]
    client_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    client_secret: Option<String>,
    /// Seconds since the epoch.
    client_id_issued_at: i64,
    /// `0`: the secret does not expire (present with a secret).
    #[serde(skip_serializing_if = "Option::is_none")]
    client_secret_expires_at: Option<i64>,
    client_name: String,
    redirect_uris: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    post_logout_redirect_uris: Vec<String>,
    #[schema(example = json!(["authorization_code", "refresh_token"]))]
    grant_types: Vec<&'static str>,
    #[schema(example = json!(["code"]))]
    response_types: [&'static str; 1],
    /// `client_secret_basic`, `client_secret_post` or `none` (a public client).
    token_endpoint_auth_method: &'static str,
    /// The scopes kept (unsupported ones are dropped), space-separated.
    #[schema(example = "openid profile email offline_access")]
    scope: String,
    #[schema(example = "RS256")]
    id_token_signed_response_alg: &'static str,
}

fn refusal(error: OAuthError, description: String) -> Response {
    errors::answer(error, Some(description))
}

/// Register a client (RFC 7591).
///
/// JSON client metadata: `redirect_uris` (https, or http on a loopback address), optional
/// `client_name`, `token_endpoint_auth_method` (`client_secret_basic` default,
/// `client_secret_post`, or `none` for a public client), `grant_types` (`authorization_code`
/// default, `refresh_token`), `response_types` (`code`), `scope` (unsupported scopes dropped),
/// `post_logout_redirect_uris`, `id_token_signed_response_alg`. The client is third-party: people
/// are always asked for consent. With `GATEHOUSE_OAUTH_REGISTRATION=token`, send an initial access
/// token as `Authorization: Bearer …`; each registers one client. 404 while registration is off.
#[utoipa::path(post, path = "/oauth2/register", tag = "oauth",
    request_body(content = String, content_type = "application/json",
        description = r#"{"client_name": "Agent", "redirect_uris": ["http://127.0.0.1:33418/callback"], "token_endpoint_auth_method": "none"}"#),
    responses(
        (status = 201, description = "The client", body = RegisteredClient),
        (status = 400, description = "invalid_redirect_uri, invalid_client_metadata", body = OAuthErrorBody),
        (status = 401, description = "invalid_token: the initial access token is missing, unknown, expired or used", body = OAuthErrorBody),
        (status = 404, description = "Registration (or the OpenID provider) is off"),
        (status = 429, description = "Too many registrations from this address", body = OAuthErrorBody)))]
async fn register(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Err(error) = state.require_provider() {
        return error.into_response();
    }
    let clients = &state.auth.clients;
    if clients.registration_mode() == crate::config::RegistrationMode::Off {
        return crate::error::Error::NotFound.into_response();
    }
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
    if !json {
        return refusal(
            OAuthError::InvalidClientMetadata,
            "the body must be application/json client metadata".into(),
        );
    }
    let meta: ClientMetadata = match serde_json::from_slice(&body) {
        Ok(meta) => meta,
        Err(_) => {
            return refusal(
                OAuthError::InvalidClientMetadata,
                "the body is not a JSON object of client metadata with the right types".into(),
            );
        }
    };
    let ip = client_ip(peer.ip(), &headers, &state.trusted_proxies);
    match clients
        .register(meta, bearer_token(&headers), Some(ip))
        .await
    {
        Ok(registered) => {
            let c = registered.client;
            no_store(
                StatusCode::CREATED,
                RegisteredClient {
                    client_id: c.client_id(),
                    client_secret_expires_at: registered.secret.as_ref().map(|_| 0),
                    client_secret: registered.secret,
                    client_id_issued_at: c.created_at / 1000,
                    client_name: c.name,
                    redirect_uris: c.redirect_uris,
                    post_logout_redirect_uris: c.post_logout_redirect_uris,
                    grant_types: c.grant_types.iter().map(|g| g.as_str()).collect(),
                    response_types: ["code"],
                    token_endpoint_auth_method: registered.auth_method,
                    scope: c.scopes.join(" "),
                    id_token_signed_response_alg: c.id_token_alg.as_str(),
                },
            )
        }
        Err(OAuthFailure::Refused { error, description }) => refusal(error, description),
        Err(OAuthFailure::Failed(error)) => failed(error),
    }
}
