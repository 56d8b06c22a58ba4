//! Delivery through the outbox: mail queued while the SMTP server is down arrives once when it
//! is back (also with two instances on one database), and an SMTP server that accepts but never
//! answers holds up neither the requests nor the other mail. Over STARTTLS or TLS, mail goes only
//! to a server whose certificate is trusted (an internal CA's by `GATEHOUSE_SMTP_CA_FILE`), after
//! logging in.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use gatehouse::config::SettingsArgs;
use serde_json::json;

use crate::helpers::{Backend, Instance, PASSWORD, TestDatabase, both_backends};
use crate::smtp::{SmtpServer, app_with_smtp, outbox_drained};
use crate::smtp_tls::{SMTP_USER, Tls};

both_backends!(
    mail_queued_during_an_outage_arrives_once_when_the_server_is_back,
    two_instances_deliver_each_mail_once,
    an_smtp_server_that_never_answers_holds_nothing_up,
    tls_settings_never_fall_back_to_plain_text,
    mail_goes_out_encrypted_and_logged_in_to_a_relay_of_a_private_ca,
    a_wrong_smtp_password_or_an_untrusted_certificate_sends_nothing,
);

/// Mail queued while the server was down must arrive within a minute of its return (docs/api.md
/// §7); the tests cap the retry wait at a second, so a few seconds is ample.
const ARRIVAL: Duration = Duration::from_secs(15);

