//! The caller's sessions and account changes: the session list, ending one session, changing the
//! password, turning 2FA off and renewing recovery codes; and the housekeeping that keeps the
//! session tables from growing without bound.

use crate::helpers::code_at;
use gatehouse::config::SettingsArgs;
use reqwest::Method;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::helpers::{
    Answer, Backend, PASSWORD, TestApp, both_backends, now_seconds, spawn_app, spawn_app_with,
};

both_backends!(
    the_session_list_shows_each_live_session_and_the_current_one,
    deleting_a_session_ends_it_and_only_the_owner_can,
    changing_the_password_rechecks_it_and_ends_the_other_sessions,
    turning_two_factor_off_needs_the_password_and_a_code,
    new_recovery_codes_void_the_old_set,
    housekeeping_deletes_what_no_request_can_need,
);

/// Logs in with a user agent of its own: (access token, refresh token).
async fn login_as(app: &TestApp, email: &str, user_agent: &str) -> (String, String) {
    let request = app
        .client
        .post(app.url("/api/v1/auth/login"))
        .header("user-agent", user_agent)
        // Not from a trusted proxy: must not become the session's address.
        .header("x-forwarded-for", "203.0.113.9")
        .json(&json!({ "email": email, "password": PASSWORD }));
    let answer = app.send(request).await;
    let data = answer.data(200);
    (
        data["accessToken"].as_str().unwrap().to_owned(),
        data["refreshToken"].as_str().unwrap().to_owned(),
    )
}

async fn bearer(app: &TestApp, method: Method, path: &str, token: &str, body: Value) -> Answer {
    app.call(method, path, Some(token), Some(body)).await
}

fn sid(token: &str) -> String {
    crate::helpers::claims(token)["sid"]
        .as_str()
        .unwrap()
        .to_owned()
}

async fn session_list(app: &TestApp, token: &str) -> Vec<Value> {
    app.get("/api/v1/auth/sessions", token).await.data(200)["items"]
        .as_array()
        .unwrap()
        .clone()
}

async fn the_session_list_shows_each_live_session_and_the_current_one(backend: Backend) {
    let app = spawn_app(backend).await;
    app.create_user("sam@example.com", PASSWORD).await;
    let (laptop, _) = login_as(&app, "sam@example.com", "Laptop/1.0").await;
    let (phone, _) = login_as(&app, "sam@example.com", "Phone/2.0").await;
    let (ended, _) = login_as(&app, "sam@example.com", "Old/0.1").await;
    bearer(&app, Method::POST, "/api/v1/auth/logout", &ended, json!({}))
        .await
        .data(200);

    let items = session_list(&app, &laptop).await;
    assert_eq!(items.len(), 2, "ended sessions are not listed: {items:#?}");
    for item in &items {
        let keys: Vec<&str> = item
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "id",
                "createdAt",
                "lastUsedAt",
                "ip",
                "userAgent",
                "amr",
                "current",
                "client"
            ]
        );
        assert_eq!(item["amr"], json!(["pwd"]), "signed in with a password");
        assert_eq!(item["client"], Value::Null, "the person's own sign-in");
        assert_eq!(item["ip"], "127.0.0.1");
        assert!(item["createdAt"].as_str().unwrap().ends_with('Z'));
    }
    let current: Vec<&Value> = items.iter().filter(|i| i["current"] == true).collect();
    assert_eq!(current.len(), 1);
    assert_eq!(current[0]["id"], sid(&laptop));
    assert_eq!(current[0]["userAgent"], "Laptop/1.0");
    let other = items.iter().find(|i| i["current"] == false).unwrap();
    assert_eq!(other["id"], sid(&phone));
    assert_eq!(other["userAgent"], "Phone/2.0");

    // Using the phone's session moves its last use, and puts it first.
    app.clock().advance(std::time::Duration::from_millis(1100));
    app.get("/api/v1/crm/contacts", &phone).await.data(200);
    let items = session_list(&app, &phone).await;
    assert_eq!(items[0]["id"], sid(&phone));
    assert_eq!(items[0]["current"], true);
    assert!(
        items[0]["lastUsedAt"].as_str().unwrap() > items[0]["createdAt"].as_str().unwrap(),
        "{items:#?}"
    );

    // Another user sees only their own.
    let (other_user, _) = app.logged_in_user("tia@example.com").await;
    let theirs = session_list(&app, &other_user).await;
    assert_eq!(theirs.len(), 1);
    assert_eq!(theirs[0]["id"], sid(&other_user));
}

