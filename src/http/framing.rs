//! Framing that hyper lets through but HTTP forbids, refused here so that the answer is the
//! envelope. What hyper refuses itself (a malformed request line or header, conflicting
//! `Content-Length`s, a request head that overflows its buffer) it answers before a request
//! exists, so before any of this code can run: with the bare status and an empty body (README,
//! "Abuse resistance").

use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, Version, header};
use axum::middleware::Next;
use axum::response::{IntoResponse as _, Response};

use crate::error::Error;

/// The largest request head (request line and headers) served, as the README says. hyper's
/// buffer limit (`server::MAX_REQUEST_HEAD`, the same figure) bounds what a connection holds, but
/// not exactly what it accepts: a head that arrives in one read past a partly filled buffer is
/// parsed whole (measured: 48 KiB got through). This check makes the figure exact.
pub const MAX_REQUEST_HEAD: usize = 32 * 1024;

/// The forward-auth endpoints answer a proxy, which reads a status and nothing else: nginx takes
/// any status but 2xx, 401 and 403 as its own failure. They refuse two credentials with 401.
const FORWARD_AUTH: &str = "/api/v1/authz/";

/// A head over `MAX_REQUEST_HEAD` is 431 with an empty body, as hyper answers one that overflows
/// its buffer. Outside every layer that adds a request header (the request id), so that only what
/// the client sent is counted.
pub async fn limit_head(req: Request, next: Next) -> Response {
    if head_size(&req) > MAX_REQUEST_HEAD {
        return closing(StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE.into_response());
    }
    next.run(req).await
}

/// RFC 9112 §3.2: a server must answer 400 to an HTTP/1.1 request without a `Host` header and to
/// any request with more than one (which of two hosts was meant is a question a proxy in front may
/// have answered differently). HTTP/1.0 may leave it out. Refused before the body is read, so the
/// connection is closed: its unread body would otherwise be taken for the next request.
///
/// Two `Authorization` headers are refused the same way: which credential counts is, again, a
/// question a proxy in front may have answered differently.
pub async fn refuse_bad_framing(req: Request, next: Next) -> Response {
    let hosts = req.headers().get_all(header::HOST).iter().count();
    if hosts > 1 || (hosts == 0 && req.version() == Version::HTTP_11) {
        return closing(
            Error::field(
                "Host",
                "an HTTP/1.1 request must carry exactly one Host header",
            )
            .into_response(),
        );
    }
    let credentials = req.headers().get_all(header::AUTHORIZATION).iter().count();
    if credentials > 1 && !req.uri().path().starts_with(FORWARD_AUTH) {
        return closing(
            Error::field(
                "Authorization",
                "a request must carry at most one Authorization header",
            )
            .into_response(),
        );
    }
    next.run(req).await
}

/// Refused before the body is read: the connection closes, or its unread body would be taken for
/// the next request.
fn closing(mut response: Response) -> Response {
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

/// The size of the request head as sent, `Name: value` lines (hyper keeps no copy of the bytes).
fn head_size(req: &Request) -> usize {
    let uri = req.uri();
    let target = uri.scheme_str().map_or(0, |s| s.len() + "://".len())
        + uri.authority().map_or(0, |a| a.as_str().len())
        + uri.path_and_query().map_or(0, |p| p.as_str().len());
    let line = req.method().as_str().len() + target + "  HTTP/1.1\r\n".len();
    let headers: usize = req
        .headers()
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len() + ": \r\n".len())
        .sum();
    line + headers + "\r\n".len()
}
