use reqwest::Method;
use serde_json::json;

use crate::helpers::{Backend, both_backends, spawn_app};

both_backends!(
    an_array_is_not_read_as_a_body_s_fields,
    unknown_routes_and_wrong_methods_answer_in_the_envelope,
    bodies_must_be_json_objects_within_the_size_limit,
    health_and_readiness,
    without_a_database_calls_answer_503_in_the_envelope,
);

async fn unknown_routes_and_wrong_methods_answer_in_the_envelope(backend: Backend) {
    let app = spawn_app(backend).await;
    app.send(app.client.get(app.url("/no/such/thing")))
        .await
        .error(404, "NOT_FOUND");
    app.send(app.client.get(app.url("/api/v1/auth/nope")))
        .await
        .error(404, "NOT_FOUND");
    let answer = app
        .send(app.client.get(app.url("/api/v1/auth/login")))
        .await;
    answer.error(405, "METHOD_NOT_ALLOWED");
    assert_eq!(answer.header("allow"), Some("POST"));
    app.send(app.client.delete(app.url("/api/v1/crm/contacts")))
        .await
        .error(405, "METHOD_NOT_ALLOWED");
}

async fn bodies_must_be_json_objects_within_the_size_limit(backend: Backend) {
    let app = spawn_app(backend).await;
    let login = app.url("/api/v1/auth/login");
    let body = r#"{"email":"a@example.com","password":"x"}"#;

    let answer = app.send(app.client.post(&login).body(body)).await;
    answer.error(415, "UNSUPPORTED_MEDIA_TYPE");
    let answer = app
        .send(
            app.client
                .post(&login)
                .header("content-type", "text/plain")
                .body(body),
        )
        .await;
    answer.error(415, "UNSUPPORTED_MEDIA_TYPE");
    let answer = app
        .send(
            app.client
                .post(&login)
                .header("content-type", "application/json; charset=utf-8")
                .body(body),
        )
        .await;
    answer.error(401, "INVALID_CREDENTIALS");

    let json = |payload: Vec<u8>| {
        app.client
            .post(&login)
            .header("content-type", "application/json")
            .body(payload)
    };
    let big = format!(
        r#"{{"email":"a@example.com","password":"{}"}}"#,
        "x".repeat(70 * 1024)
    );
    app.send(json(big.into_bytes()))
        .await
        .error(413, "PAYLOAD_TOO_LARGE");
    for bad in [
        &b"{"[..],
        b"not json",
        b"[1,2,3]",
        b"\"string\"",
        b"null",
        b"{\"email\":\"a@example.com\",\"password\":\"x\"} trailing",
        b"{\"email\":\"\xff\xfe\",\"password\":\"x\"}",
    ] {
        app.send(json(bad.to_vec()))
            .await
            .error(400, "VALIDATION_ERROR");
    }
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    app.send(json(deep.into_bytes()))
        .await
        .error(413, "PAYLOAD_TOO_LARGE");
    let nested = format!(
        r#"{{"email":{}1{},"password":"x"}}"#,
        "[".repeat(5_000),
        "]".repeat(5_000)
    );
    app.send(json(nested.into_bytes()))
        .await
        .error(400, "VALIDATION_ERROR");
    let huge_number = format!(r#"{{"email":1{},"password":"x"}}"#, "0".repeat(5_000));
    app.send(json(huge_number.into_bytes()))
        .await
        .error(400, "VALIDATION_ERROR");
    let nul = json!({ "email": "a\u{0}@example.com", "password": "x\u{0}" });
    app.post("/api/v1/auth/login", nul)
        .await
        .error(400, "VALIDATION_ERROR");
}

async fn health_and_readiness(backend: Backend) {
    let app = spawn_app(backend).await;
    for path in ["/healthz", "/readyz"] {
        let answer = app.send(app.client.get(app.url(path))).await;
        assert_eq!(answer.data(200), &json!({ "status": "ok" }));
    }
    let answer = app.call(Method::POST, "/api/v1/auth/register", None, Some(json!({ "email": "r@example.com", "password": "a long enough one", "fullName": "R" }))).await;
    answer.error(403, "REGISTRATION_CLOSED");
}

async fn without_a_database_calls_answer_503_in_the_envelope(backend: Backend) {
    let app = spawn_app(backend).await;
    app.create_user("zed@example.com", crate::helpers::PASSWORD)
        .await;
    // A closed pool is what an unreachable database looks like to the handlers.
    app.handle.close_database().await;
    app.send(app.client.get(app.url("/readyz")))
        .await
        .error(503, "SERVICE_UNAVAILABLE");
    app.login("zed@example.com", crate::helpers::PASSWORD)
        .await
        .error(503, "SERVICE_UNAVAILABLE");
    let answer = app.send(app.client.get(app.url("/healthz"))).await;
    assert_eq!(answer.data(200), &json!({ "status": "ok" }));
}

/// serde reads a struct from an array, its fields in order; a body must be an object.
async fn an_array_is_not_read_as_a_body_s_fields(backend: Backend) {
    let app = spawn_app(backend).await;
    let (token, _) = app.logged_in_user("arr@example.com").await;
    let send = |method: Method, path: String, body: &'static str| {
        let request = app
            .client
            .request(method, app.url(&path))
            .bearer_auth(&token)
            .header("content-type", "application/json")
            .body(body);
        app.send(request)
    };
    let created = send(Method::POST, "/api/v1/crm/contacts".into(), r#"["Ann"]"#).await;
    assert_eq!(
        created.error(400, "VALIDATION_ERROR")["details"]["reason"],
        "the body must be a JSON object"
    );
    let contact = app
        .call(
            Method::POST,
            "/api/v1/crm/contacts",
            Some(&token),
            Some(json!({ "fullName": "Ann" })),
        )
        .await;
    let path = format!(
        "/api/v1/crm/contacts/{}",
        contact.data(201)["id"].as_str().unwrap()
    );
    send(Method::PATCH, path, "[]")
        .await
        .error(400, "VALIDATION_ERROR");
}
