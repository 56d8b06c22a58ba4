//! Organisation changes reach every instance within 2 s (docs/api.md §13), as revocations and
//! role changes do: a member removed, their roles changed or their organisation deleted through
//! one instance is seen by the other at contacts, forward-auth (asked directly, and through the
//! README's nginx recipe) and introspection.

use gatehouse::config::SettingsArgs;
use reqwest::Method;
use serde_json::json;

use crate::guard::{FORWARD_AUTH, ask, with_rules, within};
use crate::helpers::{Backend, SPREAD_DEADLINE, TestApp, both_backends, claims};
use crate::introspection::{add_client, introspect};
use crate::orgs::{call, create_org, join, switch};
use crate::proxies::{Kind, Proxy, installed};
use crate::smtp::{SmtpServer, app_with_smtp};
use crate::upstream::Upstream;

both_backends!(
    a_policy_of_two_factors_reaches_sessions_already_in_the_organisation,
    a_removed_member_is_refused_on_every_instance,
    a_role_change_is_seen_live_by_a_rule_on_another_instance,
    a_deleted_organisation_is_refused_on_every_instance,
);

const RULES: &str = r#"
[[rule]]
paths = ["/sales"]
policy = "org_roles"
org_roles = ["sales"]
"#;

/// Two instances on one database (A with mail), trusting loopback proxies, with `RULES`.
async fn two_instances(
    backend: Backend,
    smtp: &SmtpServer,
) -> (TestApp, TestApp, tempfile::TempDir) {
    let (args, dir) = with_rules(RULES);
    // Instances of one deployment share its public URL, and so the tokens' issuer.
    let args = SettingsArgs {
        public_url: Some(crate::smtp::PUBLIC_URL.into()),
        ..args
    };
    let a = app_with_smtp(backend, smtp, args.clone()).await;
    let b = a.twin_with(args).await;
    (a, b, dir)
}

/// Forward-auth on `app` for GET `uri`, as a proxy asks.
async fn forward_auth(app: &TestApp, token: &str, uri: &str) -> crate::guard::Decision {
    let headers = [
        ("x-forwarded-method", "GET"),
        ("x-forwarded-host", "app.example.com"),
        ("x-forwarded-uri", uri),
    ];
    ask(app, FORWARD_AUTH, Some(token), &headers).await
}

