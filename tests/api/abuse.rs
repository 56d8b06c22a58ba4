//! Throttling of login and 2FA attempts, per account and per client address; shedding of login
//! floods. (Slow clients are in `slow.rs`, hostile bodies in `hostile.rs`.)

use futures::future::join_all;
use gatehouse::config::SettingsArgs;
use reqwest::Method;
use serde_json::json;

use crate::helpers::{
    Answer, Backend, PASSWORD, TestApp, both_backends, spawn_app, spawn_app_with,
};

both_backends!(
    an_account_is_throttled_after_its_burst_and_its_sessions_are_untouched,
    an_unknown_email_is_throttled_exactly_like_an_account,
    racing_failures_never_exceed_the_allowance,
    an_address_is_throttled_and_a_spoofed_header_changes_nothing,
    behind_a_trusted_proxy_each_client_address_counts_alone,
    a_login_flood_is_shed_not_queued_without_bound,
);

/// Failures an account may have at once (half of docs/api.md's 100 per 15 minutes; see
/// `auth::throttle`).
const ACCOUNT_BURST: usize = 50;
/// Attempts an address may make at once (half of 300 per 15 minutes).
const ADDRESS_BURST: usize = 150;

async fn login_with(app: &TestApp, email: &str, password: &str, forwarded: Option<&str>) -> Answer {
    let mut request = app
        .client
        .post(app.url("/api/v1/auth/login"))
        .json(&json!({ "email": email, "password": password }));
    if let Some(ip) = forwarded {
        request = request.header("x-forwarded-for", ip);
    }
    app.send(request).await
}

/// A 429 as docs/api.md has it: `Retry-After` in seconds, the same in `details`, at most 15 minutes.
#[track_caller]
fn throttled(answer: &Answer) -> u64 {
    let error = answer.error(429, "RATE_LIMITED");
    let header: u64 = answer.header("retry-after").unwrap().parse().unwrap();
    assert_eq!(error["details"]["retryAfter"], header);
    assert!((1..=900).contains(&header), "{header}");
    header
}

async fn an_account_is_throttled_after_its_burst_and_its_sessions_are_untouched(backend: Backend) {
    let app = spawn_app(backend).await;
    app.clock().freeze();
    let (access, refresh) = app.logged_in_user("owner@example.com").await;
    for _ in 0..ACCOUNT_BURST {
        app.login("owner@example.com", "a wrong password")
            .await
            .error(401, "INVALID_CREDENTIALS");
    }
    // Even the right password waits now: the throttle does not test guesses.
    let retry = throttled(&app.login("owner@example.com", PASSWORD).await);
    assert!(retry <= 18, "one emission interval at most: {retry}");

    // The owner's existing session goes on.
    app.get("/api/v1/auth/me", &access).await.data(200);
    app.post("/api/v1/auth/refresh", json!({ "refreshToken": refresh }))
        .await
        .data(200);
    // Other accounts are not affected.
    app.logged_in_user("neighbour@example.com").await;
    // Nor is the bearer call that re-checks the password counted apart: it shares the allowance.
    let answer = app
        .call(
            Method::POST,
            "/api/v1/auth/password",
            Some(&access),
            Some(json!({ "currentPassword": PASSWORD, "newPassword": "some new passphrase" })),
        )
        .await;
    throttled(&answer);
}

async fn an_unknown_email_is_throttled_exactly_like_an_account(backend: Backend) {
    let app = spawn_app(backend).await;
    app.clock().freeze();
    for _ in 0..ACCOUNT_BURST {
        app.login("nobody@example.com", "a wrong password")
            .await
            .error(401, "INVALID_CREDENTIALS");
    }
    throttled(&app.login("NOBODY@example.com", "a wrong password").await);
}

async fn racing_failures_never_exceed_the_allowance(backend: Backend) {
    let app = spawn_app(backend).await;
    app.clock().freeze();
    app.create_user("race@example.com", PASSWORD).await;
    for _ in 0..ACCOUNT_BURST - 5 {
        app.login("race@example.com", "a wrong password").await;
    }
    // 15 at once with 5 failures left: slots are taken before the hash, so exactly 5 are checked.
    let answers =
        join_all((0..15).map(|_| app.login("race@example.com", "a wrong password"))).await;
    let checked = answers.iter().filter(|a| a.status == 401).count();
    let refused = answers.iter().filter(|a| a.status == 429).count();
    assert_eq!((checked, refused), (5, 10));
}

