//! The HTTP interface: a router per resource, merged here, with the layers every call passes.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::http::{HeaderValue, Request, StatusCode, header};
use axum::response::{IntoResponse, Response};
use ipnet::IpNet;
use serde::Serialize;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::sensitive_headers::SetSensitiveRequestHeadersLayer;
use tower_http::trace::TraceLayer;
use utoipa::OpenApi as _;
use utoipa_axum::router::OpenApiRouter;
use utoipa_swagger_ui::SwaggerUi;

use crate::authz::Gate;
use crate::config::Settings;
use crate::error::Error;
use crate::services::Services;

mod admin;
mod auth;
mod authz;
mod cookies;
mod cors;
mod crm;
mod docs;
mod dpop;
mod error;
mod extract;
mod fields;
mod framing;
mod meta;
mod metrics;
mod navigation;
mod oauth;
mod orgs;
mod pages;
mod resource;

pub use metrics::metrics_router;

/// Largest request body accepted (docs/api.md §1).
pub const BODY_LIMIT: usize = 64 * 1024;

/// What every handler reaches: the services, and the settings of the HTTP edge (`Edge`, through
/// `Deref`). One `Arc`, because axum clones the state for every handler and middleware of every
/// request: as a struct of ten `Arc`s, those clones and their drops (ten atomic counters each,
/// shared by every worker thread) were 9 % of the contact list's profile (BENCHMARKS.md).
#[derive(Clone)]
pub struct AppState(Arc<Edge>);

pub struct Edge {
    services: Arc<Services>,
    trusted_proxies: Arc<[IpNet]>,
    /// A request's whole body must arrive within this.
    body_timeout: Duration,
    /// Whether Swagger UI is served at `/docs`.
    docs: bool,
    /// Forward-auth's access rules.
    gate: Arc<Gate>,
    /// Where users reach the service, for absolute URLs (RFC 8414 metadata).
    public_url: Arc<str>,
    issuer: Arc<str>,
    /// `GATEHOUSE_AUDIENCE`: what the business API's resource identifier stands for (RFC 8707).
    audience: Arc<str>,
    /// The issuer when the OpenID provider is on (`Settings::provider_issuer`).
    provider_issuer: Option<Arc<str>>,
    /// The pages' templates and what they show of the settings.
    pages: pages::SharedPages,
    /// The session cookie's attributes and the CORS origins (docs/api.md §6b).
    browser: Arc<crate::config::BrowserSettings>,
    /// The contacts example API is on (`GATEHOUSE_CONTACTS_API`): off, `/api/v1/crm/…` is as
    /// absent as an unknown route.
    contacts_api: bool,
    /// A line per request (`GATEHOUSE_ACCESS_LOG`).
    access_log: bool,
}

impl AppState {
    pub fn new(services: Arc<Services>, settings: &Settings) -> anyhow::Result<Self> {
        Ok(AppState(Arc::new(Edge {
            services,
            trusted_proxies: settings.trusted_proxies.clone().into(),
            body_timeout: settings.body_timeout,
            docs: settings.docs,
            gate: Arc::new(Gate::new(
                settings.access_rules.clone(),
                settings.untrusted_token_only,
            )),
            public_url: settings.public_url.as_str().into(),
            issuer: settings.issuer.as_str().into(),
            audience: settings.audience.as_str().into(),
            provider_issuer: settings.provider_issuer().map(Arc::from),
            pages: Arc::new(pages::Pages::new(settings)?),
            browser: Arc::new(settings.browser.clone()),
            contacts_api: (settings.resources.iter())
                .any(|r| r.origin == crate::model::ResourceOrigin::BuiltIn),
            access_log: settings.access_log,
        })))
    }

    /// The issuer, when the OpenID provider is on (docs/api.md §11): its endpoints answer 404
    /// `NOT_FOUND` while this is `None`, as `require_provider` does.
    pub(crate) fn provider_issuer(&self) -> Option<&str> {
        self.provider_issuer.as_deref()
    }

    /// `NotFound` while the OpenID provider is off: its endpoints are as absent as unknown routes.
    pub(crate) fn require_provider(&self) -> Result<&str, Error> {
        self.provider_issuer().ok_or(Error::NotFound)
    }