async fn a_removed_member_is_refused_on_every_instance(backend: Backend) {
    let smtp = SmtpServer::start();
    let (a, b, _rules) = two_instances(backend, &smtp).await;
    let (owner, _) = a.logged_in_user("owner@example.com").await;
    let org = create_org(&a, &owner, "acme").await;
    let (ann, ann_id) = join(&a, &smtp, &org, &owner, "ann@example.com", &["member"]).await;
    let (ann_in, _) = switch(&a, &ann, Some(&org)).await;
    let (client, secret) = add_client(&a, "crm");
    let nginx = installed(Kind::Nginx);
    let upstream = Upstream::start().await;
    let proxy = if nginx {
        Some(
            Proxy::start(
                Kind::Nginx,
                b.address.trim_start_matches("http://"),
                upstream.addr,
            )
            .await,
        )
    } else {
        None
    };

    // B knows the membership: contacts, forward-auth, introspection, nginx.
    b.get("/api/v1/crm/contacts", &ann_in).await.data(200);
    let allowed = forward_auth(&b, &ann_in, "/hello").await;
    assert_eq!(allowed.status, 200);
    assert_eq!(allowed.header("remote-org"), Some(org.as_str()));
    assert_eq!(allowed.header("remote-org-roles"), Some("member"));
    let plain = forward_auth(&b, &ann, "/hello").await;
    assert_eq!(
        (plain.header("remote-org"), plain.header("remote-org-roles")),
        (Some(""), Some(""))
    );
    let (_, _, answer) = introspect(&b, Some((&client, &secret)), &format!("token={ann_in}")).await;
    assert_eq!(
        (
            answer["active"].clone(),
            answer["org_id"].clone(),
            answer["org_roles"].clone()
        ),
        (json!(true), json!(org), json!(["member"]))
    );
    let (_, _, plain) = introspect(&b, Some((&client, &secret)), &format!("token={ann}")).await;
    assert!(
        plain.get("org_id").is_none() && plain.get("org_roles").is_none(),
        "{plain}"
    );
    if let Some(proxy) = &proxy {
        assert_eq!(
            proxy
                .get("/hello", Some(&ann_in), &[("Remote-Org", "forged")])
                .await,
            200
        );
        let seen = upstream.last().remote;
        assert_eq!(seen["remote-org"], vec![org.clone()]);
        assert_eq!(seen["remote-org-roles"], ["member".to_owned()]);
        assert_eq!(
            proxy
                .get("/hello", Some(&ann), &[("Remote-Org", "forged")])
                .await,
            200
        );
        assert!(
            !upstream.last().remote.contains_key("remote-org"),
            "nginx drops an empty one"
        );
    }

    // Removed through A: refused on B within 2 s, everywhere; the token without it still works.
    call(
        &a,
        Method::DELETE,
        &format!("/api/v1/orgs/{org}/members/{ann_id}"),
        &owner,
        None,
    )
    .await
    .data(200);
    let took = within(SPREAD_DEADLINE, || async {
        b.get("/api/v1/crm/contacts", &ann_in).await.status == 401
    })
    .await;
    eprintln!("a removal reached the other instance after {took:?}");
    b.get("/api/v1/crm/contacts", &ann_in)
        .await
        .error(401, "TOKEN_INVALID");
    assert_eq!(forward_auth(&b, &ann_in, "/hello").await.status, 401);
    let (_, _, answer) = introspect(&b, Some((&client, &secret)), &format!("token={ann_in}")).await;
    assert_eq!(answer, json!({ "active": false }));
    if let Some(proxy) = &proxy {
        assert_eq!(proxy.get("/hello", Some(&ann_in), &[]).await, 401);
    }
    b.get("/api/v1/crm/contacts", &ann).await.data(200);
    assert_eq!(forward_auth(&b, &ann, "/hello").await.status, 200);
}

async fn a_role_change_is_seen_live_by_a_rule_on_another_instance(backend: Backend) {
    let smtp = SmtpServer::start();
    let (a, b, _rules) = two_instances(backend, &smtp).await;
    let (owner, _) = a.logged_in_user("owner@example.com").await;
    let org = create_org(&a, &owner, "acme").await;
    let (ann, ann_id) = join(&a, &smtp, &org, &owner, "ann@example.com", &["member"]).await;
    let (ann_in, _) = switch(&a, &ann, Some(&org)).await;
    assert_eq!(claims(&ann_in)["org_roles"], json!(["member"]));
    assert_eq!(forward_auth(&b, &ann_in, "/sales/q4").await.status, 403);
    // Without an active organisation the rule admits no one.
    assert_eq!(forward_auth(&b, &ann, "/sales/q4").await.status, 403);

    call(
        &a,
        Method::PATCH,
        &format!("/api/v1/orgs/{org}/members/{ann_id}"),
        &owner,
        Some(json!({ "roles": ["sales", "member"] })),
    )
    .await
    .data(200);
    // The same token, issued before the change: the rule reads the roles of now.
    let took = within(SPREAD_DEADLINE, || async {
        forward_auth(&b, &ann_in, "/sales/q4").await.status == 200
    })
    .await;
    eprintln!("a role change reached a rule on the other instance after {took:?}");
    let allowed = forward_auth(&b, &ann_in, "/sales/q4").await;
    assert_eq!(allowed.header("remote-org-roles"), Some("member,sales"));
    assert_eq!(forward_auth(&b, &ann, "/sales/q4").await.status, 403);
}