async fn an_address_is_throttled_and_a_spoofed_header_changes_nothing(backend: Backend) {
    let app = spawn_app(backend).await;
    // The allowance refills one attempt per 6 s: a slow run must not get one back half-way.
    app.clock().freeze();
    app.create_user("ivy@example.com", PASSWORD).await;
    // Cheap attempts (no hash): challenges that do not exist, each claiming another address.
    for i in 0..ADDRESS_BURST {
        let request = app
            .client
            .post(app.url("/api/v1/auth/2fa/verify"))
            .header("x-forwarded-for", format!("198.51.100.{}", i % 250))
            .json(&json!({ "tempToken": "made-up", "code": "123456" }));
        app.send(request).await.error(401, "TEMP_TOKEN_INVALID");
    }
    throttled(&login_with(&app, "ivy@example.com", PASSWORD, Some("203.0.113.1")).await);
    let request = app
        .client
        .post(app.url("/api/v1/auth/2fa/verify"))
        .json(&json!({ "tempToken": "made-up", "code": "123456" }));
    throttled(&app.send(request).await);
}

async fn behind_a_trusted_proxy_each_client_address_counts_alone(backend: Backend) {
    let app = spawn_app_with(
        backend,
        SettingsArgs {
            trusted_proxies: Some("127.0.0.1/32".into()),
            ..Default::default()
        },
    )
    .await;
    app.clock().freeze();
    app.create_user("joy@example.com", PASSWORD).await;
    for _ in 0..ADDRESS_BURST {
        let request = app
            .client
            .post(app.url("/api/v1/auth/2fa/verify"))
            // The client's own claim (leftmost) is not believed; the proxy's entry is.
            .header("x-forwarded-for", "10.9.9.9, 198.51.100.7")
            .json(&json!({ "tempToken": "made-up", "code": "123456" }));
        app.send(request).await.error(401, "TEMP_TOKEN_INVALID");
    }
    throttled(&login_with(&app, "joy@example.com", PASSWORD, Some("198.51.100.7")).await);
    // Another client behind the same proxy is not.
    let answer = login_with(&app, "joy@example.com", PASSWORD, Some("198.51.100.8")).await;
    let access = answer.data(200)["accessToken"].as_str().unwrap().to_owned();
    // And the session records the client's address, not the proxy's.
    let sessions = app.get("/api/v1/auth/sessions", &access).await;
    assert_eq!(sessions.data(200)["items"][0]["ip"], "198.51.100.8");
}

async fn a_login_flood_is_shed_not_queued_without_bound(backend: Backend) {
    // The flood comes from one address; the per-client connection cap (slow.rs) is not under test.
    let app = spawn_app_with(
        backend,
        SettingsArgs {
            max_connections_per_client: Some("1000".into()),
            ..Default::default()
        },
    )
    .await;
    // More than the hash pool admits (16 waiting per core plus one running): the excess is shed.
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let flood = cores * 17 + 40;
    let answers = join_all((0..flood).map(|i| {
        let email = format!("flood{i}@example.com");
        let app = &app;
        async move { app.login(&email, "a wrong password").await }
    }))
    .await;
    let mut shed = 0;
    for answer in &answers {
        match answer.status.as_u16() {
            401 => {
                answer.error(401, "INVALID_CREDENTIALS");
            }
            503 => {
                answer.error(503, "SERVICE_UNAVAILABLE");
                assert_eq!(answer.header("retry-after"), Some("1"));
                shed += 1;
            }
            other => panic!("unexpected {other}: {:#}", answer.body),
        }
    }
    assert!(shed > 0, "nothing was shed out of {flood}");
    // A shed attempt is no failure of the account: that account logs in at once.
    app.create_user("flood0@example.com", PASSWORD).await;
    app.login("flood0@example.com", PASSWORD).await.data(200);
}
