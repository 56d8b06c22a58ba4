//! Signing in through providers that answer wrongly (docs/api.md §14): an ID token signed by a
//! key not in the provider's set, for another audience, expired, with another flow's nonce; a
//! token endpoint that refuses, fails or never answers; claims that make no account. Each lands
//! on `/sign-in?error=…` through a browser's walk (`federation_idp::Browser`), makes nothing, and
//! is never a 5xx. Then the same walks through oidc-provider, a provider no one here wrote.

use std::time::{Duration, Instant};

use gatehouse::config::SettingsArgs;
use reqwest::Method;
use serde_json::{Value, json};
use url::Url;

use crate::federation_flow::{footprint, wait_available};
use crate::federation_idp::browse::Landing;
use crate::federation_idp::hostile::{HOSTILE_CLIENT_ID, HOSTILE_CLIENT_SECRET};
use crate::federation_idp::{
    Browser, HostileIdp, Scenario, Upstream, UpstreamClient, write_providers_file,
};
use crate::helpers::{Backend, TestApp, both_backends, claims, free_port, spawn_app_with};

both_backends!(
    wrong_id_tokens_and_refusing_providers_land_on_the_sign_in_page,
    claims_that_make_no_account_are_refused,
    a_provider_that_never_answers_is_given_up_on,
    oidc_provider_signs_a_person_up_and_in,
);

/// An app at a known loopback address (the callback the provider sends the browser to) whose
/// provider `id` is at `issuer` with this client, over the lines `extra`.
async fn app_with(
    backend: Backend,
    id: &str,
    issuer: &str,
    client: (&str, &str),
    extra: &str,
) -> (TestApp, tempfile::TempDir) {
    let port = free_port();
    let public = format!("http://127.0.0.1:{port}");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("providers.toml");
    std::fs::write(
        &path,
        format!(
            "[[provider]]\nid = \"{id}\"\nname = \"{id}\"\nissuer = \"{issuer}\"\n\
             client_id = \"{}\"\nclient_secret = \"{}\"\n{extra}\n",
            client.0, client.1
        ),
    )
    .unwrap();
    let app = spawn_app_with(
        backend,
        SettingsArgs {
            listen: Some(format!("127.0.0.1:{port}")),
            public_url: Some(public),
            identity_providers: Some(path.to_str().unwrap().into()),
            ..SettingsArgs::default()
        },
    )
    .await;
    wait_available(&app, id).await;
    (app, dir)
}

/// A browser's walk from the sign-in button of provider `id` to the page it ends on.
async fn walk(app: &TestApp, browser: &mut Browser, id: &str) -> Landing {
    browser
        .browse(&app.url(&format!("/auth/providers/{id}/start?return_to=/account")))
        .await
}

/// The query parameter `name` of where a walk ended.
fn param(landing: &Landing, name: &str) -> Option<String> {
    landing
        .url
        .query_pairs()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

/// The pages' `finish` with the browser's cookies.
async fn finish(app: &TestApp, browser: &mut Browser) -> (u16, Value) {
    let url = Url::parse(&app.url("/api/v1/auth/providers/finish")).unwrap();
    let response = browser.request(Method::POST, &url, None).await;
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

/// Every page of the walk answered below 500, and it ended on the sign-in page.
fn on_sign_in(landing: &Landing) {
    assert_eq!(landing.url.path(), "/sign-in", "{landing:?}");
    assert_eq!(landing.status, Some(200), "{landing:?}");
}

async fn wrong_id_tokens_and_refusing_providers_land_on_the_sign_in_page(backend: Backend) {
    let idp = HostileIdp::start().await;
    let client = (HOSTILE_CLIENT_ID, HOSTILE_CLIENT_SECRET);
    let (app, _dir) = app_with(backend, "evil", &idp.issuer, client, "signup = true").await;
    let before = footprint(&app).await;
    for (scenario, code) in [
        (Scenario::ForeignKey, "provider_invalid"),
        (Scenario::WrongAudience, "provider_invalid"),
        (Scenario::Expired, "provider_invalid"),
        (Scenario::WrongNonce, "provider_invalid"),
        (Scenario::WrongIssuer, "provider_invalid"),
        (Scenario::Symmetric, "provider_invalid"),
        (Scenario::NoIdToken, "provider_invalid"),
        (Scenario::UnknownKid, "provider_invalid"),
        (Scenario::InvalidGrant, "provider_error"),
        (Scenario::ServerError, "provider_unavailable"),
    ] {
        idp.set(scenario);
        let mut browser = Browser::new(None);
        let landing = walk(&app, &mut browser, "evil").await;
        on_sign_in(&landing);
        assert_eq!(
            param(&landing, "error").as_deref(),
            Some(code),
            "{scenario:?}"
        );
        assert_eq!(param(&landing, "provider").as_deref(), Some("evil"));
        // No handoff to collect.
        let (status, body) = finish(&app, &mut browser).await;
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (401, Some("TOKEN_INVALID"))
        );
        assert_eq!(footprint(&app).await, before, "{scenario:?}");
        let reason = format!("fed provider=evil reason={code}");
        assert!(
            app.audit_count("login.failed", Some(&reason)).await >= 1,
            "{scenario:?}"
        );
    }
    // The same provider, answering rightly: the account is made.
    idp.set(Scenario::Good);
    let mut browser = Browser::new(None);
    let landing = walk(&app, &mut browser, "evil").await;
    on_sign_in(&landing);
    assert_eq!(
        param(&landing, "federated").as_deref(),
        Some("1"),
        "{landing:?}"
    );
    let (status, body) = finish(&app, &mut browser).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["user"]["email"], "eve@hostile.example");
    assert_eq!(
        claims(body["data"]["accessToken"].as_str().unwrap())["amr"],
        json!(["fed"])
    );
    assert_eq!(footprint(&app).await.0, before.0 + 1);
}

