//! A personal API key in use (docs/api.md §12): forward-auth describes its owner as they are now
//! with `Remote-Key` (directly, and through the nginx recipe when nginx is installed), access rules
//! judge the owner (never a second factor), introspection answers `token_type: "api_key"`, a key
//! for an organisation stops with the membership, and a key is refused at the token endpoint,
//! as a refresh token and at every call of the person's own. Its uses are audited per new address
//! and its creation and deletion are mailed.

use gatehouse::config::SettingsArgs;
use reqwest::Method;
use serde_json::json;

use crate::api_keys::{KEYS, new_key};
use crate::guard::{FORWARD_AUTH, ask, roles, with_rules, within};
use crate::helpers::{Backend, SPREAD_DEADLINE, TestApp, both_backends, claims};
use crate::introspection::{add_client, introspect};
use crate::oauth_helpers::{ISSUER, add_client as add_oauth_client, token as token_call};
use crate::orgs::{call, create_org, join};
use crate::proxies::{Kind, Proxy, installed};
use crate::smtp::{SmtpServer, app_with_smtp};
use crate::upstream::Upstream;

both_backends!(
    forward_auth_and_introspection_describe_the_keys_owner,
    a_key_is_refused_where_only_the_persons_own_sign_in_counts,
    a_key_for_an_organisation_ends_with_the_membership,
);

const RULES: &str = r#"
[[rule]]
paths = ["/admin"]
policy = "roles"
roles = ["ops"]

[[rule]]
paths = ["/secure"]
policy = "two_factor"
"#;

async fn forward_auth(app: &TestApp, key: &str, uri: &str) -> crate::guard::Decision {
    let headers = [
        ("x-forwarded-method", "GET"),
        ("x-forwarded-host", "app.example.com"),
        ("x-forwarded-uri", uri),
        // The client's address, as the trusted proxy saw it.
        ("x-forwarded-for", "198.51.100.7"),
    ];
    ask(app, FORWARD_AUTH, Some(key), &headers).await
}

