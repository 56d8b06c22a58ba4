//! Calls about the service itself: liveness, readiness and the public keys.

use axum::Router;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use serde_json::json;

use super::{AppState, ok};
use crate::error::Error;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/.well-known/jwks.json", get(jwks))
}

async fn healthz() -> impl IntoResponse {
    ok(json!({ "status": "ok" }))
}

/// Ready when the database answers.
async fn readyz(State(state): State<AppState>) -> Result<impl IntoResponse, Error> {
    state
        .store
        .ping()
        .await
        .map_err(|e| Error::Unavailable(e.into()))?;
    Ok(ok(json!({ "status": "ok" })))
}

/// The JWK Set, bare (not enveloped) as RFC 7517 has it. Clients cache it for a minute; a token
/// with an unknown kid is their cue to fetch it again.
async fn jwks(State(state): State<AppState>) -> impl IntoResponse {
    let keys = state.auth.tokens().keyring().jwks();
    (
        [(header::CACHE_CONTROL, "public, max-age=60")],
        axum::Json(keys),
    )
}
