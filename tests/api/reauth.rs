//! Re-authentication (docs/api.md §3): one password (or code) opens a five-minute window for the
//! session it was given in, during which the calls that re-check the password take none.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{Answer, Backend, PASSWORD, TestApp, both_backends, code_at, spawn_app};

both_backends!(
    the_window_opens_for_one_session_and_serves_the_sensitive_calls,
    the_window_survives_a_refresh_and_closes_after_five_minutes,
    a_sign_in_opens_no_window,
    a_wrong_password_is_a_failed_attempt_and_audited,
    with_two_factor_a_code_reauthenticates,
    the_password_field_still_works_without_a_window,
);

const REAUTH: &str = "/api/v1/auth/reauthenticate";

async fn bearer(app: &TestApp, method: Method, path: &str, token: &str, body: Value) -> Answer {
    app.call(method, path, Some(token), Some(body)).await
}

async fn reauthenticate(app: &TestApp, token: &str, body: Value) -> Answer {
    bearer(app, Method::POST, REAUTH, token, body).await
}

/// `reauthenticatedUntil` of `GET /auth/me`, as the page reads it.
async fn until(app: &TestApp, token: &str) -> Value {
    app.get("/api/v1/auth/me", token).await.data(200)["reauthenticatedUntil"].clone()
}

/// The refusal of a sensitive call made without its password outside a window: the existing
/// missing-field error, naming the call that opens one.
#[track_caller]
fn asks_for_password(answer: &Answer, field: &str) {
    let error = answer.error(400, "VALIDATION_ERROR");
    let reason = error["details"]["fields"][field].as_str().unwrap();
    assert!(reason.contains("/auth/reauthenticate"), "{reason}");
}

fn ms(rfc3339: &Value) -> i64 {
    let t = time::OffsetDateTime::parse(
        rfc3339.as_str().unwrap(),
        &time::format_description::well_known::Rfc3339,
    )
    .unwrap();
    (t.unix_timestamp_nanos() / 1_000_000) as i64
}

async fn the_window_opens_for_one_session_and_serves_the_sensitive_calls(backend: Backend) {
    // With passkeys on, to add one.
    let app = crate::passkeys::spawn(backend).await;
    let (access, _) = app.logged_in_user("rita@example.com").await;
    let other = app.login("rita@example.com", PASSWORD).await.data(200)["accessToken"]
        .as_str()
        .unwrap()
        .to_owned();
    let email = json!({ "newEmail": "rita@example.org" });
    asks_for_password(
        &bearer(
            &app,
            Method::POST,
            "/api/v1/auth/email",
            &access,
            email.clone(),
        )
        .await,
        "password",
    );
    assert_eq!(until(&app, &access).await, Value::Null);

    let before = app.clock().now_ms();
    let answer = reauthenticate(&app, &access, json!({ "password": PASSWORD })).await;
    let given = ms(&answer.data(200)["reauthenticatedUntil"]);
    let after = app.clock().now_ms();
    assert!(
        (before + 300_000..=after + 300_000).contains(&given),
        "{given}"
    );
    assert_eq!(ms(&until(&app, &access).await), given);
    assert_eq!(
        app.audit_count("reauthentication.succeeded", Some("pwd"))
            .await,
        1
    );

    // The other session of the same person is not in the window.
    assert_eq!(until(&app, &other).await, Value::Null);
    asks_for_password(
        &bearer(
            &app,
            Method::POST,
            "/api/v1/auth/email",
            &other,
            email.clone(),
        )
        .await,
        "password",
    );

    // The sensitive calls, without their password (adding a passkey: its ceremony starts).
    let start = "/api/v1/auth/passkeys/register/start";
    let started = bearer(&app, Method::POST, start, &access, json!({})).await;
    assert!(started.data(200)["ceremonyId"].is_string());
    asks_for_password(
        &bearer(&app, Method::POST, start, &other, json!({})).await,
        "password",
    );
    bearer(&app, Method::POST, "/api/v1/auth/email", &access, email)
        .await
        .data(202);
    let setup = bearer(
        &app,
        Method::POST,
        "/api/v1/auth/2fa/setup",
        &access,
        json!({}),
    )
    .await;
    let secret = crate::helpers::base32_decode(setup.data(200)["secret"].as_str().unwrap());
    let (codes, _) = app.enable_with_previous_code(&access, &secret).await;
    let disable = json!({ "code": codes[0] });
    bearer(
        &app,
        Method::POST,
        "/api/v1/auth/2fa/disable",
        &access,
        disable,
    )
    .await
    .data(200);
    let password = json!({ "newPassword": "a brand new passphrase" });
    bearer(
        &app,
        Method::POST,
        "/api/v1/auth/password",
        &access,
        password,
    )
    .await
    .data(200);
    app.login("rita@example.com", "a brand new passphrase")
        .await
        .data(200);
    bearer(&app, Method::DELETE, "/api/v1/auth/me", &access, json!({}))
        .await
        .data(200);
    app.login("rita@example.com", "a brand new passphrase")
        .await
        .error(401, "INVALID_CREDENTIALS");
}

