//! A client's token for itself (`client_credentials`, docs/api.md §12) at forward-auth and
//! introspection: `Remote-User` and `Remote-Client` are the client, nothing about a person is
//! said, a `clients` rule admits exactly the clients it names, and the token stops working once
//! its client is removed or loses the grant (on another instance within 2 s). And `Remote-Client`
//! for a person's token given to a client.

use reqwest::Method;
use serde_json::json;

use crate::admin::admin;
use crate::guard::{FORWARD_AUTH, ask, with_rules, within};
use crate::helpers::{Backend, PASSWORD, SPREAD_DEADLINE, TestApp, both_backends, claims};
use crate::introspection::introspect;
use crate::oauth_helpers::{Client, ISSUER, add_client, code, exchange, provider_app, token};

both_backends!(
    a_client_token_is_the_client_at_forward_auth_and_introspection,
    a_clients_rule_admits_exactly_the_clients_it_names,
    a_revoked_client_token_ends_on_every_instance,
);

/// A confidential client with the `client_credentials` grant and `contacts:read`, which the
/// operator lets introspect tokens too (a resource server, docs/api.md §6).
pub(crate) fn service(app: &TestApp, name: &str) -> Client {
    add_client(
        app,
        name,
        &[
            "--introspect",
            "--grant",
            "authorization_code",
            "--grant",
            "client_credentials",
            "--scope",
            "openid",
            "--scope",
            "contacts:read",
        ],
    )
}

