//! The device authorization grant (RFC 8628, docs/api.md §11) as a command-line tool and the
//! person make it: the codes, the polls paced by the interval (on every instance), the person's
//! answer through the device page's call, the tokens collected once, and every refusal.

use std::time::Duration;

use gatehouse::config::SettingsArgs;
use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{Answer, Backend, TestApp, both_backends, claims};
use crate::oauth_helpers::{
    Client, ISSUER, add_client, provider_app, provider_pair, token, userinfo,
};

both_backends!(
    a_tool_signs_a_person_in_with_the_code_they_type,
    the_interval_holds_on_every_instance,
    refused_polls_and_answers_say_why,
    wrong_codes_are_limited_and_tell_nothing,
);

const GRANT: &str = "urn:ietf:params:oauth:grant-type:device_code";

/// A public client an operator registered for the device grant.
pub(crate) fn device_client(app: &TestApp, name: &str) -> Client {
    add_client(
        app,
        name,
        &[
            "--public",
            "--grant",
            GRANT,
            "--grant",
            "refresh_token",
            "--scope",
            "openid",
            "--scope",
            "profile",
            "--scope",
            "offline_access",
        ],
    )
}

/// `POST /oauth2/device_authorization` as the public client `client`: status and body.
async fn start(app: &TestApp, client: &str, scope: &str) -> (u16, Value) {
    let body: String = form_urlencoded::Serializer::new(String::new())
        .extend_pairs([("client_id", client), ("scope", scope)])
        .finish();
    let response = app
        .client
        .post(app.url("/oauth2/device_authorization"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["cache-control"], "no-store");
    (response.status().as_u16(), response.json().await.unwrap())
}

/// The codes of a device authorization `client` started.
pub(crate) async fn started(app: &TestApp, client: &Client, scope: &str) -> (String, String) {
    let (status, body) = start(app, &client.id, scope).await;
    assert_eq!(status, 200, "{body}");
    (
        body["device_code"].as_str().unwrap().to_owned(),
        body["user_code"].as_str().unwrap().to_owned(),
    )
}

/// A poll of the token endpoint: status and body.
pub(crate) async fn poll(app: &TestApp, client: &Client, device_code: &str) -> (u16, Value) {
    let (status, _, body) = token(
        app,
        None,
        &[
            ("grant_type", GRANT),
            ("device_code", device_code),
            ("client_id", &client.id),
        ],
    )
    .await;
    (status, body)
}

/// The device page's call as the holder of `person`.
pub(crate) async fn answer(app: &TestApp, person: &str, body: Value) -> Answer {
    app.call(
        Method::POST,
        "/api/v1/oauth2/device",
        Some(person),
        Some(body),
    )
    .await
}

/// The public URL, as discovery says it.
async fn base(app: &TestApp) -> String {
    let discovery = app.get_json("/.well-known/openid-configuration").await;
    let token = discovery["token_endpoint"].as_str().unwrap();
    token.strip_suffix("/oauth2/token").unwrap().to_owned()
}

fn refused(polled: (u16, Value), error: &str) {
    assert_eq!(polled.0, 400, "{}", polled.1);
    assert_eq!(polled.1["error"], error, "{}", polled.1);
}

async fn a_tool_signs_a_person_in_with_the_code_they_type(backend: Backend) {
    let app = provider_app(backend, SettingsArgs::default()).await;
    let client = device_client(&app, "Acme CLI");
    let (person, _) = app.logged_in_user("ada@example.com").await;

    let (status, codes) = start(&app, &client.id, "openid profile offline_access").await;
    assert_eq!(status, 200, "{codes}");
    let user_code = codes["user_code"].as_str().unwrap().to_owned();
    let device_code = codes["device_code"].as_str().unwrap().to_owned();
    assert_eq!(user_code.len(), 9, "{user_code}");
    assert!(device_code.len() >= 43, "256 bits: {device_code}");
    let page = format!("{}/device", base(&app).await);
    assert_eq!(codes["verification_uri"], page.as_str());
    assert_eq!(
        codes["verification_uri_complete"],
        format!("{page}?user_code={user_code}").as_str()
    );
    assert_eq!(
        (codes["expires_in"].as_i64(), codes["interval"].as_i64()),
        (Some(600), Some(5))
    );

    // Nobody has answered: pending; polled again at once: slow down.
    refused(
        poll(&app, &client, &device_code).await,
        "authorization_pending",
    );
    refused(poll(&app, &client, &device_code).await, "slow_down");
    app.clock().advance(Duration::from_secs(10));
    refused(
        poll(&app, &client, &device_code).await,
        "authorization_pending",
    );

    // The person types the code as people do, and is told who asks for what.
    let typed = user_code.replace('-', " ").to_lowercase();
    let asked = answer(&app, &person, json!({ "userCode": typed })).await;
    let asked = asked.data(200);
    assert_eq!(asked["consentRequired"], true);
    assert_eq!(asked["client"]["name"], "Acme CLI");
    assert_eq!(
        asked["scopes"],
        json!(["openid", "profile", "offline_access"])
    );
    assert_eq!(asked["scopeDetails"].as_array().unwrap().len(), 3);
    let allowed = answer(
        &app,
        &person,
        json!({ "userCode": user_code, "consent": true }),
    )
    .await;
    assert_eq!(allowed.data(200)["status"], "approved");
    assert_eq!(app.audit_count("oauth.device_approved", None).await, 1);
    // Answered once: the code is spent for the page.
    let again = answer(
        &app,
        &person,
        json!({ "userCode": user_code, "consent": true }),
    )
    .await;
    assert!(again.error(400, "VALIDATION_ERROR")["details"]["fields"]["userCode"].is_string());

    // The next poll in time gets the tokens, for the person.
    app.clock().advance(Duration::from_secs(10));
    let (status, tokens) = poll(&app, &client, &device_code).await;
    assert_eq!(status, 200, "{tokens}");
    assert_eq!(tokens["token_type"], "Bearer");
    assert_eq!(tokens["scope"], "openid profile offline_access");
    let access = tokens["access_token"].as_str().unwrap();
    let id = claims(tokens["id_token"].as_str().unwrap());
    assert_eq!(claims(&person)["sub"], id["sub"]);
    assert_eq!(
        (id["iss"].as_str(), id["aud"].as_str()),
        (Some(ISSUER), Some(client.id.as_str()))
    );
    let (status, _, info) = userinfo(&app, access).await;
    assert_eq!((status, &info["sub"]), (200, &id["sub"]));
    let refresh = tokens["refresh_token"].as_str().unwrap().to_owned();

    // The device's session is listed as the client's, and its app among the person's.
    let sessions = app.get("/api/v1/auth/sessions", &person).await;
    let named: Vec<&Value> = (sessions.data(200)["items"].as_array().unwrap().iter())
        .filter(|s| s["client"]["name"] == "Acme CLI")
        .collect();
    assert_eq!(named.len(), 1, "{:#}", sessions.body);
    let consents = app.get("/api/v1/auth/consents", &person).await;
    assert_eq!(consents.data(200)["items"][0]["clientName"], "Acme CLI");

    // Collected once: a second collection is a stolen code, and ends what the first gave.
    app.clock().advance(Duration::from_secs(10));
    refused(poll(&app, &client, &device_code).await, "invalid_grant");
    let (status, _, body) = token(
        &app,
        None,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", &refresh),
            ("client_id", &client.id),
        ],
    )
    .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_grant")),
        "{body}"
    );
}

