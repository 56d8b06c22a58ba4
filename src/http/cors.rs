//! Cross-origin API calls (docs/api.md §6b): for the origins in `GATEHOUSE_CORS_ORIGINS`, on
//! `/api/v1/…` and the `.well-known` documents, preflights are answered and every answer (errors
//! included) carries `Access-Control-Allow-Origin` and `Vary: Origin`. Never
//! `Access-Control-Allow-Credentials`: the API takes bearer tokens, not cookies, so a page of a
//! listed origin can read answers only to the calls it makes with a token it holds.
//! The OpenID provider's endpoints a single-page application calls from its own origin are in
//! scope too (§11): `/oauth2/token` (a public client's code exchange and refresh),
//! `/oauth2/userinfo` and `/oauth2/revoke`.
//!
//! tower-http's `CorsLayer` does the work; this middleware gives it only the requests in scope,
//! and only real preflights from listed origins (an `OPTIONS` from anyone else is an ordinary
//! request: 405, as before).

use std::sync::Arc;
use std::time::Duration;

use axum::extract::Request;
use axum::http::{HeaderValue, Method, header};
use axum::middleware::Next;
use axum::response::Response;
use tower::{Layer as _, ServiceExt as _};
use tower_http::cors::{AllowOrigin, CorsLayer};

/// The CORS layer over the listed origins; `None` when none is listed.
#[derive(Clone)]
pub struct Cors {
    origins: Arc<[HeaderValue]>,
    layer: CorsLayer,
}

impl Cors {
    pub fn new(origins: &[String]) -> Option<Cors> {
        let origins: Vec<HeaderValue> = origins
            .iter()
            .filter_map(|o| HeaderValue::from_str(o).ok())
            .collect();
        if origins.is_empty() {
            return None;
        }
        let layer = CorsLayer::new()
            .allow_origin(AllowOrigin::list(origins.clone()))
            .allow_methods([
                Method::GET,
                Method::POST,
                Method::PUT,
                Method::PATCH,
                Method::DELETE,
            ])
            .allow_headers([
                header::AUTHORIZATION,
                header::CONTENT_TYPE,
                header::HeaderName::from_static("x-request-id"),
            ])
            .expose_headers([
                header::RETRY_AFTER,
                header::WWW_AUTHENTICATE,
                header::HeaderName::from_static("x-request-id"),
            ])
            .max_age(Duration::from_secs(600));
        Some(Cors {
            origins: origins.into(),
            layer,
        })
    }

    fn listed(&self, origin: Option<&HeaderValue>) -> bool {
        origin.is_some_and(|o| self.origins.contains(o))
    }
}

/// The paths a cross-origin page may call.
fn in_scope(path: &str) -> bool {
    path.starts_with("/api/v1/")
        || path.starts_with("/.well-known/")
        || matches!(
            path,
            "/oauth2/token" | "/oauth2/userinfo" | "/oauth2/revoke"
        )
}

pub async fn cors(
    axum::extract::State(cors): axum::extract::State<Cors>,
    req: Request,
    next: Next,
) -> Response {
    if !in_scope(req.uri().path()) {
        return next.run(req).await;
    }
    let preflight = req.method() == Method::OPTIONS
        && req
            .headers()
            .contains_key(header::ACCESS_CONTROL_REQUEST_METHOD);
    if preflight && !cors.listed(req.headers().get(header::ORIGIN)) {
        let mut response = next.run(req).await;
        response
            .headers_mut()
            .append(header::VARY, HeaderValue::from_static("origin"));
        return response;
    }
    match cors.layer.layer(next).oneshot(req).await {
        Ok(response) => response,
        Err(never) => match never {},
    }
}
