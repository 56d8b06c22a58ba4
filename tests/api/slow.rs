//! Slow and greedy clients, over real sockets: headers or a body sent too slowly are cut off,
//! oversized bodies are refused before they are read, connections are bounded, and none of it
//! stalls other clients.

use std::time::{Duration, Instant};

use gatehouse::config::SettingsArgs;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use crate::helpers::{Backend, TestApp, both_backends, spawn_app, spawn_app_with};

both_backends!(
    a_client_too_slow_with_its_headers_is_cut_off,
    a_body_trickled_past_the_deadline_is_refused,
    an_oversized_body_is_refused_before_it_is_read,
    connections_beyond_the_limit_wait_for_a_free_one,
);

async fn connect(app: &TestApp) -> TcpStream {
    TcpStream::connect(app.address.trim_start_matches("http://"))
        .await
        .unwrap()
}

/// Reads until the server closes the connection (or `limit` passes); returns what came.
async fn read_to_close(stream: &mut TcpStream, limit: Duration) -> (String, bool) {
    let mut received = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = Instant::now() + limit;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, stream.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return (String::from_utf8_lossy(&received).into(), true),
            Ok(Ok(n)) => received.extend_from_slice(&buf[..n]),
            Err(_) => return (String::from_utf8_lossy(&received).into(), false),
        }
    }
}

/// Another client is served promptly meanwhile.
async fn others_are_served(app: &TestApp) {
    let started = Instant::now();
    let answer = app.client.get(app.url("/healthz")).send().await.unwrap();
    assert_eq!(answer.status(), 200);
    assert!(started.elapsed() < Duration::from_secs(1));
}

async fn a_client_too_slow_with_its_headers_is_cut_off(backend: Backend) {
    let app = spawn_app_with(
        backend,
        SettingsArgs {
            header_timeout: Some("1s".into()),
            ..Default::default()
        },
    )
    .await;
    // Half a request line, then nothing.
    let mut slow = connect(&app).await;
    slow.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    // A keep-alive connection that went idle after one request is held no longer either.
    let mut idle = connect(&app).await;
    idle.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    others_are_served(&app).await;

    let started = Instant::now();
    let (_, closed) = read_to_close(&mut slow, Duration::from_secs(5)).await;
    assert!(closed, "the slow client was not cut off");
    let (received, closed) = read_to_close(&mut idle, Duration::from_secs(5)).await;
    assert!(received.starts_with("HTTP/1.1 200"), "{received}");
    assert!(closed, "the idle connection was kept");
    assert!(started.elapsed() < Duration::from_secs(4));
}

async fn a_body_trickled_past_the_deadline_is_refused(backend: Backend) {
    let app = spawn_app_with(
        backend,
        SettingsArgs {
            body_timeout: Some("1s".into()),
            ..Default::default()
        },
    )
    .await;
    let mut stream = connect(&app).await;
    stream
        .write_all(
            b"POST /api/v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
              Content-Length: 100\r\n\r\n{\"email\":",
        )
        .await
        .unwrap();
    // A byte every 300 ms: each chunk is prompt, the whole is not.
    let trickle = async {
        for _ in 0..20 {
            tokio::time::sleep(Duration::from_millis(300)).await;
            if stream.write_all(b" ").await.is_err() {
                break;
            }
        }
    };
    let started = Instant::now();
    tokio::select! {
        () = trickle => {}
        () = tokio::time::sleep(Duration::from_secs(3)) => {}
    }
    let (received, _) = read_to_close(&mut stream, Duration::from_secs(2)).await;
    assert!(received.starts_with("HTTP/1.1 408"), "{received}");
    assert!(
        received.contains(r#""code":"REQUEST_TIMEOUT""#),
        "{received}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    others_are_served(&app).await;
}

async fn an_oversized_body_is_refused_before_it_is_read(backend: Backend) {
    let app = spawn_app(backend).await;
    // Announced too large: refused at once, though not a byte of it was sent.
    let mut stream = connect(&app).await;
    stream
        .write_all(
            b"POST /api/v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
              Content-Length: 10000000\r\n\r\n",
        )
        .await
        .unwrap();
    let started = Instant::now();
    let (received, _) = read_to_close(&mut stream, Duration::from_secs(2)).await;
    assert!(received.starts_with("HTTP/1.1 413"), "{received}");
    assert!(received.contains(r#""code":"PAYLOAD_TOO_LARGE""#));
    assert!(started.elapsed() < Duration::from_secs(1));

    // Not announced (chunked): refused once past the limit, not read to its end.
    let mut stream = connect(&app).await;
    stream
        .write_all(
            b"POST /api/v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
              Transfer-Encoding: chunked\r\n\r\n",
        )
        .await
        .unwrap();
    let chunk = format!("{:x}\r\n{}\r\n", 16 * 1024, "a".repeat(16 * 1024));
    for _ in 0..5 {
        if stream.write_all(chunk.as_bytes()).await.is_err() {
            break;
        }
    }
    let (received, _) = read_to_close(&mut stream, Duration::from_secs(2)).await;
    assert!(received.starts_with("HTTP/1.1 413"), "{received}");
}

async fn connections_beyond_the_limit_wait_for_a_free_one(backend: Backend) {
    let app = spawn_app_with(
        backend,
        SettingsArgs {
            max_connections: Some("3".into()),
            header_timeout: Some("30s".into()),
            ..Default::default()
        },
    )
    .await;
    let mut held = Vec::new();
    for _ in 0..3 {
        let mut stream = connect(&app).await;
        stream
            .write_all(b"GET /healthz HTTP/1.1\r\n")
            .await
            .unwrap();
        held.push(stream);
    }
    // The fourth is connected by the kernel but not served while three are open...
    let mut fourth = connect(&app).await;
    fourth
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let (received, _) = read_to_close(&mut fourth, Duration::from_millis(500)).await;
    assert!(received.is_empty(), "served beyond the limit: {received}");
    // ...and is served as soon as one of them goes.
    drop(held.pop());
    let (received, closed) = read_to_close(&mut fourth, Duration::from_secs(3)).await;
    assert!(received.starts_with("HTTP/1.1 200"), "{received:?}");
    assert!(closed);
}
