//! The operator's own business APIs and their scopes (docs/guide/resources.md, issue 45): an API
//! declared in the resources file or through the admin API is what clients, consent, API keys,
//! client credentials, tokens' `aud` and forward-auth rules use; the contacts example is one such
//! API, on unless turned off.

use gatehouse::config::SettingsArgs;
use reqwest::Method;
use serde_json::{Value, json};

use crate::admin::admin;
use crate::guard::{FORWARD_AUTH, ask, within};
use crate::helpers::{Backend, SPREAD_DEADLINE, TestApp, both_backends, claims};
use crate::introspection::introspect;
use std::process::Output;

use crate::oauth_helpers::{
    Client, ISSUER, REDIRECT, add_client, authorization, authorize, code, exchange, pkce,
    provider_app, token,
};

both_backends!(
    an_operators_api_is_what_clients_consent_and_tokens_speak_of,
    keys_and_client_tokens_meet_a_scopes_rule,
    apis_declared_through_the_admin_api_reach_every_instance,
    the_contacts_example_can_be_turned_off,
);

const ORDERS: &str = "https://orders.example.test";

const FILE: &str = r#"
[[resource]]
id = "orders"
name = "Orders API"
audience = "https://orders.example.test"
[resource.scopes]
"orders:read" = "See your orders"
"orders:write" = "Place and change orders for you"

[[resource]]
id = "reports"
name = "Reports"
scopes = { "reports:read" = "Read your reports" }
"#;

const RULES: &str = r#"
[[rule]]
paths = ["/reports"]
policy = "scopes"
scopes = ["reports:read"]
"#;

/// A provider app with `FILE` declared and `RULES` for forward-auth (over `args`); its folder.
async fn app(backend: Backend, args: SettingsArgs) -> (TestApp, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let resources = dir.path().join("resources.toml");
    std::fs::write(&resources, FILE).unwrap();
    let rules = dir.path().join("rules.toml");
    std::fs::write(&rules, RULES).unwrap();
    let app = provider_app(
        backend,
        SettingsArgs {
            resources: Some(resources.display().to_string()),
            access_rules: Some(rules.display().to_string()),
            trusted_proxies: Some("127.0.0.1/32".into()),
            ..args
        },
    )
    .await;
    (app, dir)
}

/// The CLI as the operator runs it: with the server's settings (its resources file; `env` more).
fn cli(app: &TestApp, dir: &tempfile::TempDir, env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut command = app.db.command();
    command.env("GATEHOUSE_RESOURCES", dir.path().join("resources.toml"));
    for (name, value) in env {
        command.env(name, value);
    }
    crate::helpers::run(command.args(args), None)
}

/// `gatehouse clients add NAME --redirect-uri REDIRECT --json FLAGS…`, as the operator runs it.
fn add(app: &TestApp, dir: &tempfile::TempDir, name: &str, flags: &[&str]) -> Client {
    let mut args = vec!["clients", "add", name, "--redirect-uri", REDIRECT, "--json"];
    args.extend_from_slice(flags);
    let output = cli(app, dir, &[], &args);
    assert!(output.status.success(), "{output:?}");
    let printed: Value = serde_json::from_slice(&output.stdout).unwrap();
    Client {
        id: printed["clientId"].as_str().unwrap().to_owned(),
        secret: printed["clientSecret"].as_str().map(str::to_owned),
    }
}

/// A designated resource server's credentials.
fn server(app: &TestApp) -> (String, String) {
    let c = add_client(app, "Resource server", &["--introspect"]);
    (c.id, c.secret.unwrap())
}

