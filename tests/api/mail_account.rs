//! The account's address and life (docs/api.md §7) end to end, each mail read from a real SMTP
//! server and its link followed through HTTP: verification, address change, invitations, leaving.

use gatehouse::config::SettingsArgs;
use reqwest::Method;
use serde_json::json;

use crate::helpers::{Backend, PASSWORD, SPREAD_DEADLINE, both_backends, code_at};
use crate::smtp::{SmtpServer, app_with_smtp};

both_backends!(
    registration_mails_a_verification_link,
    unverified_accounts_are_refused_after_the_password_when_required,
    an_address_changes_when_the_link_to_it_comes_back,
    an_address_taken_meanwhile_is_refused_at_verification,
    an_invitation_sets_the_first_password,
    the_owner_deletes_the_account,
);

async fn registration_mails_a_verification_link(backend: Backend) {
    let smtp = SmtpServer::start();
    let app = app_with_smtp(backend, &smtp, SettingsArgs::default()).await;
    app.post(
        "/api/v1/auth/register",
        json!({ "email": "Bea@Example.com", "password": PASSWORD, "fullName": "Bea" }),
    )
    .await
    .data(201);
    let access = app.login("bea@example.com", PASSWORD).await.data(200)["accessToken"]
        .as_str()
        .unwrap()
        .to_owned();
    let me = app.get("/api/v1/auth/me", &access).await;
    assert_eq!(me.data(200)["emailVerified"], json!(false));
    let first = smtp
        .wait_for_mail("Bea@Example.com", "confirm your e-mail", 1)
        .await[0]
        .token("/verify-email");
    // A resend voids the first link.
    let resend = app
        .call(
            Method::POST,
            "/api/v1/auth/email/verify/resend",
            Some(&access),
            None,
        )
        .await;
    assert_eq!(resend.status.as_u16(), 202);
    let second = smtp
        .wait_for_mail("Bea@Example.com", "confirm your e-mail", 2)
        .await[1]
        .token("/verify-email");
    app.post("/api/v1/auth/email/verify", json!({ "token": first }))
        .await
        .error(400, "LINK_INVALID");
    app.post("/api/v1/auth/email/verify", json!({ "token": second }))
        .await
        .data(200);
    let me = app.get("/api/v1/auth/me", &access).await;
    assert_eq!(me.data(200)["emailVerified"], json!(true));
    app.post("/api/v1/auth/email/verify", json!({ "token": second }))
        .await
        .error(400, "LINK_INVALID");
    // Accounts made by the CLI are verified.
    app.create_user("cli@example.com", PASSWORD).await;
    let list = app.cli(&["user", "list", "--json"], None);
    let users: serde_json::Value = serde_json::from_slice(&list.stdout).unwrap();
    let verified: Vec<(String, bool)> = users
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            (
                u["email"].as_str().unwrap().to_owned(),
                u["emailVerified"].as_bool().unwrap(),
            )
        })
        .collect();
    assert!(
        verified.contains(&("cli@example.com".into(), true)),
        "{verified:?}"
    );
    assert!(
        verified.contains(&("Bea@Example.com".into(), true)),
        "{verified:?}"
    );
}

async fn unverified_accounts_are_refused_after_the_password_when_required(backend: Backend) {
    let smtp = SmtpServer::start();
    let args = SettingsArgs {
        require_verified_email: Some("on".into()),
        ..Default::default()
    };
    let app = app_with_smtp(backend, &smtp, args).await;
    app.post(
        "/api/v1/auth/register",
        json!({ "email": "bea@example.com", "password": PASSWORD, "fullName": "Bea" }),
    )
    .await
    .data(201);
    app.login("bea@example.com", "not the password")
        .await
        .error(401, "INVALID_CREDENTIALS");
    app.login("bea@example.com", PASSWORD)
        .await
        .error(403, "EMAIL_NOT_VERIFIED");
    let token = smtp
        .wait_for_mail("bea@example.com", "confirm your e-mail", 1)
        .await[0]
        .token("/verify-email");
    app.post("/api/v1/auth/email/verify", json!({ "token": token }))
        .await
        .data(200);
    app.login("bea@example.com", PASSWORD).await.data(200);
}

