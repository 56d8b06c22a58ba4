use std::collections::HashSet;

use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{Backend, TestApp, both_backends, spawn_app};

both_backends!(
    the_list_is_the_users_own_data_newest_first,
    pages_follow_cursors_without_gaps_or_repeats_while_contacts_are_added,
    pages_stay_exact_when_contacts_are_deleted_between_them,
    q_is_a_literal_case_insensitive_substring,
    other_users_contacts_do_not_exist,
    bad_list_parameters_are_named,
    contacts_are_created_read_patched_and_deleted,
    every_bad_contact_field_is_named,
    concurrent_patches_of_different_fields_all_survive,
);

async fn create(app: &TestApp, token: &str, body: Value) -> Value {
    let answer = app
        .call(
            Method::POST,
            "/api/v1/crm/contacts",
            Some(token),
            Some(body),
        )
        .await;
    answer.data(201).clone()
}

async fn names(app: &TestApp, token: &str, query: &str) -> Vec<String> {
    let answer = app
        .get(&format!("/api/v1/crm/contacts{query}"), token)
        .await;
    answer.data(200)["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["fullName"].as_str().unwrap().to_owned())
        .collect()
}

async fn the_list_is_the_users_own_data_newest_first(backend: Backend) {
    let app = spawn_app(backend).await;
    let (token, _) = app.logged_in_user("amy@example.com").await;
    for i in 0..5 {
        create(&app, &token, json!({ "fullName": format!("Contact {i}") })).await;
    }
    assert_eq!(
        names(&app, &token, "").await,
        [
            "Contact 4",
            "Contact 3",
            "Contact 2",
            "Contact 1",
            "Contact 0"
        ]
    );
    let answer = app.get("/api/v1/crm/contacts", &token).await;
    let first = &answer.data(200)["items"][0];
    assert_eq!(first["email"], Value::Null);
    assert!(first["createdAt"].as_str().unwrap().ends_with('Z'));
    assert_eq!(answer.data(200)["nextCursor"], Value::Null);
}

async fn pages_follow_cursors_without_gaps_or_repeats_while_contacts_are_added(backend: Backend) {
    let app = spawn_app(backend).await;
    let (token, _) = app.logged_in_user("ben@example.com").await;
    for i in 0..25 {
        create(&app, &token, json!({ "fullName": format!("C{i:02}") })).await;
    }
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let query = match &cursor {
            Some(c) => format!("/api/v1/crm/contacts?limit=10&cursor={c}"),
            None => "/api/v1/crm/contacts?limit=10".into(),
        };
        let answer = app.get(&query, &token).await;
        let data = answer.data(200);
        seen.extend(
            data["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["fullName"].as_str().unwrap().to_owned()),
        );
        // Inserted between pages: newer than every page, so never seen here.
        create(&app, &token, json!({ "fullName": "Late arrival" })).await;
        match data["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    let expected: Vec<String> = (0..25).rev().map(|i| format!("C{i:02}")).collect();
    assert_eq!(seen, expected);
}

async fn pages_stay_exact_when_contacts_are_deleted_between_them(backend: Backend) {
    let app = spawn_app(backend).await;
    let (token, _) = app.logged_in_user("bea@example.com").await;
    let mut ids = Vec::new();
    for i in 0..12 {
        let contact = create(&app, &token, json!({ "fullName": format!("D{i:02}") })).await;
        ids.push(contact["id"].as_str().unwrap().to_owned());
    }
    let page = app.get("/api/v1/crm/contacts?limit=5", &token).await;
    let first: Vec<String> = page.data(200)["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["fullName"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(first, ["D11", "D10", "D09", "D08", "D07"]);
    let cursor = page.data(200)["nextCursor"].as_str().unwrap().to_owned();
    // The contact the cursor stands on, and the next one due, go before the next page.
    for id in [&ids[7], &ids[6]] {
        app.call(
            Method::DELETE,
            &format!("/api/v1/crm/contacts/{id}"),
            Some(&token),
            None,
        )
        .await
        .data(200);
    }
    let rest = names(&app, &token, &format!("?limit=100&cursor={cursor}")).await;
    assert_eq!(rest, ["D05", "D04", "D03", "D02", "D01", "D00"]);
}

async fn q_is_a_literal_case_insensitive_substring(backend: Backend) {
    let app = spawn_app(backend).await;
    let (token, _) = app.logged_in_user("cat@example.com").await;
    create(
        &app,
        &token,
        json!({ "fullName": "Zoë Ünal", "company": "100% Organic" }),
    )
    .await;
    create(
        &app,
        &token,
        json!({ "fullName": "Max Power", "email": "max_power@acme.test" }),
    )
    .await;
    create(
        &app,
        &token,
        json!({ "fullName": "Maxine", "company": "ACME Corp" }),
    )
    .await;
    create(
        &app,
        &token,
        json!({ "fullName": "Other", "notes": "acme in notes is not searched" }),
    )
    .await;

    let set = |v: Vec<String>| v.into_iter().collect::<HashSet<_>>();
    assert_eq!(
        set(names(&app, &token, "?q=acme").await),
        set(vec!["Max Power".into(), "Maxine".into()])
    );
    assert_eq!(names(&app, &token, "?q=MAX%20P").await, ["Max Power"]);
    assert_eq!(
        names(&app, &token, "?q=%C3%BCnal").await,
        ["Zoë Ünal"],
        "Unicode case folding"
    );
    assert_eq!(
        names(&app, &token, "?q=100%25").await,
        ["Zoë Ünal"],
        "% is literal"
    );
    assert!(names(&app, &token, "?q=%25").await.len() == 1);
    assert_eq!(
        names(&app, &token, "?q=x_p").await,
        ["Max Power"],
        "_ is literal"
    );
    assert!(
        names(&app, &token, "?q=m_x").await.is_empty(),
        "_ is no wildcard"
    );
}

async fn other_users_contacts_do_not_exist(backend: Backend) {
    let app = spawn_app(backend).await;
    let (alice, _) = app.logged_in_user("dee@example.com").await;
    let (mallory, _) = app.logged_in_user("eve@example.com").await;
    let contact = create(&app, &alice, json!({ "fullName": "Secret Client" })).await;
    for _ in 0..3 {
        create(&app, &alice, json!({ "fullName": "Another" })).await;
    }
    let path = format!("/api/v1/crm/contacts/{}", contact["id"].as_str().unwrap());
    app.get(&path, &mallory).await.error(404, "NOT_FOUND");
    app.call(
        Method::PATCH,
        &path,
        Some(&mallory),
        Some(json!({ "fullName": "Owned" })),
    )
    .await
    .error(404, "NOT_FOUND");
    app.call(Method::DELETE, &path, Some(&mallory), None)
        .await
        .error(404, "NOT_FOUND");
    assert!(names(&app, &mallory, "?q=secret").await.is_empty());
    app.get(&path, &alice).await.data(200);

    let page = app.get("/api/v1/crm/contacts?limit=2", &alice).await;
    let cursor = page.data(200)["nextCursor"].as_str().unwrap().to_owned();
    let answer = app
        .get(&format!("/api/v1/crm/contacts?cursor={cursor}"), &mallory)
        .await;
    assert!(answer.error(400, "VALIDATION_ERROR")["details"]["fields"]["cursor"].is_string());
}

async fn bad_list_parameters_are_named(backend: Backend) {
    let app = spawn_app(backend).await;
    let (token, _) = app.logged_in_user("fay@example.com").await;
    for query in ["limit=0", "limit=101", "limit=ten", "limit=-1"] {
        let answer = app
            .get(&format!("/api/v1/crm/contacts?{query}"), &token)
            .await;
        assert!(
            answer.error(400, "VALIDATION_ERROR")["details"]["fields"]["limit"].is_string(),
            "{query}"
        );
    }
    for cursor in [
        "nonsense",
        "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        "%00",
    ] {
        let answer = app
            .get(&format!("/api/v1/crm/contacts?cursor={cursor}"), &token)
            .await;
        assert!(
            answer.error(400, "VALIDATION_ERROR")["details"]["fields"]["cursor"].is_string(),
            "{cursor}"
        );
    }
    app.get("/api/v1/crm/contacts?limit=100", &token)
        .await
        .data(200);
}

async fn contacts_are_created_read_patched_and_deleted(backend: Backend) {
    let app = spawn_app(backend).await;
    let (token, _) = app.logged_in_user("gus@example.com").await;
    let created = create(
        &app,
        &token,
        json!({ "fullName": " Hana Kim ", "email": "hana@kim.test", "phone": "+1 555 0100", "company": "Kim & Co", "notes": "line 1\nline 2", "unknown": 1 }),
    )
    .await;
    assert_eq!(created["fullName"], "Hana Kim");
    assert_eq!(created["notes"], "line 1\nline 2");
    let path = format!("/api/v1/crm/contacts/{}", created["id"].as_str().unwrap());
    assert_eq!(app.get(&path, &token).await.data(200), &created);

    let patched = app
        .call(
            Method::PATCH,
            &path,
            Some(&token),
            Some(json!({ "phone": null, "company": "Kim Ltd" })),
        )
        .await;
    let patched = patched.data(200);
    assert_eq!(patched["phone"], Value::Null);
    assert_eq!(patched["company"], "Kim Ltd");
    assert_eq!(
        patched["email"], "hana@kim.test",
        "left out means unchanged"
    );
    assert_eq!(patched["createdAt"], created["createdAt"]);

    let cleared = app
        .call(
            Method::PATCH,
            &path,
            Some(&token),
            Some(json!({ "fullName": null })),
        )
        .await;
    assert!(cleared.error(400, "VALIDATION_ERROR")["details"]["fields"]["fullName"].is_string());

    let deleted = app.call(Method::DELETE, &path, Some(&token), None).await;
    assert_eq!(deleted.data(200), &json!({ "id": created["id"] }));
    app.get(&path, &token).await.error(404, "NOT_FOUND");
    app.call(Method::DELETE, &path, Some(&token), None)
        .await
        .error(404, "NOT_FOUND");
    app.get("/api/v1/crm/contacts/not-a-uuid", &token)
        .await
        .error(404, "NOT_FOUND");
}

async fn every_bad_contact_field_is_named(backend: Backend) {
    let app = spawn_app(backend).await;
    let (token, _) = app.logged_in_user("hal@example.com").await;
    let answer = app
        .call(
            Method::POST,
            "/api/v1/crm/contacts",
            Some(&token),
            Some(json!({ "email": "nope", "phone": "9".repeat(51), "company": "c".repeat(201), "notes": "n".repeat(10_001) })),
        )
        .await;
    let fields = &answer.error(400, "VALIDATION_ERROR")["details"]["fields"];
    for field in ["fullName", "email", "phone", "company", "notes"] {
        assert!(fields[field].is_string(), "{field} in {fields}");
    }
    let answer = app
        .call(
            Method::POST,
            "/api/v1/crm/contacts",
            Some(&token),
            Some(json!({ "fullName": ["x"] })),
        )
        .await;
    assert!(answer.error(400, "VALIDATION_ERROR")["details"]["fields"]["fullName"].is_string());
    assert!(
        names(&app, &token, "").await.is_empty(),
        "nothing was stored"
    );
}

async fn concurrent_patches_of_different_fields_all_survive(backend: Backend) {
    let app = spawn_app(backend).await;
    let (token, _) = app.logged_in_user("pat@example.com").await;
    let fields = ["phone", "company", "notes"];
    for round in 0..5 {
        let contact = create(&app, &token, json!({ "fullName": "Before" })).await;
        let path = format!("/api/v1/crm/contacts/{}", contact["id"].as_str().unwrap());
        // Each request changes a field of its own, all at once.
        let patches = fields.iter().map(|field| {
            app.call(
                Method::PATCH,
                &path,
                Some(&token),
                Some(json!({ *field: format!("{field} {round}") })),
            )
        });
        let rename = app.call(
            Method::PATCH,
            &path,
            Some(&token),
            Some(json!({ "fullName": format!("After {round}") })),
        );
        let (answers, renamed) = tokio::join!(futures::future::join_all(patches), rename);
        renamed.data(200);
        for answer in answers {
            answer.data(200);
        }
        let stored = app.get(&path, &token).await;
        let stored = stored.data(200);
        assert_eq!(stored["fullName"], format!("After {round}"), "{stored:#}");
        for field in fields {
            assert_eq!(stored[field], format!("{field} {round}"), "{stored:#}");
        }
    }
}
