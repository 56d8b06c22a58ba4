//! Organisations (docs/api.md §13) through the API: who may do what (a table of every call ×
//! non-member, member, admin and owner), the last-owner rule, invitations by mail for existing
//! and new accounts, and the active organisation (switching without a new login, kept by
//! refresh, dropped once the membership ends). `orgs_live.rs` has the multi-instance checks.

use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{Answer, Backend, PASSWORD, TestApp, both_backends, claims};
use crate::smtp::{SmtpServer, app_with_smtp};

both_backends!(
    each_call_is_allowed_to_the_roles_the_contract_names,
    an_organisation_always_keeps_an_owner,
    invitations_reach_existing_and_new_accounts,
    an_invitation_lives_as_long_as_the_invitation_setting_says,
    switching_organisations_needs_no_new_login,
    a_deleted_organisation_leaves_no_token_naming_it,
    organisations_are_validated_and_slugs_unique,
);

/// `GATEHOUSE_INVITE_TOKEN_TTL` is the lifetime of every invitation link (docs/guide/settings.md),
/// an organisation's too: listed, mailed and judged with it.
async fn an_invitation_lives_as_long_as_the_invitation_setting_says(backend: Backend) {
    let smtp = SmtpServer::start();
    let args = gatehouse::config::SettingsArgs {
        invite_token_ttl: Some("2h".into()),
        ..Default::default()
    };
    let app = app_with_smtp(backend, &smtp, args).await;
    let (owner, _) = app.logged_in_user("owner@example.com").await;
    let org = create_org(&app, &owner, "acme").await;
    let (ann, _) = app.logged_in_user("ann@example.com").await;
    let before = app.clock().now_ms();
    let token = invite(&app, &smtp, &org, &owner, "ann@example.com", &["member"]).await;
    let after = app.clock().now_ms();
    let listed = call(
        &app,
        Method::GET,
        &format!("/api/v1/orgs/{org}/invitations"),
        &owner,
        None,
    )
    .await;
    let item = &listed.data(200)["items"][0];
    let expires = time_ms(&item["expiresAt"]);
    let two_hours = 2 * 3_600_000;
    assert!(
        (before + two_hours..=after + two_hours).contains(&expires),
        "{item}"
    );
    let mail = &smtp
        .wait_for_mail("ann@example.com", "You are invited to Org acme", 1)
        .await[0];
    assert!(mail.text().contains("within 2 hours"), "{}", mail.text());
    // Past its lifetime the link is dead, as any expired link is.
    app.clock()
        .advance(std::time::Duration::from_secs(2 * 3600 + 1));
    call(
        &app,
        Method::POST,
        "/api/v1/orgs/invitations/accept",
        &ann,
        Some(json!({ "token": token })),
    )
    .await
    .error(400, "LINK_INVALID");
}

/// An RFC 3339 time of the API, in milliseconds since the epoch.
fn time_ms(value: &Value) -> i64 {
    let text = value.as_str().unwrap_or_else(|| panic!("a time: {value}"));
    let parsed = time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339)
        .unwrap_or_else(|e| panic!("{text}: {e}"));
    (parsed.unix_timestamp_nanos() / 1_000_000) as i64
}

pub async fn call(
    app: &TestApp,
    method: Method,
    path: &str,
    token: &str,
    body: Option<Value>,
) -> Answer {
    app.call(method, path, Some(token), body).await
}

/// `POST /orgs` by the holder of `token`: the organisation's id.
pub async fn create_org(app: &TestApp, token: &str, slug: &str) -> String {
    let answer = call(
        app,
        Method::POST,
        "/api/v1/orgs",
        token,
        Some(json!({ "name": format!("Org {slug}"), "slug": slug })),
    )
    .await;
    answer.data(201)["id"].as_str().unwrap().to_owned()
}

