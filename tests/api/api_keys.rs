//! Personal API keys (docs/api.md §12), made and managed: the key's form, shown once, kept only as
//! a keyed hash, the checks of a new key, the limit of 50, expiry, deletion seen by a second
//! instance within 2 s, a disabled owner, and the admin's list and delete. Their use at
//! forward-auth, introspection and the refusing endpoints is `api_keys_use.rs`.

use reqwest::Method;
use serde_json::{Value, json};

use crate::admin::admin;
use crate::guard::within;
use crate::helpers::{
    Answer, Backend, PASSWORD, SPREAD_DEADLINE, TestApp, both_backends, spawn_app,
};

both_backends!(
    keys_are_shown_once_and_kept_only_as_a_keyed_hash,
    a_new_key_is_checked_and_limited_to_fifty,
    a_key_works_within_its_scopes_until_it_expires,
    a_deleted_key_and_a_disabled_owner_are_refused_everywhere_within_two_seconds,
    admins_list_and_delete_a_persons_keys,
);

pub const KEYS: &str = "/api/v1/auth/api-keys";

/// `POST /auth/api-keys` by the holder of `token` with `body` (the test password added).
pub async fn make_key(app: &TestApp, token: &str, mut body: Value) -> Answer {
    body["password"] = json!(PASSWORD);
    app.call(Method::POST, KEYS, Some(token), Some(body)).await
}

/// A new key of the holder of `token`: (id, key).
pub async fn new_key(app: &TestApp, token: &str, body: Value) -> (String, String) {
    let made = make_key(app, token, body).await;
    let data = made.data(201);
    (
        data["id"].as_str().unwrap().to_owned(),
        data["key"].as_str().unwrap().to_owned(),
    )
}

fn is_key(text: &str) -> bool {
    text.len() == 36
        && text.starts_with("ghk_")
        && text[4..].bytes().all(|b| b.is_ascii_alphanumeric())
}

async fn keys_are_shown_once_and_kept_only_as_a_keyed_hash(backend: Backend) {
    let app = spawn_app(backend).await;
    let (token, _) = app.logged_in_user("ann@example.com").await;
    let made = make_key(&app, &token, json!({ "name": "  Nightly export " })).await;
    let data = made.data(201).clone();
    let key = data["key"].as_str().unwrap().to_owned();
    assert!(is_key(&key), "{key}");
    assert_eq!(data["name"], "Nightly export");
    assert_eq!(data["scopes"], json!(["contacts:read", "contacts:write"]));
    // Left out, a key lives 90 days, as the page offers first; `null` asks for one that never
    // expires (issue 45: the API's keys never expired while the page's did).
    let expires = data["expiresAt"].as_str().unwrap();
    let expires =
        time::OffsetDateTime::parse(expires, &time::format_description::well_known::Rfc3339)
            .unwrap();
    let days = (expires - time::OffsetDateTime::now_utc()).whole_hours() as f64 / 24.0;
    assert!((89.9..=90.1).contains(&days), "{days}");
    let forever = make_key(
        &app,
        &token,
        json!({ "name": "forever", "expiresAt": null }),
    )
    .await;
    assert_eq!(forever.data(201)["expiresAt"], Value::Null);
    assert!(data["createdAt"].as_str().unwrap().ends_with('Z'));
    let (_, other) = new_key(&app, &token, json!({ "name": "CI" })).await;
    assert_ne!(key, other);

    // The list: newest first, the prefix, never the key.
    let listed = app.get(KEYS, &token).await;
    let items = listed.data(200)["items"].as_array().unwrap().clone();
    assert_eq!(items.len(), 3);
    assert_eq!(items[2]["id"], data["id"]);
    assert_eq!(items[2]["prefix"], json!(&key[4..12]));
    assert_eq!(items[2]["lastUsedAt"], Value::Null);
    // And the scopes a new key may have, in the words of the API they are of (the page's list).
    assert_eq!(
        listed.data(200)["scopes"][0],
        json!({ "scope": "contacts:read", "description": "Read your contacts", "resource": "Contacts" })
    );
    let text = listed.body.to_string();
    assert!(!text.contains(&key[4..]) && !text.contains(&other[4..]));

    // At rest: a keyed hash, and the key in no column of any table (nor in the mail or the
    // trail). SQLite: not a byte of the files holds it; PostgreSQL: no row of these tables, as
    // text, contains it.
    let random = &key[4..];
    let hash_length: i64 = app
        .scalar(&format!(
            "SELECT CAST(LENGTH(key_hash) AS BIGINT) FROM api_keys WHERE prefix = '{}'",
            &random[..8]
        ))
        .await;
    assert_eq!(hash_length, 32);
    if let Some(path) = gatehouse::config::sqlite_path(&app.db.url) {
        let path = path.display().to_string();
        for file in [path.clone(), format!("{path}-wal")] {
            let bytes = std::fs::read(&file).unwrap_or_default();
            let found = bytes.windows(random.len()).any(|w| w == random.as_bytes());
            assert!(!found, "the key is in {file}");
        }
    } else {
        for table in ["api_keys", "audit_events", "mail_outbox", "users"] {
            let rows: i64 = app
                .scalar(&format!(
                    "SELECT COUNT(*) FROM {table} t WHERE CAST(t AS TEXT) LIKE '%{random}%'"
                ))
                .await;
            assert_eq!(rows, 0, "the key is in {table}");
        }
    }
    assert_eq!(app.audit_count("api_key.created", Some("key=")).await, 3);
}

