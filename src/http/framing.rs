//! Framing that hyper lets through but HTTP forbids, refused here so that the answer is the
//! envelope. What hyper refuses itself (a malformed request line or header, conflicting
//! `Content-Length`s, a request head over its 32 KiB) it answers before a request exists, so
//! before any of this code can run: with the bare status and an empty body (README, "Abuse
//! resistance").

use axum::extract::Request;
use axum::http::{HeaderValue, Version, header};
use axum::middleware::Next;
use axum::response::{IntoResponse as _, Response};

use crate::error::Error;

/// RFC 9112 §3.2: a server must answer 400 to an HTTP/1.1 request without a `Host` header and to
/// any request with more than one (which of two hosts was meant is a question a proxy in front may
/// have answered differently). HTTP/1.0 may leave it out. Refused before the body is read, so the
/// connection is closed: its unread body would otherwise be taken for the next request.
pub async fn one_host(req: Request, next: Next) -> Response {
    let hosts = req.headers().get_all(header::HOST).iter().count();
    if hosts > 1 || (hosts == 0 && req.version() == Version::HTTP_11) {
        let mut response = Error::field(
            "Host",
            "an HTTP/1.1 request must carry exactly one Host header",
        )
        .into_response();
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
        return response;
    }
    next.run(req).await
}
