//! Organisations through the administration API (docs/api.md §13, §8): listed and searched a page
//! at a time, read, their members listed, deleted; and the audit trail's organisation events,
//! filtered by `org`.

use reqwest::Method;
use serde_json::json;

use crate::admin::admin;
use crate::helpers::{Backend, both_backends, claims};
use crate::orgs::{call, create_org, join, switch};
use crate::smtp::{SmtpServer, app_with_smtp};

both_backends!(
    admins_list_read_and_delete_organisations,
    organisation_events_carry_their_org
);

async fn admins_list_read_and_delete_organisations(backend: Backend) {
    let smtp = SmtpServer::start();
    let app = app_with_smtp(backend, &smtp, Default::default()).await;
    let root = admin(&app, "root@example.com").await;
    let (ann, _) = app.logged_in_user("ann@example.com").await;
    let mut ids = Vec::new();
    for slug in ["acme", "acme-labs", "globex", "initech", "umbrella"] {
        ids.push(create_org(&app, &ann, slug).await);
    }
    // Not for members, nor for admins without a second factor.
    call(&app, Method::GET, "/api/v1/admin/orgs", &ann, None)
        .await
        .error(403, "FORBIDDEN");
    call(&app, Method::GET, "/api/v1/admin/orgs", &root.weak, None)
        .await
        .error(403, "TWO_FACTOR_REQUIRED");

    // Every organisation, a page at a time, and by substring of the name or slug.
    let mut seen = Vec::new();
    let mut cursor = String::new();
    loop {
        let page = call(
            &app,
            Method::GET,
            &format!("/api/v1/admin/orgs?limit=2&cursor={cursor}"),
            &root.strong,
            None,
        )
        .await;
        let page = page.data(200).clone();
        seen.extend(
            page["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|o| o["id"].as_str().unwrap().to_owned()),
        );
        match page["nextCursor"].as_str() {
            Some(next) => cursor = next.to_owned(),
            None => break,
        }
    }
    seen.sort();
    let mut all = ids.clone();
    all.sort();
    assert_eq!(seen, all);
    let found = call(
        &app,
        Method::GET,
        "/api/v1/admin/orgs?q=ACME",
        &root.strong,
        None,
    )
    .await;
    let slugs: Vec<&str> = found.data(200)["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["slug"].as_str().unwrap())
        .collect();
    assert_eq!(slugs.len(), 2, "{slugs:?}");
    call(
        &app,
        Method::GET,
        "/api/v1/admin/orgs?q=%25",
        &root.strong,
        None,
    )
    .await
    .data(200)["items"]
        .as_array()
        .unwrap()
        .is_empty()
        .then_some(())
        .expect("a literal %, not a wildcard");
    call(
        &app,
        Method::GET,
        "/api/v1/admin/orgs?cursor=garbage",
        &root.strong,
        None,
    )
    .await
    .error(400, "VALIDATION_ERROR");

    // One, its members, and deleting it: its members' tokens naming it are refused.
    let org = &ids[0];
    let one = call(
        &app,
        Method::GET,
        &format!("/api/v1/admin/orgs/{org}"),
        &root.strong,
        None,
    )
    .await;
    assert_eq!(one.data(200)["slug"], "acme");
    let (bob, _) = join(&app, &smtp, org, &ann, "bob@example.com", &["member"]).await;
    let members = call(
        &app,
        Method::GET,
        &format!("/api/v1/admin/orgs/{org}/members"),
        &root.strong,
        None,
    )
    .await;
    let emails: Vec<&str> = members.data(200)["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["email"].as_str().unwrap())
        .collect();
    assert_eq!(emails.len(), 2);
    assert!(emails.contains(&"bob@example.com"));
    let (bob_in, _) = switch(&app, &bob, Some(org)).await;
    let deleted = call(
        &app,
        Method::DELETE,
        &format!("/api/v1/admin/orgs/{org}"),
        &root.strong,
        None,
    )
    .await;
    assert_eq!(deleted.data(200)["id"], org.as_str());
    app.get("/api/v1/crm/contacts", &bob_in)
        .await
        .error(401, "TOKEN_INVALID");
    for method in [Method::GET, Method::DELETE] {
        call(
            &app,
            method,
            &format!("/api/v1/admin/orgs/{org}"),
            &root.strong,
            None,
        )
        .await
        .error(404, "NOT_FOUND");
    }
    call(
        &app,
        Method::GET,
        &format!("/api/v1/admin/orgs/{org}/members"),
        &root.strong,
        None,
    )
    .await
    .error(404, "NOT_FOUND");
    assert_eq!(app.audit_count("org.deleted", Some("via=admin")).await, 1);
}

async fn organisation_events_carry_their_org(backend: Backend) {
    let smtp = SmtpServer::start();
    let app = app_with_smtp(backend, &smtp, Default::default()).await;
    let root = admin(&app, "root@example.com").await;
    let (ann, _) = app.logged_in_user("ann@example.com").await;
    let acme = create_org(&app, &ann, "acme").await;
    let other = create_org(&app, &ann, "other").await;
    let (_, bob_id) = join(&app, &smtp, &acme, &ann, "bob@example.com", &["member"]).await;
    call(
        &app,
        Method::PATCH,
        &format!("/api/v1/orgs/{acme}/members/{bob_id}"),
        &ann,
        Some(json!({ "roles": ["admin"] })),
    )
    .await
    .data(200);

    let trail = call(
        &app,
        Method::GET,
        &format!("/api/v1/admin/audit?org={acme}"),
        &root.strong,
        None,
    )
    .await;
    let events = trail.data(200)["items"].as_array().unwrap().clone();
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "org.roles_changed",
            "org.joined",
            "org.invited",
            "org.created"
        ],
        "{events:#?}"
    );
    assert!(events.iter().all(|e| e["orgId"] == acme.as_str()));
    // The change names whom it concerned and who made it.
    let ann_id = claims(&ann)["sub"].clone();
    assert_eq!(
        (
            &events[0]["userId"],
            &events[0]["actorId"],
            &events[0]["detail"]
        ),
        (&json!(bob_id), &ann_id, &json!("roles=admin"))
    );
    let trail = call(
        &app,
        Method::GET,
        &format!("/api/v1/admin/audit?org={other}"),
        &root.strong,
        None,
    )
    .await;
    assert_eq!(trail.data(200)["items"].as_array().unwrap().len(), 1);
    call(
        &app,
        Method::GET,
        "/api/v1/admin/audit?org=nope",
        &root.strong,
        None,
    )
    .await
    .error(400, "VALIDATION_ERROR");
}
