//! The HTTP interface: a router per resource, merged here, with the layers every call passes.

use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{Request, header};
use axum::response::{IntoResponse, Response};
use ipnet::IpNet;
use serde::Serialize;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::sensitive_headers::SetSensitiveRequestHeadersLayer;
use tower_http::trace::TraceLayer;

use crate::auth::service::AuthService;
use crate::crm::Contacts;
use crate::error::Error;
use crate::store::Store;

mod auth;
mod crm;
pub mod error;
pub mod extract;
mod meta;

/// Largest request body accepted (API.md §1).
pub const BODY_LIMIT: usize = 64 * 1024;

#[derive(Clone)]
pub struct AppState(Arc<Inner>);

pub struct Inner {
    pub auth: AuthService,
    pub contacts: Contacts,
    pub store: Store,
    pub trusted_proxies: Vec<IpNet>,
    pub registration_open: bool,
}

impl AppState {
    pub fn new(inner: Inner) -> Self {
        AppState(Arc::new(inner))
    }
}

impl std::ops::Deref for AppState {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.0
    }
}

/// `{"success": true, "data": …}`
#[derive(Serialize)]
pub struct Envelope<T> {
    success: bool,
    data: T,
}

pub fn ok<T: Serialize>(data: T) -> axum::Json<Envelope<T>> {
    axum::Json(Envelope {
        success: true,
        data,
    })
}

pub fn router(state: AppState) -> Router {
    let api = Router::new()
        .nest("/auth", auth::router())
        .nest("/crm", crm::router());
    Router::new()
        .nest("/api/v1", api)
        .merge(meta::router())
        .fallback(|| async { Error::NotFound })
        .method_not_allowed_fallback(|| async { Error::MethodNotAllowed })
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(|req: &Request<_>| {
                    // The route template, never the raw path (ids) or the query (search terms).
                    let route = req
                        .extensions()
                        .get::<axum::extract::MatchedPath>()
                        .map(|p| p.as_str().to_owned())
                        .unwrap_or_else(|| "unmatched".into());
                    tracing::info_span!("request", method = %req.method(), route = %route)
                })
                // 5xx causes are logged once, with their chain, where the error becomes a response.
                .on_failure(()),
        )
        .layer(CatchPanicLayer::custom(
            |_: Box<dyn std::any::Any + Send>| -> Response {
                Error::internal(anyhow::anyhow!("a request handler panicked")).into_response()
            },
        ))
        // Marked sensitive, these headers print as "Sensitive" in any log or debug output.
        .layer(SetSensitiveRequestHeadersLayer::new([
            header::AUTHORIZATION,
            header::COOKIE,
        ]))
        .with_state(state)
}