/// Invites `email` with `roles` (by the holder of `by`) and returns the mailed token.
pub async fn invite(
    app: &TestApp,
    smtp: &SmtpServer,
    org: &str,
    by: &str,
    email: &str,
    roles: &[&str],
) -> String {
    const SUBJECT: &str = "You are invited to";
    let tokens = |mails: Vec<crate::smtp::Mail>| -> Vec<String> {
        mails
            .iter()
            .filter(|m| m.to().contains(email) && m.subject().contains(SUBJECT))
            .map(|m| m.token("/accept-invitation"))
            .collect()
    };
    // The links mailed to the address before; the new one is the link not among them (mail is
    // delivered at least once, so an earlier invitation may arrive again meanwhile).
    let seen = tokens(smtp.messages());
    call(
        app,
        Method::POST,
        &format!("/api/v1/orgs/{org}/invitations"),
        by,
        Some(json!({ "email": email, "roles": roles })),
    )
    .await
    .data(201);
    let mut wanted = seen.len() + 1;
    loop {
        let mails = smtp.wait_for_mail(email, SUBJECT, wanted).await;
        if let Some(new) = tokens(mails).into_iter().find(|t| !seen.contains(t)) {
            return new;
        }
        wanted += 1;
    }
}

/// Makes `email` (a new account, logged in) a member with `roles`: its access token and id.
pub async fn join(
    app: &TestApp,
    smtp: &SmtpServer,
    org: &str,
    by: &str,
    email: &str,
    roles: &[&str],
) -> (String, String) {
    let (token, _) = app.logged_in_user(email).await;
    let invitation = invite(app, smtp, org, by, email, roles).await;
    call(
        app,
        Method::POST,
        "/api/v1/orgs/invitations/accept",
        &token,
        Some(json!({ "token": invitation })),
    )
    .await
    .data(200);
    let id = claims(&token)["sub"].as_str().unwrap().to_owned();
    (token, id)
}

/// `POST /auth/org`: the token set's (access, refresh) tokens.
pub async fn switch(app: &TestApp, token: &str, org: Option<&str>) -> (String, String) {
    let answer = call(
        app,
        Method::POST,
        "/api/v1/auth/org",
        token,
        Some(json!({ "orgId": org })),
    )
    .await;
    let data = answer.data(200);
    (
        data["accessToken"].as_str().unwrap().to_owned(),
        data["refreshToken"].as_str().unwrap().to_owned(),
    )
}

/// The callers of the permission table, in its columns' order.
const CALLERS: [&str; 4] = ["non-member", "member", "admin", "owner"];

/// Each call of §13 and the status each caller gets: non-member, member, admin, owner.
const TABLE: &[(&str, [u16; 4])] = &[
    ("GET /orgs/{id}", [404, 200, 200, 200]),
    ("PATCH /orgs/{id}", [404, 403, 200, 200]),
    ("GET /orgs/{id}/members", [404, 200, 200, 200]),
    (
        "PATCH /orgs/{id}/members/{member} (roles)",
        [404, 403, 200, 200],
    ),
    (
        "PATCH /orgs/{id}/members/{member} (give owner)",
        [404, 403, 403, 200],
    ),
    (
        "PATCH /orgs/{id}/members/{owner} (take owner)",
        [404, 403, 403, 200],
    ),
    ("DELETE /orgs/{id}/members/{member}", [404, 403, 200, 200]),
    ("DELETE /orgs/{id}/members/{owner}", [404, 403, 403, 200]),
    (
        "DELETE /orgs/{id}/members/{self} (leave)",
        [404, 200, 200, 200],
    ),
    ("POST /orgs/{id}/invitations", [404, 403, 201, 201]),
    ("POST /orgs/{id}/invitations (owner)", [404, 403, 403, 201]),
    ("GET /orgs/{id}/invitations", [404, 403, 200, 200]),
    (
        "DELETE /orgs/{id}/invitations/{invitationId}",
        [404, 403, 200, 200],
    ),
    ("POST /auth/org", [404, 200, 200, 200]),
    ("DELETE /orgs/{id}", [404, 403, 403, 200]),
];

