//! The pages' scripts, the client library and the stylesheet, embedded in the binary. Each is
//! served with its content type and an ETag (a hash of its bytes), and `Cache-Control: no-cache`:
//! browsers keep them but ask again each time, so a new binary's files are never mixed with an
//! old one's (the page scripts import the library by a fixed URL, so versioned URLs would not
//! reach it), and an unchanged file costs a 304.

use std::sync::LazyLock;

use axum::Router;
use axum::extract::Path;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use sha2::{Digest as _, Sha256};

use super::AppState;
use crate::error::Error;

const JS: &str = "text/javascript; charset=utf-8";
const CSS: &str = "text/css; charset=utf-8";
const SVG: &str = "image/svg+xml";

/// Every file under `/assets/pages/`, by name.
const FILES: &[(&str, &str, &str)] = &[
    (
        "style.css",
        CSS,
        include_str!("../../../assets/pages/style.css"),
    ),
    ("ui.js", JS, include_str!("../../../assets/pages/ui.js")),
    (
        "favicon.svg",
        SVG,
        include_str!("../../../assets/pages/favicon.svg"),
    ),
    (
        "sign-in.js",
        JS,
        include_str!("../../../assets/pages/sign-in.js"),
    ),
    (
        "forgot-password.js",
        JS,
        include_str!("../../../assets/pages/forgot-password.js"),
    ),
    (
        "reset-password.js",
        JS,
        include_str!("../../../assets/pages/reset-password.js"),
    ),
    (
        "verify-email.js",
        JS,
        include_str!("../../../assets/pages/verify-email.js"),
    ),
    (
        "accept-invitation.js",
        JS,
        include_str!("../../../assets/pages/accept-invitation.js"),
    ),
    (
        "register.js",
        JS,
        include_str!("../../../assets/pages/register.js"),
    ),
    (
        "authorize.js",
        JS,
        include_str!("../../../assets/pages/authorize.js"),
    ),
    (
        "consent.js",
        JS,
        include_str!("../../../assets/pages/consent.js"),
    ),
    (
        "device.js",
        JS,
        include_str!("../../../assets/pages/device.js"),
    ),
    (
        "account.js",
        JS,
        include_str!("../../../assets/pages/account.js"),
    ),
];

/// The browser client library (`clients/js`), the very file application developers use.
const LIBRARY: &str = include_str!("../../../clients/js/gatehouse.js");

struct Asset {
    content_type: &'static str,
    body: &'static str,
    etag: HeaderValue,
}

#[expect(
    clippy::expect_used,
    reason = "a quoted hex digest is a valid header value"
)]
fn asset(content_type: &'static str, body: &'static str) -> Asset {
    let digest = Sha256::digest(body.as_bytes());
    let hex: String = digest[..12].iter().map(|b| format!("{b:02x}")).collect();
    Asset {
        content_type,
        body,
        etag: HeaderValue::from_str(&format!("\"{hex}\"")).expect("hex is a header value"),
    }
}

static ASSETS: LazyLock<Vec<(&'static str, Asset)>> = LazyLock::new(|| {
    FILES
        .iter()
        .map(|(name, kind, body)| (*name, asset(kind, body)))
        .collect()
});

static LIBRARY_ASSET: LazyLock<Asset> = LazyLock::new(|| asset(JS, LIBRARY));

/// The account page's section scripts (`super::account::SECTIONS`), by section id.
static SECTION_ASSETS: LazyLock<Vec<(&'static str, Asset)>> = LazyLock::new(|| {
    super::account::SECTIONS
        .iter()
        .map(|s| (s.id, asset(JS, s.script)))
        .collect()
});

pub fn router() -> Router<AppState> {
    Router::new()
        .route(
            "/assets/gatehouse.js",
            get(|headers: HeaderMap| async move { serve(&LIBRARY_ASSET, &headers) }),
        )
        .route("/assets/pages/{name}", get(page_asset))
        .route("/assets/pages/account/{name}", get(section_asset))
}

async fn section_asset(Path(name): Path<String>, headers: HeaderMap) -> Result<Response, Error> {
    let (_, asset) = name
        .strip_suffix(".js")
        .and_then(|id| SECTION_ASSETS.iter().find(|(n, _)| *n == id))
        .ok_or(Error::NotFound)?;
    Ok(serve(asset, &headers))
}

async fn page_asset(Path(name): Path<String>, headers: HeaderMap) -> Result<Response, Error> {
    let (_, asset) = ASSETS
        .iter()
        .find(|(n, _)| *n == name)
        .ok_or(Error::NotFound)?;
    Ok(serve(asset, &headers))
}

fn serve(asset: &Asset, headers: &HeaderMap) -> Response {
    let cache = [
        (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        (header::ETAG, asset.etag.clone()),
    ];
    let fresh = headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|tag| tag.trim() == asset.etag || tag.trim() == "*");
    if fresh {
        return (StatusCode::NOT_MODIFIED, cache).into_response();
    }
    (
        cache,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static(asset.content_type),
        )],
        asset.body,
    )
        .into_response()
}