async fn deleting_a_session_ends_it_and_only_the_owner_can(backend: Backend) {
    let app = spawn_app(backend).await;
    let (mine, _) = app.logged_in_user("uma@example.com").await;
    let (other, other_refresh) = login_as(&app, "uma@example.com", "Tablet").await;
    let (stranger, _) = app.logged_in_user("vic@example.com").await;

    let path = format!("/api/v1/auth/sessions/{}", sid(&other));
    // Someone else's session does not exist for the stranger.
    let answer = app.call(Method::DELETE, &path, Some(&stranger), None).await;
    answer.error(404, "NOT_FOUND");
    app.get("/api/v1/auth/me", &other).await.data(200);

    let answer = app.call(Method::DELETE, &path, Some(&mine), None).await;
    assert_eq!(answer.data(200), &json!({ "id": sid(&other) }));
    app.get("/api/v1/auth/me", &other)
        .await
        .error(401, "TOKEN_INVALID");
    app.post(
        "/api/v1/auth/refresh",
        json!({ "refreshToken": other_refresh }),
    )
    .await
    .error(401, "REFRESH_TOKEN_INVALID");
    assert_eq!(session_list(&app, &mine).await.len(), 1);

    // Once ended, it is gone; ids that are not ids, or never were, are not found either.
    for path in [
        path.clone(),
        format!("/api/v1/auth/sessions/{}", Uuid::now_v7()),
        "/api/v1/auth/sessions/not-a-uuid".to_owned(),
    ] {
        app.call(Method::DELETE, &path, Some(&mine), None)
            .await
            .error(404, "NOT_FOUND");
    }

    // The current session may end itself.
    let path = format!("/api/v1/auth/sessions/{}", sid(&mine));
    app.call(Method::DELETE, &path, Some(&mine), None)
        .await
        .data(200);
    app.get("/api/v1/auth/me", &mine)
        .await
        .error(401, "TOKEN_INVALID");
    app.get("/api/v1/auth/me", &stranger).await.data(200);
}

async fn changing_the_password_rechecks_it_and_ends_the_other_sessions(backend: Backend) {
    let app = spawn_app(backend).await;
    let (current, _) = app.logged_in_user("wes@example.com").await;
    let (other, other_refresh) = login_as(&app, "wes@example.com", "Other").await;
    let path = "/api/v1/auth/password";
    let new_password = "a much longer new passphrase";

    let wrong = bearer(
        &app,
        Method::POST,
        path,
        &current,
        json!({ "currentPassword": "not my password", "newPassword": new_password }),
    )
    .await;
    wrong.error(403, "INVALID_CREDENTIALS");
    let weak = bearer(
        &app,
        Method::POST,
        path,
        &current,
        json!({ "currentPassword": PASSWORD, "newPassword": "password1" }),
    )
    .await;
    weak.error(400, "WEAK_PASSWORD");
    let missing = bearer(&app, Method::POST, path, &current, json!({})).await;
    let error = missing.error(400, "VALIDATION_ERROR");
    assert!(error["details"]["fields"]["newPassword"].is_string());
    // Without the current password, and outside a re-authentication window (docs/api.md §3).
    let body = json!({ "newPassword": "some new passphrase" });
    let missing = bearer(&app, Method::POST, path, &current, body).await;
    let error = missing.error(400, "VALIDATION_ERROR");
    assert!(error["details"]["fields"]["currentPassword"].is_string());
    // Nothing changed so far.
    app.get("/api/v1/auth/me", &other).await.data(200);
    app.login("wes@example.com", PASSWORD).await.data(200);

    let changed = bearer(
        &app,
        Method::POST,
        path,
        &current,
        json!({ "currentPassword": PASSWORD, "newPassword": new_password }),
    )
    .await;
    assert_eq!(changed.data(200), &json!({}));
    app.get("/api/v1/auth/me", &current).await.data(200);
    app.get("/api/v1/auth/me", &other)
        .await
        .error(401, "TOKEN_INVALID");
    app.post(
        "/api/v1/auth/refresh",
        json!({ "refreshToken": other_refresh }),
    )
    .await
    .error(401, "REFRESH_TOKEN_INVALID");
    app.login("wes@example.com", PASSWORD)
        .await
        .error(401, "INVALID_CREDENTIALS");
    app.login("wes@example.com", new_password).await.data(200);
}