async fn each_call_is_allowed_to_the_roles_the_contract_names(backend: Backend) {
    let smtp = SmtpServer::start();
    let app = app_with_smtp(backend, &smtp, Default::default()).await;
    // The same people in a fresh organisation per cell, so that no cell depends on another's
    // effect: its owner, a second owner, an admin, a member, a member acted on, an outsider.
    let mut people = Vec::new();
    for name in ["owner", "owner2", "admin", "member", "target", "outsider"] {
        let (token, _) = app.logged_in_user(&format!("{name}@example.com")).await;
        let id = claims(&token)["sub"].as_str().unwrap().to_owned();
        people.push((token, id));
    }
    let [owner, owner2, admin, member, target, outsider] = &people[..] else {
        unreachable!()
    };
    let mut n = 0;
    for (call_name, expected) in TABLE {
        for (column, caller_name) in CALLERS.iter().enumerate() {
            n += 1;
            let org = create_org(&app, &owner.0, &format!("org-{n}")).await;
            for (who, email, roles) in [
                (owner2, "owner2", "owner"),
                (admin, "admin", "admin"),
                (member, "member", "member"),
                (target, "target", "member"),
            ] {
                let email = format!("{email}@example.com");
                let invitation = invite(&app, &smtp, &org, &owner.0, &email, &[roles]).await;
                call(
                    &app,
                    Method::POST,
                    "/api/v1/orgs/invitations/accept",
                    &who.0,
                    Some(json!({ "token": invitation })),
                )
                .await
                .data(200);
            }
            let caller = [outsider, member, admin, owner][column];
            let ids = Ids {
                org: &org,
                owner: &owner.0,
                target: &target.1,
                owner2: &owner2.1,
                me: &caller.1,
            };
            let status = attempt(&app, call_name, &ids, &caller.0, n).await;
            assert_eq!(
                status, expected[column],
                "{call_name} by a {caller_name}: expected {}, got {status}",
                expected[column]
            );
        }
    }
}

/// The organisation of a cell of the table, and the people its calls name.
#[derive(Clone, Copy)]
struct Ids<'a> {
    org: &'a str,
    /// The owner's token (who sets up what a call needs).
    owner: &'a str,
    target: &'a str,
    owner2: &'a str,
    me: &'a str,
}

/// Makes the table's call `name` as `caller`; the status.
async fn attempt(app: &TestApp, name: &str, ids: &Ids<'_>, caller: &str, n: usize) -> u16 {
    let Ids {
        org,
        owner,
        target,
        owner2,
        me,
    } = *ids;
    let base = format!("/api/v1/orgs/{org}");
    let (method, path, body) = match name {
        "GET /orgs/{id}" => (Method::GET, base.clone(), None),
        "PATCH /orgs/{id}" => (
            Method::PATCH,
            base.clone(),
            Some(json!({ "name": "Renamed" })),
        ),
        "GET /orgs/{id}/members" => (Method::GET, format!("{base}/members"), None),
        "PATCH /orgs/{id}/members/{member} (roles)" => (
            Method::PATCH,
            format!("{base}/members/{target}"),
            Some(json!({ "roles": ["member", "sales"] })),
        ),
        "PATCH /orgs/{id}/members/{member} (give owner)" => (
            Method::PATCH,
            format!("{base}/members/{target}"),
            Some(json!({ "roles": ["owner"] })),
        ),
        "PATCH /orgs/{id}/members/{owner} (take owner)" => (
            Method::PATCH,
            format!("{base}/members/{owner2}"),
            Some(json!({ "roles": ["member"] })),
        ),
        "DELETE /orgs/{id}/members/{member}" => {
            (Method::DELETE, format!("{base}/members/{target}"), None)
        }
        "DELETE /orgs/{id}/members/{owner}" => {
            (Method::DELETE, format!("{base}/members/{owner2}"), None)
        }
        "DELETE /orgs/{id}/members/{self} (leave)" => {
            (Method::DELETE, format!("{base}/members/{me}"), None)
        }
        "POST /orgs/{id}/invitations" => (
            Method::POST,
            format!("{base}/invitations"),
            Some(json!({ "email": format!("new{n}@example.com"), "roles": ["member"] })),
        ),
        "POST /orgs/{id}/invitations (owner)" => (
            Method::POST,
            format!("{base}/invitations"),
            Some(json!({ "email": format!("new{n}@example.com"), "roles": ["owner"] })),
        ),
        "GET /orgs/{id}/invitations" => (Method::GET, format!("{base}/invitations"), None),
        "DELETE /orgs/{id}/invitations/{invitationId}" => {
            let made = call(
                app,
                Method::POST,
                &format!("{base}/invitations"),
                owner,
                Some(json!({ "email": format!("gone{n}@example.com"), "roles": ["member"] })),
            )
            .await;
            let id = made.data(201)["id"].as_str().unwrap().to_owned();
            (Method::DELETE, format!("{base}/invitations/{id}"), None)
        }
        "POST /auth/org" => (
            Method::POST,
            "/api/v1/auth/org".to_owned(),
            Some(json!({ "orgId": org })),
        ),
        "DELETE /orgs/{id}" => (Method::DELETE, base.clone(), None),
        other => panic!("no such row: {other}"),
    };
    let answer = call(app, method, &path, caller, body).await;
    let status = answer.status.as_u16();
    match status {
        404 => {
            answer.error(404, "NOT_FOUND");
        }
        403 => {
            answer.error(403, "FORBIDDEN");
        }
        _ => {
            answer.data(status);
        }
    }
    status
}