async fn a_deleted_organisation_is_refused_on_every_instance(backend: Backend) {
    let smtp = SmtpServer::start();
    let (a, b, _rules) = two_instances(backend, &smtp).await;
    let (owner, _) = a.logged_in_user("owner@example.com").await;
    let org = create_org(&a, &owner, "acme").await;
    let (ann, _) = join(&a, &smtp, &org, &owner, "ann@example.com", &["member"]).await;
    let (ann_in, _) = switch(&a, &ann, Some(&org)).await;
    b.get("/api/v1/crm/contacts", &ann_in).await.data(200);
    call(
        &a,
        Method::DELETE,
        &format!("/api/v1/orgs/{org}"),
        &owner,
        None,
    )
    .await
    .data(200);
    within(SPREAD_DEADLINE, || async {
        b.get("/api/v1/crm/contacts", &ann_in).await.status == 401
    })
    .await;
    assert_eq!(forward_auth(&b, &ann_in, "/hello").await.status, 401);
    b.get("/api/v1/crm/contacts", &ann).await.data(200);
}

/// Issue 38, F7: an organisation that turns `requireTwoFactor` on refuses, on every instance
/// within 2 s, the sessions acting in it already without a second factor: the business API,
/// forward-auth and introspection answer as for a token naming an organisation its holder left,
/// and a refresh takes the organisation out of the session. A session with two factors goes on.
async fn a_policy_of_two_factors_reaches_sessions_already_in_the_organisation(backend: Backend) {
    let smtp = SmtpServer::start();
    let (a, b, _rules) = two_instances(backend, &smtp).await;
    let (owner, _) = a.logged_in_user("owner@example.com").await;
    let org = create_org(&a, &owner, "acme").await;
    let (ann, _) = join(&a, &smtp, &org, &owner, "ann@example.com", &["member"]).await;
    let (ann_in, ann_refresh) = switch(&a, &ann, Some(&org)).await;
    let (bob, _) = join(&a, &smtp, &org, &owner, "bob@example.com", &["member"]).await;
    let bob_strong = crate::guard::two_factor_token(&a, &bob, "bob@example.com").await;
    let (bob_in, _) = switch(&a, &bob_strong, Some(&org)).await;
    let (client, secret) = add_client(&a, "crm");
    b.get("/api/v1/crm/contacts", &ann_in).await.data(200);
    assert_eq!(forward_auth(&b, &ann_in, "/hello").await.status, 200);

    let owner_strong = crate::guard::two_factor_token(&a, &owner, "owner@example.com").await;
    call(
        &a,
        Method::PATCH,
        &format!("/api/v1/orgs/{org}"),
        &owner_strong,
        Some(json!({ "requireTwoFactor": true })),
    )
    .await
    .data(200);
    let took = within(SPREAD_DEADLINE, || async {
        b.get("/api/v1/crm/contacts", &ann_in).await.status == 401
    })
    .await;
    eprintln!("a password-only session was refused in the organisation after {took:?}");
    assert_eq!(forward_auth(&b, &ann_in, "/hello").await.status, 401);
    let (_, _, answer) = introspect(&b, Some((&client, &secret)), &format!("token={ann_in}")).await;
    assert_eq!(answer, json!({"active": false}));
    // Her own data, outside it, still hers; a refresh leaves the organisation.
    b.get("/api/v1/crm/contacts", &ann).await.data(200);
    let renewed = b
        .post(
            "/api/v1/auth/refresh",
            json!({ "refreshToken": ann_refresh }),
        )
        .await;
    let renewed = renewed.data(200)["accessToken"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        claims(&renewed).get("org_id").is_none(),
        "{}",
        claims(&renewed)
    );
    b.get("/api/v1/crm/contacts", &renewed).await.data(200);
    // A session with two factors acts in it as before.
    b.get("/api/v1/crm/contacts", &bob_in).await.data(200);
    let allowed = forward_auth(&b, &bob_in, "/hello").await;
    assert_eq!(allowed.header("remote-org"), Some(org.as_str()));
}