async fn turning_two_factor_off_needs_the_password_and_a_code(backend: Backend) {
    let app = spawn_app(backend).await;
    let (token, _) = app.logged_in_user("xia@example.com").await;
    let path = "/api/v1/auth/2fa/disable";
    let off = bearer(
        &app,
        Method::POST,
        path,
        &token,
        json!({ "password": PASSWORD, "code": "123456" }),
    )
    .await;
    off.error(409, "TWO_FACTOR_NOT_ENABLED");

    let (secret, codes) = app.enable_two_factor(&token).await;
    // A wrong password is refused before the code is looked at: the recovery code stays unused.
    let answer = bearer(
        &app,
        Method::POST,
        path,
        &token,
        json!({ "password": "wrong password", "code": codes[0] }),
    )
    .await;
    answer.error(403, "INVALID_CREDENTIALS");
    let me = app.get("/api/v1/auth/me", &token).await;
    assert_eq!(me.data(200)["recoveryCodesRemaining"], 10);
    let answer = bearer(
        &app,
        Method::POST,
        path,
        &token,
        json!({ "password": PASSWORD, "code": "000000" }),
    )
    .await;
    answer.error(403, "INVALID_2FA_CODE");
    let answer = bearer(
        &app,
        Method::POST,
        path,
        &token,
        json!({ "password": PASSWORD }),
    )
    .await;
    answer.error(400, "VALIDATION_ERROR");
    assert_eq!(
        app.login("xia@example.com", PASSWORD).await.data(200)["requiresTwoFactor"],
        true
    );

    let code = code_at(&secret, now_seconds());
    let answer = bearer(
        &app,
        Method::POST,
        path,
        &token,
        json!({ "password": PASSWORD, "code": code }),
    )
    .await;
    assert_eq!(answer.data(200), &json!({}));
    let me = app.get("/api/v1/auth/me", &token).await;
    assert_eq!(me.data(200)["twoFactorEnabled"], false);
    assert_eq!(me.data(200)["recoveryCodesRemaining"], 0);
    let login = app.login("xia@example.com", PASSWORD).await;
    assert!(login.data(200)["accessToken"].is_string(), "no challenge");
}

async fn new_recovery_codes_void_the_old_set(backend: Backend) {
    let app = spawn_app(backend).await;
    let (token, _) = app.logged_in_user("yan@example.com").await;
    let path = "/api/v1/auth/2fa/recovery-codes";
    bearer(
        &app,
        Method::POST,
        path,
        &token,
        json!({ "code": "123456" }),
    )
    .await
    .error(409, "TWO_FACTOR_NOT_ENABLED");

    let (secret, old) = app.enable_two_factor(&token).await;
    bearer(
        &app,
        Method::POST,
        path,
        &token,
        json!({ "code": "000000" }),
    )
    .await
    .error(403, "INVALID_2FA_CODE");
    let code = code_at(&secret, now_seconds());
    let answer = bearer(&app, Method::POST, path, &token, json!({ "code": code })).await;
    let new = crate::helpers::recovery_codes(&answer);
    assert_eq!(new.len(), 10);
    assert!(new.iter().all(|c| !old.contains(c)));
    // The TOTP step just used is spent, for this call as for logins.
    bearer(&app, Method::POST, path, &token, json!({ "code": code }))
        .await
        .error(403, "INVALID_2FA_CODE");

    let verify = |temp: String, code: String| {
        let app = &app;
        async move {
            app.post(
                "/api/v1/auth/2fa/verify",
                json!({ "tempToken": temp, "code": code }),
            )
            .await
        }
    };
    let temp = |answer: Answer| answer.data(200)["tempToken"].as_str().unwrap().to_owned();
    let challenge = temp(app.login("yan@example.com", PASSWORD).await);
    verify(challenge.clone(), old[0].clone())
        .await
        .error(401, "INVALID_2FA_CODE");
    verify(challenge, new[0].clone()).await.data(200);

    // A recovery code can renew the set too (the authenticator may be what was lost).
    let answer = bearer(&app, Method::POST, path, &token, json!({ "code": new[1] })).await;
    assert_eq!(
        answer.data(200)["recoveryCodes"].as_array().unwrap().len(),
        10
    );
    let me = app.get("/api/v1/auth/me", &token).await;
    assert_eq!(me.data(200)["recoveryCodesRemaining"], 10);
}