async fn forward_auth_and_introspection_describe_the_keys_owner(backend: Backend) {
    let (args, _rules) = with_rules(RULES);
    let app = crate::helpers::spawn_app_with(backend, args).await;
    let (token, _) = app.logged_in_user("ann@example.com").await;
    let ann = claims(&token)["sub"].as_str().unwrap().to_owned();
    let body = json!({ "name": "reports", "scopes": ["contacts:read"], "expiresAt": null });
    let (id, key) = new_key(&app, &token, body).await;

    let allowed = forward_auth(&app, &key, "/hello").await;
    assert_eq!(allowed.status, 200);
    let expected = [
        ("remote-user", ann.as_str()),
        ("remote-email", "ann@example.com"),
        ("remote-email-verified", "true"),
        ("remote-name", "Test User"),
        ("remote-groups", ""),
        ("remote-session", ""),
        ("remote-org", ""),
        ("remote-org-roles", ""),
        ("remote-client", ""),
        ("remote-key", id.as_str()),
    ];
    for (name, value) in expected {
        assert_eq!(allowed.header(name), Some(value), "{name}");
    }
    // A person's own token: Remote-Key present and empty.
    let own = forward_auth(&app, &token, "/hello").await;
    assert_eq!(own.header("remote-key"), Some(""));

    // Rules judge the owner as they are now; a key never proves a second factor.
    assert_eq!(forward_auth(&app, &key, "/admin").await.status, 403);
    // Added by the CLI (another process): seen within the revocation delay.
    roles(&app, "ann@example.com", &["--add", "ops"]);
    within(SPREAD_DEADLINE, || async {
        forward_auth(&app, &key, "/admin").await.status == 200
    })
    .await;
    assert_eq!(
        forward_auth(&app, &key, "/admin")
            .await
            .header("remote-groups"),
        Some("ops")
    );
    assert_eq!(forward_auth(&app, &key, "/secure").await.status, 403);
    assert_eq!(
        forward_auth(&app, "ghk_nonsense", "/hello").await.status,
        401
    );

    // The first use from an address is audited once; lastUsedAt is written.
    assert_eq!(
        app.audit_count("api_key.new_address", Some(&format!("key={id}")))
            .await,
        1
    );
    let from: String = app
        .scalar("SELECT ip FROM audit_events WHERE event = 'api_key.new_address'")
        .await;
    assert_eq!(from, "198.51.100.7");
    let listed = app.get(KEYS, &token).await;
    assert!(listed.data(200)["items"][0]["lastUsedAt"].is_string());

    // Introspection: the owner, the key's scopes, and exp only when it expires.
    let (client, secret) = add_client(&app, "billing");
    let (status, _, live) =
        introspect(&app, Some((&client, &secret)), &format!("token={key}")).await;
    assert_eq!(status, 200);
    assert_eq!(
        live,
        json!({
            "active": true,
            "sub": ann,
            "username": "ann@example.com",
            "email_verified": true,
            "name": "Test User",
            "roles": ["ops"],
            "scope": "contacts:read",
            "token_type": "api_key",
        })
    );
    let soon = time::OffsetDateTime::now_utc() + time::Duration::hours(1);
    let soon = soon.replace_nanosecond(0).unwrap();
    let at = soon
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    let (_, expiring) = new_key(&app, &token, json!({ "name": "x", "expiresAt": at })).await;
    let (_, _, live) =
        introspect(&app, Some((&client, &secret)), &format!("token={expiring}")).await;
    assert_eq!(live["exp"], json!(soon.unix_timestamp()));
    let path = format!("{KEYS}/{id}");
    app.call(Method::DELETE, &path, Some(&token), None)
        .await
        .data(200);
    let (_, _, gone) = introspect(&app, Some((&client, &secret)), &format!("token={key}")).await;
    assert_eq!(gone, json!({ "active": false }));
    assert_eq!(forward_auth(&app, &key, "/hello").await.status, 401);

    // Through the nginx recipe (when nginx is here): the upstream sees the owner and the key.
    if !installed(Kind::Nginx) {
        return;
    }
    let (_, key) = new_key(&app, &token, json!({ "name": "via nginx" })).await;
    let upstream = Upstream::start().await;
    let proxy = Proxy::start(
        Kind::Nginx,
        app.address.trim_start_matches("http://"),
        upstream.addr,
    )
    .await;
    let forged = [("Remote-Key", "forged"), ("Remote-User", "forged")];
    assert_eq!(proxy.get("/hello", Some(&key), &forged).await, 200);
    let seen = upstream.last().remote;
    assert_eq!(seen["remote-user"], vec![ann.clone()]);
    assert_eq!(seen["remote-key"].len(), 1);
    assert!(seen["remote-key"][0].len() == 36 && seen["remote-key"][0] != "forged");
    assert_eq!(proxy.get("/hello", Some("ghk_nonsense"), &[]).await, 401);
}

