//! Ending what clients hold, with tokens from the real code flow (docs/api.md §11): RFC 7009
//! revocation of each token type and of another client's token; scopes at the business API both
//! ways; end-session with an (expired) ID token as hint; a password change telling the client.

use std::time::Duration;

use gatehouse::config::SettingsArgs;
use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{Backend, TestApp, both_backends, claims};
use crate::oauth_helpers::{
    Client, add_client, code, exchange, provider_app, with_resource_metadata,
};
use crate::oauth_logout::{DELIVERY, Receiver, check_logout_token_from};

both_backends!(
    revoking_a_refresh_or_an_access_token_ends_its_session,
    another_clients_token_is_not_revoked,
    client_tokens_reach_contacts_only_with_their_scope,
    end_session_with_an_expired_id_token_hint_ends_the_tree_and_redirects,
    a_password_change_tells_the_client,
);

const SCOPES: &str = "openid profile offline_access contacts:read contacts:write";

/// A confidential client registered for `SCOPES`, with back-channel logout to `rp` if given.
fn client(app: &TestApp, name: &str, rp: Option<&Receiver>) -> Client {
    let mut flags = vec![
        "--scope",
        SCOPES,
        "--post-logout-redirect-uri",
        "https://app.example.test/bye",
    ];
    if let Some(rp) = rp {
        flags.extend(["--backchannel-logout-uri", rp.uri.as_str()]);
    }
    add_client(app, name, &flags)
}

/// The token answer of a code flow for `client` with `scope`, by the holder of `person`.
async fn tokens(app: &TestApp, person: &str, client: &Client, scope: &str) -> Value {
    let (code, verifier) = code(app, person, client, scope).await;
    let (status, body) = exchange(app, client, &code, &verifier).await;
    assert_eq!(status, 200, "{body}");
    body
}