/// Rows per table, read straight from the database.
async fn count(app: &TestApp, table: &str) -> i64 {
    app.scalar(&format!("SELECT COUNT(*) FROM {table}")).await
}

async fn housekeeping_deletes_what_no_request_can_need(backend: Backend) {
    let app = spawn_app_with(
        backend,
        SettingsArgs {
            temp_token_ttl: Some("1s".into()),
            ..Default::default()
        },
    )
    .await;
    // A live session refreshed twice (two consumed records), an ended session, an expired
    // challenge.
    let (_, first) = app.logged_in_user("zoe@example.com").await;
    let refresh = |token: String| {
        let app = &app;
        async move {
            let answer = app
                .post("/api/v1/auth/refresh", json!({ "refreshToken": token }))
                .await;
            let data = answer.data(200);
            (
                data["accessToken"].as_str().unwrap().to_owned(),
                data["refreshToken"].as_str().unwrap().to_owned(),
            )
        }
    };
    let (_, second) = refresh(first.clone()).await;
    let (access, current) = refresh(second).await;
    let ended = app.login("zoe@example.com", PASSWORD).await.data(200)["accessToken"]
        .as_str()
        .unwrap()
        .to_owned();
    bearer(&app, Method::POST, "/api/v1/auth/logout", &ended, json!({}))
        .await
        .data(200);
    let (two_factor, _) = app.logged_in_user("ada@example.com").await;
    app.enable_two_factor(&two_factor).await;
    app.login("ada@example.com", PASSWORD).await.data(200);
    assert_eq!(count(&app, "sessions").await, 3);
    assert_eq!(count(&app, "refresh_tokens").await, 5);
    assert_eq!(count(&app, "temp_tokens").await, 1);

    // Two days later: the ended session's tokens have all expired, the consumed records are past
    // the grace window, the challenge is long gone.
    app.clock()
        .advance(std::time::Duration::from_secs(2 * 86_400));
    let purged = app.handle.housekeep().await.unwrap();
    assert_eq!(
        (purged.sessions, purged.refresh_tokens, purged.challenges),
        (1, 2, 1)
    );
    assert_eq!(count(&app, "sessions").await, 2);
    assert_eq!(count(&app, "refresh_tokens").await, 2);
    assert_eq!(count(&app, "temp_tokens").await, 0);

    // Live sessions are untouched (the access token of two days ago has expired; the session
    // refreshes)...
    app.get("/api/v1/auth/me", &access)
        .await
        .error(401, "TOKEN_EXPIRED");
    let (access, current) = refresh(current).await;
    app.get("/api/v1/auth/me", &access).await.data(200);
    // ...and a replayed token whose record was purged is still recognised as reuse: it ends the
    // session it belonged to.
    app.post("/api/v1/auth/refresh", json!({ "refreshToken": first }))
        .await
        .error(401, "REFRESH_TOKEN_INVALID");
    app.post("/api/v1/auth/refresh", json!({ "refreshToken": current }))
        .await
        .error(401, "REFRESH_TOKEN_INVALID");
    app.get("/api/v1/auth/me", &access)
        .await
        .error(401, "TOKEN_INVALID");
}
