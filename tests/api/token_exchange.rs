//! Delegation by token exchange (RFC 8693, docs/api.md §11): an agent (a confidential client the
//! operator allowed) exchanges a person's token for a narrower one naming it as actor; the chain
//! nests; forward-auth and introspection say who acts; nothing wider, longer or of another
//! party's is ever given.

use std::time::Duration;

use gatehouse::config::SettingsArgs;
use reqwest::Method;
use serde_json::{Value, json};

use crate::guard::{FORWARD_AUTH, ask};
use crate::helpers::{Backend, TestApp, both_backends, claims};
use crate::introspection::introspect;
use crate::oauth_helpers::{Client, add_client, code, exchange, provider_app, token, userinfo};

both_backends!(
    an_agent_acts_for_a_person_and_says_so,
    hostile_exchanges_are_refused,
);

const GRANT: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
const ACCESS: &str = "urn:ietf:params:oauth:token-type:access_token";

/// A confidential client with the exchange grant and `scopes`.
fn agent(app: &TestApp, name: &str, scopes: &[&str]) -> Client {
    let mut flags = vec!["--grant", GRANT, "--introspect"];
    for scope in scopes {
        flags.extend(["--scope", scope]);
    }
    add_client(app, name, &flags)
}

/// `subject` exchanged by `client` with the extra form `pairs`: status and body.
async fn exchanged(
    app: &TestApp,
    client: &Client,
    subject: &str,
    pairs: &[(&str, &str)],
) -> (u16, Value) {
    let mut form = vec![
        ("grant_type", GRANT),
        ("subject_token", subject),
        ("subject_token_type", ACCESS),
    ];
    form.extend_from_slice(pairs);
    let (status, _, body) = token(
        app,
        Some((&client.id, client.secret.as_deref().unwrap())),
        &form,
    )
    .await;
    (status, body)
}

