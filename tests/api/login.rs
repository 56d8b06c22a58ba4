use reqwest::Method;
use serde_json::json;

use crate::helpers::{Backend, PASSWORD, both_backends, claims, jwt_header, spawn_app};

both_backends!(
    login_returns_the_seed_token_set,
    emails_match_trimmed_and_without_case,
    unknown_email_and_wrong_password_get_one_answer,
    a_disabled_account_is_told_so_only_with_its_password,
    login_names_each_bad_field,
    the_access_token_opens_the_contacts_and_me,
    logout_ends_the_current_session_only,
    logout_scopes_others_and_all,
    registration_when_open,
    a_weaker_password_hash_is_upgraded_at_login,
);

async fn login_returns_the_seed_token_set(backend: Backend) {
    let app = spawn_app(backend).await;
    let id = app.create_user("alice@example.com", PASSWORD).await;
    let answer = app.login("alice@example.com", PASSWORD).await;
    let data = answer.data(200);
    assert_eq!(data["expiresIn"], json!(86400));
    assert_eq!(
        data["user"],
        json!({ "id": id.to_string(), "email": "alice@example.com", "fullName": "Test User" })
    );
    assert!(data.get("requiresTwoFactor").is_none());

    let access = data["accessToken"].as_str().unwrap();
    let header = jwt_header(access);
    assert_eq!(header["alg"], "EdDSA");
    assert_eq!(header["typ"], "at+jwt");
    assert!(header["kid"].is_string());
    let c = claims(access);
    assert_eq!(c["iss"], "gatehouse");
    assert_eq!(c["aud"], "gatehouse-api");
    assert_eq!(c["sub"], json!(id.to_string()));
    assert!(c["sid"].is_string() && c["jti"].is_string());
    assert_eq!(
        c["exp"].as_i64().unwrap() - c["iat"].as_i64().unwrap(),
        86400
    );
    assert_eq!(c["amr"], json!(["pwd"]));

    let refresh = data["refreshToken"].as_str().unwrap();
    assert_eq!(jwt_header(refresh)["typ"], "refresh+jwt");
    let rc = claims(refresh);
    assert_eq!(
        rc["exp"].as_i64().unwrap() - rc["iat"].as_i64().unwrap(),
        30 * 86400
    );
    assert_eq!(rc["sid"], c["sid"]);
}

async fn emails_match_trimmed_and_without_case(backend: Backend) {
    let app = spawn_app(backend).await;
    app.create_user("Bob.Smith@Example.com", PASSWORD).await;
    let answer = app.login("  bob.smith@EXAMPLE.COM ", PASSWORD).await;
    assert_eq!(answer.data(200)["user"]["email"], "Bob.Smith@Example.com");
}

async fn unknown_email_and_wrong_password_get_one_answer(backend: Backend) {
    let app = spawn_app(backend).await;
    app.create_user("carol@example.com", PASSWORD).await;
    let wrong_password = app.login("carol@example.com", "not the password").await;
    let unknown = app.login("nobody@example.com", PASSWORD).await;
    wrong_password.error(401, "INVALID_CREDENTIALS");
    unknown.error(401, "INVALID_CREDENTIALS");
    assert_eq!(wrong_password.body, unknown.body);
}

async fn a_disabled_account_is_told_so_only_with_its_password(backend: Backend) {
    let app = spawn_app(backend).await;
    app.create_user("dave@example.com", PASSWORD).await;
    app.handle.disable_user("dave@example.com").await.unwrap();
    app.login("dave@example.com", "not the password")
        .await
        .error(401, "INVALID_CREDENTIALS");
    app.login("dave@example.com", PASSWORD)
        .await
        .error(403, "ACCOUNT_DISABLED");
    app.handle.enable_user("dave@example.com").await.unwrap();
    app.login("dave@example.com", PASSWORD).await.data(200);
}

async fn login_names_each_bad_field(backend: Backend) {
    let app = spawn_app(backend).await;
    let answer = app
        .post(
            "/api/v1/auth/login",
            json!({ "email": "not-an-address", "password": "" }),
        )
        .await;
    let error = answer.error(400, "VALIDATION_ERROR");
    assert!(error["details"]["fields"]["email"].is_string(), "{error}");
    assert!(
        error["details"]["fields"]["password"].is_string(),
        "{error}"
    );

    let answer = app
        .post("/api/v1/auth/login", json!({ "email": "a@example.com" }))
        .await;
    assert_eq!(
        answer.error(400, "VALIDATION_ERROR")["details"]["fields"]["password"],
        "is required"
    );

    let answer = app
        .post(
            "/api/v1/auth/login",
            json!({ "email": 42, "password": "x" }),
        )
        .await;
    assert!(answer.error(400, "VALIDATION_ERROR")["details"]["fields"]["email"].is_string());

    let long = format!("{}@example.com", "a".repeat(10_000));
    let answer = app
        .post(
            "/api/v1/auth/login",
            json!({ "email": long, "password": "x" }),
        )
        .await;
    answer.error(400, "VALIDATION_ERROR");
}