async fn an_operators_api_is_what_clients_consent_and_tokens_speak_of(backend: Backend) {
    let (app, dir) = app(backend, SettingsArgs::default()).await;
    let discovery = app.get_json("/.well-known/openid-configuration").await;
    let supported = discovery["scopes_supported"].as_array().unwrap().clone();
    for scope in [
        "openid",
        "contacts:read",
        "orders:read",
        "orders:write",
        "reports:read",
    ] {
        assert!(supported.contains(&json!(scope)), "{scope}: {supported:?}");
    }
    // The protected resource of GATEHOUSE_AUDIENCE lists the APIs without an audience of their own.
    let metadata = app.get_json("/.well-known/oauth-protected-resource").await;
    assert_eq!(
        metadata["scopes_supported"],
        json!(["contacts:read", "contacts:write", "reports:read"])
    );
    let listed = String::from_utf8(cli(&app, &dir, &[], &["resources", "list"]).stdout).unwrap();
    assert!(
        listed.contains("orders  settings  https://orders.example.test  Orders API")
            && listed.contains("orders:read  See your orders"),
        "{listed}"
    );

    // A client of the operator's API: registered for its scope, asked consent in its words.
    let client = add(&app, &dir, "Order desk", &["--scope", "openid orders:read"]);
    let unknown = cli(
        &app,
        &dir,
        &[],
        &["clients", "add", "X", "--scope", "orders:delete"],
    );
    assert!(
        String::from_utf8_lossy(&unknown.stderr).contains("\"orders:delete\" is not a scope"),
        "{unknown:?}"
    );
    let (person, _) = app.logged_in_user("ada@example.com").await;
    let (_, challenge) = pkce();
    let asked = authorize(
        &app,
        &person,
        authorization(&client, "openid orders:read", &challenge),
    )
    .await;
    let asked = asked.data(200).clone();
    assert_eq!(
        asked["scopeDetails"],
        json!([
            {"scope": "openid", "description": "Know who you are on this service", "resource": null},
            {"scope": "orders:read", "description": "See your orders", "resource": "Orders API"},
        ])
    );
    // Its tokens are the API's (RFC 8707), with or without `resource`.
    let (code, verifier) = code(&app, &person, &client, "openid orders:read").await;
    let (status, tokens) = exchange(&app, &client, &code, &verifier).await;
    assert_eq!(status, 200, "{tokens}");
    let access = tokens["access_token"].as_str().unwrap().to_owned();
    assert_eq!(claims(&access)["aud"], ORDERS);
    assert_eq!(claims(&access)["scope"], "openid orders:read");
    let (id, secret) = server(&app);
    let (_, _, seen) = introspect(&app, Some((&id, &secret)), &format!("token={access}")).await;
    assert_eq!(
        (&seen["active"], &seen["aud"]),
        (&json!(true), &json!(ORDERS))
    );
    // For another API's audience than its scopes': refused.
    let (_, challenge) = pkce();
    let mut elsewhere = authorization(&client, "openid orders:read", &challenge);
    elsewhere["resource"] = json!("gatehouse-api");
    let refused = authorize(&app, &person, elsewhere).await;
    let to = refused.data(200)["redirectTo"].as_str().unwrap().to_owned();
    assert_eq!(
        crate::oauth_helpers::param(&to, "error").as_deref(),
        Some("invalid_target"),
        "{to}"
    );

    // Client credentials: one API's token at a time.
    let machine = add(
        &app,
        &dir,
        "Nightly",
        &[
            "--grant",
            "client_credentials",
            "--scope",
            "orders:read reports:read",
        ],
    );
    let basic = (machine.id.as_str(), machine.secret.as_deref().unwrap());
    let grant = |scope: &'static str| {
        let app = &app;
        async move {
            let form = [("grant_type", "client_credentials"), ("scope", scope)];
            token(app, Some(basic), &form).await
        }
    };
    let (status, _, answer) = grant("orders:read").await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        claims(answer["access_token"].as_str().unwrap())["aud"],
        ORDERS
    );
    let (status, _, answer) = grant("reports:read").await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        claims(answer["access_token"].as_str().unwrap())["aud"],
        "gatehouse-api"
    );
    // Without `scope`, its two APIs' scopes would be two audiences' (both without one of their
    // own here are fine; orders has one): the client names which.
    let (status, _, answer) =
        token(&app, Some(basic), &[("grant_type", "client_credentials")]).await;
    assert_eq!(
        (status, &answer["error"]),
        (400, &json!("invalid_scope")),
        "{answer}"
    );
}

