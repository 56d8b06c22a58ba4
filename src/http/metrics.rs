//! The metrics listener's one route, `GET /metrics`: kept off the API router on purpose, served on
//! its own address, which operators keep private.

use std::sync::Arc;

use axum::extract::State;
use axum::http::header;
use axum::routing::get;

use crate::metrics::PoolState;
use crate::services::Services;

pub fn metrics_router(services: Arc<Services>) -> axum::Router {
    axum::Router::new()
        .route("/metrics", get(metrics))
        .with_state(services)
}

async fn metrics(State(services): State<Arc<Services>>) -> impl axum::response::IntoResponse {
    // The pool is read at scrape time, not sampled.
    let (idle, in_use) = services.store.pool_use();
    let metrics = &services.metrics;
    for (state, count) in [("idle", idle), ("in_use", in_use)] {
        metrics
            .db_connections
            .get_or_create(&PoolState { state })
            .set(i64::from(count));
    }
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        metrics.encode(),
    )
}