async fn a_key_is_refused_where_only_the_persons_own_sign_in_counts(backend: Backend) {
    let app = crate::oauth_helpers::provider_app(backend, SettingsArgs::default()).await;
    let (token, _) = app.logged_in_user("ann@example.com").await;
    let (id, key) = new_key(&app, &token, json!({ "name": "script" })).await;
    let own_calls = [
        (Method::GET, "/api/v1/auth/me".to_owned()),
        (Method::GET, "/api/v1/auth/sessions".to_owned()),
        (Method::GET, KEYS.to_owned()),
        (Method::DELETE, format!("{KEYS}/{id}")),
        (Method::GET, "/api/v1/orgs".to_owned()),
        (Method::GET, "/api/v1/admin/users".to_owned()),
    ];
    for (method, path) in own_calls {
        let refused = app.call(method, &path, Some(&key), None).await;
        refused.error(403, "INSUFFICIENT_SCOPE");
        // (With the provider on, the challenge also names the resource metadata, §12.)
        let challenge = refused.header("www-authenticate").unwrap_or_default();
        assert!(
            challenge.starts_with(r#"Bearer error="insufficient_scope""#),
            "{path}: {challenge}"
        );
    }
    // A key cannot make keys, and neither can a token the person gave a client.
    let body = json!({ "name": "more", "password": crate::helpers::PASSWORD });
    app.call(Method::POST, KEYS, Some(&key), Some(body.clone()))
        .await
        .error(403, "INSUFFICIENT_SCOPE");
    let reports = crate::client_tokens::service(&app, "reports");
    let given = crate::client_tokens::given_to(&app, &token, &reports).await;
    app.call(Method::POST, KEYS, Some(&given), Some(body))
        .await
        .error(403, "INSUFFICIENT_SCOPE");
    // Never a refresh token, nor a grant at the token endpoint.
    app.post("/api/v1/auth/refresh", json!({ "refreshToken": key }))
        .await
        .error(401, "REFRESH_TOKEN_INVALID");
    let client = add_oauth_client(
        &app,
        "web",
        &["--grant", "authorization_code", "--grant", "refresh_token"],
    );
    let secret = client.secret.as_deref().unwrap();
    let pairs = [
        ("grant_type", "refresh_token"),
        ("refresh_token", key.as_str()),
    ];
    let (status, _, answer) = token_call(&app, Some((&client.id, secret)), &pairs).await;
    assert_eq!(
        (status, answer["error"].as_str()),
        (400, Some("invalid_grant"))
    );
    assert!(ISSUER.starts_with("https://"));
    // The key itself still works at the business API, and nothing above deleted it.
    app.get("/api/v1/crm/contacts", &key).await.data(200);
}

async fn a_key_for_an_organisation_ends_with_the_membership(backend: Backend) {
    let smtp = SmtpServer::start();
    let app = app_with_smtp(backend, &smtp, SettingsArgs::default()).await;
    let twin = app.twin().await;
    let (owner, _) = app.logged_in_user("owner@example.com").await;
    let org = create_org(&app, &owner, "acme").await;
    let (ann, ann_id) = join(&app, &smtp, &org, &owner, "ann@example.com", &["member"]).await;
    let (_, key) = new_key(&app, &ann, json!({ "name": "acme", "orgId": org })).await;
    smtp.wait_for_mail("ann@example.com", "an API key was created", 1)
        .await;
    // The organisation's contacts: the owner's token in the organisation sees what the key made.
    let contact = json!({ "fullName": "Shared Contact" });
    app.call(
        Method::POST,
        "/api/v1/crm/contacts",
        Some(&key),
        Some(contact),
    )
    .await
    .data(201);
    let (in_org, _) = crate::orgs::switch(&app, &owner, Some(&org)).await;
    let shared = app.get("/api/v1/crm/contacts", &in_org).await;
    assert_eq!(shared.data(200)["items"][0]["fullName"], "Shared Contact");
    twin.get("/api/v1/crm/contacts", &key).await.data(200);

    // Removed from the organisation: the key is refused on both instances within 2 s.
    let member = format!("/api/v1/orgs/{org}/members/{ann_id}");
    call(&app, Method::DELETE, &member, &owner, None)
        .await
        .data(200);
    for instance in [&app, &twin] {
        within(SPREAD_DEADLINE, || async {
            instance.get("/api/v1/crm/contacts", &key).await.status == 401
        })
        .await;
    }
    // Deleting a key is mailed too.
    let listed = app.get(KEYS, &ann).await;
    let id = listed.data(200)["items"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    app.call(Method::DELETE, &format!("{KEYS}/{id}"), Some(&ann), None)
        .await
        .data(200);
    let mails = smtp
        .wait_for_mail("ann@example.com", "an API key was deleted", 1)
        .await;
    assert!(!mails[0].text().contains("ghk_"));
}
