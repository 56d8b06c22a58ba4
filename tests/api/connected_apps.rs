//! What acts for a person (docs/api.md §11, "Connected applications"): every client holding a
//! consent or a live session of theirs, of each kind, and ending one at once on every instance,
//! by the person or an admin; never another person's.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use crate::admin::admin;
use crate::device_grant::{answer, device_client, poll, started};
use crate::helpers::{Backend, TestApp, both_backends};
use crate::oauth_helpers::{
    Client, add_client, authorization, authorize, code, exchange, pkce, provider_pair, token,
    userinfo,
};

both_backends!(
    every_kind_is_listed_and_ended_everywhere_at_once,
    an_admin_sees_and_ends_them_too
);

/// The person's list, by client name.
async fn listed(app: &TestApp, person: &str) -> Vec<Value> {
    let answer = app.get("/api/v1/auth/connected-apps", person).await;
    answer.data(200)["items"].as_array().unwrap().clone()
}

fn named<'a>(items: &'a [Value], name: &str) -> &'a Value {
    items
        .iter()
        .find(|i| i["name"] == name)
        .unwrap_or_else(|| panic!("{name} not listed: {items:#?}"))
}

/// A device tool signed in for the holder of `person`: its tokens.
async fn tool_tokens(app: &TestApp, person: &str, tool: &Client) -> Value {
    let (device_code, user_code) = started(app, tool, "openid offline_access").await;
    let allowed = answer(
        app,
        person,
        json!({ "userCode": user_code, "consent": true }),
    )
    .await;
    assert_eq!(allowed.data(200)["status"], "approved");
    let (status, tokens) = poll(app, tool, &device_code).await;
    assert_eq!(status, 200, "{tokens}");
    tokens
}

