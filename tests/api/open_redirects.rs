//! Gatehouse's origin never sends a browser to a self-registered client's URI on the client's
//! word alone (docs/api.md §11; issue 38, F5, F6 and F9): anyone can register a client (open
//! registration, a metadata document) with any redirect and post-logout URI, and a 303 from this
//! origin would make the real sign-in service the first hop of a phishing link. Such a URI is
//! offered as a link naming its host, unless the person has dealt with the client (a consent, the
//! consent screen answered) or a valid `id_token_hint` proves the client was given tokens. And a
//! self-registered client cannot pass for another on the consent screen.

use gatehouse::config::SettingsArgs;
use serde_json::{Value, json};

use crate::federation_flow::no_redirects;
use crate::helpers::{Backend, TestApp, both_backends};
use crate::oauth_helpers::{
    Client, REDIRECT, add_client, authorization, authorize, code, exchange, pkce, provider_app,
};

both_backends!(
    end_session_follows_a_self_registered_uri_only_with_proof,
    authorization_errors_go_back_to_a_stranger_only_as_a_link,
    a_self_registered_name_cannot_pass_for_another,
);

const PHISH: &str = "https://evil.example.test/phish";

fn open_registration() -> SettingsArgs {
    SettingsArgs {
        oauth_registration: Some("open".into()),
        ..SettingsArgs::default()
    }
}

/// `POST /oauth2/register` with `body`: status and answer.
async fn register(app: &TestApp, body: Value) -> (u16, Value) {
    let response = app
        .client
        .post(app.url("/oauth2/register"))
        .json(&body)
        .send()
        .await
        .unwrap();
    (
        response.status().as_u16(),
        response.json().await.unwrap_or(Value::Null),
    )
}

/// A stranger's confidential client: the redirect URI the tests use, a post-logout URI of its own.
async fn stranger(app: &TestApp, name: &str) -> Client {
    let (status, made) = register(
        app,
        json!({
            "client_name": name,
            "redirect_uris": [REDIRECT],
            "post_logout_redirect_uris": [PHISH],
            "token_endpoint_auth_method": "client_secret_basic",
        }),
    )
    .await;
    assert_eq!(status, 201, "{made}");
    Client {
        id: made["client_id"].as_str().unwrap().to_owned(),
        secret: made["client_secret"].as_str().map(str::to_owned),
    }
}

/// A GET of `path`, following nothing: status, `Location`, body.
async fn get(app: &TestApp, path: &str) -> (u16, String, String) {
    let response = no_redirects().get(app.url(path)).send().await.unwrap();
    let status = response.status().as_u16();
    let location = response
        .headers()
        .get("location")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    (status, location, response.text().await.unwrap())
}

/// Where the page's `return-link` goes (its `href`, unescaped), if it has one.
fn return_link(body: &str) -> Option<String> {
    let start = body.find("id=\"return-link\" href=\"")? + "id=\"return-link\" href=\"".len();
    let end = start + body[start..].find('"')?;
    Some(
        body[start..end]
            .replace("&#x2f;", "/")
            .replace("&quot;", "\"")
            .replace("&amp;", "&"),
    )
}

