//! `POST /admin/clients/registration-tokens` (docs/api.md §12): an initial access token for
//! dynamic client registration in `token` mode, shown once.

use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::Admin;
use super::users::gate_errors;
use crate::clock::rfc3339;
use crate::error::{Error, Result};
use crate::http::docs::{body_errors, error_responses};
use crate::http::extract::AppJson;
use crate::http::{Answer, AppState, Envelope, ok};

pub(super) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(create))
}

#[derive(Deserialize, Default, ToSchema)]
#[serde(rename_all = "camelCase", default)]
struct TokenRequest {
    /// How long the token may be used, in seconds: 1 to 2592000 (30 days); default 86400.
    #[schema(example = 86400)]
    ttl_seconds: Option<i64>,
}

/// The token, this once.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct IssuedToken {
    /// Sent as `Authorization: Bearer …` to `POST /oauth2/register`; registers one client.
    #[schema(example = "Zt1s6c0m1Qh8mXbq2r0yJ3sA9kL4pV7wE5nD2fG8hU0")]
    token: String,
    #[schema(format = DateTime, example = "2026-11-25T09:30:00.417Z")]
    expires_at: String,
}

error_responses!(CreateErrors: body_errors(), [Error::field("ttlSeconds", "must be from 1 second to 30 days")], gate_errors());

/// Make an initial access token for dynamic client registration (`GATEHOUSE_OAUTH_REGISTRATION=token`).
/// It registers one client, until it expires; only its keyed hash is kept.
#[utoipa::path(post, path = "/clients/registration-tokens", tag = "admin", security(("bearer" = [])),
    request_body = TokenRequest,
    responses((status = 201, description = "The token, shown once", body = Envelope<IssuedToken>), CreateErrors))]
async fn create(
    State(state): State<AppState>,
    admin: Admin,
    AppJson(body): AppJson<TokenRequest>,
) -> Result<(StatusCode, Answer<IssuedToken>)> {
    let ttl_ms = match body.ttl_seconds {
        None => None,
        Some(s) if (1..=30 * 86_400).contains(&s) => Some(s * 1000),
        Some(_) => {
            return Err(Error::field(
                "ttlSeconds",
                "must be from 1 second to 30 days",
            ));
        }
    };
    let issued = state
        .auth
        .clients
        .registration_token(admin.op(), ttl_ms)
        .await?;
    Ok((
        StatusCode::CREATED,
        ok(IssuedToken {
            token: issued.token,
            expires_at: rfc3339(issued.expires_at),
        }),
    ))
}
