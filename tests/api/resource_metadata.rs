//! RFC 9728 protected resource metadata (docs/api.md §12): from one refused call of the business
//! API, a client finds the metadata, the authorization server and the scopes, and gets a token
//! for the resource it named (RFC 8707) that the business API takes.

use gatehouse::config::SettingsArgs;
use serde_json::json;

use crate::client_tokens::service;
use crate::guard::{FORWARD_AUTH, ask};
use crate::helpers::{Backend, PASSWORD, both_backends, claims, spawn_app_with};
use crate::oauth_helpers::{ISSUER, authorization, authorize, exchange, param, pkce, token};

both_backends!(
    a_refused_call_leads_to_the_authorization_server,
    without_the_provider_no_metadata_is_announced,
);

const METADATA: &str = "https://login.example.test/.well-known/oauth-protected-resource";

async fn a_refused_call_leads_to_the_authorization_server(backend: Backend) {
    let app = spawn_app_with(
        backend,
        SettingsArgs {
            public_url: Some(format!("{ISSUER}/")),
            trusted_proxies: Some("127.0.0.1/32".into()),
            ..Default::default()
        },
    )
    .await;
    // The first call, without a token: the challenge names the metadata.
    let bare = app
        .send(app.client.get(app.url("/api/v1/crm/contacts")))
        .await;
    bare.error(401, "UNAUTHENTICATED");
    let expected = format!(r#"Bearer resource_metadata="{METADATA}""#);
    assert_eq!(bare.header("www-authenticate"), Some(expected.as_str()));
    // With a bad token, beside error=; on every bearer call of /api/v1, not only the business API.
    let invalid = format!(r#"Bearer error="invalid_token", resource_metadata="{METADATA}""#);
    for path in ["/api/v1/crm/contacts", "/api/v1/auth/me", "/api/v1/orgs"] {
        let refused = app.get(path, "garbage").await;
        refused.error(401, "TOKEN_INVALID");
        assert_eq!(
            refused.header("www-authenticate"),
            Some(invalid.as_str()),
            "{path}"
        );
    }
    // Not forward-auth's (it speaks for the service it guards), and no challenge where none was.
    let guarded = ask(&app, FORWARD_AUTH, Some("garbage"), &[]).await;
    assert_eq!(
        guarded.header("www-authenticate"),
        Some(r#"Bearer error="invalid_token""#)
    );
    let (_, _) = app.logged_in_user("ann@example.com").await;
    let wrong = app
        .login("ann@example.com", "not the password at all")
        .await;
    wrong.error(401, "INVALID_CREDENTIALS");
    assert_eq!(wrong.header("www-authenticate"), None);

    // The metadata, then the authorization server's (RFC 8414).
    let response = app
        .client
        .get(METADATA.replace(ISSUER, &app.address))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["cache-control"], "public, max-age=60");
    let metadata: serde_json::Value = response.json().await.unwrap();
    assert_eq!(
        metadata,
        json!({
            "resource": ISSUER,
            "authorization_servers": [ISSUER],
            "scopes_supported": ["contacts:read", "contacts:write"],
            "bearer_methods_supported": ["header"],
        })
    );
    let server = app
        .get_json("/.well-known/oauth-authorization-server")
        .await;
    assert_eq!(server["issuer"], metadata["authorization_servers"][0]);
    assert_eq!(server["code_challenge_methods_supported"], json!(["S256"]));

    // RFC 8707: the resource named in the metadata, at the authorization and the token endpoint,
    // gives tokens the business API takes (`aud` GATEHOUSE_AUDIENCE); another resource does not.
    let client = service(&app, "Agent");
    let person = app.login("ann@example.com", PASSWORD).await.data(200)["accessToken"]
        .as_str()
        .unwrap()
        .to_owned();
    let (verifier, challenge) = pkce();
    let mut body = authorization(&client, "contacts:read", &challenge);
    body["resource"] = json!(ISSUER);
    body["consent"] = json!(true);
    let answer = authorize(&app, &person, body.clone()).await;
    let to = answer.data(200)["redirectTo"].as_str().unwrap().to_owned();
    let code = param(&to, "code").unwrap_or_else(|| panic!("{to}"));
    let (status, tokens) = exchange(&app, &client, &code, &verifier).await;
    assert_eq!(status, 200, "{tokens}");
    let access = tokens["access_token"].as_str().unwrap();
    assert_eq!(claims(access)["aud"], "gatehouse-api");
    app.get("/api/v1/crm/contacts", access).await.data(200);
    body["resource"] = json!("https://elsewhere.example.test");
    let answer = authorize(&app, &person, body).await;
    let to = answer.data(200)["redirectTo"].as_str().unwrap().to_owned();
    assert_eq!(param(&to, "error").as_deref(), Some("invalid_target"));
    let secret = client.secret.as_deref().unwrap();
    for (resource, expected) in [(ISSUER, 200), ("https://elsewhere.example.test", 400)] {
        let (status, _, answer) = token(
            &app,
            Some((&client.id, secret)),
            &[("grant_type", "client_credentials"), ("resource", resource)],
        )
        .await;
        assert_eq!(status, expected, "{resource}: {answer}");
    }
    // The page's check takes it too (a browser sent with the metadata's resource).
    let (_, challenge) = pkce();
    let page = app
        .client
        .get(app.url("/oauth2/authorize"))
        .query(&[
            ("response_type", "code"),
            ("client_id", client.id.as_str()),
            ("redirect_uri", crate::oauth_helpers::REDIRECT),
            ("scope", "contacts:read"),
            ("code_challenge", challenge.as_str()),
            ("code_challenge_method", "S256"),
            ("resource", ISSUER),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200, "{:?}", page.headers().get("location"));
}

async fn without_the_provider_no_metadata_is_announced(backend: Backend) {
    let app = spawn_app_with(
        backend,
        SettingsArgs {
            public_url: Some(format!("{ISSUER}/")),
            issuer: Some("gatehouse".into()),
            ..Default::default()
        },
    )
    .await;
    app.send(
        app.client
            .get(app.url("/.well-known/oauth-protected-resource")),
    )
    .await
    .error(404, "NOT_FOUND");
    let bare = app
        .send(app.client.get(app.url("/api/v1/crm/contacts")))
        .await;
    assert_eq!(bare.header("www-authenticate"), Some("Bearer"));
}
