//! Dynamic client registration (RFC 7591, docs/api.md §12) as a client and an operator make it:
//! the three modes, initial access tokens from the CLI and the admin API (each used once), the
//! metadata rules, and a registered public client completing the code flow.

use gatehouse::config::SettingsArgs;
use reqwest::Method;
use serde_json::{Value, json};

use crate::admin::admin;
use crate::helpers::{Backend, TestApp, both_backends, claims};
use crate::oauth_helpers::{
    Client, REDIRECT, authorize, exchange, param, pkce, provider_app, token,
};

both_backends!(
    registration_is_off_by_default,
    open_registration_gives_a_public_client_that_completes_the_code_flow,
    token_registration_needs_a_token_that_works_once,
    metadata_is_checked,
);

fn mode(mode: &str) -> SettingsArgs {
    SettingsArgs {
        oauth_registration: Some(mode.into()),
        ..SettingsArgs::default()
    }
}

/// `POST /oauth2/register` with `body`, and `bearer` as the initial access token.
async fn register(app: &TestApp, bearer: Option<&str>, body: Value) -> (u16, Value) {
    let mut request = app.client.post(app.url("/oauth2/register")).json(&body);
    if let Some(token) = bearer {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    if status != 404 {
        assert_eq!(response.headers()["cache-control"], "no-store");
    }
    if status == 401 {
        assert_eq!(
            response.headers()["www-authenticate"],
            r#"Bearer error="invalid_token""#
        );
    }
    (status, response.json().await.unwrap_or(Value::Null))
}

fn agent() -> Value {
    json!({
        "client_name": "Desktop Agent",
        "redirect_uris": [REDIRECT, "http://127.0.0.1/callback"],
        "token_endpoint_auth_method": "none",
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "scope": "openid email offline_access mcp:tools",
    })
}

async fn discovery(app: &TestApp) -> Value {
    app.get_json("/.well-known/oauth-authorization-server")
        .await
}

async fn clients_count(app: &TestApp) -> i64 {
    app.scalar("SELECT COUNT(*) FROM api_clients").await
}

async fn registration_is_off_by_default(backend: Backend) {
    let app = provider_app(backend, SettingsArgs::default()).await;
    let (status, _) = register(&app, None, agent()).await;
    assert_eq!(status, 404);
    assert!(discovery(&app).await.get("registration_endpoint").is_none());
    assert!(
        discovery(&app)
            .await
            .get("client_id_metadata_document_supported")
            .is_none()
    );
    assert_eq!(clients_count(&app).await, 0);
}

async fn open_registration_gives_a_public_client_that_completes_the_code_flow(backend: Backend) {
    let app = provider_app(backend, mode("open")).await;
    let endpoint = discovery(&app).await["registration_endpoint"].clone();
    assert!(
        endpoint.as_str().unwrap().ends_with("/oauth2/register"),
        "{endpoint}"
    );
    let (status, body) = register(&app, None, agent()).await;
    assert_eq!(status, 201, "{body}");
    let client_id = body["client_id"].as_str().unwrap().to_owned();
    assert!(body.get("client_secret").is_none());
    assert_eq!(body["token_endpoint_auth_method"], "none");
    assert_eq!(body["client_name"], "Desktop Agent");
    // Unsupported scopes are dropped, and the answer says so.
    assert_eq!(body["scope"], "openid email offline_access");
    assert_eq!(
        body["grant_types"],
        json!(["authorization_code", "refresh_token"])
    );
    assert!(body["client_id_issued_at"].as_i64().unwrap() > 1_700_000_000);

    // The admin list marks it as registered by itself.
    let root = admin(&app, "root@example.com").await;
    let listed = app
        .call(
            Method::GET,
            "/api/v1/admin/clients",
            Some(&root.strong),
            None,
        )
        .await;
    let item = &listed.data(200)["items"][0];
    assert_eq!(item["clientId"], json!(client_id));
    assert_eq!(item["origin"], "registered");
    assert_eq!(item["firstParty"], false);
    assert_eq!(item["type"], "public");

    // Third-party: consent is asked, then the code flow completes with client_id alone.
    let (person, _) = app.logged_in_user("ada@example.com").await;
    let (verifier, challenge) = pkce();
    let mut request = json!({
        "clientId": client_id,
        "redirectUri": REDIRECT,
        "scope": "openid email offline_access",
        "state": "s",
        "codeChallenge": challenge,
        "codeChallengeMethod": "S256",
    });
    let asked = authorize(&app, &person, request.clone()).await;
    assert_eq!(asked.data(200)["consentRequired"], true);
    request["consent"] = json!(true);
    let to = authorize(&app, &person, request).await.data(200)["redirectTo"]
        .as_str()
        .unwrap()
        .to_owned();
    let code = param(&to, "code").expect("a code");
    let public = Client {
        id: client_id.clone(),
        secret: None,
    };
    let (status, tokens) = exchange(&app, &public, &code, &verifier).await;
    assert_eq!(status, 200, "{tokens}");
    assert_eq!(
        claims(tokens["id_token"].as_str().unwrap())["aud"],
        json!(client_id)
    );
    assert!(tokens["refresh_token"].is_string());

    // A confidential registration gets a secret that authenticates at the token endpoint.
    let (status, body) = register(
        &app,
        None,
        json!({"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "client_secret_post"}),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["client_secret_expires_at"], 0);
    assert_eq!(body["client_name"], "app.example.test");
    assert_eq!(body["grant_types"], json!(["authorization_code"]));
    let (status, _, answer) = token(
        &app,
        None,
        &[
            ("grant_type", "client_credentials"),
            ("client_id", body["client_id"].as_str().unwrap()),
            ("client_secret", body["client_secret"].as_str().unwrap()),
        ],
    )
    .await;
    // Authenticated, and yet refused the grant it was never given.
    assert_eq!(status, 400, "{answer}");
    assert_eq!(answer["error"], "unauthorized_client");

    // An open endpoint is throttled per address: the burst is 10 registrations.
    let mut statuses = Vec::new();
    for _ in 0..10 {
        statuses.push(register(&app, None, agent()).await.0);
    }
    assert!(statuses.contains(&429), "{statuses:?}");
}

async fn token_registration_needs_a_token_that_works_once(backend: Backend) {
    let app = provider_app(backend, mode("token")).await;
    assert!(discovery(&app).await["registration_endpoint"].is_string());
    for bearer in [None, Some("not-a-token")] {
        let (status, body) = register(&app, bearer, agent()).await;
        assert_eq!(status, 401, "{body}");
        assert_eq!(body["error"], "invalid_token");
    }

    // From the CLI: shown once, registers one client.
    let output = app.cli(
        &["clients", "registration-token", "--ttl", "1h", "--json"],
        None,
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let printed: Value = serde_json::from_slice(&output.stdout).unwrap();
    let cli_token = printed["token"].as_str().unwrap().to_owned();
    // Invalid metadata does not use the token up.
    let (status, _) = register(&app, Some(&cli_token), json!({"redirect_uris": []})).await;
    assert_eq!(status, 400);
    let (status, body) = register(&app, Some(&cli_token), agent()).await;
    assert_eq!(status, 201, "{body}");
    let (status, body) = register(&app, Some(&cli_token), agent()).await;
    assert_eq!(status, 401, "{body}");
    // Kept as a 32-byte keyed hash, marked used.
    let used: i64 = app
        .scalar("SELECT COUNT(*) FROM client_registration_tokens WHERE used_at IS NOT NULL")
        .await;
    assert_eq!(used, 1);

    // From the admin API.
    let root = admin(&app, "root@example.com").await;
    let path = "/api/v1/admin/clients/registration-tokens";
    let refused = app
        .call(
            Method::POST,
            path,
            Some(&root.strong),
            Some(json!({"ttlSeconds": 0})),
        )
        .await;
    refused.error(400, "VALIDATION_ERROR");
    let weak = app
        .call(Method::POST, path, Some(&root.weak), Some(json!({})))
        .await;
    assert_eq!(weak.status.as_u16(), 403);
    let issued = app
        .call(
            Method::POST,
            path,
            Some(&root.strong),
            Some(json!({"ttlSeconds": 1})),
        )
        .await;
    let short = issued.data(201)["token"].as_str().unwrap().to_owned();
    let issued = app
        .call(Method::POST, path, Some(&root.strong), Some(json!({})))
        .await;
    let admin_token = issued.data(201)["token"].as_str().unwrap().to_owned();
    let (status, body) = register(&app, Some(&admin_token), agent()).await;
    assert_eq!(status, 201, "{body}");

    // An expired token is refused.
    app.clock().advance(std::time::Duration::from_secs(2));
    let (status, _) = register(&app, Some(&short), agent()).await;
    assert_eq!(status, 401);
    assert_eq!(clients_count(&app).await, 2);
    assert_eq!(app.audit_count("client.registered", None).await, 2);
}

async fn metadata_is_checked(backend: Backend) {
    let app = provider_app(backend, mode("open")).await;
    for (body, error) in [
        (json!({}), "invalid_redirect_uri"),
        (
            json!({"redirect_uris": ["http://app.example.test/cb"]}),
            "invalid_redirect_uri",
        ),
        (
            json!({"redirect_uris": ["com.example.app:/cb"]}),
            "invalid_redirect_uri",
        ),
        (
            json!({"redirect_uris": "https://app.example.test/cb"}),
            "invalid_client_metadata",
        ),
        (
            json!({"redirect_uris": [REDIRECT], "grant_types": ["client_credentials"]}),
            "invalid_client_metadata",
        ),
        (
            json!({"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "private_key_jwt"}),
            "invalid_client_metadata",
        ),
        (
            json!({"redirect_uris": [REDIRECT], "response_types": ["token"]}),
            "invalid_client_metadata",
        ),
        (
            json!({"redirect_uris": [REDIRECT], "scope": "admin"}),
            "invalid_client_metadata",
        ),
        (
            json!({"redirect_uris": [REDIRECT], "client_name": "x".repeat(201)}),
            "invalid_client_metadata",
        ),
    ] {
        let (status, answer) = register(&app, None, body.clone()).await;
        assert_eq!(status, 400, "{body}: {answer}");
        assert_eq!(answer["error"], error, "{body}");
        assert!(answer["error_description"].is_string());
    }
    // Not JSON at all.
    let response = app
        .client
        .post(app.url("/oauth2/register"))
        .header("content-type", "text/plain")
        .body("hello")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 400);
    assert_eq!(clients_count(&app).await, 0);
}