async fn keys_and_client_tokens_meet_a_scopes_rule(backend: Backend) {
    let (app, dir) = app(backend, SettingsArgs::default()).await;
    let (person, _) = app.logged_in_user("ada@example.com").await;
    let reports = [
        ("x-forwarded-method", "GET"),
        ("x-forwarded-host", "app.example.test"),
        ("x-forwarded-uri", "/reports/weekly"),
    ];
    let (_, reader) = crate::api_keys::new_key(
        &app,
        &person,
        json!({"name": "reader", "scopes": ["reports:read"]}),
    )
    .await;
    let (_, other) = crate::api_keys::new_key(
        &app,
        &person,
        json!({"name": "other", "scopes": ["contacts:read"]}),
    )
    .await;
    assert_eq!(
        ask(&app, FORWARD_AUTH, Some(&reader), &reports)
            .await
            .status,
        200
    );
    let refused = ask(&app, FORWARD_AUTH, Some(&other), &reports).await;
    assert_eq!(refused.status, 403);
    assert_eq!(
        refused.header("www-authenticate"),
        Some(r#"Bearer error="insufficient_scope", scope="reports:read""#)
    );
    // The person's own sign-in holds every scope.
    assert_eq!(
        ask(&app, FORWARD_AUTH, Some(&person), &reports)
            .await
            .status,
        200
    );
    // A key's scopes are the business APIs' only, and all of them when not named.
    let made =
        crate::api_keys::make_key(&app, &person, json!({"name": "x", "scopes": ["openid"]})).await;
    assert!(made.error(400, "VALIDATION_ERROR")["details"]["fields"]["scopes"].is_string());
    let all = crate::api_keys::make_key(&app, &person, json!({"name": "all"})).await;
    assert_eq!(
        all.data(201)["scopes"],
        json!([
            "contacts:read",
            "contacts:write",
            "orders:read",
            "orders:write",
            "reports:read"
        ])
    );
    // A client's token for itself with the scope passes; one without it is refused.
    let machine = add(
        &app,
        &dir,
        "Nightly",
        &[
            "--grant",
            "client_credentials",
            "--scope",
            "reports:read contacts:read",
        ],
    );
    let basic = (machine.id.as_str(), machine.secret.as_deref().unwrap());
    for (scope, status) in [("reports:read", 200), ("contacts:read", 403)] {
        let (_, _, answer) = token(
            &app,
            Some(basic),
            &[("grant_type", "client_credentials"), ("scope", scope)],
        )
        .await;
        let cc = answer["access_token"].as_str().unwrap();
        assert_eq!(
            ask(&app, FORWARD_AUTH, Some(cc), &reports).await.status,
            status,
            "{scope}"
        );
    }
}

async fn apis_declared_through_the_admin_api_reach_every_instance(backend: Backend) {
    let (app, dir) = app(backend, SettingsArgs::default()).await;
    let twin = app
        .twin_with(SettingsArgs {
            issuer: Some(ISSUER.into()),
            ..SettingsArgs::default()
        })
        .await;
    let root = admin(&app, "root@example.com").await;
    let call = |method: Method, path: String, body: Option<Value>| {
        let app = &app;
        let token = root.strong.clone();
        async move { app.call(method, &path, Some(&token), body).await }
    };
    let made = call(
        Method::POST,
        "/api/v1/admin/resources".into(),
        Some(json!({
            "id": "billing",
            "name": "Billing API",
            "audience": "https://billing.example.test",
            "scopes": {"billing:read": "See your invoices"},
        })),
    )
    .await;
    assert_eq!(made.data(201)["origin"], "operator");
    assert_eq!(app.audit_count("resource.added", None).await, 1);
    // Taken names and audiences, the settings' APIs, bad fields: each refused in words.
    for (body, code, status) in [
        (
            json!({"id": "billing", "name": "B", "scopes": {"x:y": "d"}}),
            "CONFLICT",
            409,
        ),
        (
            json!({"id": "b2", "name": "B", "scopes": {"orders:read": "d"}}),
            "VALIDATION_ERROR",
            400,
        ),
        (
            json!({"id": "b3", "name": "B", "audience": "gatehouse-api", "scopes": {"x:y": "d"}}),
            "VALIDATION_ERROR",
            400,
        ),
        (
            json!({"id": "B 4", "name": "B", "scopes": {"x:y": "d"}}),
            "VALIDATION_ERROR",
            400,
        ),
        (
            json!({"id": "b5", "name": "B", "scopes": {}}),
            "VALIDATION_ERROR",
            400,
        ),
    ] {
        let answer = call(
            Method::POST,
            "/api/v1/admin/resources".into(),
            Some(body.clone()),
        )
        .await;
        answer.error(status, code);
    }
    call(
        Method::PATCH,
        "/api/v1/admin/resources/orders".into(),
        Some(json!({"name": "Mine now"})),
    )
    .await
    .error(409, "CONFLICT");

    // The other instance takes the new API's scope within 2 s.
    let client = add_client(&app, "Invoices", &["--scope", "openid billing:read"]);
    let (person, _) = twin.logged_in_user("ada@example.com").await;
    let (_, challenge) = pkce();
    within(SPREAD_DEADLINE, || async {
        let asked = authorize(
            &twin,
            &person,
            authorization(&client, "openid billing:read", &challenge),
        )
        .await;
        asked.status == 200 && asked.body["data"]["consentRequired"] == true
    })
    .await;
    let (code, verifier) = code(&twin, &person, &client, "openid billing:read").await;
    let (_, tokens) = exchange(&twin, &client, &code, &verifier).await;
    let access = tokens["access_token"].as_str().unwrap().to_owned();
    assert_eq!(claims(&access)["aud"], "https://billing.example.test");
    // Introspection at the first instance knows the audience.
    let (id, secret) = server(&app);
    let (_, _, seen) = introspect(&app, Some((&id, &secret)), &format!("token={access}")).await;
    assert_eq!(seen["active"], true, "{seen}");

    // A changed description reaches the consent screen; a removed API's scope is no scope.
    call(
        Method::PATCH,
        "/api/v1/admin/resources/billing".into(),
        Some(json!({"scopes": {"billing:read": "See and download your invoices"}})),
    )
    .await
    .data(200);
    call(
        Method::DELETE,
        "/api/v1/admin/resources/billing".into(),
        None,
    )
    .await
    .data(200);
    within(SPREAD_DEADLINE, || async {
        let (_, challenge) = pkce();
        let asked = authorize(
            &twin,
            &person,
            authorization(&client, "openid billing:read", &challenge),
        )
        .await;
        asked.body["data"]["redirectTo"]
            .as_str()
            .is_some_and(|to| to.contains("error=invalid_scope"))
    })
    .await;
    let listed = cli(&app, &dir, &[], &["resources", "list", "--json"]);
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let ids: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["contacts", "orders", "reports"]);
}

async fn the_contacts_example_can_be_turned_off(backend: Backend) {
    let (app, dir) = app(
        backend,
        SettingsArgs {
            contacts_api: Some("off".into()),
            ..SettingsArgs::default()
        },
    )
    .await;
    let (person, _) = app.logged_in_user("ada@example.com").await;
    app.get("/api/v1/crm/contacts", &person)
        .await
        .error(404, "NOT_FOUND");
    let discovery = app.get_json("/.well-known/openid-configuration").await;
    assert!(
        !discovery["scopes_supported"]
            .as_array()
            .unwrap()
            .contains(&json!("contacts:read"))
    );
    let off = [("GATEHOUSE_CONTACTS_API", "off")];
    let refused = cli(
        &app,
        &dir,
        &off,
        &["clients", "add", "X", "--scope", "contacts:read"],
    );
    assert!(!refused.status.success());
    // The operator's APIs are what a key may do.
    let all = crate::api_keys::make_key(&app, &person, json!({"name": "all"})).await;
    assert_eq!(
        all.data(201)["scopes"],
        json!(["orders:read", "orders:write", "reports:read"])
    );
}