async fn every_kind_is_listed_and_ended_everywhere_at_once(backend: Backend) {
    let (app, twin) = provider_pair(backend).await;
    let (ada, _) = app.logged_in_user("ada@example.com").await;
    let (bo, _) = app.logged_in_user("bo@example.com").await;
    let reports = add_client(
        &app,
        "Acme Reports",
        &["--scope", "openid", "--scope", "email"],
    );
    let dashboard = add_client(&app, "Team Dashboard", &["--first-party"]);
    let notes = add_client(&app, "Notes", &[]);
    let tool = device_client(&app, "Acme CLI");

    // A third-party web app signed in, a first-party one too, a consent never used, a tool.
    let (c, v) = code(&app, &ada, &reports, "openid email").await;
    assert_eq!(exchange(&app, &reports, &c, &v).await.0, 200);
    let (c, v) = code(&app, &ada, &dashboard, "openid").await;
    assert_eq!(exchange(&app, &dashboard, &c, &v).await.0, 200);
    let (_, challenge) = pkce();
    let mut body = authorization(&notes, "openid", &challenge);
    body["consent"] = json!(true);
    authorize(&app, &ada, body).await.data(200);
    app.clock().advance(Duration::from_secs(1));
    let tokens = tool_tokens(&app, &ada, &tool).await;
    let tool_access = tokens["access_token"].as_str().unwrap().to_owned();
    let tool_refresh = tokens["refresh_token"].as_str().unwrap().to_owned();

    let items = listed(&app, &ada).await;
    assert_eq!(items.len(), 4, "{items:#?}");
    // The latest used first: the tool.
    assert_eq!(items[0]["name"], "Acme CLI");
    let kinds: Vec<(&str, &str, u64)> = items
        .iter()
        .map(|i| {
            (
                i["name"].as_str().unwrap(),
                i["kind"].as_str().unwrap(),
                i["sessions"].as_u64().unwrap(),
            )
        })
        .collect();
    for expected in [
        ("Acme CLI", "device", 1),
        ("Acme Reports", "operator", 1),
        ("Team Dashboard", "first_party", 1),
        ("Notes", "operator", 0),
    ] {
        assert!(kinds.contains(&expected), "{expected:?} in {kinds:?}");
    }
    let cli = named(&items, "Acme CLI");
    assert_eq!(cli["scopes"], json!(["openid", "offline_access"]));
    assert_eq!(cli["ip"], "127.0.0.1");
    assert!(
        cli["lastUsedAt"].is_string() && cli["allowedAt"].is_string(),
        "{cli:#}"
    );
    assert!(named(&items, "Team Dashboard")["allowedAt"].is_null());
    assert!(named(&items, "Notes")["lastUsedAt"].is_null());
    // Another person sees none of them, and cannot end them.
    assert!(listed(&app, &bo).await.is_empty());
    let path = format!("/api/v1/auth/connected-apps/{}", tool.id);
    let theirs = app.call(Method::DELETE, &path, Some(&bo), None).await;
    theirs.error(404, "NOT_FOUND");
    assert_eq!(userinfo(&app, &tool_access).await.0, 200);

    // Ending the tool ends its tokens on the other instance within 2 s, and its refresh token.
    let ended = app.call(Method::DELETE, &path, Some(&ada), None).await;
    assert_eq!(ended.data(200)["sessionsEnded"], 1);
    let started_at = std::time::Instant::now();
    while userinfo(&twin, &tool_access).await.0 != 401 {
        assert!(
            started_at.elapsed() < Duration::from_secs(2),
            "still accepted on the twin"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (status, _, body) = token(
        &twin,
        None,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", &tool_refresh),
            ("client_id", &tool.id),
        ],
    )
    .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_grant")),
        "{body}"
    );
    assert_eq!(
        app.audit_count(
            "client.disconnected",
            Some(&format!("client={} via=owner", tool.id))
        )
        .await,
        1
    );
    let items = listed(&app, &ada).await;
    assert!(items.iter().all(|i| i["name"] != "Acme CLI"), "{items:#?}");
    // Gone: nothing more to end. A first-party app (no consent) ends by its session alone.
    app.call(Method::DELETE, &path, Some(&ada), None)
        .await
        .error(404, "NOT_FOUND");
    let first = format!("/api/v1/auth/connected-apps/{}", dashboard.id);
    let ended = app.call(Method::DELETE, &first, Some(&ada), None).await;
    assert_eq!(ended.data(200)["sessionsEnded"], 1);
    // A consent alone ends with no session to end; the issuer's other clients stay.
    let consent = format!("/api/v1/auth/connected-apps/{}", notes.id);
    let ended = app.call(Method::DELETE, &consent, Some(&ada), None).await;
    assert_eq!(ended.data(200)["sessionsEnded"], 0);
    let left: Vec<Value> = listed(&app, &ada).await;
    assert_eq!(left.len(), 1, "{left:#?}");
    assert_eq!(left[0]["name"], "Acme Reports");
}

async fn an_admin_sees_and_ends_them_too(backend: Backend) {
    let (app, _twin) = provider_pair(backend).await;
    let root = admin(&app, "root@example.com").await;
    let (ada, _) = app.logged_in_user("ada@example.com").await;
    let ada_id = crate::helpers::claims(&ada)["sub"]
        .as_str()
        .unwrap()
        .to_owned();
    let tool = device_client(&app, "Acme CLI");
    let tokens = tool_tokens(&app, &ada, &tool).await;
    let access = tokens["access_token"].as_str().unwrap();

    let path = format!("/api/v1/admin/users/{ada_id}/connected-apps");
    let seen = app.get(&path, &root.strong).await;
    let items = seen.data(200)["items"].as_array().unwrap().clone();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["kind"], "device");
    assert_eq!(
        app.audit_count("admin.read", Some("connected_apps")).await,
        1
    );
    let one = format!("{path}/{}", tool.id);
    let ended = app
        .call(Method::DELETE, &one, Some(&root.strong), None)
        .await;
    assert_eq!(ended.data(200)["sessionsEnded"], 1);
    assert_eq!(userinfo(&app, access).await.0, 401);
    assert_eq!(
        app.audit_count(
            "client.disconnected",
            Some(&format!("client={} via=admin", tool.id))
        )
        .await,
        1
    );
    // An unknown account: 404.
    let nobody = format!(
        "/api/v1/admin/users/{}/connected-apps",
        uuid::Uuid::now_v7()
    );
    app.get(&nobody, &root.strong).await.error(404, "NOT_FOUND");
}