fn encoded(text: &str) -> String {
    form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

async fn end_session_follows_a_self_registered_uri_only_with_proof(backend: Backend) {
    let app = provider_app(backend, open_registration()).await;
    let evil = stranger(&app, "Helpful Tool").await;
    let operators = add_client(
        &app,
        "Dashboard",
        &["--post-logout-redirect-uri", "https://app.example.test/bye"],
    );

    // No hint, no cookie: the stranger's URI is a link on the signed-out page, never a 303.
    let path = format!(
        "/oauth2/end-session?client_id={}&post_logout_redirect_uri={}&state=s1",
        evil.id,
        encoded(PHISH)
    );
    let (status, location, body) = get(&app, &path).await;
    assert_eq!((status, location.as_str()), (200, ""), "{body}");
    assert_eq!(
        return_link(&body),
        Some(format!("{PHISH}?state=s1")),
        "{body}"
    );
    assert!(body.contains("evil.example.test"), "{body}");
    // The operator's client is followed, as before.
    let path = format!(
        "/oauth2/end-session?client_id={}&post_logout_redirect_uri={}&state=s2",
        operators.id,
        encoded("https://app.example.test/bye")
    );
    let (status, location, _) = get(&app, &path).await;
    assert_eq!(
        (status, location.as_str()),
        (303, "https://app.example.test/bye?state=s2")
    );

    // With an ID token the stranger was given, its URI is followed: the hint is the proof.
    let (person, _) = app.logged_in_user("ada@example.com").await;
    let (code, verifier) = code(&app, &person, &evil, "openid").await;
    let (status, tokens) = exchange(&app, &evil, &code, &verifier).await;
    assert_eq!(status, 200, "{tokens}");
    let hint = tokens["id_token"].as_str().unwrap().to_owned();

    // F9: the hint paired with another client's id ends nothing.
    let path = format!(
        "/oauth2/end-session?id_token_hint={hint}&client_id={}&post_logout_redirect_uri={}",
        operators.id,
        encoded("https://app.example.test/bye")
    );
    let (status, location, body) = get(&app, &path).await;
    assert_eq!((status, location.as_str()), (400, ""), "{body}");
    assert!(body.contains("Nothing was changed"), "{body}");
    app.get("/api/v1/auth/me", &person).await.data(200);
    let access = tokens["access_token"].as_str().unwrap();
    assert_eq!(crate::oauth_helpers::userinfo(&app, access).await.0, 200);

    let path = format!(
        "/oauth2/end-session?id_token_hint={hint}&client_id={}&post_logout_redirect_uri={}&state=s3",
        evil.id,
        encoded(PHISH)
    );
    let (status, location, _) = get(&app, &path).await;
    assert_eq!(
        (status, location.as_str()),
        (303, &*format!("{PHISH}?state=s3"))
    );
    assert_eq!(crate::oauth_helpers::userinfo(&app, access).await.0, 401);
}

async fn authorization_errors_go_back_to_a_stranger_only_as_a_link(backend: Backend) {
    let app = provider_app(backend, open_registration()).await;
    let evil = stranger(&app, "Helpful Tool").await;
    let operators = add_client(&app, "Dashboard", &[]);
    let (_, challenge) = pkce();
    let page = |client: &Client, extra: &str| {
        format!(
            "/oauth2/authorize?client_id={}&redirect_uri={}&scope=openid&state=st\
             &code_challenge={challenge}&code_challenge_method=S256{extra}",
            client.id,
            encoded(REDIRECT)
        )
    };
    for extra in ["&response_type=token", "&response_type=code&prompt=none"] {
        let (status, location, body) = get(&app, &page(&evil, extra)).await;
        assert_eq!((status, location.as_str()), (400, ""), "{extra}: {body}");
        let link = return_link(&body).unwrap_or_else(|| panic!("{extra}: {body}"));
        assert!(link.starts_with(&format!("{REDIRECT}?error=")), "{link}");
        // The operator's client gets its error at once, as RFC 6749 §4.1.2.1 says.
        let (status, location, _) = get(&app, &page(&operators, extra)).await;
        assert_eq!(status, 303, "{extra}");
        assert!(
            location.starts_with(&format!("{REDIRECT}?error=")),
            "{location}"
        );
    }

    // Through the API (the page's own call): flagged until the person has dealt with the client.
    let (person, _) = app.logged_in_user("ada@example.com").await;
    let (_, challenge) = pkce();
    let mut wrong = authorization(&evil, "openid roles", &challenge);
    let answer = authorize(&app, &person, wrong.clone()).await;
    let answer = answer.data(200);
    assert_eq!(answer["confirmRedirect"], true, "{answer}");
    assert!(
        answer["redirectTo"]
            .as_str()
            .unwrap()
            .contains("error=invalid_scope"),
        "{answer}"
    );
    // The consent screen names the host and says the client registered itself.
    let asked = authorize(&app, &person, authorization(&evil, "openid", &challenge)).await;
    let asked = asked.data(200);
    assert_eq!(asked["client"]["selfRegistered"], true, "{asked}");
    assert_eq!(asked["client"]["redirectHost"], "app.example.test");
    code(&app, &person, &evil, "openid").await;
    let answer = authorize(&app, &person, wrong.clone()).await;
    assert!(
        answer.data(200).get("confirmRedirect").is_none(),
        "{answer:?}"
    );
    // A refusal on the consent screen goes back at once too.
    wrong["scope"] = json!("openid");
    wrong["consent"] = json!(false);
    let refused = authorize(&app, &person, wrong).await;
    assert!(refused.data(200).get("confirmRedirect").is_none());
}

async fn a_self_registered_name_cannot_pass_for_another(backend: Backend) {
    let app = provider_app(backend, open_registration()).await;
    add_client(&app, "Acme Billing", &[]);
    for name in [
        "Acme Billing",
        "acme billing",
        "ＡＣＭＥ  Billing",
        "Acme\u{202E}gnilliB",
        "Acme\u{200B} Billing",
    ] {
        let (status, answer) = register(
            &app,
            json!({"client_name": name, "redirect_uris": [REDIRECT]}),
        )
        .await;
        assert_eq!(status, 400, "{name:?}: {answer}");
        assert_eq!(answer["error"], "invalid_client_metadata", "{name:?}");
    }
    let (status, _) = register(
        &app,
        json!({"client_name": "Acme Billing Helper", "redirect_uris": [REDIRECT]}),
    )
    .await;
    assert_eq!(status, 201);
    // Nor an operator's client, through the CLI.
    let refused = app.cli(&["clients", "add", "Evil\u{202E}nimda"], None);
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("direction-changing"),
        "{refused:?}"
    );
}
