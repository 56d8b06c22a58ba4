//! Security notices, and the abuse of the mail flows: floods of forgotten-password requests,
//! malformed and hostile addresses and names, case and Unicode variants of an address.

use std::time::Duration;

use gatehouse::config::SettingsArgs;
use reqwest::Method;
use serde_json::json;

use crate::helpers::{Backend, PASSWORD, both_backends, code_at};
use crate::smtp::{SmtpServer, app_with_smtp, outbox_drained};

both_backends!(
    security_changes_are_notified_without_secrets,
    a_run_of_wrong_codes_is_notified_once,
    forgot_password_floods_send_a_few_mails_and_answer_the_same,
    hostile_addresses_and_names_never_reach_a_header,
    address_variants_reach_the_one_account,
    mail_is_counted_in_the_metrics,
);

async fn security_changes_are_notified_without_secrets(backend: Backend) {
    let smtp = SmtpServer::start();
    let app = app_with_smtp(backend, &smtp, SettingsArgs::default()).await;
    let (access, _) = app.logged_in_user("ann@example.com").await;
    let (secret, codes) = app.enable_two_factor(&access).await;
    smtp.wait_for_mail("ann@example.com", "two-factor authentication is on", 1)
        .await;
    let code = code_at(&secret, app.now_seconds());
    let new_codes = app
        .call(
            Method::POST,
            "/api/v1/auth/2fa/recovery-codes",
            Some(&access),
            Some(json!({ "code": code })),
        )
        .await;
    let new_codes = crate::helpers::recovery_codes(&new_codes);
    smtp.wait_for_mail("ann@example.com", "new recovery codes", 1)
        .await;
    app.call(
        Method::POST,
        "/api/v1/auth/2fa/disable",
        Some(&access),
        Some(json!({ "password": PASSWORD, "code": new_codes[0] })),
    )
    .await
    .data(200);
    smtp.wait_for_mail("ann@example.com", "two-factor authentication is off", 1)
        .await;
    app.call(
        Method::POST,
        "/api/v1/auth/password",
        Some(&access),
        Some(json!({ "currentPassword": PASSWORD, "newPassword": "a brand new passphrase" })),
    )
    .await
    .data(200);
    smtp.wait_for_mail("ann@example.com", "password was changed", 1)
        .await;
    for mail in smtp.messages() {
        let text = mail.text();
        for secret in codes.iter().chain(&new_codes) {
            assert!(!text.contains(secret.as_str()), "{text}");
        }
        assert!(!text.contains("a brand new passphrase"));
        assert!(!text.contains("token="));
    }
}

async fn a_run_of_wrong_codes_is_notified_once(backend: Backend) {
    let smtp = SmtpServer::start();
    let app = app_with_smtp(backend, &smtp, SettingsArgs::default()).await;
    let (access, _) = app.logged_in_user("ann@example.com").await;
    app.enable_two_factor(&access).await;
    for _ in 0..8 {
        let challenge = app.login("ann@example.com", PASSWORD).await;
        let temp = challenge.data(200)["tempToken"]
            .as_str()
            .unwrap()
            .to_owned();
        app.post(
            "/api/v1/auth/2fa/verify",
            json!({ "tempToken": temp, "code": "000000" }),
        )
        .await;
        app.clock().advance(Duration::from_secs(3600));
    }
    smtp.wait_for_mail("ann@example.com", "wrong second-factor codes", 1)
        .await;
    outbox_drained(&app).await;
    let notices = smtp
        .messages()
        .into_iter()
        .filter(|m| m.subject().contains("wrong second-factor codes"))
        .count();
    assert_eq!(notices, 1);
}

async fn forgot_password_floods_send_a_few_mails_and_answer_the_same(backend: Backend) {
    let smtp = SmtpServer::start();
    let args = SettingsArgs {
        trusted_proxies: Some("127.0.0.1/32".into()),
        ..Default::default()
    };
    let app = app_with_smtp(backend, &smtp, args).await;
    app.create_user("ann@example.com", PASSWORD).await;
    let mut answers = Vec::new();
    for i in 0..40 {
        // From many client addresses (a botnet), through a trusted proxy: only the per-account
        // limit is left to stop the mails.
        let request = app
            .http
            .client
            .post(app.url("/api/v1/auth/password/forgot"))
            .header("X-Forwarded-For", format!("198.51.100.{i}"))
            .json(&json!({ "email": "ann@example.com" }));
        let answer = app.send(request).await;
        answers.push((answer.status.as_u16(), answer.body));
    }
    assert!(answers.iter().all(|a| a == &answers[0]), "{answers:?}");
    assert_eq!(answers[0].0, 202);
    smtp.wait_for_mail("ann@example.com", "reset your password", 1)
        .await;
    outbox_drained(&app).await;
    let mails = smtp.messages().len();
    assert!((1..=3).contains(&mails), "{mails} mails for 40 requests");
    let mailed = app.audit_count("password.reset_requested", None).await;
    assert_eq!(mailed as usize, mails);
    // From one client, the client's own limit answers the same, silently.
    for _ in 0..20 {
        let answer = app
            .post(
                "/api/v1/auth/password/forgot",
                json!({ "email": "other@example.com" }),
            )
            .await;
        assert_eq!((answer.status.as_u16(), answer.body), answers[0]);
    }
}

