use std::collections::HashSet;

use gatehouse::config::SettingsArgs;
use serde_json::json;

use crate::helpers::{
    Backend, PASSWORD, TestApp, both_backends, claims, metric, scrape, spawn_app, spawn_app_with,
};

both_backends!(
    refresh_rotates_and_the_new_token_works,
    a_racing_tab_within_the_grace_window_gets_the_current_tokens,
    concurrent_refreshes_rotate_the_session_once,
    reuse_after_the_grace_window_ends_the_session,
    refreshes_of_many_sessions_at_once_each_rotate_and_a_replay_among_them_ends_its_session,
    bad_refresh_tokens_are_refused,
);

async fn refresh(app: &TestApp, token: &str) -> crate::helpers::Answer {
    app.post("/api/v1/auth/refresh", json!({ "refreshToken": token }))
        .await
}

async fn refresh_rotates_and_the_new_token_works(backend: Backend) {
    let app = spawn_app(backend).await;
    let (access, first) = app.logged_in_user("uma@example.com").await;
    let answer = refresh(&app, &first).await;
    let data = answer.data(200);
    let second = data["refreshToken"].as_str().unwrap();
    assert_ne!(second, first);
    assert_eq!(data["expiresIn"], 86400);
    assert_eq!(data["user"]["email"], "uma@example.com");
    let new_access = data["accessToken"].as_str().unwrap();
    assert_eq!(claims(new_access)["sid"], claims(&access)["sid"]);
    app.get("/api/v1/crm/contacts", new_access).await.data(200);
    app.get("/api/v1/crm/contacts", &access).await.data(200);
    let third = refresh(&app, second).await;
    assert_ne!(third.data(200)["refreshToken"], second);
}

async fn a_racing_tab_within_the_grace_window_gets_the_current_tokens(backend: Backend) {
    let app = spawn_app(backend).await;
    let (_, first) = app.logged_in_user("vera@example.com").await;
    let winner = refresh(&app, &first).await;
    let current = winner.data(200)["refreshToken"]
        .as_str()
        .unwrap()
        .to_owned();
    let late = refresh(&app, &first).await;
    assert_eq!(
        late.data(200)["refreshToken"],
        current.as_str(),
        "the racer holds the current generation"
    );
    app.get(
        "/api/v1/auth/me",
        late.data(200)["accessToken"].as_str().unwrap(),
    )
    .await
    .data(200);
    refresh(&app, &current).await.data(200);
}

async fn concurrent_refreshes_rotate_the_session_once(backend: Backend) {
    let app = spawn_app(backend).await;
    let (_, token) = app.logged_in_user("wes@example.com").await;
    let answers = futures::future::join_all((0..8).map(|_| refresh(&app, &token))).await;
    let issued: HashSet<String> = answers
        .iter()
        .map(|a| a.data(200)["refreshToken"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        issued.len(),
        1,
        "every racer holds the one new generation: {issued:?}"
    );
    let next = issued.into_iter().next().unwrap();
    refresh(&app, &next).await.data(200);
}

async fn reuse_after_the_grace_window_ends_the_session(backend: Backend) {
    let app = spawn_app_with(
        backend,
        SettingsArgs {
            refresh_reuse_grace: Some("1s".into()),
            metrics_listen: Some("127.0.0.1:0".into()),
            ..Default::default()
        },
    )
    .await;
    let (access, first) = app.logged_in_user("xena@example.com").await;
    let answer = refresh(&app, &first).await;
    let current = answer.data(200)["refreshToken"]
        .as_str()
        .unwrap()
        .to_owned();
    let new_access = answer.data(200)["accessToken"].as_str().unwrap().to_owned();
    // Past the one-second grace window.
    app.clock().advance(std::time::Duration::from_millis(1200));
    refresh(&app, &first)
        .await
        .error(401, "REFRESH_TOKEN_INVALID");
    // The thief's replay ended the session for everyone holding it.
    refresh(&app, &current)
        .await
        .error(401, "REFRESH_TOKEN_INVALID");
    app.get("/api/v1/auth/me", &new_access)
        .await
        .error(401, "TOKEN_INVALID");
    app.get("/api/v1/auth/me", &access)
        .await
        .error(401, "TOKEN_INVALID");
    // Each refresh counted once, by what it was: the replay is a reuse, not also an invalid
    // token; the refresh after it (its session ended) is an invalid one.
    let text = scrape(&app).await;
    let outcome = |o: &str| {
        metric(
            &text,
            &format!(r#"gatehouse_refreshes_total{{outcome="{o}"}}"#),
        )
    };
    assert_eq!(outcome("rotated"), Some(1.0));
    assert_eq!(outcome("reuse_detected"), Some(1.0));
    assert_eq!(outcome("invalid"), Some(1.0), "{text}");
}

/// Concurrent rotations of different sessions (on SQLite committed together, in one transaction:
/// `store::sqlite::rotate`) each succeed, and a replay racing with them still ends its session.
async fn refreshes_of_many_sessions_at_once_each_rotate_and_a_replay_among_them_ends_its_session(
    backend: Backend,
) {
    let app = spawn_app_with(
        backend,
        SettingsArgs {
            refresh_reuse_grace: Some("1s".into()),
            ..Default::default()
        },
    )
    .await;
    let mut tokens = vec![app.logged_in_user("zed@example.com").await.1];
    for _ in 1..24 {
        let login = app.login("zed@example.com", PASSWORD).await;
        tokens.push(login.data(200)["refreshToken"].as_str().unwrap().to_owned());
    }
    let (victim_access, stolen) = app.logged_in_user("zoe@example.com").await;
    let current = refresh(&app, &stolen).await.data(200)["refreshToken"]
        .as_str()
        .unwrap()
        .to_owned();
    app.clock().advance(std::time::Duration::from_millis(1200));
    let replay = refresh(&app, &stolen);
    let (replayed, answers) = tokio::join!(
        replay,
        futures::future::join_all(tokens.iter().map(|t| refresh(&app, t)))
    );
    replayed.error(401, "REFRESH_TOKEN_INVALID");
    let mut issued = HashSet::new();
    for (answer, token) in answers.iter().zip(&tokens) {
        let next = answer.data(200)["refreshToken"]
            .as_str()
            .unwrap()
            .to_owned();
        assert_ne!(&next, token);
        issued.insert(next);
    }
    assert_eq!(issued.len(), tokens.len(), "one new token per session");
    // Each new token is its session's current one; the replayed session is over for everyone.
    for next in &issued {
        refresh(&app, next).await.data(200);
    }
    refresh(&app, &current)
        .await
        .error(401, "REFRESH_TOKEN_INVALID");
    app.get("/api/v1/auth/me", &victim_access)
        .await
        .error(401, "TOKEN_INVALID");
}

async fn bad_refresh_tokens_are_refused(backend: Backend) {
    let app = spawn_app(backend).await;
    let (_, token) = app.logged_in_user("yves@example.com").await;
    let tampered = format!("{}x", &token[..token.len() - 1]);
    for bad in ["garbage", "a.b.c", tampered.as_str()] {
        refresh(&app, bad).await.error(401, "REFRESH_TOKEN_INVALID");
    }
    let answer = app.post("/api/v1/auth/refresh", json!({})).await;
    assert_eq!(
        answer.error(400, "VALIDATION_ERROR")["details"]["fields"]["refreshToken"],
        "is required"
    );
    // A disabled account's sessions end.
    app.handle.disable_user("yves@example.com").await.unwrap();
    refresh(&app, &token)
        .await
        .error(401, "REFRESH_TOKEN_INVALID");
}