async fn an_address_changes_when_the_link_to_it_comes_back(backend: Backend) {
    let smtp = SmtpServer::start();
    let app = app_with_smtp(backend, &smtp, SettingsArgs::default()).await;
    let (access, _) = app.logged_in_user("ann@example.com").await;
    let change = |email: &str, password: &str| {
        let body = json!({ "newEmail": email, "password": password });
        app.call(
            Method::POST,
            "/api/v1/auth/email",
            Some(&access),
            Some(body),
        )
    };
    change("ann@new.example", "wrong password")
        .await
        .error(403, "INVALID_CREDENTIALS");
    change("not an address", PASSWORD)
        .await
        .error(400, "VALIDATION_ERROR");
    let accepted = change("Ann@New.Example", PASSWORD).await;
    assert_eq!(accepted.status.as_u16(), 202, "{:#}", accepted.body);
    let token = smtp
        .wait_for_mail("Ann@New.Example", "confirm your new e-mail", 1)
        .await[0]
        .token("/verify-email");
    // Nothing changed yet; the page shows the address the link confirms before the click.
    app.login("ann@example.com", PASSWORD).await.data(200);
    let checked = app
        .post("/api/v1/auth/email/verify/check", json!({ "token": token }))
        .await;
    assert_eq!(checked.data(200)["email"], json!("Ann@New.Example"));
    app.post("/api/v1/auth/email/verify", json!({ "token": token }))
        .await
        .data(200);
    app.post("/api/v1/auth/email/verify/check", json!({ "token": token }))
        .await
        .error(400, "LINK_INVALID");
    app.login("ann@new.example", PASSWORD).await.data(200);
    app.login("ann@example.com", PASSWORD)
        .await
        .error(401, "INVALID_CREDENTIALS");
    let me = app.get("/api/v1/auth/me", &access).await;
    assert_eq!(me.data(200)["email"], json!("Ann@New.Example"));
    assert_eq!(me.data(200)["emailVerified"], json!(true));
    let notice = &smtp
        .wait_for_mail("<ann@example.com>", "e-mail address was changed", 1)
        .await[0];
    assert!(!notice.text().contains("token="));
}

async fn an_address_taken_meanwhile_is_refused_at_verification(backend: Backend) {
    let smtp = SmtpServer::start();
    let app = app_with_smtp(backend, &smtp, SettingsArgs::default()).await;
    let (access, _) = app.logged_in_user("ann@example.com").await;
    let body = json!({ "newEmail": "shared@example.com", "password": PASSWORD });
    let accepted = app
        .call(
            Method::POST,
            "/api/v1/auth/email",
            Some(&access),
            Some(body.clone()),
        )
        .await;
    assert_eq!(accepted.status.as_u16(), 202);
    let token = smtp
        .wait_for_mail("shared@example.com", "confirm your new e-mail", 1)
        .await[0]
        .token("/verify-email");
    app.create_user("SHARED@example.com", PASSWORD).await;
    app.post("/api/v1/auth/email/verify", json!({ "token": token }))
        .await
        .error(409, "EMAIL_TAKEN");
    // Taken before the request (issue 22, finding 7): the same answer as for any address, so
    // no one learns which addresses have accounts; the address's owner is told that someone
    // tried, and nothing of who.
    let taken = app
        .call(
            Method::POST,
            "/api/v1/auth/email",
            Some(&access),
            Some(body),
        )
        .await;
    assert_eq!(taken.status.as_u16(), 202);
    let told = &smtp
        .wait_for_mail("SHARED@example.com", "tried to use this address", 1)
        .await[0];
    let text = told.text();
    assert!(
        !text.contains("token=") && !text.contains("ann@example.com"),
        "{text}"
    );
    let links = smtp
        .messages()
        .into_iter()
        .filter(|m| m.to().contains("shared@example.com") && m.subject().contains("confirm"))
        .count();
    assert_eq!(links, 1, "no second link to a taken address");
    app.login("ann@example.com", PASSWORD).await.data(200);
    // Throttled per account, whatever the address: 5 requests an hour, then 429.
    for n in 0..4 {
        let body = json!({ "newEmail": format!("n{n}@example.com"), "password": PASSWORD });
        let answer = app
            .call(
                Method::POST,
                "/api/v1/auth/email",
                Some(&access),
                Some(body),
            )
            .await;
        if n < 3 {
            assert_eq!(answer.status.as_u16(), 202, "request {}", n + 3);
        } else {
            answer.error(429, "RATE_LIMITED");
        }
    }
}