    /// Whether the socket peer is a trusted proxy, whose forwarded headers are believed.
    fn is_trusted(&self, peer: std::net::SocketAddr) -> bool {
        let ip = peer.ip().to_canonical();
        self.trusted_proxies.iter().any(|net| net.contains(&ip))
    }
}

impl std::ops::Deref for AppState {
    type Target = Edge;
    fn deref(&self) -> &Edge {
        &self.0
    }
}

impl std::ops::Deref for Edge {
    type Target = Services;
    fn deref(&self) -> &Services {
        &self.services
    }
}

/// `{"success": true, "data": …}`: every success but the JWK Set and the API document.
#[derive(Serialize, utoipa::ToSchema)]
pub struct Envelope<T> {
    /// Always `true`.
    #[schema(example = true)]
    success: bool,
    data: T,
}

/// A successful answer carrying `T`.
pub type Answer<T> = axum::Json<Envelope<T>>;

pub fn ok<T: Serialize>(data: T) -> Answer<T> {
    axum::Json(Envelope {
        success: true,
        data,
    })
}

/// Every call, each with its documentation: the routes and the API document come from one list,
/// so neither can have what the other lacks.
fn api() -> (Router<AppState>, utoipa::openapi::OpenApi) {
    OpenApiRouter::with_openapi(docs::ApiDoc::openapi())
        .nest("/api/v1/auth", auth::router())
        .nest("/api/v1/crm", crm::router())
        .nest("/api/v1/orgs", orgs::router())
        .nest("/api/v1/admin", admin::router())
        .merge(authz::router())
        .merge(oauth::router())
        .merge(meta::router())
        .merge(resource::router())
        .split_for_parts()
}

/// `/api/v1/crm/…` answers 404 while the contacts example API is off (`GATEHOUSE_CONTACTS_API`),
/// before anything else is asked of the request.
async fn contacts_switch(
    axum::extract::State(state): axum::extract::State<AppState>,
    req: Request<axum::body::Body>,
    next: axum::middleware::Next,
) -> Response {
    if !state.contacts_api && req.uri().path().starts_with("/api/v1/crm/") {
        return Error::NotFound.into_response();
    }
    next.run(req).await
}

/// The OpenAPI 3.1 document of every call.
pub fn openapi() -> utoipa::openapi::OpenApi {
    api().1
}

pub fn router(state: AppState) -> Router {
    let (mut api, _) = api();
    // Off unless asked for: an anonymous 40-byte request for its 1.5 MB script is the cheapest
    // way to make this service send a lot, and production clients need only the JSON document.
    // The page and its scripts are served from the binary: the docs work without internet access.
    if state.docs {
        let page = SwaggerUi::new("/docs").config(
            utoipa_swagger_ui::Config::new([meta::OPENAPI_PATH])
                .try_it_out_enabled(true)
                .persist_authorization(false),
        );
        // Swagger UI answers a file it does not have with a bare 404: give it the envelope.
        api = api.merge(
            Router::from(page)
                .layer(axum::middleware::map_response(|r: Response| async move {
                    match r.status() {
                        StatusCode::NOT_FOUND => Error::NotFound.into_response(),
                        _ => r,
                    }
                }))
                .layer(axum::middleware::from_fn(docs::docs_headers)),
        );
    }
    // The pages are HTML for people, not API calls: outside the API document.
    let app = api
        .merge(pages::router())
        .merge(pages::federation::router())
        .fallback(pages::not_found)
        .method_not_allowed_fallback(|| async { error::RequestError::MethodNotAllowed })
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            contacts_switch,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            resource::announce_metadata,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            extract::read_whole_body,
        ))
        .layer(axum::middleware::from_fn(framing::refuse_bad_framing))
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(|req: &Request<_>| {
                    // The route template, never the raw path (ids) or the query (search terms).
                    let route = req
                        .extensions()
                        .get::<axum::extract::MatchedPath>()
                        .map(|p| p.as_str().to_owned())
                        .unwrap_or_else(|| "unmatched".into());
                    let id = req
                        .headers()
                        .get(REQUEST_ID)
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("");
                    tracing::info_span!("request", id = %id, method = %req.method(), route = %route)
                })
                // 5xx causes are logged once, with their chain, where the error becomes a response.
                .on_failure(()),
        )
        .layer(CatchPanicLayer::custom(
            |_: Box<dyn std::any::Any + Send>| -> Response {
                Error::internal(anyhow::anyhow!("a request handler panicked")).into_response()
            },
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            record_request,
        ))
        .layer(axum::middleware::from_fn(request_id))
        // Marked sensitive, these headers print as "Sensitive" in any log or debug output.
        .layer(SetSensitiveRequestHeadersLayer::new([
            header::AUTHORIZATION,
            header::COOKIE,
        ]))
        .layer(axum::middleware::from_fn(framing::limit_head))
        // Outermost, so that the framing layer's refusals (400, 408, 413, 431) and a panic's 500
        // carry it too.
        .layer(axum::middleware::from_fn(no_store_by_default));
    // Outside even that, for the same reason: every answer to a listed origin carries its headers.
    let app = match cors::Cors::new(&state.browser.cors_origins) {
        Some(allowed) => app.layer(axum::middleware::from_fn_with_state(allowed, cors::cors)),
        None => app,
    };
    app.with_state(state)
}