async fn mail_queued_during_an_outage_arrives_once_when_the_server_is_back(backend: Backend) {
    let mut smtp = SmtpServer::stopped();
    let app = app_with_smtp(backend, &smtp, SettingsArgs::default()).await;
    for i in 0..5 {
        app.create_user(&format!("u{i}@example.com"), PASSWORD)
            .await;
        let started = Instant::now();
        let answer = app
            .post(
                "/api/v1/auth/password/forgot",
                json!({ "email": format!("u{i}@example.com") }),
            )
            .await;
        assert_eq!(answer.status.as_u16(), 202);
        assert!(started.elapsed() < Duration::from_secs(2));
    }
    // The attempts fail and are recorded.
    let started = Instant::now();
    loop {
        let failed: i64 = app
            .scalar("SELECT COUNT(*) FROM mail_outbox WHERE last_error IS NOT NULL")
            .await;
        if failed == 5 {
            break;
        }
        assert!(started.elapsed() < ARRIVAL, "{failed} failures recorded");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    smtp.resume();
    let mails = smtp.wait_for(5, ARRIVAL).await;
    outbox_drained(&app).await;
    let mails_now = smtp.messages();
    assert_eq!(mails_now.len(), 5, "each mail once");
    let ids: BTreeSet<String> = mails.iter().map(|m| m.header("Message-ID")).collect();
    assert_eq!(ids.len(), 5);
    let left: i64 = app.scalar("SELECT COUNT(*) FROM mail_outbox").await;
    assert_eq!(left, 0);
}

async fn two_instances_deliver_each_mail_once(backend: Backend) {
    let mut smtp = SmtpServer::stopped();
    let db = TestDatabase::migrated(&backend).await;
    let env = [
        ("GATEHOUSE_SMTP_URL", smtp.url()),
        ("GATEHOUSE_MAIL_RETRY_MAX", "1s".to_owned()),
        ("GATEHOUSE_RATE_LIMIT", "off".to_owned()),
    ];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (a, b) = (Instance::start(&db, &env), Instance::start(&db, &env));
    const USERS: usize = 12;
    for i in 0..USERS {
        let email = format!("u{i}@example.com");
        let output = db.cli(
            &[
                "user",
                "add",
                "--email",
                &email,
                "--name",
                "U",
                "--password-stdin",
            ],
            Some(&format!("{PASSWORD}\n")),
        );
        assert!(output.status.success());
        // Half through each instance.
        let instance = if i % 2 == 0 { &a } else { &b };
        let answer = instance
            .post("/api/v1/auth/password/forgot", json!({ "email": email }))
            .await;
        assert_eq!(answer.status.as_u16(), 202);
    }
    // The workers try every mail while the server is down; then it comes back.
    let started = Instant::now();
    loop {
        let failed: i64 = db
            .scalar("SELECT COUNT(*) FROM mail_outbox WHERE last_error IS NOT NULL")
            .await;
        if failed == USERS as i64 {
            break;
        }
        assert!(started.elapsed() < ARRIVAL, "{failed} failures recorded");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    smtp.resume();
    smtp.wait_for(USERS, ARRIVAL).await;
    // A second delivery of anything could only come from a worker still holding it: once the
    // outbox is empty, both instances stop, and the server has heard the last of them, what it
    // holds is all there will ever be.
    let started = Instant::now();
    while db.scalar::<i64>("SELECT COUNT(*) FROM mail_outbox").await > 0 {
        assert!(started.elapsed() < ARRIVAL, "mail still queued");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Dropped: stopped by SIGTERM, and waited for.
    drop((a, b));
    smtp.wait_idle().await;
    let mails = smtp.messages();
    assert_eq!(mails.len(), USERS, "each mail exactly once");
    let recipients: BTreeSet<String> = mails.iter().map(|m| m.header("X-RcptTo")).collect();
    assert_eq!(recipients.len(), USERS);
    let ids: BTreeSet<String> = mails.iter().map(|m| m.header("Message-ID")).collect();
    assert_eq!(ids.len(), USERS);
}

async fn an_smtp_server_that_never_answers_holds_nothing_up(backend: Backend) {
    // Accepts connections and says nothing: no greeting, no answer.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = silent.local_addr().unwrap().port();
    let held = tokio::spawn(async move {
        let mut sockets = Vec::new();
        while let Ok((socket, _)) = silent.accept().await {
            sockets.push(socket);
        }
    });
    let args = SettingsArgs {
        smtp_url: Some(format!("smtp://127.0.0.1:{port}")),
        smtp_timeout: Some("1s".into()),
        registration: Some("open".into()),
        ..Default::default()
    };
    let app = crate::helpers::spawn_app_with(backend, args).await;
    let started = Instant::now();
    app.post(
        "/api/v1/auth/register",
        json!({ "email": "ann@example.com", "password": PASSWORD, "fullName": "Ann" }),
    )
    .await
    .data(201);
    let answer = app
        .post(
            "/api/v1/auth/password/forgot",
            json!({ "email": "ann@example.com" }),
        )
        .await;
    assert_eq!(answer.status.as_u16(), 202);
    app.login("ann@example.com", PASSWORD).await.data(200);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    // The worker gives up on each attempt and records why.
    assert!(!recorded_error(&app).await.is_empty());
    held.abort();
}

/// `smtp+starttls://` and `smtps://` mean TLS or nothing: against a server that offers neither,
/// the mail stays queued with the reason, and nothing crosses the wire in clear.
async fn tls_settings_never_fall_back_to_plain_text(backend: Backend) {
    let smtp = SmtpServer::start();
    for scheme in ["smtp+starttls", "smtps"] {
        let args = SettingsArgs {
            smtp_url: Some(format!("{scheme}://127.0.0.1:{}", smtp.port)),
            smtp_timeout: Some("2s".into()),
            ..Default::default()
        };
        let app = crate::helpers::spawn_app_with(backend.clone(), args).await;
        queued_with_an_error(&app).await;
        assert!(smtp.messages().is_empty(), "{scheme}: a mail went in clear");
    }
}

async fn mail_goes_out_encrypted_and_logged_in_to_a_relay_of_a_private_ca(backend: Backend) {
    for tls in [Tls::StartTls, Tls::Implicit] {
        let smtp = SmtpServer::start_secure(tls);
        let ca_file = smtp.secure.as_ref().unwrap().ca_file();
        let args = SettingsArgs {
            smtp_ca_file: Some(ca_file),
            ..Default::default()
        };
        let app = app_with_smtp(backend.clone(), &smtp, args).await;
        app.create_user("ann@example.com", PASSWORD).await;
        app.post(
            "/api/v1/auth/password/forgot",
            json!({ "email": "ann@example.com" }),
        )
        .await;
        let mail = &smtp
            .wait_for_mail("ann@example.com", "reset your password", 1)
            .await[0];
        // The server takes mail only after a login, which it allows only over TLS.
        let logins = smtp.secure.as_ref().unwrap().logins();
        assert_eq!(logins, [format!("{SMTP_USER} ok")], "{tls:?}");
        // What arrived is the real mail: its link resets the password.
        let token = mail.token("/reset-password");
        let new_password = "a brand new passphrase";
        app.post(
            "/api/v1/auth/password/reset",
            json!({ "token": token, "newPassword": new_password }),
        )
        .await
        .data(200);
        app.login("ann@example.com", new_password).await.data(200);
        // Gone from the outbox once the server's answer is in (just after the mail is stored).
        let started = Instant::now();
        loop {
            let left: i64 = app.scalar("SELECT COUNT(*) FROM mail_outbox").await;
            if left == 0 {
                break;
            }
            assert!(started.elapsed() < ARRIVAL, "{tls:?}: still queued");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// A refused login, or a certificate no trusted CA signed, is a failed attempt like any other:
/// the mail stays queued with the reason, nothing is delivered, the service goes on; and against
/// an untrusted certificate the password is never sent.
async fn a_wrong_smtp_password_or_an_untrusted_certificate_sends_nothing(backend: Backend) {
    let wrong_password = SmtpServer::start_secure(Tls::StartTls);
    let secure = wrong_password.secure.as_ref().unwrap();
    let args = SettingsArgs {
        smtp_url: Some(secure.url(wrong_password.port, "not the password")),
        smtp_ca_file: Some(secure.ca_file()),
        ..Default::default()
    };
    let app = app_with_smtp(backend.clone(), &wrong_password, args).await;
    let error = queued_with_an_error(&app).await;
    assert!(error.contains("535"), "the server's refusal: {error}");
    assert!(!error.contains("not the password"), "{error}");
    let logins = secure.logins();
    assert!(!logins.is_empty());
    assert!(
        logins.iter().all(|l| *l == format!("{SMTP_USER} refused")),
        "{logins:?}"
    );
    assert!(wrong_password.messages().is_empty());

    for tls in [Tls::StartTls, Tls::Implicit] {
        // The server's own CA is not given: only the system's roots are trusted.
        let untrusted = SmtpServer::start_secure(tls);
        let app = app_with_smtp(backend.clone(), &untrusted, SettingsArgs::default()).await;
        let error = queued_with_an_error(&app).await;
        assert!(
            error.to_lowercase().contains("certificate"),
            "{tls:?}: {error}"
        );
        let secure = untrusted.secure.as_ref().unwrap();
        assert!(secure.logins().is_empty(), "{tls:?}: a login was sent");
        assert!(untrusted.messages().is_empty(), "{tls:?}");
    }
}

/// Asks a reset for a new account and waits for the failed attempt; the mail must still be
/// queued, and the service still answering. Gives the recorded error.
async fn queued_with_an_error(app: &crate::helpers::TestApp) -> String {
    app.create_user("ann@example.com", PASSWORD).await;
    let answer = app
        .post(
            "/api/v1/auth/password/forgot",
            json!({ "email": "ann@example.com" }),
        )
        .await;
    assert_eq!(answer.status.as_u16(), 202);
    let error = recorded_error(app).await;
    let queued: i64 = app.scalar("SELECT COUNT(*) FROM mail_outbox").await;
    assert_eq!(queued, 1, "the mail stays queued");
    app.login("ann@example.com", PASSWORD).await.data(200);
    error
}

/// The error of the outbox's first failed attempt, once there is one.
async fn recorded_error(app: &crate::helpers::TestApp) -> String {
    let started = Instant::now();
    loop {
        let error: Option<String> = app.scalar("SELECT MAX(last_error) FROM mail_outbox").await;
        if let Some(error) = error {
            return error;
        }
        assert!(started.elapsed() < ARRIVAL, "no failure recorded");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
