//! Several `gatehouse serve` processes on one database, as a PostgreSQL deployment runs them
//! (SQLite allows it too, on one machine): a revocation, an account change or a key rotation made
//! through one instance or the CLI reaches every instance; a restarted instance starts with it.

use std::time::{Duration, Instant};

use gatehouse::config::SettingsArgs;
use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{
    Backend, Http, Instance, PASSWORD, SPREAD_DEADLINE, TestDatabase, both_backends, jwt_header,
    rotated_kid, spawn_app_with,
};

both_backends!(
    revocations_on_one_instance_reach_the_other,
    key_rotation_reaches_every_running_instance,
    a_restarted_instance_knows_the_revocations_at_once,
    retired_keys_leave_the_jwk_set_once_their_tokens_have_expired,
    the_account_throttle_is_shared_by_every_instance,
);

/// docs/api.md §2: running instances sign with a rotated key and publish it within 10 s.
const ROTATION_DELAY: Duration = Duration::from_secs(10);

/// Creates an account with the CLI, as an operator would (set-up).
pub fn add_user(db: &TestDatabase, email: &str) {
    let output = db.cli(
        &[
            "user",
            "add",
            "--email",
            email,
            "--name",
            "Test User",
            "--password-stdin",
        ],
        Some(&format!("{PASSWORD}\n")),
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

async fn access_token(http: &Http, email: &str, password: &str) -> String {
    http.login(email, password).await.data(200)["accessToken"]
        .as_str()
        .unwrap()
        .to_owned()
}

async fn revocations_on_one_instance_reach_the_other(backend: Backend) {
    let db = TestDatabase::migrated(&backend).await;
    add_user(&db, "ann@example.com");
    let (a, b) = (Instance::start(&db, &[]), Instance::start(&db, &[]));

    // A token from A is good on B (one key set, one database).
    let token = access_token(&a, "ann@example.com", PASSWORD).await;
    b.get("/api/v1/auth/me", &token).await.data(200);

    // Logout on A: B refuses the token within 2 s, long before it expires.
    a.call(Method::POST, "/api/v1/auth/logout", Some(&token), None)
        .await
        .data(200);
    let delay = b.refused_within(&token, SPREAD_DEADLINE).await;
    eprintln!("logout on one instance refused on the other after {delay:?}");

    // A password change on B ends the session held through A.
    let held_on_a = access_token(&a, "ann@example.com", PASSWORD).await;
    let on_b = access_token(&b, "ann@example.com", PASSWORD).await;
    let new_password = "another long passphrase";
    b.call(
        Method::POST,
        "/api/v1/auth/password",
        Some(&on_b),
        Some(json!({ "currentPassword": PASSWORD, "newPassword": new_password })),
    )
    .await
    .data(200);
    a.refused_within(&held_on_a, SPREAD_DEADLINE).await;
    a.get("/api/v1/auth/me", &on_b).await.data(200);

    // A session deleted through A ends on B.
    let other = access_token(&b, "ann@example.com", new_password).await;
    let sid = crate::helpers::claims(&other)["sid"]
        .as_str()
        .unwrap()
        .to_owned();
    a.call(
        Method::DELETE,
        &format!("/api/v1/auth/sessions/{sid}"),
        Some(&on_b),
        None,
    )
    .await
    .data(200);
    b.refused_within(&other, SPREAD_DEADLINE).await;

    // An administrator disabling the account from the CLI ends its sessions on both.
    let output = db.cli(&["user", "disable", "ann@example.com"], None);
    assert!(output.status.success());
    a.refused_within(&on_b, SPREAD_DEADLINE).await;
    b.refused_within(&on_b, SPREAD_DEADLINE).await;
}

/// The EdDSA keys' kids (the access tokens' keys here).
fn kids(jwks: &Value) -> Vec<String> {
    jwks["keys"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|k| k["alg"] == "EdDSA")
        .map(|k| k["kid"].as_str().unwrap().to_owned())
        .collect()
}

async fn jwks(http: &Http) -> Value {
    http.get_json("/.well-known/jwks.json").await
}

async fn key_rotation_reaches_every_running_instance(backend: Backend) {
    let db = TestDatabase::migrated(&backend).await;
    add_user(&db, "bo@example.com");
    let (a, b) = (Instance::start(&db, &[]), Instance::start(&db, &[]));
    let old_token = access_token(&a, "bo@example.com", PASSWORD).await;
    let old_kid = jwt_header(&old_token)["kid"].as_str().unwrap().to_owned();

    let output = db.cli(&["keys", "rotate"], None);
    assert!(output.status.success());
    let new_kid = rotated_kid(&String::from_utf8_lossy(&output.stdout), "EdDSA");
    assert_ne!(new_kid, old_kid);

    let started = Instant::now();
    for instance in [&a, &b] {
        loop {
            let token = access_token(instance, "bo@example.com", PASSWORD).await;
            if jwt_header(&token)["kid"] == new_kid.as_str() {
                break;
            }
            assert!(
                started.elapsed() < ROTATION_DELAY,
                "still signing with the old key"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let published = kids(&jwks(instance).await);
        assert!(
            published.contains(&new_kid) && published.contains(&old_kid),
            "{published:?}"
        );
        // What the old key signed stays good everywhere.
        instance.get("/api/v1/auth/me", &old_token).await.data(200);
    }
}

async fn a_restarted_instance_knows_the_revocations_at_once(backend: Backend) {
    let db = TestDatabase::migrated(&backend).await;
    add_user(&db, "cy@example.com");
    let first = Instance::start(&db, &[]);
    let token = access_token(&first, "cy@example.com", PASSWORD).await;
    let kept = access_token(&first, "cy@example.com", PASSWORD).await;
    first
        .call(Method::POST, "/api/v1/auth/logout", Some(&token), None)
        .await
        .data(200);
    drop(first);

    // Its first request, before any polling: the revocation was loaded at start.
    let second = Instance::start(&db, &[]);
    second
        .get("/api/v1/auth/me", &token)
        .await
        .error(401, "TOKEN_INVALID");
    second.get("/api/v1/auth/me", &kept).await.data(200);
}

async fn retired_keys_leave_the_jwk_set_once_their_tokens_have_expired(backend: Backend) {
    let app = spawn_app_with(backend, SettingsArgs::default()).await;
    let (token, _) = app.logged_in_user("di@example.com").await;
    let old_kid = jwt_header(&token)["kid"].as_str().unwrap().to_owned();
    let output = app.cli(&["keys", "rotate"], None);
    assert!(output.status.success());
    let new_kid = rotated_kid(&String::from_utf8_lossy(&output.stdout), "EdDSA");
    // Both are published while a token of the old key can be valid (the reload is every second).
    let published = |want: Vec<String>| {
        let app = &app;
        async move {
            let started = Instant::now();
            loop {
                let kids = kids(&jwks(app).await);
                if kids == want {
                    return;
                }
                assert!(started.elapsed() < Duration::from_secs(5), "{kids:?}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    };
    published(vec![new_kid.clone(), old_kid.clone()]).await;
    app.get("/api/v1/auth/me", &token).await.data(200);
    // Past the longest anything the old key signed can live (the refresh tokens' 30 days and
    // the leeway), it goes.
    app.clock().advance(Duration::from_secs(30 * 86_400 + 6));
    published(vec![new_kid]).await;
    // A token of a key no longer known is not valid, whatever its time.
    app.get("/api/v1/auth/me", &token)
        .await
        .error(401, "TOKEN_INVALID");
}

async fn the_account_throttle_is_shared_by_every_instance(backend: Backend) {
    let db = TestDatabase::migrated(&backend).await;
    add_user(&db, "eve@example.com");
    let (a, b) = (Instance::start(&db, &[]), Instance::start(&db, &[]));
    // The burst is 50 failures: spreading them over two instances gains nothing.
    for i in 0..50 {
        let instance = if i % 2 == 0 { &a } else { &b };
        instance
            .login("eve@example.com", "a wrong password")
            .await
            .error(401, "INVALID_CREDENTIALS");
    }
    for instance in [&a, &b] {
        instance
            .login("eve@example.com", PASSWORD)
            .await
            .error(429, "RATE_LIMITED");
    }
}