async fn a_new_key_is_checked_and_limited_to_fifty(backend: Backend) {
    let app = spawn_app(backend).await;
    let (token, _) = app.logged_in_user("ann@example.com").await;
    let refused = |answer: Answer, field: &str| {
        let error = answer.error(400, "VALIDATION_ERROR").clone();
        assert!(error["details"]["fields"][field].is_string(), "{error}");
    };
    refused(make_key(&app, &token, json!({ "name": " " })).await, "name");
    refused(
        make_key(&app, &token, json!({ "name": "x".repeat(101) })).await,
        "name",
    );
    refused(make_key(&app, &token, json!({})).await, "name");
    let unknown = json!({ "name": "a", "scopes": ["contacts:read", "openid"] });
    refused(make_key(&app, &token, unknown).await, "scopes");
    refused(
        make_key(&app, &token, json!({ "name": "a", "scopes": [] })).await,
        "scopes",
    );
    let past = json!({ "name": "a", "expiresAt": "2020-01-01T00:00:00Z" });
    refused(make_key(&app, &token, past).await, "expiresAt");
    let garbage = json!({ "name": "a", "expiresAt": "tomorrow" });
    refused(make_key(&app, &token, garbage).await, "expiresAt");
    refused(
        make_key(&app, &token, json!({ "name": "a", "orgId": "x" })).await,
        "orgId",
    );
    // An organisation the caller is not a member of: as every organisation call, 404.
    let (other, _) = app.logged_in_user("bob@example.com").await;
    let theirs = crate::orgs::create_org(&app, &other, "bobs").await;
    make_key(&app, &token, json!({ "name": "a", "orgId": theirs }))
        .await
        .error(404, "NOT_FOUND");
    // The password: wrong is the re-check's 403, absent a 400 naming the way round it.
    let wrong = json!({ "name": "a", "password": "not the password" });
    app.call(Method::POST, KEYS, Some(&token), Some(wrong))
        .await
        .error(403, "INVALID_CREDENTIALS");
    let without = app
        .call(
            Method::POST,
            KEYS,
            Some(&token),
            Some(json!({ "name": "a" })),
        )
        .await;
    refused(without, "password");
    app.get(KEYS, &token).await.data(200)["items"]
        .as_array()
        .unwrap()
        .is_empty()
        .then_some(())
        .expect("no key was made");

    // Fifty keys, then a conflict. A re-authenticated session needs no password each time.
    app.call(
        Method::POST,
        "/api/v1/auth/reauthenticate",
        Some(&token),
        Some(json!({ "password": PASSWORD })),
    )
    .await
    .data(200);
    for i in 0..45 {
        let body = json!({ "name": format!("key {i}"), "scopes": ["contacts:read"] });
        app.call(Method::POST, KEYS, Some(&token), Some(body))
            .await
            .data(201);
    }
    // The last places raced for: ten creations at once make exactly five keys (under
    // PostgreSQL's READ COMMITTED, a count-then-insert without a lock lets them all pass).
    let racing = (45..55).map(|i| {
        let body = json!({ "name": format!("key {i}"), "scopes": ["contacts:read"] });
        app.call(Method::POST, KEYS, Some(&token), Some(body))
    });
    let statuses: Vec<u16> = futures::future::join_all(racing)
        .await
        .iter()
        .map(|answer| answer.status.as_u16())
        .collect();
    assert_eq!(
        statuses.iter().filter(|s| **s == 201).count(),
        5,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == 409).count(),
        5,
        "{statuses:?}"
    );
    let fifty_first = json!({ "name": "one too many" });
    app.call(Method::POST, KEYS, Some(&token), Some(fifty_first))
        .await
        .error(409, "CONFLICT");
    let listed = app.get(KEYS, &token).await;
    assert_eq!(listed.data(200)["items"].as_array().unwrap().len(), 50);
}

