//! Forgotten password and reset (docs/api.md §7) end to end: each mail read from a real SMTP
//! server, its link followed through HTTP.

use std::time::Duration;

use gatehouse::config::SettingsArgs;
use serde_json::json;

use crate::helpers::{Backend, PASSWORD, SPREAD_DEADLINE, TestApp, both_backends, code_at};
use crate::smtp::{PUBLIC_URL, SmtpServer, app_with_smtp, outbox_drained};

both_backends!(
    a_reset_ends_every_session_and_its_link_works_once,
    opening_a_link_consumes_nothing,
    a_newer_reset_voids_the_older_link,
    unknown_and_disabled_addresses_get_the_same_answer_and_no_mail,
    tampered_reused_and_expired_tokens_are_refused,
    a_reset_ends_pending_two_factor_challenges_and_keeps_two_factor,
);

const NEW_PASSWORD: &str = "a brand new passphrase";

async fn forgot(app: &TestApp, email: &str) -> serde_json::Value {
    let answer = app
        .post("/api/v1/auth/password/forgot", json!({ "email": email }))
        .await;
    assert_eq!(answer.status.as_u16(), 202, "{:#}", answer.body);
    answer.body
}

async fn reset(app: &TestApp, token: &str, password: &str) -> crate::helpers::Answer {
    app.post(
        "/api/v1/auth/password/reset",
        json!({ "token": token, "newPassword": password }),
    )
    .await
}

async fn a_reset_ends_every_session_and_its_link_works_once(backend: Backend) {
    let smtp = SmtpServer::start();
    let app = app_with_smtp(backend, &smtp, SettingsArgs::default()).await;
    let (access, refresh) = app.logged_in_user("ann@example.com").await;
    let other = app.login("ann@example.com", PASSWORD).await;
    let other_access = other.data(200)["accessToken"].as_str().unwrap().to_owned();

    forgot(&app, "ann@example.com").await;
    let mail = &smtp
        .wait_for_mail("ann@example.com", "reset your password", 1)
        .await[0];
    assert!(mail.link("/reset-password").starts_with(PUBLIC_URL));
    let token = mail.token("/reset-password");
    assert!(token.len() >= 43, "{token}: at least 256 bits");

    // The page checks the link before a password is typed; checking uses nothing up.
    for _ in 0..2 {
        let checked = app
            .post(
                "/api/v1/auth/password/reset/check",
                json!({ "token": token }),
            )
            .await;
        assert_eq!(checked.data(200)["email"], "ann@example.com");
    }
    reset(&app, &token, NEW_PASSWORD).await.data(200);
    app.post(
        "/api/v1/auth/password/reset/check",
        json!({ "token": token }),
    )
    .await
    .error(400, "LINK_INVALID");
    // Every session, on this instance at once (and on others within the revocation delay).
    app.refused_within(&access, SPREAD_DEADLINE).await;
    app.refused_within(&other_access, SPREAD_DEADLINE).await;
    app.post("/api/v1/auth/refresh", json!({ "refreshToken": refresh }))
        .await
        .error(401, "REFRESH_TOKEN_INVALID");
    app.login("ann@example.com", PASSWORD)
        .await
        .error(401, "INVALID_CREDENTIALS");
    app.login("ann@example.com", NEW_PASSWORD).await.data(200);
    // Once.
    reset(&app, &token, "yet another passphrase")
        .await
        .error(400, "LINK_INVALID");
    // The owner is told, without a secret.
    let notice = &smtp
        .wait_for_mail("ann@example.com", "password was reset", 1)
        .await[0];
    assert!(!notice.text().contains(NEW_PASSWORD));
    assert!(!notice.text().contains("token="));
    assert_eq!(app.audit_count("password.reset", None).await, 1);
}

/// A mail scanner opens every link (GET) before the user does: that must not use the token.
async fn opening_a_link_consumes_nothing(backend: Backend) {
    let smtp = SmtpServer::start();
    let app = app_with_smtp(backend, &smtp, SettingsArgs::default()).await;
    app.create_user("ann@example.com", PASSWORD).await;
    forgot(&app, "ann@example.com").await;
    let mail = &smtp
        .wait_for_mail("ann@example.com", "reset your password", 1)
        .await[0];
    let link = mail.link("/reset-password");
    let path = link.strip_prefix(PUBLIC_URL).unwrap();
    for _ in 0..3 {
        let opened = app.http.client.get(app.url(path)).send().await.unwrap();
        // The page is issue 14's; whatever answers, the token must survive.
        assert!(opened.status().as_u16() < 500);
        let head = app.http.client.head(app.url(path)).send().await.unwrap();
        assert!(head.status().as_u16() < 500);
    }
    reset(&app, &mail.token("/reset-password"), NEW_PASSWORD)
        .await
        .data(200);
}

async fn a_newer_reset_voids_the_older_link(backend: Backend) {
    let smtp = SmtpServer::start();
    let app = app_with_smtp(backend, &smtp, SettingsArgs::default()).await;
    app.create_user("ann@example.com", PASSWORD).await;
    forgot(&app, "ann@example.com").await;
    let first = smtp
        .wait_for_mail("ann@example.com", "reset your password", 1)
        .await[0]
        .token("/reset-password");
    forgot(&app, "Ann@Example.COM").await;
    let mails = smtp
        .wait_for_mail("ann@example.com", "reset your password", 2)
        .await;
    let second = mails[1].token("/reset-password");
    assert_ne!(first, second);
    reset(&app, &first, NEW_PASSWORD)
        .await
        .error(400, "LINK_INVALID");
    reset(&app, &second, NEW_PASSWORD).await.data(200);
}