const REQUEST_ID: &str = "x-request-id";

/// Answers are about one caller (tokens, secrets, their account and contacts): no cache may keep
/// them (RFC 6749 §5.1 for the token answers), unless a route says otherwise (the JWK Set).
async fn no_store_by_default(
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let mut response = next.run(req).await;
    response
        .headers_mut()
        .entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    response
}

/// Every request has an id, logged with it and returned in `X-Request-Id`: the caller's own if it
/// is a plausible id (1–128 of `A-Z a-z 0-9 . _ : -`, so it cannot forge log lines), else a new
/// UUIDv7.
async fn request_id(mut req: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let given = req
        .headers()
        .get(REQUEST_ID)
        .filter(|v| {
            let b = v.as_bytes();
            (1..=128).contains(&b.len())
                && b.iter()
                    .all(|c| c.is_ascii_alphanumeric() || b"._:-".contains(c))
        })
        .cloned();
    let id = given.unwrap_or_else(|| {
        header::HeaderValue::from_str(&uuid::Uuid::now_v7().to_string())
            .unwrap_or(header::HeaderValue::from_static("unknown"))
    });
    req.headers_mut().insert(REQUEST_ID, id.clone());
    let mut response = next.run(req).await;
    response.headers_mut().insert(REQUEST_ID, id);
    response
}

/// Counts and times every answer by method and route template.
async fn record_request(
    axum::extract::State(state): axum::extract::State<AppState>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let started = std::time::Instant::now();
    // Only the standard methods, so made-up ones cannot grow the number of series.
    let method: &'static str = match req.method().as_str() {
        "GET" => "GET",
        "POST" => "POST",
        "PUT" => "PUT",
        "PATCH" => "PATCH",
        "DELETE" => "DELETE",
        "HEAD" => "HEAD",
        "OPTIONS" => "OPTIONS",
        _ => "other",
    };
    let route = req
        .extensions()
        .get::<axum::extract::MatchedPath>()
        .map_or("unmatched", |p| p.as_str())
        .to_owned();
    // The access log's client: behind a trusted proxy, the address it forwards.
    let client = state.access_log.then(|| {
        let peer = req
            .extensions()
            .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
            .map(|c| c.0.ip());
        peer.map(|ip| extract::client_ip(ip, req.headers(), &state.trusted_proxies))
    });
    let response = next.run(req).await;
    let status = response.status().as_u16();
    let took = started.elapsed();
    state.metrics.request(method, &route, status, took);
    if let Some(client) = client {
        // The route's template, never the raw path or the query (ids, search terms, tokens in a
        // mailed link's URL); the request id ties it to the request's other lines.
        tracing::info!(
            target: "gatehouse::access",
            method,
            route = %route,
            status,
            ms = took.as_millis() as u64,
            client = %client.map_or_else(|| "-".to_owned(), |ip| ip.to_string()),
            "{method} {route} {status}"
        );
    }
    response
}