async fn revoke(app: &TestApp, client: &Client, token: &str) -> u16 {
    app.client
        .post(app.url("/oauth2/revoke"))
        .basic_auth(&client.id, client.secret.as_deref())
        .form(&[("token", token)])
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

async fn revoking_a_refresh_or_an_access_token_ends_its_session(backend: Backend) {
    let app = provider_app(backend, SettingsArgs::default()).await;
    let rp = Receiver::start(0).await;
    let rp_client = client(&app, "Notes", Some(&rp));
    let (person, _) = app.logged_in_user("ann@example.com").await;
    for kind in ["refresh_token", "access_token"] {
        let given = tokens(
            &app,
            &person,
            &rp_client,
            "openid offline_access contacts:read",
        )
        .await;
        let access = given["access_token"].as_str().unwrap();
        let sid = claims(access)["sid"].as_str().unwrap().to_owned();
        app.get("/api/v1/crm/contacts", access).await.data(200);
        assert_eq!(
            revoke(&app, &rp_client, given[kind].as_str().unwrap()).await,
            200
        );
        app.get("/api/v1/crm/contacts", access)
            .await
            .error(401, "TOKEN_INVALID");
        let refreshed = crate::oauth_helpers::token(
            &app,
            Some((&rp_client.id, rp_client.secret.as_deref().unwrap())),
            &[
                ("grant_type", "refresh_token"),
                ("refresh_token", given["refresh_token"].as_str().unwrap()),
            ],
        )
        .await;
        assert_eq!(refreshed.0, 400, "{kind}: the session is over");
        let n = if kind == "refresh_token" { 1 } else { 2 };
        let received = rp.received(n, DELIVERY).await;
        check_logout_token_from(
            &app,
            &received[n - 1],
            &rp_client.id,
            &sid,
            crate::oauth_helpers::ISSUER,
        )
        .await;
    }
    // The person's own session goes on.
    app.get("/api/v1/auth/me", &person).await.data(200);
}

async fn another_clients_token_is_not_revoked(backend: Backend) {
    let app = provider_app(backend, SettingsArgs::default()).await;
    let mine = client(&app, "Mine", None);
    let theirs = client(&app, "Theirs", None);
    let (person, _) = app.logged_in_user("bo@example.com").await;
    let given = tokens(
        &app,
        &person,
        &theirs,
        "openid offline_access contacts:read",
    )
    .await;
    let access = given["access_token"].as_str().unwrap();
    for token in ["access_token", "refresh_token"] {
        assert_eq!(
            revoke(&app, &mine, given[token].as_str().unwrap()).await,
            200
        );
    }
    app.get("/api/v1/crm/contacts", access).await.data(200);
}

async fn client_tokens_reach_contacts_only_with_their_scope(backend: Backend) {
    let app = provider_app(backend, SettingsArgs::default()).await;
    let notes = client(&app, "Notes", None);
    let (person, _) = app.logged_in_user("cy@example.com").await;
    let reader = tokens(&app, &person, &notes, "openid contacts:read").await;
    let reader = reader["access_token"].as_str().unwrap().to_owned();
    let writer = tokens(&app, &person, &notes, "openid contacts:write").await;
    let writer = writer["access_token"].as_str().unwrap().to_owned();
    let contact = json!({ "fullName": "Grace Hopper" });

    app.get("/api/v1/crm/contacts", &reader).await.data(200);
    let refused = app
        .call(
            Method::POST,
            "/api/v1/crm/contacts",
            Some(&reader),
            Some(contact.clone()),
        )
        .await;
    refused.error(403, "INSUFFICIENT_SCOPE");
    assert_eq!(
        refused.header("www-authenticate"),
        Some(
            with_resource_metadata(
                &app,
                r#"Bearer error="insufficient_scope", scope="contacts:write""#
            )
            .await
            .as_str()
        )
    );

    let made = app
        .call(
            Method::POST,
            "/api/v1/crm/contacts",
            Some(&writer),
            Some(contact),
        )
        .await;
    let id = made.data(201)["id"].as_str().unwrap().to_owned();
    let refused = app.get("/api/v1/crm/contacts", &writer).await;
    refused.error(403, "INSUFFICIENT_SCOPE");
    assert_eq!(
        refused.header("www-authenticate"),
        Some(
            with_resource_metadata(
                &app,
                r#"Bearer error="insufficient_scope", scope="contacts:read""#
            )
            .await
            .as_str()
        )
    );
    let one = format!("/api/v1/crm/contacts/{id}");
    app.get(&one, &writer)
        .await
        .error(403, "INSUFFICIENT_SCOPE");
    app.get(&one, &reader).await.data(200);
    let gone = app.call(Method::DELETE, &one, Some(&reader), None).await;
    gone.error(403, "INSUFFICIENT_SCOPE");
    let gone = app.call(Method::DELETE, &one, Some(&writer), None).await;
    gone.data(200);
    // The person's own token (no `scope`) is not limited.
    app.get("/api/v1/crm/contacts", &person).await.data(200);

    // A client's token reaches none of the person's own calls: the account, its sessions, the
    // authorization call (a client cannot consent for itself), organisations, administration.
    for (method, path) in [
        (Method::GET, "/api/v1/auth/me"),
        (Method::GET, "/api/v1/auth/sessions"),
        (Method::GET, "/api/v1/auth/consents"),
        (Method::POST, "/api/v1/auth/browser-session"),
        (Method::POST, "/api/v1/oauth2/authorize"),
        (Method::GET, "/api/v1/orgs"),
        (Method::GET, "/api/v1/admin/users"),
    ] {
        let refused = app
            .call(method.clone(), path, Some(&writer), Some(json!({})))
            .await;
        refused.error(403, "INSUFFICIENT_SCOPE");
        assert_eq!(
            refused.header("www-authenticate"),
            Some(
                with_resource_metadata(&app, r#"Bearer error="insufficient_scope""#)
                    .await
                    .as_str()
            ),
            "{method} {path}"
        );
    }
    app.get("/api/v1/auth/sessions", &person).await.data(200);
}

async fn end_session_with_an_expired_id_token_hint_ends_the_tree_and_redirects(backend: Backend) {
    let app = provider_app(backend, SettingsArgs::default()).await;
    let rp = Receiver::start(0).await;
    let wiki = client(&app, "Wiki", Some(&rp));
    let other = client(&app, "Other", None);
    let (person, _) = app.logged_in_user("di@example.com").await;
    let given = tokens(&app, &person, &wiki, "openid").await;
    let hint = given["id_token"].as_str().unwrap().to_owned();
    let sid = claims(&hint)["sid"].as_str().unwrap().to_owned();
    tokens(&app, &person, &other, "openid").await;
    // The ID token lives an hour; a hint may be expired.
    app.clock().advance(Duration::from_secs(2 * 3600));
    let no_redirects = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let answer = no_redirects
        .get(app.url("/oauth2/end-session"))
        .query(&[
            ("id_token_hint", hint.as_str()),
            ("post_logout_redirect_uri", "https://app.example.test/bye"),
            ("state", "xyz"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 303);
    assert_eq!(
        answer.headers()["location"],
        "https://app.example.test/bye?state=xyz"
    );
    let received = rp.received(1, DELIVERY).await;
    check_logout_token_from(
        &app,
        &received[0],
        &wiki.id,
        &sid,
        crate::oauth_helpers::ISSUER,
    )
    .await;
    // The person's session and every client session begun from it are over.
    let sessions: i64 = app
        .scalar("SELECT COUNT(*) FROM sessions WHERE revoked_at IS NULL")
        .await;
    assert_eq!(sessions, 0);
}

async fn a_password_change_tells_the_client(backend: Backend) {
    let app = provider_app(backend, SettingsArgs::default()).await;
    let rp = Receiver::start(0).await;
    let notes = client(&app, "Notes", Some(&rp));
    let (person, _) = app.logged_in_user("ed@example.com").await;
    let given = tokens(&app, &person, &notes, "openid").await;
    let sid = claims(given["access_token"].as_str().unwrap())["sid"]
        .as_str()
        .unwrap()
        .to_owned();
    let changed = app
        .call(
            Method::POST,
            "/api/v1/auth/password",
            Some(&person),
            Some(json!({
                "currentPassword": crate::helpers::PASSWORD,
                "newPassword": "another long passphrase 42",
            })),
        )
        .await;
    changed.data(200);
    let received = rp.received(1, DELIVERY).await;
    check_logout_token_from(
        &app,
        &received[0],
        &notes.id,
        &sid,
        crate::oauth_helpers::ISSUER,
    )
    .await;
}