async fn an_organisation_always_keeps_an_owner(backend: Backend) {
    let smtp = SmtpServer::start();
    let app = app_with_smtp(backend, &smtp, Default::default()).await;
    let (owner, _) = app.logged_in_user("owner@example.com").await;
    let owner_id = claims(&owner)["sub"].as_str().unwrap().to_owned();
    let org = create_org(&app, &owner, "acme").await;
    let members = format!("/api/v1/orgs/{org}/members");

    // The only owner can neither leave nor give up `owner`.
    call(
        &app,
        Method::DELETE,
        &format!("{members}/{owner_id}"),
        &owner,
        None,
    )
    .await
    .error(409, "CONFLICT");
    call(
        &app,
        Method::PATCH,
        &format!("{members}/{owner_id}"),
        &owner,
        Some(json!({ "roles": ["admin"] })),
    )
    .await
    .error(409, "CONFLICT");
    // An admin asking the same is refused for their role first (403 before 409).
    let (admin, _) = join(&app, &smtp, &org, &owner, "admin@example.com", &["admin"]).await;
    call(
        &app,
        Method::DELETE,
        &format!("{members}/{owner_id}"),
        &admin,
        None,
    )
    .await
    .error(403, "FORBIDDEN");
    // With a second owner, the first may step down, and the second is then the last.
    let (second, second_id) =
        join(&app, &smtp, &org, &owner, "second@example.com", &["owner"]).await;
    let changed = call(
        &app,
        Method::PATCH,
        &format!("{members}/{owner_id}"),
        &owner,
        Some(json!({ "roles": ["member", "admin", "member"] })),
    )
    .await;
    assert_eq!(changed.data(200)["roles"], json!(["admin", "member"]));
    call(
        &app,
        Method::DELETE,
        &format!("{members}/{second_id}"),
        &second,
        None,
    )
    .await
    .error(409, "CONFLICT");
    // Roles must be at least one, each of §6's form.
    call(
        &app,
        Method::PATCH,
        &format!("{members}/{owner_id}"),
        &second,
        Some(json!({ "roles": [] })),
    )
    .await
    .error(400, "VALIDATION_ERROR");
    // The member list shows everyone, a page at a time.
    let page = call(
        &app,
        Method::GET,
        &format!("{members}?limit=2"),
        &second,
        None,
    )
    .await;
    let first = page.data(200);
    assert_eq!(first["items"].as_array().unwrap().len(), 2);
    let cursor = first["nextCursor"].as_str().unwrap().to_owned();
    let rest = call(
        &app,
        Method::GET,
        &format!("{members}?limit=2&cursor={cursor}"),
        &second,
        None,
    )
    .await;
    let rest = rest.data(200);
    assert_eq!(rest["items"].as_array().unwrap().len(), 1);
    assert!(rest["nextCursor"].is_null());
    assert!(rest["items"][0]["email"].is_string());
    // A cursor of another organisation's list is not this one's.
    let other = create_org(&app, &second, "other").await;
    call(
        &app,
        Method::GET,
        &format!("/api/v1/orgs/{other}/members?cursor={cursor}"),
        &second,
        None,
    )
    .await
    .error(400, "VALIDATION_ERROR");
}