async fn an_invitation_sets_the_first_password(backend: Backend) {
    let smtp = SmtpServer::start();
    let app = app_with_smtp(backend, &smtp, SettingsArgs::default()).await;
    let output = app
        .db
        .command()
        .env("GATEHOUSE_SMTP_URL", smtp.url())
        .args([
            "user",
            "invite",
            "--email",
            "Cy@Example.com",
            "--name",
            "Cy <Admin>\u{e9}",
        ])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let id = String::from_utf8(output.stdout).unwrap();
    // The CLI queued the mail and left delivery (and the folder of .eml files) to the server.
    assert!(!std::path::Path::new(&app.db.mail_dir()).exists());
    assert!(uuid::Uuid::parse_str(id.trim()).is_ok(), "{id}");
    let mail = &smtp.wait_for_mail("Cy@Example.com", "invited", 1).await[0];
    assert!(
        mail.text().contains("Cy &lt;Admin&gt;"),
        "the HTML part escapes the name"
    );
    let token = mail.token("/accept-invitation");
    // No password works before the invitation is accepted.
    app.login("cy@example.com", "")
        .await
        .error(400, "VALIDATION_ERROR");
    app.login("cy@example.com", PASSWORD)
        .await
        .error(401, "INVALID_CREDENTIALS");
    let accept = |password: &str| {
        app.post(
            "/api/v1/auth/invitations/accept",
            json!({ "token": token, "password": password }),
        )
    };
    accept("password").await.error(400, "WEAK_PASSWORD");
    let tokens = accept(PASSWORD).await;
    let access = tokens.data(200)["accessToken"].as_str().unwrap().to_owned();
    let me = app.get("/api/v1/auth/me", &access).await;
    assert_eq!(me.data(200)["emailVerified"], json!(true));
    accept(PASSWORD).await.error(400, "LINK_INVALID");
    app.login("cy@example.com", PASSWORD).await.data(200);
    // The same address cannot be invited twice.
    let again = app.cli(
        &[
            "user",
            "invite",
            "--email",
            "cy@example.com",
            "--name",
            "Cy",
        ],
        None,
    );
    assert!(!again.status.success());
}

async fn the_owner_deletes_the_account(backend: Backend) {
    let smtp = SmtpServer::start();
    let app = app_with_smtp(backend, &smtp, SettingsArgs::default()).await;
    let (access, refresh) = app.logged_in_user("ann@example.com").await;
    app.call(
        Method::POST,
        "/api/v1/crm/contacts",
        Some(&access),
        Some(json!({ "fullName": "A contact" })),
    )
    .await
    .data(201);
    let delete = |body: serde_json::Value| {
        app.call(Method::DELETE, "/api/v1/auth/me", Some(&access), Some(body))
    };
    delete(json!({ "password": "wrong" }))
        .await
        .error(403, "INVALID_CREDENTIALS");
    delete(json!({ "password": PASSWORD })).await.data(200);
    app.refused_within(&access, SPREAD_DEADLINE).await;
    app.post("/api/v1/auth/refresh", json!({ "refreshToken": refresh }))
        .await
        .error(401, "REFRESH_TOKEN_INVALID");
    app.login("ann@example.com", PASSWORD)
        .await
        .error(401, "INVALID_CREDENTIALS");
    let contacts: i64 = app.scalar("SELECT COUNT(*) FROM contacts").await;
    assert_eq!(contacts, 0);
    assert_eq!(app.audit_count("user.deleted", None).await, 1);
    // The address is free again, and the account is gone from the list.
    app.create_user("ann@example.com", PASSWORD).await;
    let list = app.cli(&["user", "list", "--json"], None);
    let users: serde_json::Value = serde_json::from_slice(&list.stdout).unwrap();
    assert_eq!(users.as_array().unwrap().len(), 1);

    // With 2FA, a code too.
    let (access, _) = app.logged_in_user("tfa@example.com").await;
    let (secret, _) = app.enable_two_factor(&access).await;
    let body = json!({ "password": PASSWORD });
    app.call(Method::DELETE, "/api/v1/auth/me", Some(&access), Some(body))
        .await
        .error(400, "VALIDATION_ERROR");
    let code = code_at(&secret, app.now_seconds());
    let body = json!({ "password": PASSWORD, "code": code });
    app.call(Method::DELETE, "/api/v1/auth/me", Some(&access), Some(body))
        .await
        .data(200);
}
