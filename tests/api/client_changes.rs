//! A change an operator makes to a client reaches every instance (docs/api.md §11), and an
//! instance that still holds the client as it was (for up to `CLIENT_CACHE_MS`) answers as if the
//! change had reached it, never with a 500 (issue 38, F12 and F4).

use gatehouse::config::SettingsArgs;
use reqwest::Method;
use serde_json::{Value, json};

use crate::admin::admin;
use crate::guard::within;
use crate::helpers::{Backend, REVOCATION_DELAY, TestApp, both_backends};
use crate::oauth_helpers::{
    ISSUER, add_client, authorization, authorize, code, exchange, pkce, provider_app, token,
};

both_backends!(
    a_client_removed_elsewhere_is_gone_here_too_and_never_a_500,
    a_scope_taken_from_a_client_is_issued_no_more,
);

/// The client's refresh at `app`: status and answer.
async fn refresh(
    app: &TestApp,
    client: &crate::oauth_helpers::Client,
    refresh: &str,
) -> (u16, Value) {
    let secret = client.secret.as_deref().unwrap();
    let (status, _, body) = token(
        app,
        Some((&client.id, secret)),
        &[("grant_type", "refresh_token"), ("refresh_token", refresh)],
    )
    .await;
    (status, body)
}

/// `gatehouse clients remove` while the instance holds the client in memory (its clock stopped, so
/// that its copy stays fresh): the authorization that would write a code for it is the refusal
/// of a client that is not registered (400), on this instance and on another, never a 500.
async fn a_client_removed_elsewhere_is_gone_here_too_and_never_a_500(backend: Backend) {
    let app = provider_app(backend, SettingsArgs::default()).await;
    let twin = app
        .twin_with(SettingsArgs {
            issuer: Some(ISSUER.into()),
            ..SettingsArgs::default()
        })
        .await;
    let client = add_client(&app, "Reports", &[]);
    let (person, _) = app.logged_in_user("ada@example.com").await;
    // Both instances read the client (and the consent is given).
    code(&app, &person, &client, "openid").await;
    let (person_there, _) = twin.logged_in_user("bob@example.com").await;
    code(&twin, &person_there, &client, "openid").await;
    app.clock().freeze();
    twin.clock().freeze();

    let removed = app.cli(&["clients", "remove", &client.id], None);
    assert!(removed.status.success(), "{removed:?}");
    for (app, person) in [(&app, &person), (&twin, &person_there)] {
        let (_, challenge) = pkce();
        let mut body = authorization(&client, "openid", &challenge);
        body["consent"] = json!(true);
        let answer = authorize(app, person, body).await;
        assert_eq!(
            answer.error(400, "VALIDATION_ERROR")["details"]["fields"]["clientId"],
            "is not a registered client",
            "{answer:?}"
        );
        // The page, which writes nothing, is no 5xx either.
        let page = crate::federation_flow::no_redirects()
            .get(app.url(&format!(
                "/oauth2/authorize?client_id={}&redirect_uri={}&response_type=code&scope=openid",
                client.id,
                crate::oauth_helpers::REDIRECT
            )))
            .send()
            .await
            .unwrap();
        assert!(page.status().as_u16() < 500, "{}", page.status());
    }
}

/// The operator takes `contacts:read` from a client: the refresh of a grant that had it issues
/// it no more, on either instance within §2's 2 s, to the end of the grant.
async fn a_scope_taken_from_a_client_is_issued_no_more(backend: Backend) {
    let app = provider_app(backend, SettingsArgs::default()).await;
    let twin = app
        .twin_with(SettingsArgs {
            issuer: Some(ISSUER.into()),
            ..SettingsArgs::default()
        })
        .await;
    let client = add_client(
        &app,
        "Reports",
        &["--scope", "openid offline_access contacts:read"],
    );
    let (person, _) = app.logged_in_user("ada@example.com").await;
    let (code, verifier) = code(
        &app,
        &person,
        &client,
        "openid offline_access contacts:read",
    )
    .await;
    let (status, tokens) = exchange(&app, &client, &code, &verifier).await;
    assert_eq!(status, 200, "{tokens}");
    assert_eq!(tokens["scope"], "openid offline_access contacts:read");
    let mut current = tokens["refresh_token"].as_str().unwrap().to_owned();
    // The twin has read the client.
    let (status, renewed) = refresh(&twin, &client, &current).await;
    assert_eq!(status, 200, "{renewed}");
    current = renewed["refresh_token"].as_str().unwrap().to_owned();

    let root = admin(&app, "root@example.com").await;
    app.call(
        Method::PATCH,
        &format!("/api/v1/admin/clients/{}", client.id),
        Some(&root.strong),
        Some(json!({"scopes": ["openid", "offline_access"]})),
    )
    .await
    .data(200);
    let current = std::sync::Mutex::new(current);
    within(REVOCATION_DELAY, || async {
        let presented = current.lock().unwrap().clone();
        let (status, renewed) = refresh(&twin, &client, &presented).await;
        assert_eq!(status, 200, "{renewed}");
        *current.lock().unwrap() = renewed["refresh_token"].as_str().unwrap().to_owned();
        renewed["scope"] == "openid offline_access"
    })
    .await;
    // And on the instance that made the change, at once.
    let presented = current.lock().unwrap().clone();
    let (status, renewed) = refresh(&app, &client, &presented).await;
    assert_eq!(
        (status, &renewed["scope"]),
        (200, &json!("openid offline_access"))
    );
    let access = renewed["access_token"].as_str().unwrap();
    assert_eq!(
        crate::helpers::claims(access)["scope"],
        "openid offline_access"
    );
}