/// The client's own access token (`client_credentials`, HTTP Basic).
pub(crate) async fn client_token(app: &TestApp, client: &Client) -> String {
    let secret = client.secret.as_deref().unwrap();
    let (status, _, answer) = token(
        app,
        Some((&client.id, secret)),
        &[("grant_type", "client_credentials")],
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    answer["access_token"].as_str().unwrap().to_owned()
}

/// The forward-auth headers of a person's tokens and a client's, all of them always present.
const HEADERS: [&str; 10] = [
    "remote-user",
    "remote-email",
    "remote-email-verified",
    "remote-name",
    "remote-groups",
    "remote-session",
    "remote-org",
    "remote-org-roles",
    "remote-client",
    "remote-key",
];

async fn a_client_token_is_the_client_at_forward_auth_and_introspection(backend: Backend) {
    let app = provider_app(backend, trusting_provider()).await;
    let reports = service(&app, "Nightly reports");
    let own = client_token(&app, &reports).await;
    let at = claims(&own);

    // Forward-auth: the client, and nothing of a person (present and empty).
    let allowed = ask(&app, FORWARD_AUTH, Some(&own), &[]).await;
    assert_eq!(allowed.status, 200);
    for name in HEADERS {
        let expected = match name {
            "remote-user" | "remote-client" => reports.id.as_str(),
            _ => "",
        };
        assert_eq!(allowed.header(name), Some(expected), "{name}");
    }

    // Introspection: sub and client_id are the client; no person's claims.
    let secret = reports.secret.as_deref().unwrap();
    let (status, _, live) =
        introspect(&app, Some((&reports.id, secret)), &format!("token={own}")).await;
    assert_eq!(status, 200);
    assert_eq!(
        live,
        json!({
            "active": true,
            "sub": reports.id,
            "client_id": reports.id,
            "scope": "contacts:read",
            "iss": ISSUER,
            "aud": "gatehouse-api",
            "exp": at["exp"],
            "iat": at["iat"],
            "jti": at["jti"],
            "token_type": "Bearer",
        })
    );

    // It is no person's token: the business API and the person's calls refuse it, as before.
    app.get("/api/v1/crm/contacts", &own)
        .await
        .error(401, "TOKEN_INVALID");

    // A person's own sign-in: Remote-Client empty. The same person's token given to the client:
    // Remote-User the person, Remote-Client the client.
    let (person, _) = app.logged_in_user("ann@example.com").await;
    let theirs = ask(&app, FORWARD_AUTH, Some(&person), &[]).await;
    assert_eq!(theirs.status, 200);
    assert_eq!(theirs.header("remote-client"), Some(""));
    let given = given_to(&app, &person, &reports).await;
    let given = given.as_str();
    let on_behalf = ask(&app, FORWARD_AUTH, Some(given), &[]).await;
    assert_eq!(on_behalf.status, 200);
    assert_eq!(
        on_behalf.header("remote-user"),
        claims(&person)["sub"].as_str()
    );
    assert_eq!(on_behalf.header("remote-email"), Some("ann@example.com"));
    assert_eq!(on_behalf.header("remote-client"), Some(reports.id.as_str()));

    // The client loses the grant (an admin's PATCH): its own token is refused, on this instance
    // at once, and on another within 2 s; the person's token given to it is not.
    let twin = app.twin_with(trusting_provider()).await;
    assert_eq!(ask(&twin, FORWARD_AUTH, Some(&own), &[]).await.status, 200);
    let root = admin(&app, "root@example.com").await;
    app.call(
        Method::PATCH,
        &format!("/api/v1/admin/clients/{}", reports.id),
        Some(&root.strong),
        Some(json!({ "grantTypes": ["authorization_code"] })),
    )
    .await
    .data(200);
    assert_eq!(ask(&app, FORWARD_AUTH, Some(&own), &[]).await.status, 401);
    within(SPREAD_DEADLINE, || async {
        ask(&twin, FORWARD_AUTH, Some(&own), &[]).await.status == 401
    })
    .await;
    let (_, _, gone) = introspect(&app, Some((&reports.id, secret)), &format!("token={own}")).await;
    assert_eq!(gone, json!({ "active": false }));
    assert_eq!(ask(&app, FORWARD_AUTH, Some(given), &[]).await.status, 200);
    // A client bound to an organisation (issue 27): Remote-Org and org_id are it.
    let org = crate::orgs::create_org(&app, &person, "acme").await;
    let bound = add_client(
        &app,
        "Acme export",
        &[
            "--org",
            &org,
            "--grant",
            "client_credentials",
            "--scope",
            "contacts:read",
        ],
    );
    let acme = client_token(&app, &bound).await;
    let allowed = ask(&app, FORWARD_AUTH, Some(&acme), &[]).await;
    assert_eq!(allowed.status, 200);
    assert_eq!(allowed.header("remote-org"), Some(org.as_str()));
    assert_eq!(allowed.header("remote-org-roles"), Some(""));
    assert_eq!(allowed.header("remote-client"), Some(bound.id.as_str()));
    let (_, _, live) =
        introspect(&app, Some((&reports.id, secret)), &format!("token={acme}")).await;
    assert_eq!(
        (live["sub"].as_str(), live["org_id"].as_str()),
        (Some(bound.id.as_str()), Some(org.as_str()))
    );
    // A person's password still passes, of course.
    assert_eq!(app.login("ann@example.com", PASSWORD).await.status, 200);
}

/// An access token the holder of `person` gave `client` (the code flow, consenting).
pub(crate) async fn given_to(app: &TestApp, person: &str, client: &Client) -> String {
    let (code, verifier) = code(app, person, client, "openid contacts:read").await;
    let (status, tokens) = exchange(app, client, &code, &verifier).await;
    assert_eq!(status, 200, "{tokens}");
    tokens["access_token"].as_str().unwrap().to_owned()
}

/// The provider on and loopback trusted, for a second instance.
fn trusting_provider() -> gatehouse::config::SettingsArgs {
    gatehouse::config::SettingsArgs {
        issuer: Some(ISSUER.into()),
        trusted_proxies: Some("127.0.0.1/32".into()),
        ..Default::default()
    }
}

async fn a_clients_rule_admits_exactly_the_clients_it_names(backend: Backend) {
    let app = provider_app(backend, trusting_provider()).await;
    let reports = service(&app, "Nightly reports");
    let other = service(&app, "Other service");
    let rules = format!(
        "[[rule]]\npaths = [\"/export\"]\npolicy = \"clients\"\nclients = [\"{}\"]\n\n\
         [[rule]]\npaths = [\"/admin\"]\npolicy = \"roles\"\nroles = [\"admin\"]\n\n\
         [[rule]]\npaths = [\"/secure\"]\npolicy = \"two_factor\"\n",
        reports.id
    );
    let (args, _dir) = with_rules(&rules);
    let guarded = app
        .twin_with(gatehouse::config::SettingsArgs {
            issuer: Some(ISSUER.into()),
            ..args
        })
        .await;
    let own = client_token(&app, &reports).await;
    let others = client_token(&app, &other).await;
    let (person, _) = app.logged_in_user("ann@example.com").await;
    let given = given_to(&app, &person, &reports).await;
    let at = |path: &'static str| {
        [
            ("x-forwarded-method", "GET"),
            ("x-forwarded-host", "app.example.com"),
            ("x-forwarded-uri", path),
        ]
    };
    let status = |token: String, path: &'static str| {
        let guarded = &guarded;
        async move {
            ask(guarded, FORWARD_AUTH, Some(&token), &at(path))
                .await
                .status
        }
    };
    // The named client's own token only: not another client's, not a person's, not even the
    // person's token given to the named client.
    assert_eq!(status(own.clone(), "/export/today").await, 200);
    assert_eq!(status(others.clone(), "/export").await, 403);
    assert_eq!(status(person.clone(), "/export").await, 403);
    assert_eq!(status(given.clone(), "/export").await, 403);
    // Without a rule a live token suffices, a client's too; the person's policies refuse it.
    assert_eq!(status(others.clone(), "/hello").await, 200);
    assert_eq!(status(own.clone(), "/admin").await, 403);
    assert_eq!(status(own.clone(), "/secure").await, 403);
    // Removing the client (on the other instance): 401 within 2 s.
    let removed = app.cli(&["clients", "remove", &reports.id], None);
    assert!(removed.status.success());
    within(SPREAD_DEADLINE, || async {
        status(own.clone(), "/export").await == 401
    })
    .await;
}

