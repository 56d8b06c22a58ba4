//! Calls about the service itself: liveness, readiness, the public keys and the API document.

use std::sync::OnceLock;

use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::docs::error_responses;
use super::{Answer, AppState, Envelope, ok};
use crate::error::Error;

pub const OPENAPI_PATH: &str = "/api/v1/openapi.json";

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(healthz))
        .routes(routes!(readyz))
        .routes(routes!(jwks))
        .routes(routes!(openapi))
}

#[derive(Serialize, ToSchema)]
struct Status {
    #[schema(example = "ok")]
    status: &'static str,
}

/// Liveness: the process answers.
#[utoipa::path(get, path = "/healthz", tag = "service",
    responses((status = 200, description = "Alive", body = Envelope<Status>)))]
async fn healthz() -> Answer<Status> {
    ok(Status { status: "ok" })
}

error_responses!(ReadyErrors: [Error::Unavailable(anyhow::anyhow!("example"))]);

/// Readiness: the database answers.
#[utoipa::path(get, path = "/readyz", tag = "service",
    responses((status = 200, description = "Ready", body = Envelope<Status>), ReadyErrors))]
async fn readyz(State(state): State<AppState>) -> Result<Answer<Status>, Error> {
    state
        .store
        .ping()
        .await
        .map_err(|e| Error::Unavailable(e.into()))?;
    Ok(ok(Status { status: "ok" }))
}

/// A JWK Set (RFC 7517) of Ed25519 public keys (RFC 8037).
#[derive(Serialize, ToSchema)]
#[schema(as = Jwks)]
struct JwksDoc {
    keys: Vec<JwkDoc>,
}

#[derive(Serialize, ToSchema)]
#[schema(as = Jwk)]
struct JwkDoc {
    #[schema(example = "OKP")]
    kty: String,
    #[schema(example = "Ed25519")]
    crv: String,
    /// The public key, base64url.
    x: String,
    /// RFC 7638 thumbprint of the key; the `kid` of the tokens it verifies.
    kid: String,
    #[schema(example = "sig")]
    r#use: String,
    #[schema(example = "EdDSA")]
    alg: String,
}

/// The public keys that verify access tokens (a bare RFC 7517 JWK Set, not enveloped).
///
/// Cache it for a minute; a token whose `kid` is not in the cached set is the cue to fetch it again.
#[utoipa::path(get, path = "/.well-known/jwks.json", tag = "service",
    responses((status = 200, description = "The JWK Set", body = JwksDoc)))]
async fn jwks(State(state): State<AppState>) -> impl IntoResponse {
    let jwks = state.keyring.jwks();
    let keys = JwksDoc {
        keys: jwks
            .keys
            .iter()
            .map(|k| JwkDoc {
                kty: k.kty.into(),
                crv: k.crv.into(),
                x: k.x.clone(),
                kid: k.kid.clone(),
                r#use: k.r#use.into(),
                alg: k.alg.into(),
            })
            .collect(),
    };
    (
        [(header::CACHE_CONTROL, "public, max-age=60")],
        axum::Json(keys),
    )
}

/// This document: OpenAPI 3.1, bare (not enveloped). Rendered for humans at `/docs`.
#[utoipa::path(get, path = "/api/v1/openapi.json", tag = "service",
    responses((status = 200, description = "The OpenAPI document", content_type = "application/json",
        body = Object)))]
async fn openapi() -> impl IntoResponse {
    // Built once: it is the same for the life of the process.
    static DOCUMENT: OnceLock<String> = OnceLock::new();
    let document = DOCUMENT.get_or_init(|| {
        super::openapi()
            .to_pretty_json()
            .unwrap_or_else(|e| format!(r#"{{"error": "{e}"}}"#))
    });
    (
        [(header::CONTENT_TYPE, "application/json")],
        document.as_str(),
    )
}