async fn unknown_and_disabled_addresses_get_the_same_answer_and_no_mail(backend: Backend) {
    let smtp = SmtpServer::start();
    let app = app_with_smtp(backend, &smtp, SettingsArgs::default()).await;
    app.create_user("ann@example.com", PASSWORD).await;
    app.create_user("dan@example.com", PASSWORD).await;
    app.handle.disable_user("dan@example.com").await.unwrap();
    let known = forgot(&app, "ann@example.com").await;
    let unknown = forgot(&app, "nobody@example.com").await;
    let disabled = forgot(&app, "dan@example.com").await;
    assert_eq!(known, unknown);
    assert_eq!(known, disabled);
    smtp.wait_for_mail("ann@example.com", "reset your password", 1)
        .await;
    // Once the three requests are handled and the outbox is empty, nothing more can come.
    outbox_drained(&app).await;
    let to: Vec<String> = smtp.messages().iter().map(|m| m.to()).collect();
    assert_eq!(to.len(), 1, "{to:?}");
}

async fn tampered_reused_and_expired_tokens_are_refused(backend: Backend) {
    let smtp = SmtpServer::start();
    let app = app_with_smtp(backend, &smtp, SettingsArgs::default()).await;
    app.create_user("ann@example.com", PASSWORD).await;
    forgot(&app, "ann@example.com").await;
    let token = smtp
        .wait_for_mail("ann@example.com", "reset your password", 1)
        .await[0]
        .token("/reset-password");
    let mut tampered = token.clone().into_bytes();
    tampered[10] = if tampered[10] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).unwrap();
    for bad in [
        tampered.as_str(),
        &token[..token.len() - 1],
        &format!("{token}A"),
        "x",
        "../../etc/passwd",
        &"A".repeat(10_000),
    ] {
        reset(&app, bad, NEW_PASSWORD)
            .await
            .error(400, "LINK_INVALID");
        app.post("/api/v1/auth/email/verify", json!({ "token": bad }))
            .await
            .error(400, "LINK_INVALID");
        for check in [
            "/api/v1/auth/password/reset/check",
            "/api/v1/auth/email/verify/check",
        ] {
            app.post(check, json!({ "token": bad }))
                .await
                .error(400, "LINK_INVALID");
        }
    }
    // A reset token checks as no verification token.
    app.post("/api/v1/auth/email/verify/check", json!({ "token": token }))
        .await
        .error(400, "LINK_INVALID");
    // A reset token is no verification or invitation token.
    app.post("/api/v1/auth/email/verify", json!({ "token": token }))
        .await
        .error(400, "LINK_INVALID");
    app.post(
        "/api/v1/auth/invitations/accept",
        json!({ "token": token, "password": NEW_PASSWORD }),
    )
    .await
    .error(400, "LINK_INVALID");
    // A weak password leaves the token usable.
    reset(&app, &token, "password")
        .await
        .error(400, "WEAK_PASSWORD");
    // Expired after an hour.
    app.clock().advance(Duration::from_secs(3601));
    reset(&app, &token, NEW_PASSWORD)
        .await
        .error(400, "LINK_INVALID");
    app.post(
        "/api/v1/auth/password/reset/check",
        json!({ "token": token }),
    )
    .await
    .error(400, "LINK_INVALID");
    // Housekeeping deletes it an hour after it expired.
    assert_eq!(app.handle.housekeep().await.unwrap().mail_tokens, 0);
    app.clock().advance(Duration::from_secs(3600));
    assert_eq!(app.handle.housekeep().await.unwrap().mail_tokens, 1);
    let left: i64 = app.scalar("SELECT COUNT(*) FROM mail_tokens").await;
    assert_eq!(left, 0);
}

async fn a_reset_ends_pending_two_factor_challenges_and_keeps_two_factor(backend: Backend) {
    let smtp = SmtpServer::start();
    let app = app_with_smtp(backend, &smtp, SettingsArgs::default()).await;
    let (access, _) = app.logged_in_user("ann@example.com").await;
    let (secret, _) = app.enable_two_factor(&access).await;
    let challenge = app.login("ann@example.com", PASSWORD).await;
    let temp = challenge.data(200)["tempToken"]
        .as_str()
        .unwrap()
        .to_owned();
    forgot(&app, "ann@example.com").await;
    let token = smtp
        .wait_for_mail("ann@example.com", "reset your password", 1)
        .await[0]
        .token("/reset-password");
    reset(&app, &token, NEW_PASSWORD).await.data(200);
    let code = code_at(&secret, app.now_seconds());
    app.post(
        "/api/v1/auth/2fa/verify",
        json!({ "tempToken": temp, "code": code }),
    )
    .await
    .error(401, "TEMP_TOKEN_INVALID");
    // 2FA stays on: the new password leads to a challenge.
    let again = app.login("ann@example.com", NEW_PASSWORD).await;
    assert_eq!(again.data(200)["requiresTwoFactor"], json!(true));
}
