//! The client registry of the OpenID provider (docs/api.md §11) as an operator and an admin use
//! it: `gatehouse clients add` with every flag, the admin API with its checks, permissions and
//! audit trail, a removed client refused by another instance, public clients kept away from
//! introspection (discovery: `discovery.rs`).

use reqwest::Method;
use serde_json::{Value, json};

use crate::admin::admin;
use crate::guard::{two_factor_token, within};
use crate::helpers::{Backend, PASSWORD, SPREAD_DEADLINE, TestApp, both_backends, spawn_app};
use crate::introspection::introspect;

both_backends!(
    the_cli_adds_a_client_with_every_flag_and_lists_it,
    admins_manage_clients_through_the_api,
    bad_clients_are_refused_field_by_field,
    only_admins_manage_clients,
    a_removed_client_is_refused_by_another_instance,
    public_clients_cannot_introspect_and_confidential_ones_may_post_their_secret,
);

const CLIENTS: &str = "/api/v1/admin/clients";

fn cli_ok(app: &TestApp, args: &[&str]) -> String {
    let output = app.cli(args, None);
    assert!(
        output.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// A CLI call that must fail with one line on stderr; the line.
fn cli_refused(app: &TestApp, args: &[&str]) -> String {
    let output = app.cli(args, None);
    assert!(!output.status.success(), "{args:?} succeeded");
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    stderr
}

async fn the_cli_adds_a_client_with_every_flag_and_lists_it(backend: Backend) {
    let app = spawn_app(backend).await;
    let public = cli_ok(
        &app,
        &[
            "clients",
            "add",
            "Mobile App",
            "--public",
            "--first-party",
            "--redirect-uri",
            "com.example.app:/oauth2redirect",
            "--redirect-uri",
            "http://127.0.0.1/callback",
            "--post-logout-redirect-uri",
            "https://app.example.com/signed-out",
            "--grant",
            "authorization_code",
            "--grant",
            "refresh_token",
            "--scope",
            "openid",
            "--scope",
            "profile roles",
            "--backchannel-logout-uri",
            "https://app.example.com/backchannel",
            "--id-token-alg",
            "ES256",
            "--json",
        ],
    );
    let public: Value = serde_json::from_str(&public).unwrap();
    assert_eq!(public["clientSecret"], Value::Null);
    let public_id = public["clientId"].as_str().unwrap().to_owned();
    uuid::Uuid::parse_str(&public_id).unwrap();

    let confidential: Value = serde_json::from_str(&cli_ok(
        &app,
        &[
            "clients",
            "add",
            "Grafana",
            "--redirect-uri",
            "https://grafana.example.com/cb",
            "--json",
        ],
    ))
    .unwrap();
    let secret = confidential["clientSecret"].as_str().unwrap();
    assert!(secret.len() >= 43, "{secret}");
    // Without flags: §6's introspection client, as before.
    let plain = cli_ok(&app, &["clients", "add", "billing"]);
    assert!(
        plain.contains("client_id: ") && plain.contains("client_secret: "),
        "{plain}"
    );

    let listed: Value =
        serde_json::from_str(&cli_ok(&app, &["clients", "list", "--json"])).unwrap();
    let listed = listed.as_array().unwrap();
    assert_eq!(listed.len(), 3);
    let mobile = &listed[0];
    assert_eq!(
        *mobile,
        json!({
            "clientId": public_id,
            "name": "Mobile App",
            "type": "public",
            "firstParty": true,
            "redirectUris": ["com.example.app:/oauth2redirect", "http://127.0.0.1/callback"],
            "postLogoutRedirectUris": ["https://app.example.com/signed-out"],
            "grantTypes": ["authorization_code", "refresh_token"],
            "scopes": ["openid", "profile", "roles"],
            "backchannelLogoutUri": "https://app.example.com/backchannel",
            "idTokenSignedResponseAlg": "ES256",
            "createdAt": mobile["createdAt"],
            "orgId": null,
            "origin": "operator",
            "introspection": false,
            "pkceRequired": true,
            "dpopBoundAccessTokens": false,
            "previousSecretExpiresAt": null,
            "metadataUrl": null,
        })
    );
    // Only §6's plain client (neither grants nor redirect URIs) introspects unless told.
    let flags: Vec<&Value> = listed.iter().map(|c| &c["introspection"]).collect();
    assert_eq!(flags, [&json!(false), &json!(false), &json!(true)]);
    // The defaults of §11.
    assert_eq!(listed[1]["type"], "confidential");
    assert_eq!(listed[1]["firstParty"], false);
    assert_eq!(
        listed[1]["grantTypes"],
        json!(["authorization_code", "refresh_token"])
    );
    assert_eq!(
        listed[1]["scopes"],
        json!(["openid", "profile", "email", "offline_access"])
    );
    assert_eq!(listed[1]["idTokenSignedResponseAlg"], "RS256");
    assert_eq!(listed[1]["backchannelLogoutUri"], Value::Null);
    let text = cli_ok(&app, &["clients", "list"]);
    assert!(
        text.contains(&public_id) && text.contains("Mobile App") && text.contains("public"),
        "{text}"
    );
    assert!(!text.contains(secret));
    // A public client keeps no secret.
    let secretless: i64 = app
        .scalar("SELECT COUNT(*) FROM api_clients WHERE client_type = 'public' AND length(secret_hash) = 0")
        .await;
    assert_eq!(secretless, 1);

    // Bad flags: one line naming the flag, nothing added.
    for (args, flag) in [
        (
            vec!["--redirect-uri", "http://app.example.com/cb"],
            "--redirect-uri",
        ),
        (vec!["--public", "--grant", "client_credentials"], "--grant"),
        (vec!["--grant", "implicit"], "--grant"),
        (vec!["--grant", "authorization_code"], "--redirect-uri"),
        (vec!["--scope", "admin"], "--scope"),
        (vec!["--id-token-alg", "HS256"], "--id-token-alg"),
        (
            vec!["--backchannel-logout-uri", "http://app.example.com/b"],
            "--backchannel-logout-uri",
        ),
        (
            vec!["--post-logout-redirect-uri", "https://a.example/#x"],
            "--post-logout-redirect-uri",
        ),
    ] {
        let mut all = vec!["clients", "add", "bad"];
        all.extend(args.iter());
        let line = cli_refused(&app, &all);
        assert!(line.contains(flag), "{args:?}: {line}");
    }
    let count: i64 = app.scalar("SELECT COUNT(*) FROM api_clients").await;
    assert_eq!(count, 3);
}

async fn call(
    app: &TestApp,
    method: Method,
    path: &str,
    token: &str,
    body: Option<Value>,
) -> crate::helpers::Answer {
    app.call(method, path, Some(token), body).await
}

async fn admins_manage_clients_through_the_api(backend: Backend) {
    let app = spawn_app(backend).await;
    let root = admin(&app, "root@example.com").await;
    let created = call(
        &app,
        Method::POST,
        CLIENTS,
        &root.strong,
        Some(json!({
            "name": "Grafana",
            "redirectUris": ["https://grafana.example.com/login/generic_oauth"],
            "scopes": ["openid", "email", "roles"],
            "idTokenSignedResponseAlg": "EdDSA",
            "introspection": true,
        })),
    )
    .await;
    let created = created.data(201).clone();
    assert_eq!(created["introspection"], true);
    let id = created["clientId"].as_str().unwrap().to_owned();
    let secret = created["clientSecret"].as_str().unwrap().to_owned();
    assert_eq!(created["type"], "confidential");
    assert_eq!(
        created["grantTypes"],
        json!(["authorization_code", "refresh_token"])
    );
    assert_eq!(created["scopes"], json!(["openid", "email", "roles"]));
    assert_eq!(created["idTokenSignedResponseAlg"], "EdDSA");
    assert_eq!(created["postLogoutRedirectUris"], json!([]));
    // The secret works (the client may introspect: the operator said so), once shown; it is not
    // shown again.
    let (token, _) = app.logged_in_user("ann@example.com").await;
    let (status, _, answer) =
        introspect(&app, Some((&id, &secret)), &format!("token={token}")).await;
    assert_eq!((status, &answer["active"]), (200, &json!(true)));
    let path = format!("{CLIENTS}/{id}");
    let read = call(&app, Method::GET, &path, &root.strong, None).await;
    let read = read.data(200).clone();
    assert!(read.get("clientSecret").is_none());
    let mut expected = created.clone();
    expected.as_object_mut().unwrap().remove("clientSecret");
    assert_eq!(read, expected);
    let list = call(&app, Method::GET, CLIENTS, &root.strong, None).await;
    assert_eq!(list.data(200)["items"], json!([expected]));

    // PATCH: given fields change, the others stay; null removes the back-channel URI only.
    let patched = call(
        &app,
        Method::PATCH,
        &path,
        &root.strong,
        Some(json!({
            "name": "Grafana (ops)",
            "firstParty": true,
            "backchannelLogoutUri": "https://grafana.example.com/bcl",
            "grantTypes": ["authorization_code", "client_credentials"],
            "type": "confidential",
        })),
    )
    .await;
    let patched = patched.data(200).clone();
    assert_eq!(patched["name"], "Grafana (ops)");
    assert_eq!(patched["firstParty"], true);
    assert_eq!(
        patched["backchannelLogoutUri"],
        "https://grafana.example.com/bcl"
    );
    assert_eq!(
        patched["grantTypes"],
        json!(["authorization_code", "client_credentials"])
    );
    assert_eq!(patched["scopes"], read["scopes"]);
    assert_eq!(patched["createdAt"], read["createdAt"]);
    let cleared = call(
        &app,
        Method::PATCH,
        &path,
        &root.strong,
        Some(json!({ "backchannelLogoutUri": null })),
    )
    .await;
    assert_eq!(cleared.data(200)["backchannelLogoutUri"], Value::Null);
    // The secret is the same after changes.
    let (status, _, _) = introspect(&app, Some((&id, &secret)), &format!("token={token}")).await;
    assert_eq!(status, 200);
    // PATCH refusals: each names its field and changes nothing.
    for (body, field) in [
        (json!({}), "body"),
        (json!({ "type": "public" }), "type"),
        (json!({ "name": null }), "name"),
        (json!({ "redirectUris": [] }), "redirectUris"),
        (json!({ "scopes": ["openid", "admin"] }), "scopes"),
        (json!({ "firstParty": "yes" }), "firstParty"),
    ] {
        let answer = call(&app, Method::PATCH, &path, &root.strong, Some(body.clone())).await;
        let error = answer.error(400, "VALIDATION_ERROR");
        assert!(
            error["details"]["fields"].get(field).is_some(),
            "{body}: {error:#}"
        );
    }
    assert_eq!(
        call(&app, Method::GET, &path, &root.strong, None)
            .await
            .data(200)["name"],
        "Grafana (ops)"
    );

    // DELETE → {clientId}; then it is gone (404), and so is any id never issued or malformed.
    let deleted = call(&app, Method::DELETE, &path, &root.strong, None).await;
    assert_eq!(*deleted.data(200), json!({ "clientId": id }));
    let never = format!("{CLIENTS}/{}", uuid::Uuid::now_v7());
    let malformed = format!("{CLIENTS}/not-a-uuid");
    for (method, p) in [
        (Method::GET, &path),
        (Method::DELETE, &path),
        (Method::GET, &never),
        (Method::GET, &malformed),
        (Method::DELETE, &malformed),
    ] {
        call(&app, method, p, &root.strong, None)
            .await
            .error(404, "NOT_FOUND");
    }
    call(
        &app,
        Method::PATCH,
        &malformed,
        &root.strong,
        Some(json!({ "name": "x" })),
    )
    .await
    .error(404, "NOT_FOUND");

    // Every change is audited with the admin; reads too.
    let trail = call(
        &app,
        Method::GET,
        "/api/v1/admin/audit?limit=200",
        &root.strong,
        None,
    )
    .await;
    let events: Vec<(String, String)> = trail.data(200)["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["actorId"] == json!(root.id.to_string()))
        .map(|e| {
            (
                e["type"].as_str().unwrap().to_owned(),
                e["detail"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    let detail = format!("client={id} via=admin");
    for name in ["client.added", "client.changed", "client.removed"] {
        assert!(
            events.contains(&(name.to_owned(), detail.clone())),
            "{name}: {events:?}"
        );
    }
    assert_eq!(
        events.iter().filter(|(n, _)| n == "client.changed").count(),
        2,
        "{events:?}"
    );
    assert!(
        events.contains(&("admin.read".to_owned(), "clients".to_owned())),
        "{events:?}"
    );
}

async fn bad_clients_are_refused_field_by_field(backend: Backend) {
    let app = spawn_app(backend).await;
    let root = admin(&app, "root@example.com").await;
    let web = |extra: Value| {
        let mut body = json!({ "name": "App", "redirectUris": ["https://app.example.com/cb"] });
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        body
    };
    let long = "x".repeat(201);
    let table = [
        (
            json!({ "redirectUris": ["https://app.example.com/cb"] }),
            "name",
        ),
        (web(json!({ "name": "" })), "name"),
        (web(json!({ "name": long })), "name"),
        (web(json!({ "name": 5 })), "name"),
        (web(json!({ "type": "private" })), "type"),
        (web(json!({ "redirectUris": ["/cb"] })), "redirectUris"),
        (
            web(json!({ "redirectUris": ["https://app.example.com/cb#x"] })),
            "redirectUris",
        ),
        (
            web(json!({ "redirectUris": ["http://app.example.com/cb"] })),
            "redirectUris",
        ),
        (
            web(json!({ "redirectUris": ["https://user:pw@app.example.com/cb"] })),
            "redirectUris",
        ),
        (
            web(json!({ "redirectUris": ["javascript:alert(1)"] })),
            "redirectUris",
        ),
        (
            web(json!({ "redirectUris": ["myapp:/cb"] })),
            "redirectUris",
        ),
        (
            web(json!({ "redirectUris": "https://app.example.com/cb" })),
            "redirectUris",
        ),
        (
            web(json!({ "redirectUris": [], "grantTypes": ["authorization_code"] })),
            "redirectUris",
        ),
        (
            web(json!({ "postLogoutRedirectUris": ["http://10.0.0.1/bye"] })),
            "postLogoutRedirectUris",
        ),
        (web(json!({ "grantTypes": ["implicit"] })), "grantTypes"),
        (web(json!({ "grantTypes": [] })), "grantTypes"),
        (
            web(json!({ "type": "public", "grantTypes": ["client_credentials"] })),
            "grantTypes",
        ),
        (web(json!({ "scopes": ["openid", "admin"] })), "scopes"),
        (web(json!({ "scopes": ["OPENID"] })), "scopes"),
        (
            web(json!({ "backchannelLogoutUri": "http://app.example.com/bcl" })),
            "backchannelLogoutUri",
        ),
        (
            web(json!({ "backchannelLogoutUri": "com.example.app:/bcl" })),
            "backchannelLogoutUri",
        ),
        (
            web(json!({ "idTokenSignedResponseAlg": "HS256" })),
            "idTokenSignedResponseAlg",
        ),
        (
            web(json!({ "idTokenSignedResponseAlg": "none" })),
            "idTokenSignedResponseAlg",
        ),
        (web(json!({ "firstParty": "yes" })), "firstParty"),
    ];
    for (body, field) in table {
        let answer = call(
            &app,
            Method::POST,
            CLIENTS,
            &root.strong,
            Some(body.clone()),
        )
        .await;
        let error = answer.error(400, "VALIDATION_ERROR");
        assert!(
            error["details"]["fields"].get(field).is_some(),
            "{body}: {error:#}"
        );
    }
    let count: i64 = app.scalar("SELECT COUNT(*) FROM api_clients").await;
    assert_eq!(count, 0, "nothing was added");
    // What the rules allow: loopback http, localhost, a native scheme, a public SPA.
    let spa = call(&app, Method::POST, CLIENTS, &root.strong, Some(json!({
        "name": "SPA", "type": "public",
        "redirectUris": ["http://127.0.0.1:5173/cb", "http://[::1]/cb", "http://localhost:5173/cb", "com.example.app:/cb"],
    })))
    .await;
    let spa = spa.data(201);
    assert_eq!(spa["type"], "public");
    assert_eq!(spa["clientSecret"], Value::Null);
}

async fn only_admins_manage_clients(backend: Backend) {
    let app = spawn_app(backend).await;
    let root = admin(&app, "root@example.com").await;
    app.handle
        .add_user("eve@example.com", "Eve", PASSWORD)
        .await
        .unwrap();
    let eve_weak = app.login("eve@example.com", PASSWORD).await.data(200)["accessToken"]
        .as_str()
        .unwrap()
        .to_owned();
    let eve = two_factor_token(&app, &eve_weak, "eve@example.com").await;
    let made = call(
        &app,
        Method::POST,
        CLIENTS,
        &root.strong,
        Some(json!({ "name": "kept" })),
    )
    .await;
    let path = format!("{CLIENTS}/{}", made.data(201)["clientId"].as_str().unwrap());
    let body = json!({ "name": "taken" });
    for (method, p) in [
        (Method::GET, CLIENTS),
        (Method::POST, CLIENTS),
        (Method::GET, path.as_str()),
        (Method::PATCH, path.as_str()),
        (Method::DELETE, path.as_str()),
    ] {
        call(&app, method.clone(), p, &eve, Some(body.clone()))
            .await
            .error(403, "FORBIDDEN");
        call(&app, method.clone(), p, &root.weak, Some(body.clone()))
            .await
            .error(403, "TWO_FACTOR_REQUIRED");
        app.call(method, p, None, Some(body.clone()))
            .await
            .error(401, "UNAUTHENTICATED");
    }
    let list = call(&app, Method::GET, CLIENTS, &root.strong, None).await;
    let items = list.data(200)["items"].as_array().unwrap().clone();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["name"], "kept");
}

async fn a_removed_client_is_refused_by_another_instance(backend: Backend) {
    let a = spawn_app(backend).await;
    let b = a.twin().await;
    let root = admin(&a, "root@example.com").await;
    let made = call(
        &a,
        Method::POST,
        CLIENTS,
        &root.strong,
        Some(json!({ "name": "billing" })),
    )
    .await;
    let made = made.data(201).clone();
    let (id, secret) = (
        made["clientId"].as_str().unwrap(),
        made["clientSecret"].as_str().unwrap(),
    );
    let (token, _) = b.logged_in_user("ann@example.com").await;
    let form = format!("token={token}");
    // B reads the client, and believes it for up to a second.
    assert_eq!(introspect(&b, Some((id, secret)), &form).await.0, 200);
    call(
        &a,
        Method::DELETE,
        &format!("{CLIENTS}/{id}"),
        &root.strong,
        None,
    )
    .await
    .data(200);
    let took = within(SPREAD_DEADLINE, || async {
        introspect(&b, Some((id, secret)), &form).await.0 == 401
    })
    .await;
    eprintln!("a removed client was refused by the other instance after {took:?}");
}

async fn public_clients_cannot_introspect_and_confidential_ones_may_post_their_secret(
    backend: Backend,
) {
    let app = spawn_app(backend).await;
    let (token, _) = app.logged_in_user("ann@example.com").await;
    let public: Value = serde_json::from_str(&cli_ok(
        &app,
        &[
            "clients",
            "add",
            "spa",
            "--public",
            "--redirect-uri",
            "https://spa.example.com/cb",
            "--json",
        ],
    ))
    .unwrap();
    let public_id = public["clientId"].as_str().unwrap();
    for (credentials, body) in [
        (Some((public_id, "")), format!("token={token}")),
        (None, format!("token={token}&client_id={public_id}")),
        (
            None,
            format!("token={token}&client_id={public_id}&client_secret="),
        ),
    ] {
        let (status, _, answer) = introspect(&app, credentials, &body).await;
        assert_eq!(
            (status, answer),
            (401, json!({ "error": "invalid_client" })),
            "{body}"
        );
    }
    let (id, secret) = crate::introspection::add_client(&app, "billing");
    // client_secret_post.
    let (status, _, answer) = introspect(
        &app,
        None,
        &format!("token={token}&client_id={id}&client_secret={secret}"),
    )
    .await;
    assert_eq!((status, &answer["active"]), (200, &json!(true)));
    let (status, _, _) = introspect(
        &app,
        None,
        &format!("token={token}&client_id={id}&client_secret=wrong"),
    )
    .await;
    assert_eq!(status, 401);
    // Two methods at once: invalid_request (RFC 6749 §2.3).
    let (status, _, answer) = introspect(
        &app,
        Some((&id, &secret)),
        &format!("token={token}&client_id={id}&client_secret={secret}"),
    )
    .await;
    assert_eq!(
        (status, answer),
        (400, json!({ "error": "invalid_request" }))
    );
}
