//! Slow and greedy clients, over real sockets: headers or a body sent too slowly are cut off,
//! oversized bodies and header blocks are refused before they are read, answers a client does not
//! read are given up on, connections are bounded in number, per client and in age, and none of it
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
    a_client_that_does_not_read_its_answers_is_cut_off,
    connections_beyond_a_clients_share_do_not_starve_others,
    a_connection_is_closed_once_past_its_lifetime,
    an_oversized_header_block_is_refused_as_it_arrives,
);

pub(crate) async fn connect(app: &TestApp) -> TcpStream {
    TcpStream::connect(app.address.trim_start_matches("http://"))
        .await
        .unwrap()
}

/// A connection from `source`, another loopback address (all of 127.0.0.0/8 is loopback on
/// Linux): another client, as the server sees it.
async fn connect_from(app: &TestApp, source: &str) -> TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind(format!("{source}:0").parse().unwrap()).unwrap();
    let server = app.address.trim_start_matches("http://").parse().unwrap();
    socket.connect(server).await.unwrap()
}

/// Reads until the server closes the connection (or `limit` passes); returns what came.
pub(crate) async fn read_to_close(stream: &mut TcpStream, limit: Duration) -> (String, bool) {
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
    assert!(
        received.contains("cache-control: no-store\r\n"),
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
    assert!(
        received.contains("cache-control: no-store\r\n"),
        "{received}"
    );
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

/// The reviewer's attack (issue 18): requests for the largest answer pipelined on every slot and
/// never read. Once the socket buffers are full the server's writes stall; the write timeout
/// frees the slots, where before they were held for good.
async fn a_client_that_does_not_read_its_answers_is_cut_off(backend: Backend) {
    let app = spawn_app_with(
        backend,
        SettingsArgs {
            write_timeout: Some("1s".into()),
            max_connections: Some("2".into()),
            docs: Some("on".into()),
            ..Default::default()
        },
    )
    .await;
    let requests = b"GET /docs/swagger-ui-bundle.js HTTP/1.1\r\nHost: x\r\n\r\n".repeat(32);
    let mut hogs = Vec::new();
    for _ in 0..2 {
        let mut hog = connect(&app).await;
        hog.write_all(&requests).await.unwrap();
        hogs.push(hog);
    }
    // Both slots are taken: /healthz is served once the server has given up on a hog.
    let started = Instant::now();
    let answer = tokio::time::timeout(
        Duration::from_secs(10),
        app.client.get(app.url("/healthz")).send(),
    )
    .await
    .expect("/healthz waited for a client that does not read");
    assert_eq!(answer.unwrap().status(), 200);
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    // Both hogs stalled together; one more write timeout and the second is surely cut too.
    // (Reading before that would let its answers go through.)
    tokio::time::sleep(Duration::from_secs(1)).await;
    for mut hog in hogs {
        let (_, closed) = read_to_close(&mut hog, Duration::from_secs(5)).await;
        assert!(closed, "a client that did not read was not cut off");
    }
}

async fn connections_beyond_a_clients_share_do_not_starve_others(backend: Backend) {
    let app = spawn_app_with(
        backend,
        SettingsArgs {
            max_connections: Some("4".into()),
            max_connections_per_client: Some("2".into()),
            header_timeout: Some("30s".into()),
            ..Default::default()
        },
    )
    .await;
    // One client opens more connections than the server has slots, each holding a request open.
    let mut greedy = Vec::new();
    for _ in 0..6 {
        let mut stream = connect_from(&app, "127.0.0.1").await;
        // Over its share, the connection may be closed before this arrives.
        let _ = stream.write_all(b"GET /healthz HTTP/1.1\r\n").await;
        greedy.push(stream);
    }
    // Another client is served at once.
    let started = Instant::now();
    let mut other = connect_from(&app, "127.0.0.2").await;
    other
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let (received, closed) = read_to_close(&mut other, Duration::from_secs(3)).await;
    assert!(received.starts_with("HTTP/1.1 200"), "{received:?}");
    assert!(closed && started.elapsed() < Duration::from_secs(1));
    // The greedy client keeps its share; its other connections were closed at once.
    let mut cut = 0;
    for stream in &mut greedy {
        let (received, closed) = read_to_close(stream, Duration::from_millis(300)).await;
        assert!(received.is_empty(), "{received}");
        cut += usize::from(closed);
    }
    assert_eq!(cut, 4);
}

async fn a_connection_is_closed_once_past_its_lifetime(backend: Backend) {
    let app = spawn_app_with(
        backend,
        SettingsArgs {
            connection_lifetime: Some("1s".into()),
            // The grace a request in flight has once its connection is past its lifetime.
            shutdown_timeout: Some("1s".into()),
            body_timeout: Some("30s".into()),
            ..Default::default()
        },
    )
    .await;
    // A busy keep-alive connection is closed between two requests once past its lifetime.
    let mut stream = connect(&app).await;
    let started = Instant::now();
    let mut answered = 0;
    loop {
        if stream
            .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .is_err()
        {
            break;
        }
        let mut buf = [0u8; 4096];
        match tokio::time::timeout(Duration::from_secs(2), stream.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => {
                assert!(buf.starts_with(b"HTTP/1.1 200"));
                answered += 1;
            }
            Ok(_) => break,
            Err(_) => panic!("no answer on a live connection"),
        }
        assert!(
            started.elapsed() < Duration::from_secs(4),
            "the connection outlived its lifetime"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(answered > 5, "{answered}");
    let age = started.elapsed();
    assert!(
        age > Duration::from_millis(900) && age < Duration::from_secs(2),
        "{age:?}"
    );

    // A request still in flight then has the grace period to finish, and is cut after it: here
    // a body that would have had 30 s to arrive.
    let mut stream = connect(&app).await;
    let started = Instant::now();
    stream
        .write_all(
            b"POST /api/v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
              Content-Length: 100\r\n\r\n{",
        )
        .await
        .unwrap();
    let (received, closed) = read_to_close(&mut stream, Duration::from_secs(5)).await;
    assert!(
        closed,
        "a request in flight outlived its connection's lifetime and grace"
    );
    assert!(received.is_empty(), "{received}");
    let age = started.elapsed();
    assert!(
        age > Duration::from_millis(1500) && age < Duration::from_secs(3),
        "{age:?}"
    );
}

/// Headers are held in memory until the blank line that ends them: a block over 32 KiB is refused
/// as soon as it passes that, instead of being buffered (hyper's default: about 400 KiB) until the
/// header timeout.
async fn an_oversized_header_block_is_refused_as_it_arrives(backend: Backend) {
    let app = spawn_app(backend).await;
    let pad = |lines: usize| -> String {
        (0..lines)
            .map(|i| format!("X-Pad-{i}: {}\r\n", "a".repeat(1000)))
            .collect()
    };
    // 20 KB of headers is served: large cookies and tokens fit.
    let mut stream = connect(&app).await;
    let request = format!(
        "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{}\r\n",
        pad(20)
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let (received, _) = read_to_close(&mut stream, Duration::from_secs(2)).await;
    assert!(received.starts_with("HTTP/1.1 200"), "{received:?}");

    // 40 KB and still going (no blank line): refused (431, or closed before the client reads the
    // answer) at once.
    let mut stream = connect(&app).await;
    let started = Instant::now();
    let request = format!("GET /healthz HTTP/1.1\r\nHost: x\r\n{}", pad(40));
    let _ = stream.write_all(request.as_bytes()).await;
    let (received, closed) = read_to_close(&mut stream, Duration::from_secs(3)).await;
    assert!(closed, "an oversized header block was held open");
    assert!(
        received.is_empty() || received.starts_with("HTTP/1.1 431"),
        "{received:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(1));
    others_are_served(&app).await;
}