/// Whether introspection (by `by`) calls `token` active at `app`.
async fn active(app: &TestApp, by: &Client, token: &str) -> bool {
    let credentials = Some((by.id.as_str(), by.secret.as_deref().unwrap()));
    introspect(app, credentials, &format!("token={token}"))
        .await
        .2["active"]
        == true
}

/// RFC 7009 for a client's token for itself (issue 38, F13): revoked by its client, it is refused
/// at forward-auth and introspection on this instance at once and on another within 2 s; another
/// client's revocation of it changes nothing; the client's next token works.
async fn a_revoked_client_token_ends_on_every_instance(backend: Backend) {
    let app = provider_app(backend, trusting_provider()).await;
    let twin = app.twin_with(trusting_provider()).await;
    let reports = service(&app, "Nightly reports");
    let other = service(&app, "Other service");
    let own = client_token(&app, &reports).await;
    let keep = client_token(&app, &reports).await;
    let revoke = |by: &Client, token: &str| {
        let body = format!("token={token}");
        let (id, secret) = (by.id.clone(), by.secret.clone().unwrap());
        let app = &app;
        async move {
            app.client
                .post(app.url("/oauth2/revoke"))
                .header("content-type", "application/x-www-form-urlencoded")
                .basic_auth(id, Some(secret))
                .body(body)
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    };
    assert!(active(&twin, &reports, &own).await);
    // Another client's revocation: 200, and nothing ends.
    assert_eq!(revoke(&other, &own).await, 200);
    assert!(active(&app, &reports, &own).await);
    assert_eq!(revoke(&reports, &own).await, 200);
    assert!(!active(&app, &reports, &own).await);
    assert_eq!(ask(&app, FORWARD_AUTH, Some(&own), &[]).await.status, 401);
    within(SPREAD_DEADLINE, || async {
        !active(&twin, &reports, &own).await
            && ask(&twin, FORWARD_AUTH, Some(&own), &[]).await.status == 401
    })
    .await;
    // Only that token: another of the client's, and the next, work.
    assert!(active(&twin, &reports, &keep).await);
    let next = client_token(&app, &reports).await;
    assert_eq!(ask(&twin, FORWARD_AUTH, Some(&next), &[]).await.status, 200);
    // A restarted instance starts knowing it.
    let fresh = app.twin_with(trusting_provider()).await;
    assert_eq!(ask(&fresh, FORWARD_AUTH, Some(&own), &[]).await.status, 401);
}