async fn claims_that_make_no_account_are_refused(backend: Backend) {
    let idp = HostileIdp::start().await;
    let client = (HOSTILE_CLIENT_ID, HOSTILE_CLIENT_SECRET);
    let (app, _dir) = app_with(backend, "evil", &idp.issuer, client, "signup = true").await;
    let before = footprint(&app).await;
    for (extra, code) in [
        // A pre-account takeover: an address the provider does not vouch for.
        (json!({"email_verified": false}), "email_not_verified"),
        (json!({"email_verified": "yes"}), "email_not_verified"),
        (json!({"email": "not an address"}), "email_missing"),
    ] {
        idp.claims(extra.clone());
        let mut browser = Browser::new(None);
        let landing = walk(&app, &mut browser, "evil").await;
        on_sign_in(&landing);
        assert_eq!(param(&landing, "error").as_deref(), Some(code), "{extra}");
        assert_eq!(footprint(&app).await, before, "{extra}");
    }
}

async fn a_provider_that_never_answers_is_given_up_on(backend: Backend) {
    let idp = HostileIdp::start().await;
    let client = (HOSTILE_CLIENT_ID, HOSTILE_CLIENT_SECRET);
    let (app, _dir) = app_with(backend, "evil", &idp.issuer, client, "signup = true").await;
    let before = footprint(&app).await;
    idp.set(Scenario::NeverAnswers);
    app.create_user("zoe@example.com", crate::helpers::PASSWORD)
        .await;
    let started = Instant::now();
    let mut browser = Browser::new(None);
    // While a callback waits on the token endpoint, the password sign-in is not slowed by it.
    let (landing, quick) = tokio::join!(walk(&app, &mut browser, "evil"), async {
        while idp.token_requests() == 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let quick = Instant::now();
        app.login("zoe@example.com", crate::helpers::PASSWORD)
            .await
            .data(200);
        quick.elapsed()
    });
    assert!(quick < Duration::from_secs(3), "{quick:?}");
    on_sign_in(&landing);
    assert_eq!(
        param(&landing, "error").as_deref(),
        Some("provider_unavailable")
    );
    assert!(
        started.elapsed() < Duration::from_secs(12),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(footprint(&app).await.1, before.1);
}

async fn oidc_provider_signs_a_person_up_and_in(backend: Backend) {
    let port = free_port();
    let redirect = format!("http://127.0.0.1:{port}/auth/providers/panva/callback");
    let client = UpstreamClient {
        client_id: "gatehouse".into(),
        client_secret: "a-long-enough-client-secret-for-oidc-provider".into(),
        redirect_uris: vec![redirect],
    };
    let Some(upstream) = Upstream::start_with(std::slice::from_ref(&client), true).await else {
        return;
    };
    upstream
        .account(
            "ada",
            json!({"email": "ada@panva.example", "email_verified": true, "name": "Ada"}),
            &["pwd"],
        )
        .await;
    // The app's address is the port the client was registered with.
    let dir = tempfile::tempdir().unwrap();
    let path = write_providers_file(
        &dir,
        ("panva", "Panva"),
        &upstream.issuer,
        &client,
        "signup = true",
    );
    let app = spawn_app_with(
        backend,
        SettingsArgs {
            listen: Some(format!("127.0.0.1:{port}")),
            public_url: Some(format!("http://127.0.0.1:{port}")),
            identity_providers: Some(path),
            ..SettingsArgs::default()
        },
    )
    .await;
    wait_available(&app, "panva").await;

    // Cancel at the provider's form: access_denied.
    let before = footprint(&app).await;
    let mut cancelled = Browser::new(None);
    let landing = walk(&app, &mut cancelled, "panva").await;
    on_sign_in(&landing);
    assert_eq!(
        param(&landing, "error").as_deref(),
        Some("provider_denied"),
        "{landing:?}"
    );
    assert_eq!(footprint(&app).await, before);

    for round in 0..2 {
        let mut browser = Browser::new(Some("ada"));
        let landing = walk(&app, &mut browser, "panva").await;
        on_sign_in(&landing);
        assert_eq!(
            param(&landing, "federated").as_deref(),
            Some("1"),
            "{landing:?}"
        );
        let (status, body) = finish(&app, &mut browser).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(
            body["data"]["user"]["email"], "ada@panva.example",
            "round {round}"
        );
        assert_eq!(body["data"]["user"]["fullName"], "Ada");
    }
    assert_eq!(footprint(&app).await.0, before.0 + 1);
    let listed = app
        .call(Method::GET, "/api/v1/auth/providers", None, None)
        .await;
    assert_eq!(listed.data(200)["items"][0]["available"], true);
}
