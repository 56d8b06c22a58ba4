//! What a security review of the running service found, each through the real interface: logins
//! racing an operator, enrolment with a stolen token, registration floods, answers kept by caches,
//! challenges outliving a password change.

use futures::future::join_all;
use gatehouse::config::SettingsArgs;
use reqwest::Method;
use serde_json::json;

use crate::helpers::{Backend, PASSWORD, both_backends, code_at, spawn_app, spawn_app_with};

both_backends!(
    a_login_racing_a_disable_never_gets_a_working_session,
    enrolling_an_authenticator_needs_the_password,
    registration_is_throttled_and_a_flood_never_sheds_a_login,
    answers_with_tokens_or_secrets_are_never_cached,
    a_password_change_ends_pending_challenges,
);

async fn a_login_racing_a_disable_never_gets_a_working_session(backend: Backend) {
    let app = spawn_app_with(
        backend,
        SettingsArgs {
            rate_limit: Some("off".into()),
            ..Default::default()
        },
    )
    .await;
    app.create_user("rae@example.com", PASSWORD).await;
    for round in 0..4 {
        // Logins in flight (each a ~20 ms hash, two at a time) while the account is disabled.
        let logins = join_all((0..12).map(|_| app.login("rae@example.com", PASSWORD)));
        let disable = async {
            tokio::time::sleep(std::time::Duration::from_millis(10 + 15 * round)).await;
            app.handle.disable_user("rae@example.com").await.unwrap();
        };
        let (answers, ()) = tokio::join!(logins, disable);
        for answer in answers {
            if answer.status == 200 {
                let access = answer.body["data"]["accessToken"].as_str().unwrap();
                app.get("/api/v1/auth/me", access)
                    .await
                    .error(401, "TOKEN_INVALID");
            } else {
                answer.error(403, "ACCOUNT_DISABLED");
            }
        }
        app.handle.enable_user("rae@example.com").await.unwrap();
    }
}

async fn enrolling_an_authenticator_needs_the_password(backend: Backend) {
    let app = spawn_app(backend).await;
    let (access, _) = app.logged_in_user("ted@example.com").await;
    let setup = |body: serde_json::Value| {
        app.call(
            Method::POST,
            "/api/v1/auth/2fa/setup",
            Some(&access),
            Some(body),
        )
    };
    setup(json!({ "password": "not the password" }))
        .await
        .error(403, "INVALID_CREDENTIALS");
    let missing = setup(json!({})).await;
    assert_eq!(
        missing.error(400, "VALIDATION_ERROR")["details"]["fields"]["password"],
        "is required, unless this session re-authenticated in the last 5 minutes \
         (POST /api/v1/auth/reauthenticate)"
    );
    setup(json!({ "password": PASSWORD })).await.data(200);
    // Wrong passwords here draw on the account's allowance like any other password check.
    let events: i64 = app
        .scalar("SELECT COUNT(*) FROM throttles WHERE key = 'ted@example.com'")
        .await;
    assert_eq!(events, 1);
}

async fn registration_is_throttled_and_a_flood_never_sheds_a_login(backend: Backend) {
    let app = spawn_app_with(
        backend,
        SettingsArgs {
            registration: Some("open".into()),
            // The flood comes from one address; the per-client connection cap is not under test.
            max_connections_per_client: Some("1000".into()),
            ..Default::default()
        },
    )
    .await;
    // The address's allowance refills one registration per 6 s: none may come back mid-flood.
    app.clock().freeze();
    app.create_user("lin@example.com", PASSWORD).await;
    let register = |n: usize| {
        app.post(
            "/api/v1/auth/register",
            json!({ "email": format!("new{n}@example.com"), "password": PASSWORD, "fullName": "N" }),
        )
    };
    // A flood from one address, with logins among it: the logins are all served.
    let flood = join_all((0..60).map(register));
    let logins = join_all((0..6).map(|_| app.login("lin@example.com", PASSWORD)));
    let (registrations, logins) = tokio::join!(flood, logins);
    for login in logins {
        login.data(200);
    }
    let created = registrations.iter().filter(|a| a.status == 201).count();
    assert!((1..=10).contains(&created), "{created} of 60 created");
    for refused in registrations.iter().filter(|a| a.status != 201) {
        let code = refused.body["error"]["code"].as_str().unwrap();
        assert!(
            code == "RATE_LIMITED" || code == "SERVICE_UNAVAILABLE",
            "{:#}",
            refused.body
        );
    }
    // The address waits; after the wait it may register again.
    register(100).await.error(429, "RATE_LIMITED");
    app.clock().advance(std::time::Duration::from_secs(60));
    register(101).await.data(201);
}

async fn answers_with_tokens_or_secrets_are_never_cached(backend: Backend) {
    let app = spawn_app(backend).await;
    let (access, refresh) = app.logged_in_user("cal@example.com").await;
    let login = app.login("cal@example.com", PASSWORD).await;
    let refreshed = app
        .post("/api/v1/auth/refresh", json!({ "refreshToken": refresh }))
        .await;
    let setup = app.setup_two_factor(&access).await;
    let me = app.get("/api/v1/auth/me", &access).await;
    let refused = app.get("/api/v1/auth/me", "garbage").await;
    for answer in [&login, &refreshed, &setup, &me, &refused] {
        assert_eq!(answer.header("cache-control"), Some("no-store"));
    }
    // The public keys may be cached.
    let jwks = app
        .client
        .get(app.url("/.well-known/jwks.json"))
        .send()
        .await
        .unwrap();
    assert_eq!(jwks.headers()["cache-control"], "public, max-age=60");
}

async fn a_password_change_ends_pending_challenges(backend: Backend) {
    let app = spawn_app(backend).await;
    let (access, _) = app.logged_in_user("gus@example.com").await;
    let (secret, _) = app.enable_two_factor(&access).await;
    let temp = app.login("gus@example.com", PASSWORD).await.data(200)["tempToken"]
        .as_str()
        .unwrap()
        .to_owned();
    app.call(
        Method::POST,
        "/api/v1/auth/password",
        Some(&access),
        Some(json!({ "currentPassword": PASSWORD, "newPassword": "a whole new passphrase" })),
    )
    .await
    .data(200);
    let verify = |temp: String| {
        let code = code_at(&secret, app.now_seconds());
        app.post(
            "/api/v1/auth/2fa/verify",
            json!({ "tempToken": temp, "code": code }),
        )
    };
    verify(temp).await.error(401, "TEMP_TOKEN_INVALID");
    // A challenge after the change works.
    let temp = app
        .login("gus@example.com", "a whole new passphrase")
        .await
        .data(200)["tempToken"]
        .as_str()
        .unwrap()
        .to_owned();
    verify(temp).await.data(200);
}