async fn the_access_token_opens_the_contacts_and_me(backend: Backend) {
    let app = spawn_app(backend).await;
    let (access, _) = app.logged_in_user("erin@example.com").await;
    let list = app.get("/api/v1/crm/contacts", &access).await;
    assert_eq!(list.data(200), &json!({ "items": [], "nextCursor": null }));

    let me = app.get("/api/v1/auth/me", &access).await;
    let me = me.data(200);
    assert_eq!(me["email"], "erin@example.com");
    assert_eq!(me["fullName"], "Test User");
    assert_eq!(me["twoFactorEnabled"], false);
    assert_eq!(me["recoveryCodesRemaining"], 0);
    assert!(me["createdAt"].as_str().unwrap().ends_with('Z'));
}

async fn logout_ends_the_current_session_only(backend: Backend) {
    let app = spawn_app(backend).await;
    let (first, first_refresh) = app.logged_in_user("frank@example.com").await;
    let second = app.login("frank@example.com", PASSWORD).await;
    let second = second.data(200)["accessToken"].as_str().unwrap().to_owned();

    let answer = app
        .call(Method::POST, "/api/v1/auth/logout", Some(&first), None)
        .await;
    assert_eq!(answer.data(200), &json!({ "revokedSessions": 1 }));

    let refused = app.get("/api/v1/crm/contacts", &first).await;
    refused.error(401, "TOKEN_INVALID");
    assert!(
        refused
            .header("www-authenticate")
            .unwrap()
            .contains("invalid_token")
    );
    app.post(
        "/api/v1/auth/refresh",
        json!({ "refreshToken": first_refresh }),
    )
    .await
    .error(401, "REFRESH_TOKEN_INVALID");
    app.get("/api/v1/crm/contacts", &second).await.data(200);
}

async fn logout_scopes_others_and_all(backend: Backend) {
    let app = spawn_app(backend).await;
    let (a, _) = app.logged_in_user("gina@example.com").await;
    let mut others = Vec::new();
    for _ in 0..2 {
        let answer = app.login("gina@example.com", PASSWORD).await;
        others.push(answer.data(200)["accessToken"].as_str().unwrap().to_owned());
    }
    let answer = app
        .call(
            Method::POST,
            "/api/v1/auth/logout",
            Some(&a),
            Some(json!({ "scope": "others" })),
        )
        .await;
    assert_eq!(answer.data(200)["revokedSessions"], 2);
    app.get("/api/v1/auth/me", &a).await.data(200);
    for token in &others {
        app.get("/api/v1/auth/me", token)
            .await
            .error(401, "TOKEN_INVALID");
    }

    let b = app.login("gina@example.com", PASSWORD).await;
    let b = b.data(200)["accessToken"].as_str().unwrap().to_owned();
    let answer = app
        .call(
            Method::POST,
            "/api/v1/auth/logout",
            Some(&b),
            Some(json!({ "scope": "all" })),
        )
        .await;
    assert_eq!(answer.data(200)["revokedSessions"], 2);
    app.get("/api/v1/auth/me", &a)
        .await
        .error(401, "TOKEN_INVALID");
    app.get("/api/v1/auth/me", &b)
        .await
        .error(401, "TOKEN_INVALID");

    let c = app.login("gina@example.com", PASSWORD).await;
    let c = c.data(200)["accessToken"].as_str().unwrap().to_owned();
    let answer = app
        .call(
            Method::POST,
            "/api/v1/auth/logout",
            Some(&c),
            Some(json!({ "scope": "everything" })),
        )
        .await;
    answer.error(400, "VALIDATION_ERROR");
}

async fn registration_when_open(backend: Backend) {
    let args = gatehouse::config::SettingsArgs {
        registration: Some("open".into()),
        ..Default::default()
    };
    let app = crate::helpers::spawn_app_with(backend, args).await;
    let register = |email: &str, password: &str| {
        app.post(
            "/api/v1/auth/register",
            json!({ "email": email, "password": password, "fullName": "Reg Ister" }),
        )
    };
    let answer = register("reg@example.com", PASSWORD).await;
    let user = &answer.data(201)["user"];
    assert_eq!(user["email"], "reg@example.com");
    assert_eq!(user["fullName"], "Reg Ister");
    register("REG@example.com", PASSWORD)
        .await
        .error(409, "EMAIL_TAKEN");
    register("new@example.com", "12345678")
        .await
        .error(400, "WEAK_PASSWORD");
    app.login("reg@example.com", PASSWORD).await.data(200);
}

async fn a_weaker_password_hash_is_upgraded_at_login(backend: Backend) {
    use argon2::password_hash::{PasswordHasher as _, SaltString};
    let app = spawn_app(backend).await;
    app.create_user("old@example.com", PASSWORD).await;
    let weak = argon2::Argon2::new(
        argon2::Algorithm::Argon2id,
        argon2::Version::V0x13,
        argon2::Params::new(4096, 1, 1, None).unwrap(),
    )
    .hash_password(
        PASSWORD.as_bytes(),
        &SaltString::generate(&mut rand::rngs::OsRng),
    )
    .unwrap()
    .to_string();
    app.execute(&format!(
        "UPDATE users SET password_hash = '{weak}' WHERE email_normalized = 'old@example.com'"
    ))
    .await;

    app.login("old@example.com", PASSWORD).await.data(200);
    // The upgrade runs after the answer; give it a few hashes' time.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let hash: String = app
            .scalar("SELECT password_hash FROM users WHERE email_normalized = 'old@example.com'")
            .await;
        if hash.starts_with("$argon2id$v=19$m=19456,t=2,p=1$") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "still {hash}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    app.login("old@example.com", PASSWORD).await.data(200);
}
