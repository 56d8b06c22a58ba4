//! RFC 8707 resource indicators (docs/api.md §11): `GATEHOUSE_OAUTH_RESOURCES` lists the resource
//! servers, beside `GATEHOUSE_AUDIENCE`, that a client may ask tokens for; such a token carries
//! `aud` = the resource, introspects with it, reaches the business API and never forward-auth.
//! relying_parties/mcp.rs drives the same through the TypeScript MCP SDK.

use gatehouse::config::SettingsArgs;
use serde_json::{Value, json};

use crate::guard::{FORWARD_AUTH, ask};
use crate::helpers::{Backend, TestApp, both_backends, claims};
use crate::introspection::introspect;
use crate::oauth_helpers::{
    Client, REDIRECT, add_client, authorization, authorize, param, pkce, provider_app, token,
    verified,
};

both_backends!(
    a_listed_resource_is_the_audience_of_its_tokens,
    a_grant_keeps_its_resource_and_others_are_refused,
);

const MCP: &str = "https://mcp.example.test/mcp";

async fn app_with_resources(backend: Backend) -> TestApp {
    provider_app(
        backend,
        SettingsArgs {
            oauth_resources: Some(format!("{MCP}, https://reports.example.test")),
            ..SettingsArgs::default()
        },
    )
    .await
}

/// The code of a consented authorization for `resource` (when given): `(code, verifier)`.
async fn code_for(
    app: &TestApp,
    person: &str,
    client: &Client,
    scope: &str,
    resource: Option<&str>,
) -> (String, String) {
    let (verifier, challenge) = pkce();
    let mut body = authorization(client, scope, &challenge);
    body["consent"] = json!(true);
    if let Some(resource) = resource {
        body["resource"] = json!(resource);
    }
    let to = authorize(app, person, body).await.data(200)["redirectTo"]
        .as_str()
        .unwrap()
        .to_owned();
    (
        param(&to, "code").unwrap_or_else(|| panic!("no code: {to}")),
        verifier,
    )
}

/// The code exchanged by the confidential `client`, with `resource` when given.
async fn exchange_for(
    app: &TestApp,
    client: &Client,
    code: &str,
    verifier: &str,
    resource: Option<&str>,
) -> (u16, Value) {
    let mut pairs = vec![
        ("grant_type", "authorization_code"),
        ("code", code),
        ("redirect_uri", REDIRECT),
        ("code_verifier", verifier),
    ];
    if let Some(resource) = resource {
        pairs.push(("resource", resource));
    }
    let basic = (client.id.as_str(), client.secret.as_deref().unwrap());
    let (status, _, body) = token(app, Some(basic), &pairs).await;
    (status, body)
}

fn confidential(app: &TestApp) -> Client {
    add_client(
        app,
        "Assistant",
        &[
            "--scope",
            "contacts:read",
            "--scope",
            "offline_access",
            "--grant",
            "authorization_code",
            "--grant",
            "refresh_token",
            "--grant",
            "client_credentials",
        ],
    )
}

async fn a_listed_resource_is_the_audience_of_its_tokens(backend: Backend) {
    let app = app_with_resources(backend).await;
    let (person, _) = app.logged_in_user("ann@example.com").await;
    let client = confidential(&app);
    let basic = (client.id.as_str(), client.secret.as_deref().unwrap());

    let (code, verifier) = code_for(&app, &person, &client, "contacts:read", Some(MCP)).await;
    let (status, answer) = exchange_for(&app, &client, &code, &verifier, Some(MCP)).await;
    assert_eq!(status, 200, "{answer}");
    let for_mcp = answer["access_token"].as_str().unwrap().to_owned();
    // Signed as every access token, verifiable by the resource server with the JWK Set.
    let verified = verified(&app, &for_mcp, MCP).await;
    assert_eq!(verified["aud"], MCP);
    assert_eq!(verified["client_id"], json!(client.id));

    // The resource server's view (a client the operator lets introspect): introspection answers
    // the token with its audience, and of the person what its scopes allow (no `email`: no
    // address).
    let server = add_client(&app, "MCP server", &["--introspect"]);
    let server = (server.id.as_str(), server.secret.as_deref().unwrap());
    let (_, _, seen) = introspect(&app, Some(server), &format!("token={for_mcp}")).await;
    assert_eq!(seen["active"], true, "{seen}");
    assert_eq!(seen["aud"], MCP);
    assert_eq!(seen["scope"], "contacts:read");
    assert!(seen.get("username").is_none(), "{seen}");

    // Gatehouse's business API honours it (its scopes checked as for any client's token); the
    // services behind the proxies take tokens for GATEHOUSE_AUDIENCE only.
    app.get("/api/v1/crm/contacts", &for_mcp).await.data(200);
    let refused = ask(&app, FORWARD_AUTH, Some(&for_mcp), &[]).await;
    assert_eq!(refused.status, 401);
    // Without a resource the token is for GATEHOUSE_AUDIENCE, and forward-auth passes it.
    let (code, verifier) = code_for(&app, &person, &client, "contacts:read", None).await;
    let (_, answer) = exchange_for(&app, &client, &code, &verifier, None).await;
    let for_api = answer["access_token"].as_str().unwrap();
    assert_eq!(claims(for_api)["aud"], "gatehouse-api");
    assert_eq!(
        ask(&app, FORWARD_AUTH, Some(for_api), &[]).await.status,
        200
    );

    // A client's token for itself may be for a listed resource too.
    let (status, _, cc) = token(
        &app,
        Some(basic),
        &[
            ("grant_type", "client_credentials"),
            ("scope", "contacts:read"),
            ("resource", "https://reports.example.test"),
        ],
    )
    .await;
    assert_eq!(status, 200, "{cc}");
    let cc = cc["access_token"].as_str().unwrap();
    assert_eq!(claims(cc)["aud"], "https://reports.example.test");
    let (_, _, seen) = introspect(&app, Some(server), &format!("token={cc}")).await;
    assert_eq!(seen["active"], true, "{seen}");
    assert_eq!(seen["aud"], "https://reports.example.test", "{seen}");
    assert_eq!(seen["client_id"], json!(client.id), "{seen}");
    assert_eq!(ask(&app, FORWARD_AUTH, Some(cc), &[]).await.status, 401);

    // Ending the session (consent withdrawn) ends the resource's token everywhere at once.
    let withdrawn = app
        .call(
            reqwest::Method::DELETE,
            &format!("/api/v1/auth/consents/{}", client.id),
            Some(&person),
            None,
        )
        .await;
    withdrawn.data(200);
    let (_, _, seen) = introspect(&app, Some(server), &format!("token={for_mcp}")).await;
    assert_eq!(seen, json!({ "active": false }));
    assert_eq!(app.get("/api/v1/crm/contacts", &for_mcp).await.status, 401);
}