async fn invitations_reach_existing_and_new_accounts(backend: Backend) {
    let smtp = SmtpServer::start();
    let app = app_with_smtp(backend, &smtp, Default::default()).await;
    let (owner, _) = app.logged_in_user("owner@example.com").await;
    let org = create_org(&app, &owner, "acme").await;

    // An existing account: the address must be the signed-in person's; a refusal keeps it usable.
    let (ann, _) = app.logged_in_user("ann@example.com").await;
    let (bob, _) = app.logged_in_user("bob@example.com").await;
    let token = invite(&app, &smtp, &org, &owner, "ANN@example.com", &["member"]).await;
    let mail = &smtp
        .wait_for_mail("ANN@example.com", "You are invited to Org acme", 1)
        .await[0];
    assert!(mail.text().contains("Org acme"), "{}", mail.text());
    let listed = call(
        &app,
        Method::GET,
        &format!("/api/v1/orgs/{org}/invitations"),
        &owner,
        None,
    )
    .await;
    assert_eq!(listed.data(200)["items"][0]["email"], "ANN@example.com");
    let accept = |who: String, token: String| {
        let app = &app;
        async move {
            call(
                app,
                Method::POST,
                "/api/v1/orgs/invitations/accept",
                &who,
                Some(json!({ "token": token })),
            )
            .await
        }
    };
    accept(bob.clone(), token.clone())
        .await
        .error(403, "FORBIDDEN");
    let joined = accept(ann.clone(), token.clone()).await;
    assert_eq!(joined.data(200)["id"], org.as_str());
    accept(ann.clone(), token.clone())
        .await
        .error(400, "LINK_INVALID");
    let mine = call(&app, Method::GET, "/api/v1/orgs", &ann, None).await;
    assert_eq!(mine.data(200)["items"][0]["roles"], json!(["member"]));
    let pending = call(
        &app,
        Method::GET,
        &format!("/api/v1/orgs/{org}/invitations"),
        &owner,
        None,
    )
    .await;
    assert_eq!(pending.data(200)["items"], json!([]));

    // A new address: §7's accept makes the account and the membership, and signs in.
    let token = invite(&app, &smtp, &org, &owner, "cat@example.com", &["admin"]).await;
    app.post(
        "/api/v1/auth/invitations/accept",
        json!({ "token": token, "password": "short" }),
    )
    .await
    .error(400, "WEAK_PASSWORD");
    let made = app
        .post(
            "/api/v1/auth/invitations/accept",
            json!({ "token": token, "password": PASSWORD, "fullName": "Cat Smith" }),
        )
        .await;
    let cat = made.data(200)["accessToken"].as_str().unwrap().to_owned();
    assert_eq!(made.data(200)["user"]["email"], "cat@example.com");
    assert_eq!(made.data(200)["user"]["fullName"], "Cat Smith");
    let org_view = call(
        &app,
        Method::GET,
        &format!("/api/v1/orgs/{org}"),
        &cat,
        None,
    )
    .await;
    assert_eq!(org_view.data(200)["roles"], json!(["admin"]));
    app.login("cat@example.com", PASSWORD).await.data(200);
    app.post(
        "/api/v1/auth/invitations/accept",
        json!({ "token": token, "password": PASSWORD }),
    )
    .await
    .error(400, "LINK_INVALID");
    // An invitation to an address that has an account: that account accepts signed in.
    let token = invite(&app, &smtp, &org, &owner, "bob@example.com", &["member"]).await;
    app.post(
        "/api/v1/auth/invitations/accept",
        json!({ "token": token, "password": PASSWORD }),
    )
    .await
    .error(409, "EMAIL_TAKEN");
    accept(bob.clone(), token.clone()).await.data(200);

    // A withdrawn invitation's link is void, for either way of accepting.
    let token = invite(&app, &smtp, &org, &owner, "dan@example.com", &["member"]).await;
    let listed = call(
        &app,
        Method::GET,
        &format!("/api/v1/orgs/{org}/invitations"),
        &owner,
        None,
    )
    .await;
    let id = listed.data(200)["items"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let deleted = call(
        &app,
        Method::DELETE,
        &format!("/api/v1/orgs/{org}/invitations/{id}"),
        &owner,
        None,
    )
    .await;
    assert_eq!(deleted.data(200)["id"], id.as_str());
    app.post(
        "/api/v1/auth/invitations/accept",
        json!({ "token": token, "password": PASSWORD }),
    )
    .await
    .error(400, "LINK_INVALID");
    let (dan, _) = app.logged_in_user("dan@example.com").await;
    accept(dan, token).await.error(400, "LINK_INVALID");
    // Nothing but the hash of a token is kept.
    let stored: i64 = app
        .scalar("SELECT COUNT(*) FROM org_invitations WHERE LENGTH(token_hash) = 32")
        .await;
    let all: i64 = app.scalar("SELECT COUNT(*) FROM org_invitations").await;
    assert_eq!(stored, all);
    assert!(app.audit_count("org.joined", Some("new_account")).await == 1);
}

async fn switching_organisations_needs_no_new_login(backend: Backend) {
    let smtp = SmtpServer::start();
    let app = app_with_smtp(backend, &smtp, Default::default()).await;
    let (ann, refresh) = app.logged_in_user("ann@example.com").await;
    assert!(
        claims(&ann).get("org_id").is_none(),
        "a login picks no organisation"
    );
    let sid = claims(&ann)["sid"].clone();
    let first = create_org(&app, &ann, "first").await;
    let (owner, _) = app.logged_in_user("owner@example.com").await;
    let second = create_org(&app, &owner, "second").await;
    let ann_id = claims(&ann)["sub"].as_str().unwrap().to_owned();
    let token = invite(
        &app,
        &smtp,
        &second,
        &owner,
        "ann@example.com",
        &["member", "sales"],
    )
    .await;
    call(
        &app,
        Method::POST,
        "/api/v1/orgs/invitations/accept",
        &ann,
        Some(json!({ "token": token })),
    )
    .await
    .data(200);

    // Into the first, then the second: the same session, no password asked.
    let (in_first, first_refresh) = switch(&app, &ann, Some(&first)).await;
    let c = claims(&in_first);
    assert_eq!(
        (c["org_id"].as_str(), &c["org_roles"], &c["sid"]),
        (Some(first.as_str()), &json!(["owner"]), &sid)
    );
    // Switching used up the refresh token the session had, as a refresh does: within the grace
    // window for racing tabs, it answers the session's current tokens, which name the organisation.
    let raced = app
        .post("/api/v1/auth/refresh", json!({ "refreshToken": refresh }))
        .await;
    let raced = raced.data(200)["accessToken"].as_str().unwrap().to_owned();
    assert_eq!(claims(&raced)["org_id"], first.as_str());
    let (in_second, second_refresh) = switch(&app, &in_first, Some(&second)).await;
    let c = claims(&in_second);
    assert_eq!(c["org_id"], second.as_str());
    assert_eq!(c["org_roles"], json!(["member", "sales"]));
    // Refresh keeps it.
    let refreshed = app
        .post(
            "/api/v1/auth/refresh",
            json!({ "refreshToken": second_refresh }),
        )
        .await;
    let refreshed_access = refreshed.data(200)["accessToken"]
        .as_str()
        .unwrap()
        .to_owned();
    let next_refresh = refreshed.data(200)["refreshToken"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(claims(&refreshed_access)["org_id"], second.as_str());
    let _ = first_refresh;
    // Contacts are the organisation's: shared by its members, apart from each one's own.
    let made = call(
        &app,
        Method::POST,
        "/api/v1/crm/contacts",
        &refreshed_access,
        Some(json!({ "fullName": "Shared Sam" })),
    )
    .await;
    made.data(201);
    let (owner_in_second, _) = switch(&app, &owner, Some(&second)).await;
    let theirs = call(
        &app,
        Method::GET,
        "/api/v1/crm/contacts",
        &owner_in_second,
        None,
    )
    .await;
    assert_eq!(theirs.data(200)["items"][0]["fullName"], "Shared Sam");
    let own = call(&app, Method::GET, "/api/v1/crm/contacts", &owner, None).await;
    assert_eq!(own.data(200)["items"], json!([]));
    // Leaving the organisation: the token naming it is refused at once here; the next refresh
    // answers a token set without it.
    call(
        &app,
        Method::DELETE,
        &format!("/api/v1/orgs/{second}/members/{ann_id}"),
        &owner_in_second,
        None,
    )
    .await
    .data(200);
    app.get("/api/v1/crm/contacts", &refreshed_access)
        .await
        .error(401, "TOKEN_INVALID");
    let after = app
        .post(
            "/api/v1/auth/refresh",
            json!({ "refreshToken": next_refresh }),
        )
        .await;
    let after_access = after.data(200)["accessToken"].as_str().unwrap().to_owned();
    assert!(claims(&after_access).get("org_id").is_none());
    app.get("/api/v1/crm/contacts", &after_access)
        .await
        .data(200);
    // Not a member: 404; null leaves the organisation.
    call(
        &app,
        Method::POST,
        "/api/v1/auth/org",
        &after_access,
        Some(json!({ "orgId": second })),
    )
    .await
    .error(404, "NOT_FOUND");
    let (back, _) = switch(&app, &after_access, Some(&first)).await;
    let (none, _) = switch(&app, &back, None).await;
    assert!(claims(&none).get("org_id").is_none());

    // An organisation requiring two-factor refuses a session without one.
    call(
        &app,
        Method::PATCH,
        &format!("/api/v1/orgs/{first}"),
        &none,
        Some(json!({ "requireTwoFactor": true })),
    )
    .await
    .data(200);
    call(
        &app,
        Method::POST,
        "/api/v1/auth/org",
        &none,
        Some(json!({ "orgId": first })),
    )
    .await
    .error(403, "TWO_FACTOR_REQUIRED");
    let with_2fa = crate::guard::two_factor_token(&app, &none, "ann@example.com").await;
    let (strong, _) = switch(&app, &with_2fa, Some(&first)).await;
    assert_eq!(claims(&strong)["org_id"], first.as_str());
    assert!(app.audit_count("org.switched", None).await >= 4);
}

async fn a_deleted_organisation_leaves_no_token_naming_it(backend: Backend) {
    let smtp = SmtpServer::start();
    let app = app_with_smtp(backend, &smtp, Default::default()).await;
    let (owner, _) = app.logged_in_user("owner@example.com").await;
    let org = create_org(&app, &owner, "acme").await;
    let (member, _) = join(&app, &smtp, &org, &owner, "ann@example.com", &["member"]).await;
    let (owner_in, _) = switch(&app, &owner, Some(&org)).await;
    let (member_in, member_refresh) = switch(&app, &member, Some(&org)).await;
    call(
        &app,
        Method::POST,
        "/api/v1/crm/contacts",
        &member_in,
        Some(json!({ "fullName": "Gone" })),
    )
    .await
    .data(201);
    call(
        &app,
        Method::DELETE,
        &format!("/api/v1/orgs/{org}"),
        &owner_in,
        None,
    )
    .await
    .data(200);
    for token in [&owner_in, &member_in] {
        app.get("/api/v1/crm/contacts", token)
            .await
            .error(401, "TOKEN_INVALID");
        app.get("/api/v1/auth/me", token)
            .await
            .error(401, "TOKEN_INVALID");
    }
    // Tokens without it still work, and the refresh answers a set without it.
    app.get("/api/v1/auth/me", &owner).await.data(200);
    let after = app
        .post(
            "/api/v1/auth/refresh",
            json!({ "refreshToken": member_refresh }),
        )
        .await;
    assert!(
        claims(after.data(200)["accessToken"].as_str().unwrap())
            .get("org_id")
            .is_none()
    );
    let left: i64 = app.scalar("SELECT COUNT(*) FROM org_contacts").await;
    assert_eq!(left, 0, "its shared contacts are gone with it");
    call(
        &app,
        Method::GET,
        &format!("/api/v1/orgs/{org}"),
        &owner,
        None,
    )
    .await
    .error(404, "NOT_FOUND");
    assert_eq!(app.audit_count("org.deleted", Some("via=owner")).await, 1);
}

async fn organisations_are_validated_and_slugs_unique(backend: Backend) {
    let app = crate::helpers::spawn_app(backend).await;
    let (ann, _) = app.logged_in_user("ann@example.com").await;
    let created = call(
        &app,
        Method::POST,
        "/api/v1/orgs",
        &ann,
        Some(json!({ "name": " Acme ", "slug": "acme" })),
    )
    .await;
    let org = created.data(201);
    assert_eq!(
        (
            org["name"].as_str(),
            org["slug"].as_str(),
            &org["requireTwoFactor"]
        ),
        (Some("Acme"), Some("acme"), &json!(false))
    );
    let id = org["id"].as_str().unwrap().to_owned();
    call(
        &app,
        Method::POST,
        "/api/v1/orgs",
        &ann,
        Some(json!({ "name": "Other", "slug": "acme" })),
    )
    .await
    .error(409, "CONFLICT");
    let bad = call(
        &app,
        Method::POST,
        "/api/v1/orgs",
        &ann,
        Some(json!({ "name": "", "slug": "-x" })),
    )
    .await;
    let fields = &bad.error(400, "VALIDATION_ERROR")["details"]["fields"];
    assert!(
        fields["name"].is_string() && fields["slug"].is_string(),
        "{fields}"
    );
    call(
        &app,
        Method::POST,
        "/api/v1/orgs",
        &ann,
        Some(json!({ "name": "X" })),
    )
    .await
    .error(400, "VALIDATION_ERROR");
    call(&app, Method::GET, "/api/v1/orgs/not-a-uuid", &ann, None)
        .await
        .error(404, "NOT_FOUND");
    call(
        &app,
        Method::POST,
        "/api/v1/auth/org",
        &ann,
        Some(json!({ "orgId": "nope" })),
    )
    .await
    .error(400, "VALIDATION_ERROR");
    let (bob, _) = app.logged_in_user("bob@example.com").await;
    call(
        &app,
        Method::POST,
        "/api/v1/orgs",
        &bob,
        Some(json!({ "name": "B", "slug": "bee" })),
    )
    .await
    .data(201);
    call(
        &app,
        Method::PATCH,
        &format!("/api/v1/orgs/{id}"),
        &ann,
        Some(json!({ "slug": "bee" })),
    )
    .await
    .error(409, "CONFLICT");
    let renamed = call(
        &app,
        Method::PATCH,
        &format!("/api/v1/orgs/{id}"),
        &ann,
        Some(json!({ "slug": "acme-2", "name": "Acme Two" })),
    )
    .await;
    assert_eq!(renamed.data(200)["slug"], "acme-2");
    let mine = call(&app, Method::GET, "/api/v1/orgs", &ann, None).await;
    assert_eq!(mine.data(200)["items"][0]["org"]["name"], "Acme Two");
    call(&app, Method::GET, "/api/v1/orgs", "garbage", None)
        .await
        .error(401, "TOKEN_INVALID");
}