/// Waits (at most 2 s) for `count` exchanges audited with `detail`, and no more.
async fn recorded(app: &TestApp, detail: Option<&str>, count: i64) {
    let started = std::time::Instant::now();
    loop {
        let seen = app.audit_count("oauth.token_exchanged", detail).await;
        if seen >= count {
            assert_eq!(seen, count, "{detail:?}");
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{seen} of {count} audited"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn refused(answer: (u16, Value), status: u16, error: &str) {
    assert_eq!(
        (answer.0, answer.1["error"].as_str()),
        (status, Some(error)),
        "{}",
        answer.1
    );
}

async fn an_agent_acts_for_a_person_and_says_so(backend: Backend) {
    let app = provider_app(backend, SettingsArgs::default()).await;
    let (person, _) = app.logged_in_user("ada@example.com").await;
    let ada = claims(&person);
    let planner = agent(
        &app,
        "Trip planner",
        &["openid", "profile", "contacts:read", "contacts:write"],
    );
    let booker = agent(&app, "Booking agent", &["contacts:read"]);

    // The person's own token: the agent gets what it is registered for, offline_access never.
    let (status, body) = exchanged(
        &app,
        &planner,
        &person,
        &[("scope", "contacts:read contacts:write")],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["issued_token_type"], ACCESS);
    assert_eq!(body["token_type"], "Bearer");
    assert!(
        body.get("refresh_token").is_none() && body.get("id_token").is_none(),
        "{body}"
    );
    let first = body["access_token"].as_str().unwrap().to_owned();
    let c = claims(&first);
    assert_eq!(c["sub"], ada["sub"]);
    assert_eq!(
        c["sid"], ada["sid"],
        "the person's session: ending it ends this"
    );
    assert_eq!(c["client_id"], planner.id.as_str());
    assert_eq!(c["act"], json!({ "sub": planner.id }));
    assert_eq!(c["scope"], "contacts:read contacts:write");
    assert!(c["exp"].as_i64() <= ada["exp"].as_i64());

    // It calls the business API with it, within its scopes; forward-auth says who acts.
    let contacts = app.get("/api/v1/crm/contacts", &first).await;
    contacts.data(200);
    let decision = ask(&app.http, FORWARD_AUTH, Some(&first), &[]).await;
    assert_eq!(decision.status, 200);
    assert_eq!(decision.header("remote-user"), ada["sub"].as_str());
    assert_eq!(decision.header("remote-client"), Some(planner.id.as_str()));
    assert_eq!(decision.header("remote-actor"), Some(planner.id.as_str()));
    let own = ask(&app.http, FORWARD_AUTH, Some(&person), &[]).await;
    assert_eq!(own.header("remote-actor"), Some(""));

    // A chain: the planner hands a narrower token to the booking agent, which exchanges it.
    let (status, body) = exchanged(&app, &booker, &first, &[]).await;
    assert_eq!(status, 200, "{body}");
    let second = body["access_token"].as_str().unwrap().to_owned();
    let c2 = claims(&second);
    assert_eq!(
        c2["act"],
        json!({ "sub": booker.id, "act": { "sub": planner.id } })
    );
    assert_eq!(c2["scope"], "contacts:read");
    let basic = (planner.id.as_str(), planner.secret.as_deref().unwrap());
    let (status, _, seen) = introspect(&app, Some(basic), &format!("token={second}")).await;
    assert_eq!(status, 200);
    assert_eq!(seen["active"], true, "{seen}");
    assert_eq!(seen["act"], c2["act"]);
    assert_eq!(seen["client_id"], booker.id.as_str());
    // Audited off the answer's path: the rows land within a write's time.
    let booked = format!("client={}", booker.id);
    recorded(&app, Some(&booked), 1).await;
    recorded(&app, None, 2).await;

    // A client's token for the person, narrower still: its scopes bound the exchange.
    let web = add_client(
        &app,
        "Web",
        &["--scope", "openid", "--scope", "contacts:read"],
    );
    let (c, v) = code(&app, &person, &web, "openid contacts:read").await;
    let (_, tokens) = exchange(&app, &web, &c, &v).await;
    let web_token = tokens["access_token"].as_str().unwrap();
    refused(
        exchanged(&app, &planner, web_token, &[("scope", "contacts:write")]).await,
        400,
        "invalid_scope",
    );
    let (status, body) = exchanged(&app, &planner, web_token, &[]).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        claims(body["access_token"].as_str().unwrap())["scope"],
        "openid contacts:read"
    );

    // The person signs out: every token exchanged from that session ends with it.
    let out = app
        .call(Method::POST, "/api/v1/auth/logout", Some(&person), None)
        .await;
    out.data(200);
    assert_eq!(
        app.get("/api/v1/crm/contacts", &first)
            .await
            .status
            .as_u16(),
        401
    );
    assert_eq!(userinfo(&app, &second).await.0, 401);
    refused(
        exchanged(&app, &booker, &first, &[]).await,
        400,
        "invalid_grant",
    );

    // Never longer than the subject: near its end, the exchanged token ends with it.
    let later = app.login("ada@example.com", crate::helpers::PASSWORD).await;
    let later = later.data(200)["accessToken"].as_str().unwrap().to_owned();
    app.clock().advance(Duration::from_secs(24 * 3600 - 60));
    let (status, body) = exchanged(&app, &planner, &later, &[("scope", "contacts:read")]).await;
    assert_eq!(status, 200, "{body}");
    assert!(body["expires_in"].as_i64().unwrap() <= 60, "{body}");
    let exp = &claims(body["access_token"].as_str().unwrap())["exp"];
    assert_eq!(exp, &claims(&later)["exp"]);
}

async fn hostile_exchanges_are_refused(backend: Backend) {
    let app = provider_app(backend, SettingsArgs::default()).await;
    let (person, refresh) = app.logged_in_user("ada@example.com").await;
    let planner = agent(&app, "Trip planner", &["contacts:read"]);
    let plain = add_client(
        &app,
        "No exchange",
        &["--grant", "client_credentials", "--scope", "contacts:read"],
    );

    // Not allowed the grant; a public client cannot even be registered with it.
    refused(
        exchanged(&app, &plain, &person, &[]).await,
        400,
        "unauthorized_client",
    );
    let output = app.cli(
        &[
            "clients", "add", "Public", "--public", "--grant", GRANT, "--json",
        ],
        None,
    );
    assert!(!output.status.success());
    // Wider scope, another audience, a refresh token, an ID token type, an actor token.
    refused(
        exchanged(&app, &planner, &person, &[("scope", "contacts:write")]).await,
        400,
        "invalid_scope",
    );
    refused(
        exchanged(
            &app,
            &planner,
            &person,
            &[("resource", "https://elsewhere.example")],
        )
        .await,
        400,
        "invalid_target",
    );
    refused(
        exchanged(&app, &planner, &refresh, &[]).await,
        400,
        "invalid_grant",
    );
    let (status, _, body) = token(
        &app,
        Some((&planner.id, planner.secret.as_deref().unwrap())),
        &[
            ("grant_type", GRANT),
            ("subject_token", &refresh),
            (
                "subject_token_type",
                "urn:ietf:params:oauth:token-type:refresh_token",
            ),
        ],
    )
    .await;
    refused((status, body), 400, "invalid_request");
    refused(
        exchanged(
            &app,
            &planner,
            &person,
            &[("actor_token", &person), ("actor_token_type", ACCESS)],
        )
        .await,
        400,
        "invalid_request",
    );
    refused(
        exchanged(
            &app,
            &planner,
            &person,
            &[(
                "requested_token_type",
                "urn:ietf:params:oauth:token-type:id_token",
            )],
        )
        .await,
        400,
        "invalid_request",
    );
    refused(
        exchanged(&app, &planner, "not.a.token", &[]).await,
        400,
        "invalid_grant",
    );
    // A client's token for itself names no person.
    let (_, _, own) = token(
        &app,
        Some((&plain.id, plain.secret.as_deref().unwrap())),
        &[("grant_type", "client_credentials")],
    )
    .await;
    refused(
        exchanged(&app, &planner, own["access_token"].as_str().unwrap(), &[]).await,
        400,
        "invalid_grant",
    );
    // Wrong credentials: invalid_client.
    let (status, _, body) = token(
        &app,
        Some((&planner.id, "wrong")),
        &[
            ("grant_type", GRANT),
            ("subject_token", &person),
            ("subject_token_type", ACCESS),
        ],
    )
    .await;
    refused((status, body), 401, "invalid_client");
    // A revoked subject, at once.
    let out = app
        .call(Method::POST, "/api/v1/auth/logout", Some(&person), None)
        .await;
    out.data(200);
    refused(
        exchanged(&app, &planner, &person, &[]).await,
        400,
        "invalid_grant",
    );
    assert_eq!(app.audit_count("oauth.token_exchanged", None).await, 0);
}