async fn the_window_survives_a_refresh_and_closes_after_five_minutes(backend: Backend) {
    let app = spawn_app(backend).await;
    let (access, refresh) = app.logged_in_user("saul@example.com").await;
    reauthenticate(&app, &access, json!({ "password": PASSWORD }))
        .await
        .data(200);
    let refreshed = app
        .post("/api/v1/auth/refresh", json!({ "refreshToken": refresh }))
        .await;
    let refreshed = refreshed.data(200)["accessToken"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(until(&app, &refreshed).await.is_string());
    bearer(
        &app,
        Method::POST,
        "/api/v1/auth/2fa/setup",
        &refreshed,
        json!({}),
    )
    .await
    .data(200);

    app.clock().advance(Duration::from_secs(5 * 60 + 1));
    assert_eq!(until(&app, &refreshed).await, Value::Null);
    let setup = bearer(
        &app,
        Method::POST,
        "/api/v1/auth/2fa/setup",
        &refreshed,
        json!({}),
    )
    .await;
    asks_for_password(&setup, "password");
    let delete = bearer(
        &app,
        Method::DELETE,
        "/api/v1/auth/me",
        &refreshed,
        json!({}),
    )
    .await;
    asks_for_password(&delete, "password");
    let password = json!({ "newPassword": "a brand new passphrase" });
    let change = bearer(
        &app,
        Method::POST,
        "/api/v1/auth/password",
        &refreshed,
        password,
    )
    .await;
    asks_for_password(&change, "currentPassword");
}

async fn a_sign_in_opens_no_window(backend: Backend) {
    let app = spawn_app(backend).await;
    let (access, _) = app.logged_in_user("tess@example.com").await;
    assert_eq!(until(&app, &access).await, Value::Null);
    let delete = bearer(&app, Method::DELETE, "/api/v1/auth/me", &access, json!({})).await;
    asks_for_password(&delete, "password");
    // An empty password is no password.
    let setup = json!({ "password": "" });
    let setup = bearer(&app, Method::POST, "/api/v1/auth/2fa/setup", &access, setup).await;
    asks_for_password(&setup, "password");
}

async fn a_wrong_password_is_a_failed_attempt_and_audited(backend: Backend) {
    let app = spawn_app(backend).await;
    // The allowance refills with time: a slow run must not get a slot back half-way.
    app.clock().freeze();
    let (access, _) = app.logged_in_user("ugo@example.com").await;
    let wrong = reauthenticate(&app, &access, json!({ "password": "not the password" })).await;
    wrong.error(403, "INVALID_CREDENTIALS");
    assert_eq!(until(&app, &access).await, Value::Null);
    assert_eq!(
        app.audit_count("reauthentication.failed", Some("wrong_password"))
            .await,
        1
    );
    reauthenticate(&app, &access, json!({}))
        .await
        .error(400, "VALIDATION_ERROR");
    // The account's allowance of failures (a burst of 50, docs/api.md §3) is shared with
    // sign-in: 49 wrong logins after the wrong re-authentication use it up.
    for _ in 0..49 {
        app.login("ugo@example.com", "a wrong password")
            .await
            .error(401, "INVALID_CREDENTIALS");
    }
    app.login("ugo@example.com", PASSWORD)
        .await
        .error(429, "RATE_LIMITED");
    reauthenticate(&app, &access, json!({ "password": PASSWORD }))
        .await
        .error(429, "RATE_LIMITED");
    // The session itself goes on.
    app.get("/api/v1/auth/me", &access).await.data(200);
}

async fn with_two_factor_a_code_reauthenticates(backend: Backend) {
    let app = spawn_app(backend).await;
    let (access, _) = app.logged_in_user("vera@example.com").await;
    reauthenticate(&app, &access, json!({ "code": "123456" }))
        .await
        .error(409, "TWO_FACTOR_NOT_ENABLED");
    let (secret, codes) = app.enable_two_factor(&access).await;
    // Recovery codes are kept for signing in.
    reauthenticate(&app, &access, json!({ "code": codes[0] }))
        .await
        .error(400, "VALIDATION_ERROR");
    let now = app.now_seconds();
    let wrong = format!(
        "{:06}",
        (code_at(&secret, now).parse::<u32>().unwrap() + 1) % 1_000_000
    );
    let neither = [code_at(&secret, now - 30), code_at(&secret, now + 30)];
    if !neither.contains(&wrong) {
        reauthenticate(&app, &access, json!({ "code": wrong }))
            .await
            .error(403, "INVALID_2FA_CODE");
        assert_eq!(
            app.audit_count("reauthentication.failed", Some("wrong_code"))
                .await,
            1
        );
    }
    let answer = reauthenticate(&app, &access, json!({ "code": code_at(&secret, now) })).await;
    if answer.status == 403 {
        // A step boundary passed and the previous step's code (used to enable) came back.
        reauthenticate(
            &app,
            &access,
            json!({ "code": code_at(&secret, app.now_seconds()) }),
        )
        .await
        .data(200);
    } else {
        answer.data(200);
    }
    assert_eq!(
        app.audit_count("reauthentication.succeeded", Some("otp"))
            .await,
        1
    );
    let password = json!({ "newPassword": "a brand new passphrase" });
    bearer(
        &app,
        Method::POST,
        "/api/v1/auth/password",
        &access,
        password,
    )
    .await
    .data(200);
}

async fn the_password_field_still_works_without_a_window(backend: Backend) {
    let app = spawn_app(backend).await;
    let (access, _) = app.logged_in_user("walt@example.com").await;
    let wrong = json!({ "password": "not the password" });
    bearer(&app, Method::POST, "/api/v1/auth/2fa/setup", &access, wrong)
        .await
        .error(403, "INVALID_CREDENTIALS");
    app.setup_two_factor(&access).await.data(200);
    // Checking a password at a sensitive call opens no window.
    assert_eq!(until(&app, &access).await, Value::Null);
    // Inside a window, a password that is sent is still checked.
    reauthenticate(&app, &access, json!({ "password": PASSWORD }))
        .await
        .data(200);
    let wrong = json!({ "currentPassword": "not the password", "newPassword": "a new passphrase" });
    bearer(&app, Method::POST, "/api/v1/auth/password", &access, wrong)
        .await
        .error(403, "INVALID_CREDENTIALS");
}
