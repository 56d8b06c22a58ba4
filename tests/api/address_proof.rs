//! What proving an address changes (issue 22, findings 3, 4 and 6), against a real SMTP server:
//! a reset or a verification of an address that was never verified removes the sign-in methods
//! added before (an account pre-registered with someone else's address is not taken back by its
//! passkey), and the notices say what was removed and what remains; guarded services are told
//! whether the address is verified, and a rule can require it; with
//! `GATEHOUSE_REQUIRE_VERIFIED_EMAIL=on` no way in opens a session for an unverified address.

use gatehouse::config::SettingsArgs;
use serde_json::{Value, json};

use crate::authenticator::Authenticator;
use crate::guard::{AUTH_REQUEST, ask, within};
use crate::helpers::{Backend, PASSWORD, SPREAD_DEADLINE, TestApp, both_backends};
use crate::passkeys::{login_finish, login_start, register, sign_in};
use crate::smtp::{PUBLIC_URL, SmtpServer, app_with_smtp};

both_backends!(
    a_reset_of_a_never_verified_address_takes_the_account_back,
    a_reset_notice_names_the_passkeys_that_remain,
    verifying_a_never_verified_address_removes_what_was_added_before,
    guarded_services_are_told_whether_the_address_is_verified,
    a_required_verified_address_holds_for_every_way_in,
);

const NEW_PASSWORD: &str = "a brand new passphrase";

