//! Requests broken at the HTTP level, over raw sockets: those that reach the service are answered
//! in the envelope; those hyper refuses before a request exists get its bare status and a closed
//! connection, as the README says.

use serde_json::Value;
use std::time::Duration;
use tokio::io::AsyncWriteExt as _;

use crate::helpers::{Backend, TestApp, both_backends, spawn_app};
use crate::slow::{connect, read_to_close};

both_backends!(
    a_request_without_exactly_one_host_is_refused_in_the_envelope,
    a_request_with_two_authorization_headers_is_refused,
    a_request_head_over_32_kib_is_refused,
    framing_errors_hyper_answers_itself_close_the_connection,
);

/// Sends `request` on a connection of its own; returns the answer, which must end in a close.
async fn exchange(app: &TestApp, request: &[u8]) -> String {
    let mut stream = connect(app).await;
    stream.write_all(request).await.unwrap();
    let (answer, closed) = read_to_close(&mut stream, Duration::from_secs(3)).await;
    assert!(closed, "the connection was kept: {answer:?}");
    answer
}

/// The status and the JSON body of a raw answer.
fn status_and_body(answer: &str) -> (u16, Value) {
    let status = answer
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {answer:?}"));
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, body)| body);
    let body = serde_json::from_str(body).unwrap_or_else(|_| panic!("not JSON: {answer:?}"));
    (status, body)
}

async fn a_request_without_exactly_one_host_is_refused_in_the_envelope(backend: Backend) {
    let app = spawn_app(backend).await;
    for request in [
        &b"GET /healthz HTTP/1.1\r\n\r\n"[..],
        b"GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
        // Refused before its body is read: the connection closes rather than read on.
        b"POST /api/v1/auth/login HTTP/1.1\r\nContent-Type: application/json\r\n\
          Content-Length: 2\r\n\r\n{}",
    ] {
        let answer = exchange(&app, request).await;
        let (status, body) = status_and_body(&answer);
        assert_eq!(status, 400, "{answer}");
        assert_eq!(body["success"], false);
        assert_eq!(body["error"]["code"], "VALIDATION_ERROR");
        assert!(
            body["error"]["details"]["fields"]["Host"].is_string(),
            "{body}"
        );
        assert!(answer.contains("x-request-id: "), "{answer}");
        assert!(answer.contains("cache-control: no-store\r\n"), "{answer}");
    }
    // HTTP/1.0 may leave Host out.
    let answer = exchange(&app, b"GET /healthz HTTP/1.0\r\n\r\n").await;
    assert_eq!(status_and_body(&answer).0, 200, "{answer}");
}

/// Which of two credentials counts is a question a proxy in front may answer differently: neither.
/// Forward-auth, whose answers a proxy reads as a status alone, takes it as no credential (401).
async fn a_request_with_two_authorization_headers_is_refused(backend: Backend) {
    let app = spawn_app(backend).await;
    let (token, _) = app.logged_in_user("ann@example.com").await;
    let twice = format!(
        "GET /api/v1/auth/me HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\
         Authorization: Bearer garbage\r\n\r\n"
    );
    let answer = exchange(&app, twice.as_bytes()).await;
    let (status, body) = status_and_body(&answer);
    assert_eq!(status, 400, "{answer}");
    assert_eq!(body["error"]["code"], "VALIDATION_ERROR");
    assert!(
        body["error"]["details"]["fields"]["Authorization"].is_string(),
        "{body}"
    );
    assert!(answer.contains("cache-control: no-store\r\n"), "{answer}");
    // One is fine.
    let me = app.get("/api/v1/auth/me", &token).await;
    me.data(200);
    for path in ["/api/v1/authz/forward-auth", "/api/v1/authz/auth-request"] {
        let answer = app
            .client
            .get(app.url(path))
            .header("authorization", format!("Bearer {token}"))
            .header("authorization", "Bearer garbage")
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 401, "{path}");
    }
}

/// The README's figure, measured: a request line and headers of more than 32 KiB are refused
/// (431), whatever size the pieces they arrive in.
async fn a_request_head_over_32_kib_is_refused(backend: Backend) {
    let app = spawn_app(backend).await;
    let head = |size: usize| {
        let start = "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Pad: ";
        let pad = size - start.len() - 4;
        format!("{start}{}\r\n\r\n", "a".repeat(pad))
    };
    for (size, status) in [
        (32 * 1024 - 512, "200"),
        (32 * 1024, "200"),
        (32 * 1024 + 1, "431"),
        (33_000, "431"),
        (49_105, "431"),
    ] {
        let request = head(size);
        assert_eq!(request.len(), size);
        let mut stream = connect(&app).await;
        let _ = stream.write_all(request.as_bytes()).await;
        let (answer, _) = read_to_close(&mut stream, Duration::from_secs(3)).await;
        assert!(
            answer.starts_with(&format!("HTTP/1.1 {status} ")),
            "{size} bytes: {answer:?}"
        );
    }
}

/// What the README documents as hyper's own answers: a bare status, an empty body, a closed
/// connection.
async fn framing_errors_hyper_answers_itself_close_the_connection(backend: Backend) {
    let app = spawn_app(backend).await;
    let many_headers: String = (0..101).map(|i| format!("X-{i}: x\r\n")).collect();
    let many_headers = format!("GET /healthz HTTP/1.1\r\nHost: x\r\n{many_headers}\r\n");
    for (request, status) in [
        (
            &b"POST /api/v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\
               Content-Length: 3\r\n\r\n{}"[..],
            "400",
        ),
        (b"GET /he lthz HTTP/1.1\r\nHost: x\r\n\r\n", "400"),
        (
            b"GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header: x\r\n\r\n",
            "400",
        ),
        (
            b"POST /api/v1/auth/login HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n",
            "400",
        ),
        (many_headers.as_bytes(), "431"),
    ] {
        let answer = exchange(&app, request).await;
        assert!(
            answer.starts_with(&format!("HTTP/1.1 {status} ")),
            "{answer:?}"
        );
        assert!(answer.contains("content-length: 0\r\n"), "{answer:?}");
    }
    // An HTTP/2 preface on this HTTP/1.1 port: closed without an answer.
    let answer = exchange(&app, b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n").await;
    assert!(answer.is_empty(), "{answer:?}");
}