async fn hostile_addresses_and_names_never_reach_a_header(backend: Backend) {
    let smtp = SmtpServer::start();
    let app = app_with_smtp(backend, &smtp, SettingsArgs::default()).await;
    for email in [
        "ann@example.com\r\nBcc: eve@evil.example",
        "ann@example.com\nBcc: eve@evil.example",
        "ann@example.com, eve@evil.example",
        "\"ann\r\n\"@example.com",
        &format!("{}@example.com", "a".repeat(300)),
        "",
        "no-at-sign",
    ] {
        app.post("/api/v1/auth/password/forgot", json!({ "email": email }))
            .await
            .error(400, "VALIDATION_ERROR");
        app.post(
            "/api/v1/auth/register",
            json!({ "email": email, "password": PASSWORD, "fullName": "Eve" }),
        )
        .await
        .error(400, "VALIDATION_ERROR");
    }
    for name in [
        "Eve\r\nBcc: eve@evil.example",
        "Eve\nSubject: hi",
        "Eve\u{0}",
    ] {
        app.post(
            "/api/v1/auth/register",
            json!({ "email": "eve@example.com", "password": PASSWORD, "fullName": name }),
        )
        .await
        .error(400, "VALIDATION_ERROR");
    }
    // A name full of header syntax is only ever a name.
    app.post(
        "/api/v1/auth/register",
        json!({ "email": "eve@example.com", "password": PASSWORD,
                "fullName": "Eve: <x@evil.example>, Bcc =?utf-8?q?x?=" }),
    )
    .await
    .data(201);
    let mail = &smtp.wait_for_mail("eve@example.com", "confirm", 1).await[0];
    assert!(mail.0.lines().all(|l| !l.starts_with("Bcc")), "{}", mail.0);
    assert_eq!(mail.header("X-RcptTo"), "eve@example.com");
}

async fn address_variants_reach_the_one_account(backend: Backend) {
    let smtp = SmtpServer::start();
    let app = app_with_smtp(backend, &smtp, SettingsArgs::default()).await;
    app.create_user("Zoe@Example.com", PASSWORD).await;
    for variant in ["zoe@example.com", "  ZOE@EXAMPLE.COM  "] {
        app.post("/api/v1/auth/password/forgot", json!({ "email": variant }))
            .await;
    }
    // To the address as the account has it.
    let mails = smtp
        .wait_for_mail("Zoe@Example.com", "reset your password", 2)
        .await;
    assert!(
        mails
            .iter()
            .all(|m| m.header("X-RcptTo") == "Zoe@Example.com")
    );
    // A Unicode address is a different address, never folded onto an ASCII one.
    app.post(
        "/api/v1/auth/register",
        json!({ "email": "zoë@example.com", "password": PASSWORD, "fullName": "Zoë" }),
    )
    .await;
    let accounts: i64 = app
        .scalar("SELECT COUNT(*) FROM users WHERE email_normalized = 'zoe@example.com'")
        .await;
    assert_eq!(accounts, 1);
}

async fn mail_is_counted_in_the_metrics(backend: Backend) {
    let smtp = SmtpServer::start();
    let args = SettingsArgs {
        metrics_listen: Some("127.0.0.1:0".into()),
        ..Default::default()
    };
    let app = app_with_smtp(backend, &smtp, args).await;
    app.create_user("ann@example.com", PASSWORD).await;
    app.post(
        "/api/v1/auth/password/forgot",
        json!({ "email": "ann@example.com" }),
    )
    .await;
    smtp.wait_for_mail("ann@example.com", "reset", 1).await;
    let url = format!("{}/metrics", app.metrics_address.as_ref().unwrap());
    let started = std::time::Instant::now();
    loop {
        let text = reqwest::get(&url).await.unwrap().text().await.unwrap();
        if text.contains("gatehouse_mail_sent_total{kind=\"reset\"} 1") {
            assert!(
                text.contains("gatehouse_mail_queued_total{kind=\"reset\"} 1"),
                "{text}"
            );
            assert!(text.contains("gatehouse_mail_outbox_age_seconds"), "{text}");
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(5), "{text}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