/// A client polling two instances in turn is paced by one interval: the second instance says
/// `slow_down` to a poll the first counted a moment ago.
async fn the_interval_holds_on_every_instance(backend: Backend) {
    let (app, twin) = provider_pair(backend).await;
    let client = device_client(&app, "Acme CLI");
    let (device_code, _) = started(&app, &client, "openid").await;
    refused(
        poll(&app, &client, &device_code).await,
        "authorization_pending",
    );
    refused(poll(&twin, &client, &device_code).await, "slow_down");
    // Each early poll adds 5 s: after 9 s, still early (the interval is 10 s now); after 11, not.
    app.clock().advance(Duration::from_secs(9));
    twin.clock().advance(Duration::from_secs(9));
    refused(poll(&twin, &client, &device_code).await, "slow_down");
    app.clock().advance(Duration::from_secs(16));
    twin.clock().advance(Duration::from_secs(16));
    refused(
        poll(&app, &client, &device_code).await,
        "authorization_pending",
    );
}

async fn refused_polls_and_answers_say_why(backend: Backend) {
    let app = provider_app(backend, SettingsArgs::default()).await;
    let client = device_client(&app, "Acme CLI");
    let other = device_client(&app, "Other CLI");
    let web = add_client(&app, "Web app", &["--public"]);
    let (person, _) = app.logged_in_user("ada@example.com").await;

    // A client not registered for the grant, a scope it does not have, no scope.
    let (status, body) = start(&app, &web.id, "openid").await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("unauthorized_client")),
        "{body}"
    );
    let (status, body) = start(&app, &client.id, "openid email").await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_scope")),
        "{body}"
    );
    let (status, body) = start(&app, &client.id, "").await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_scope")),
        "{body}"
    );
    let (status, body) = start(&app, "not-a-client", "openid").await;
    assert_eq!(
        (status, body["error"].as_str()),
        (401, Some("invalid_client")),
        "{body}"
    );

    // Another client's device code is none of its business; an unknown one neither.
    let (device_code, user_code) = started(&app, &client, "openid").await;
    refused(poll(&app, &other, &device_code).await, "invalid_grant");
    refused(poll(&app, &client, "forged").await, "invalid_grant");
    let (status, _, body) = token(
        &app,
        None,
        &[("grant_type", GRANT), ("client_id", &client.id)],
    )
    .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_request")),
        "{body}"
    );

    // Denied: access_denied, for good.
    let denied = answer(
        &app,
        &person,
        json!({ "userCode": user_code, "consent": false }),
    )
    .await;
    assert_eq!(denied.data(200)["status"], "denied");
    assert_eq!(app.audit_count("oauth.device_denied", None).await, 1);
    refused(poll(&app, &client, &device_code).await, "access_denied");

    // Expired: expired_token, and the page no longer knows the code.
    let (device_code, user_code) = started(&app, &client, "openid").await;
    app.clock().advance(Duration::from_secs(601));
    refused(poll(&app, &client, &device_code).await, "expired_token");
    let late = answer(
        &app,
        &person,
        json!({ "userCode": user_code, "consent": true }),
    )
    .await;
    late.error(400, "VALIDATION_ERROR");

    // A client's token cannot answer for the person; nor a malformed code ask anything.
    let (_, user_code) = started(&app, &client, "openid offline_access").await;
    let (device_code, agent_code) = started(&app, &client, "openid offline_access").await;
    assert!(
        answer(
            &app,
            &person,
            json!({ "userCode": agent_code, "consent": true })
        )
        .await
        .data(200)["status"]
            == "approved"
    );
    app.clock().advance(Duration::from_secs(6));
    let (status, tokens) = poll(&app, &client, &device_code).await;
    assert_eq!(status, 200, "{tokens}");
    let agent = tokens["access_token"].as_str().unwrap();
    let by_agent = answer(
        &app,
        agent,
        json!({ "userCode": user_code, "consent": true }),
    )
    .await;
    assert_eq!(by_agent.status.as_u16(), 403, "{:#}", by_agent.body);
    let malformed = answer(&app, &person, json!({ "userCode": "0000-1111" })).await;
    malformed.error(400, "VALIDATION_ERROR");

    // Discovery names the endpoint and the grant.
    let discovery = app.get_json("/.well-known/openid-configuration").await;
    assert_eq!(
        discovery["device_authorization_endpoint"],
        format!("{}/oauth2/device_authorization", base(&app).await).as_str()
    );
    assert!(
        discovery["grant_types_supported"]
            .as_array()
            .unwrap()
            .contains(&json!(GRANT))
    );
}

/// Wrong codes answer as an expired one does, and ten from one address in a row make it wait:
/// guessing a code of 20⁸ is hopeless, and costs nothing to the person whose code it is.
async fn wrong_codes_are_limited_and_tell_nothing(backend: Backend) {
    let app = provider_app(backend, SettingsArgs::default()).await;
    let client = device_client(&app, "Acme CLI");
    let (person, _) = app.logged_in_user("ada@example.com").await;
    let (_, user_code) = started(&app, &client, "openid").await;
    let wrong = if user_code.starts_with('B') {
        "CCCC-CCCC"
    } else {
        "BBBB-BBBB"
    };
    let mut messages = Vec::new();
    for _ in 0..10 {
        let missed = answer(&app, &person, json!({ "userCode": wrong })).await;
        messages.push(missed.error(400, "VALIDATION_ERROR")["details"].clone());
    }
    messages.dedup();
    assert_eq!(messages.len(), 1, "{messages:?}");
    let waited = answer(&app, &person, json!({ "userCode": user_code })).await;
    waited.error(429, "RATE_LIMITED");
}
