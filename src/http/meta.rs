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

/// A JWK Set (RFC 7517): per algorithm (RS256, ES256, EdDSA) the active key and the retired keys
/// whose tokens may still be valid.
#[derive(Serialize, ToSchema)]
#[schema(as = Jwks)]
struct JwksDoc {
    keys: Vec<JwkDoc>,
}

/// A public key: RSA (`n`, `e`), P-256 (`crv`, `x`, `y`) or Ed25519 (`crv`, `x`), RFC 7518 §6 and
/// RFC 8037.
#[derive(Serialize, ToSchema)]
#[schema(as = Jwk)]
struct JwkDoc {
    /// `RSA`, `EC` or `OKP`.
    #[schema(example = "OKP")]
    kty: &'static str,
    /// RFC 7638 thumbprint of the key; the `kid` of the tokens it verifies.
    kid: String,
    /// The one algorithm this key signs with: `RS256`, `ES256` or `EdDSA`.
    #[schema(example = "EdDSA")]
    alg: &'static str,
    #[schema(example = "sig")]
    r#use: &'static str,
    /// `P-256` or `Ed25519`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "Ed25519")]
    crv: Option<&'static str>,
    /// The RSA modulus, base64url.
    #[serde(skip_serializing_if = "Option::is_none")]
    n: Option<String>,
    /// The RSA public exponent, base64url.
    #[serde(skip_serializing_if = "Option::is_none")]
    e: Option<String>,
    /// The Ed25519 public key, or the P-256 point's x coordinate, base64url.
    #[serde(skip_serializing_if = "Option::is_none")]
    x: Option<String>,
    /// The P-256 point's y coordinate, base64url.
    #[serde(skip_serializing_if = "Option::is_none")]
    y: Option<String>,
}

/// The public keys that verify the service's tokens (a bare RFC 7517 JWK Set, not enveloped).
///
/// Cache it for a minute; a token whose `kid` is not in the cached set is the cue to fetch it again.
/// A token is valid only with the key its `kid` names and that key's `alg`.
#[utoipa::path(get, path = "/.well-known/jwks.json", tag = "service",
    responses((status = 200, description = "The JWK Set", body = JwksDoc)))]
async fn jwks(State(state): State<AppState>) -> impl IntoResponse {
    let jwks = state.keyring.jwks();
    let keys = JwksDoc {
        keys: jwks
            .keys
            .iter()
            .map(|k| JwkDoc {
                kty: k.kty,
                kid: k.kid.clone(),
                alg: k.alg.as_str(),
                r#use: k.r#use,
                crv: k.crv,
                n: k.n.clone(),
                e: k.e.clone(),
                x: k.x.clone(),
                y: k.y.clone(),
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