async fn a_key_works_within_its_scopes_until_it_expires(backend: Backend) {
    let app = spawn_app(backend).await;
    let (token, _) = app.logged_in_user("ann@example.com").await;
    let (_, writer) = new_key(&app, &token, json!({ "name": "writer" })).await;
    let read_only = json!({ "name": "reader", "scopes": ["contacts:read"] });
    let (_, reader) = new_key(&app, &token, read_only).await;
    let contact = json!({ "fullName": "Grace Hopper" });
    let made = app
        .call(
            Method::POST,
            "/api/v1/crm/contacts",
            Some(&writer),
            Some(contact.clone()),
        )
        .await;
    made.data(201);
    // The owner's own contacts: the person's token sees what the key made.
    let mine = app.get("/api/v1/crm/contacts", &token).await;
    assert_eq!(mine.data(200)["items"].as_array().unwrap().len(), 1);
    let listed = app.get("/api/v1/crm/contacts", &reader).await;
    assert_eq!(listed.data(200)["items"][0]["fullName"], "Grace Hopper");
    let refused = app
        .call(
            Method::POST,
            "/api/v1/crm/contacts",
            Some(&reader),
            Some(contact),
        )
        .await;
    refused.error(403, "INSUFFICIENT_SCOPE");
    let challenge = refused.header("www-authenticate").unwrap();
    assert!(
        challenge.contains(r#"scope="contacts:write""#),
        "{challenge}"
    );

    // A made-up key, or one a character off, is no key.
    let mut off = reader.clone().into_bytes();
    off[10] = if off[10] == b'a' { b'b' } else { b'a' };
    for bad in [
        String::from_utf8(off).unwrap(),
        format!("ghk_{}", "A".repeat(32)),
        "ghk_x".into(),
    ] {
        let answer = app.get("/api/v1/crm/contacts", &bad).await;
        answer.error(401, "TOKEN_INVALID");
    }

    // Expiry: refused once `expiresAt` is behind (past §2's leeway of at most 5 s).
    let soon = time::OffsetDateTime::now_utc() + time::Duration::seconds(30);
    let soon = soon
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    let (_, short) = new_key(&app, &token, json!({ "name": "short", "expiresAt": soon })).await;
    app.get("/api/v1/crm/contacts", &short).await.data(200);
    app.clock().advance(std::time::Duration::from_secs(36));
    app.get("/api/v1/crm/contacts", &short)
        .await
        .error(401, "TOKEN_INVALID");
    app.get("/api/v1/crm/contacts", &writer).await.data(200);
}

async fn a_deleted_key_and_a_disabled_owner_are_refused_everywhere_within_two_seconds(
    backend: Backend,
) {
    let app = spawn_app(backend).await;
    let twin = app.twin().await;
    let (token, _) = app.logged_in_user("ann@example.com").await;
    let (id, key) = new_key(&app, &token, json!({ "name": "ci" })).await;
    let (_, kept) = new_key(&app, &token, json!({ "name": "kept" })).await;
    // Both instances have read the key (and keep it in memory).
    app.get("/api/v1/crm/contacts", &key).await.data(200);
    twin.get("/api/v1/crm/contacts", &key).await.data(200);

    // Someone else cannot delete it; its owner can.
    let (bob, _) = app.logged_in_user("bob@example.com").await;
    let path = format!("{KEYS}/{id}");
    app.call(Method::DELETE, &path, Some(&bob), None)
        .await
        .error(404, "NOT_FOUND");
    let deleted = app.call(Method::DELETE, &path, Some(&token), None).await;
    assert_eq!(deleted.data(200)["id"], json!(id));
    app.get("/api/v1/crm/contacts", &key)
        .await
        .error(401, "TOKEN_INVALID");
    let took = within(SPREAD_DEADLINE, || async {
        twin.get("/api/v1/crm/contacts", &key).await.status == 401
    })
    .await;
    eprintln!("a deleted key reached the second instance in {took:?}");
    app.call(Method::DELETE, &path, Some(&token), None)
        .await
        .error(404, "NOT_FOUND");
    assert_eq!(app.audit_count("api_key.deleted", Some("key=")).await, 1);

    // The owner disabled (by the CLI, another process): every key of theirs stops, everywhere.
    twin.get("/api/v1/crm/contacts", &kept).await.data(200);
    let output = app.cli(&["user", "disable", "ann@example.com"], None);
    assert!(output.status.success());
    for instance in [&app, &twin] {
        within(SPREAD_DEADLINE, || async {
            instance.get("/api/v1/crm/contacts", &kept).await.status == 401
        })
        .await;
    }
    let output = app.cli(&["user", "enable", "ann@example.com"], None);
    assert!(output.status.success());
    within(SPREAD_DEADLINE, || async {
        twin.get("/api/v1/crm/contacts", &kept).await.status == 200
    })
    .await;
}

async fn admins_list_and_delete_a_persons_keys(backend: Backend) {
    let app = spawn_app(backend).await;
    let root = admin(&app, "root@example.com").await;
    let (token, _) = app.logged_in_user("ann@example.com").await;
    let ann = crate::helpers::claims(&token)["sub"]
        .as_str()
        .unwrap()
        .to_owned();
    let (id, key) = new_key(&app, &token, json!({ "name": "leaked" })).await;
    let keys = format!("/api/v1/admin/users/{ann}/api-keys");
    let listed = app.get(&keys, &root.strong).await;
    let items = listed.data(200)["items"].as_array().unwrap().clone();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["name"], "leaked");
    assert!(!listed.body.to_string().contains(&key[4..]));
    // Admins only, with a second factor; and a key of another account is not found.
    app.get(&keys, &token).await.error(403, "FORBIDDEN");
    app.get(&keys, &root.weak)
        .await
        .error(403, "TWO_FACTOR_REQUIRED");
    let root_keys = format!("/api/v1/admin/users/{}/api-keys/{id}", root.id);
    app.call(Method::DELETE, &root_keys, Some(&root.strong), None)
        .await
        .error(404, "NOT_FOUND");
    let one = format!("{keys}/{id}");
    let deleted = app
        .call(Method::DELETE, &one, Some(&root.strong), None)
        .await;
    assert_eq!(deleted.data(200)["id"], json!(id));
    app.get("/api/v1/crm/contacts", &key)
        .await
        .error(401, "TOKEN_INVALID");
    assert_eq!(
        app.audit_count("api_key.deleted", Some(&format!("key={id} via=admin")))
            .await,
        1
    );
    assert_eq!(app.audit_count("admin.read", Some("api_keys")).await, 1);
    let unknown = format!("/api/v1/admin/users/{}/api-keys", uuid::Uuid::now_v7());
    app.get(&unknown, &root.strong)
        .await
        .error(404, "NOT_FOUND");
}