/// Registers `email` as anyone may (open registration, no proof of the address) and signs in.
async fn registered(app: &TestApp, email: &str) -> String {
    app.post(
        "/api/v1/auth/register",
        json!({ "email": email, "password": PASSWORD, "fullName": "Someone" }),
    )
    .await
    .data(201);
    app.login(email, PASSWORD).await.data(200)["accessToken"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Resets `email`'s password through the mailed link, as its owner would.
async fn reset(app: &TestApp, smtp: &SmtpServer, email: &str, mails_before: usize) {
    app.post("/api/v1/auth/password/forgot", json!({ "email": email }))
        .await;
    let mail = smtp
        .wait_for_mail(email, "reset your password", mails_before + 1)
        .await
        .pop()
        .unwrap();
    let token = mail.token("/reset-password");
    app.post(
        "/api/v1/auth/password/reset",
        json!({ "token": token, "newPassword": NEW_PASSWORD }),
    )
    .await
    .data(200);
}

/// A discoverable sign-in with the authenticator's first passkey, as its holder would try it
/// whatever the account lists.
async fn passkey_sign_in(app: &TestApp, key: &mut Authenticator) -> crate::helpers::Answer {
    let (ceremony, options) = login_start(app, json!({})).await;
    let credential = key.get(&options);
    login_finish(app, &ceremony, &credential).await
}

async fn me(app: &TestApp, token: &str) -> Value {
    app.get("/api/v1/auth/me", token).await.data(200).clone()
}

/// Finding 3: the attacker registers the victim's address, adds a passkey and an authenticator;
/// the victim resets the password. Neither the passkey nor the authenticator survives, and the
/// notice says so.
async fn a_reset_of_a_never_verified_address_takes_the_account_back(backend: Backend) {
    let smtp = SmtpServer::start();
    let app = app_with_smtp(backend, &smtp, SettingsArgs::default()).await;
    let attacker = registered(&app, "victim@example.com").await;
    let mut key = Authenticator::new(PUBLIC_URL);
    register(&app, &attacker, &mut key).await;
    app.enable_two_factor(&attacker).await;
    sign_in(&app, "victim@example.com", &mut key)
        .await
        .data(200);

    reset(&app, &smtp, "victim@example.com", 0).await;

    passkey_sign_in(&app, &mut key)
        .await
        .error(401, "PASSKEY_INVALID");
    // No second factor is asked for: the attacker's authenticator is gone too.
    let login = app.login("victim@example.com", NEW_PASSWORD).await;
    let token = login.data(200)["accessToken"].as_str().unwrap().to_owned();
    let account = me(&app, &token).await;
    assert_eq!(account["emailVerified"], json!(true));
    assert_eq!(account["twoFactorEnabled"], json!(false));
    let passkeys = app.get("/api/v1/auth/passkeys", &token).await;
    assert_eq!(passkeys.data(200)["items"], json!([]));
    assert_eq!(
        app.scalar::<i64>("SELECT COUNT(*) FROM recovery_codes")
            .await,
        0
    );

    let notice = &smtp
        .wait_for_mail("victim@example.com", "your password was reset", 1)
        .await[0];
    let text = notice.text();
    for said in [
        "had not been confirmed",
        "\"Laptop\"",
        "two-factor authentication",
        "were removed",
    ] {
        assert!(text.contains(said), "{said:?} not in {text}");
    }
    assert!(!text.contains("can still sign in"), "{text}");
}

/// A verified account keeps its passkeys through a reset, and the notice lists them with where
/// to remove one.
async fn a_reset_notice_names_the_passkeys_that_remain(backend: Backend) {
    let smtp = SmtpServer::start();
    let app = app_with_smtp(backend, &smtp, SettingsArgs::default()).await;
    let (token, _) = app.logged_in_user("ann@example.com").await;
    let mut key = Authenticator::new(PUBLIC_URL);
    register(&app, &token, &mut key).await;

    reset(&app, &smtp, "ann@example.com", 0).await;

    sign_in(&app, "ann@example.com", &mut key).await.data(200);
    let notice = &smtp
        .wait_for_mail("ann@example.com", "your password was reset", 1)
        .await[0];
    let text = notice.text();
    for said in [
        "can still sign in",
        "\"Laptop\"",
        &format!("{PUBLIC_URL}/account"),
    ] {
        assert!(text.contains(said), "{said:?} not in {text}");
    }
    assert!(!text.contains("were removed"), "{text}");
}

/// The verification link proves the address the same way: what was added before it goes.
async fn verifying_a_never_verified_address_removes_what_was_added_before(backend: Backend) {
    let smtp = SmtpServer::start();
    let app = app_with_smtp(backend, &smtp, SettingsArgs::default()).await;
    let token = registered(&app, "cy@example.com").await;
    let mut key = Authenticator::new(PUBLIC_URL);
    register(&app, &token, &mut key).await;
    let link = smtp.wait_for_mail("cy@example.com", "confirm", 1).await[0].token("/verify-email");

    app.post("/api/v1/auth/email/verify", json!({ "token": link }))
        .await
        .data(200);

    passkey_sign_in(&app, &mut key)
        .await
        .error(401, "PASSKEY_INVALID");
    let passkeys = app.get("/api/v1/auth/passkeys", &token).await;
    assert_eq!(passkeys.data(200)["items"], json!([]));
    let notice = &smtp
        .wait_for_mail("cy@example.com", "address is confirmed", 1)
        .await[0];
    let text = notice.text();
    assert!(text.contains("\"Laptop\""), "{text}");
    assert!(text.contains("were removed"), "{text}");

    // A passkey added once the address is proven stays through the next proof (a reset).
    register(&app, &token, &mut key).await;
    reset(&app, &smtp, "cy@example.com", 0).await;
    sign_in(&app, "cy@example.com", &mut key).await.data(200);
}

/// Finding 4: `Remote-Email-Verified`, `email_verified`, and `policy = "verified_email"`.
async fn guarded_services_are_told_whether_the_address_is_verified(backend: Backend) {
    let smtp = SmtpServer::start();
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("rules.toml");
    std::fs::write(
        &rules,
        "[[rule]]\npaths = [\"/billing\"]\npolicy = \"verified_email\"\n",
    )
    .unwrap();
    let args = SettingsArgs {
        trusted_proxies: Some("127.0.0.1/32".into()),
        access_rules: Some(rules.display().to_string()),
        ..Default::default()
    };
    let app = app_with_smtp(backend, &smtp, args).await;
    let token = registered(&app, "dee@example.com").await;
    let (verified, _) = app.logged_in_user("cli@example.com").await;
    let billing = [
        ("x-original-method", "GET"),
        ("x-original-url", "https://app.example.com/billing/x"),
    ];
    let other = [
        ("x-original-method", "GET"),
        ("x-original-url", "https://app.example.com/other"),
    ];

    let open = ask(&app, AUTH_REQUEST, Some(&token), &other).await;
    assert_eq!(open.status, 200);
    assert_eq!(open.header("remote-email-verified"), Some("false"));
    assert_eq!(
        ask(&app, AUTH_REQUEST, Some(&token), &billing).await.status,
        403
    );
    let cli = ask(&app, AUTH_REQUEST, Some(&verified), &billing).await;
    assert_eq!(cli.status, 200);
    assert_eq!(cli.header("remote-email-verified"), Some("true"));
    let (id, secret) = crate::introspection::add_client(&app, "billing");
    let introspected = |token: String| {
        let (app, id, secret) = (&app, id.clone(), secret.clone());
        async move {
            let (status, _, body) = crate::introspection::introspect(
                app,
                Some((&id, &secret)),
                &format!("token={token}"),
            )
            .await;
            assert_eq!(status, 200);
            body["email_verified"].clone()
        }
    };
    assert_eq!(introspected(token.clone()).await, json!(false));
    assert_eq!(introspected(verified.clone()).await, json!(true));

    // The link comes back: the same session is now told verified, and the rule admits it.
    let link = smtp.wait_for_mail("dee@example.com", "confirm", 1).await[0].token("/verify-email");
    app.post("/api/v1/auth/email/verify", json!({ "token": link }))
        .await
        .data(200);
    within(SPREAD_DEADLINE, || async {
        ask(&app, AUTH_REQUEST, Some(&token), &other)
            .await
            .header("remote-email-verified")
            == Some("true")
    })
    .await;
    assert_eq!(
        ask(&app, AUTH_REQUEST, Some(&token), &billing).await.status,
        200
    );
    assert_eq!(introspected(token).await, json!(true));
}

/// Finding 6: password, passkey and refresh all refuse an unverified address when required.
async fn a_required_verified_address_holds_for_every_way_in(backend: Backend) {
    let smtp = SmtpServer::start();
    // First without the requirement: an unverified account gets a session, a passkey and a
    // refresh token (as accounts made before the setting was turned on have).
    let open = app_with_smtp(backend.clone(), &smtp, SettingsArgs::default()).await;
    let token = registered(&open, "eli@example.com").await;
    let mut key = Authenticator::new(PUBLIC_URL);
    register(&open, &token, &mut key).await;
    let refresh = open.login("eli@example.com", PASSWORD).await.data(200)["refreshToken"]
        .as_str()
        .unwrap()
        .to_owned();
    let strict = open
        .twin_with(SettingsArgs {
            require_verified_email: Some("on".into()),
            smtp_url: Some(smtp.url()),
            public_url: Some(PUBLIC_URL.into()),
            ..Default::default()
        })
        .await;

    strict
        .login("eli@example.com", PASSWORD)
        .await
        .error(403, "EMAIL_NOT_VERIFIED");
    sign_in(&strict, "eli@example.com", &mut key)
        .await
        .error(403, "EMAIL_NOT_VERIFIED");
    strict
        .post("/api/v1/auth/refresh", json!({ "refreshToken": refresh }))
        .await
        .error(403, "EMAIL_NOT_VERIFIED");
    // Wrong credentials still say nothing of the address.
    strict
        .login("eli@example.com", "not the password at all")
        .await
        .error(401, "INVALID_CREDENTIALS");
    // The link comes back: every way in opens again.
    let link = smtp.wait_for_mail("eli@example.com", "confirm", 1).await[0].token("/verify-email");
    strict
        .post("/api/v1/auth/email/verify", json!({ "token": link }))
        .await
        .data(200);
    strict.login("eli@example.com", PASSWORD).await.data(200);
}