async fn a_grant_keeps_its_resource_and_others_are_refused(backend: Backend) {
    let app = app_with_resources(backend).await;
    let (person, _) = app.logged_in_user("ann@example.com").await;
    let client = confidential(&app);
    let basic = (client.id.as_str(), client.secret.as_deref().unwrap());
    let scope = "contacts:read offline_access";

    // A resource that is not listed: back to the client with invalid_target, at every step.
    let (_, challenge) = pkce();
    let mut body = authorization(&client, scope, &challenge);
    body["consent"] = json!(true);
    for unlisted in [
        "https://elsewhere.example.test/mcp",
        // Indicators are compared as written: one more slash names another server.
        "https://mcp.example.test/mcp/",
    ] {
        body["resource"] = json!(unlisted);
        let to = authorize(&app, &person, body.clone()).await.data(200)["redirectTo"]
            .as_str()
            .unwrap()
            .to_owned();
        assert_eq!(
            param(&to, "error").as_deref(),
            Some("invalid_target"),
            "{to}"
        );
    }
    let (status, _, refused) = token(
        &app,
        Some(basic),
        &[
            ("grant_type", "client_credentials"),
            ("resource", "https://elsewhere.example.test/mcp"),
        ],
    )
    .await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (400, Some("invalid_target"))
    );

    // A code given for one resource is not exchanged for another (nor for the default audience).
    let (code, verifier) = code_for(&app, &person, &client, scope, Some(MCP)).await;
    let (status, refused) = exchange_for(
        &app,
        &client,
        &code,
        &verifier,
        Some("https://reports.example.test"),
    )
    .await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (400, Some("invalid_target"))
    );
    let (code, verifier) = code_for(&app, &person, &client, scope, Some(MCP)).await;
    let (status, refused) =
        exchange_for(&app, &client, &code, &verifier, Some("gatehouse-api")).await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (400, Some("invalid_target"))
    );

    // Without `resource` at the token endpoint, the authorization's own.
    let (code, verifier) = code_for(&app, &person, &client, scope, Some(MCP)).await;
    let (status, answer) = exchange_for(&app, &client, &code, &verifier, None).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(claims(answer["access_token"].as_str().unwrap())["aud"], MCP);
    let refresh = answer["refresh_token"].as_str().unwrap().to_owned();

    // A refresh keeps the resource; it may name it, never another.
    let (status, _, refused) = token(
        &app,
        Some(basic),
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", &refresh),
            ("resource", "gatehouse-api"),
        ],
    )
    .await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (400, Some("invalid_target"))
    );
    let (status, _, renewed) = token(
        &app,
        Some(basic),
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", &refresh),
            ("resource", MCP),
        ],
    )
    .await;
    assert_eq!(status, 200, "{renewed}");
    assert_eq!(
        claims(renewed["access_token"].as_str().unwrap())["aud"],
        MCP
    );
    let (status, _, renewed) = token(
        &app,
        Some(basic),
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", renewed["refresh_token"].as_str().unwrap()),
        ],
    )
    .await;
    assert_eq!(status, 200, "{renewed}");
    assert_eq!(
        claims(renewed["access_token"].as_str().unwrap())["aud"],
        MCP
    );
}
