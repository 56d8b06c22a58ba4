use crate::helpers::code_at;
use gatehouse::config::SettingsArgs;
use reqwest::Method;
use serde_json::json;

use crate::helpers::{
    Backend, PASSWORD, TestApp, both_backends, claims, now_seconds, spawn_app, spawn_app_with,
};

both_backends!(
    enrolment_gives_a_secret_uri_qr_code_and_recovery_codes,
    enabling_needs_a_right_code_for_the_pending_secret,
    a_two_factor_login_is_a_challenge_then_a_token_set,
    a_totp_code_is_accepted_once,
    five_wrong_codes_use_up_the_challenge,
    recovery_codes_work_once_in_any_case_with_or_without_dash,
    an_expired_challenge_is_refused,
);

async fn enrolled(app: &TestApp, email: &str) -> (String, Vec<u8>, Vec<String>) {
    let (access, _) = app.logged_in_user(email).await;
    let (secret, codes) = app.enable_two_factor(&access).await;
    (access, secret, codes)
}

async fn challenge(app: &TestApp, email: &str) -> String {
    let answer = app.login(email, PASSWORD).await;
    let data = answer.data(200);
    assert_eq!(data["requiresTwoFactor"], true);
    assert!(
        data.get("accessToken").is_none() && data.get("refreshToken").is_none(),
        "{data}"
    );
    data["tempToken"].as_str().unwrap().to_owned()
}

async fn verify(app: &TestApp, temp: &str, code: &str) -> crate::helpers::Answer {
    app.post(
        "/api/v1/auth/2fa/verify",
        json!({ "tempToken": temp, "code": code }),
    )
    .await
}

async fn enrolment_gives_a_secret_uri_qr_code_and_recovery_codes(backend: Backend) {
    let app = spawn_app(backend).await;
    let (access, _) = app.logged_in_user("nora@example.com").await;
    let setup = app.setup_two_factor(&access).await;
    let data = setup.data(200);
    let secret = data["secret"].as_str().unwrap();
    assert_eq!(secret.len(), 32, "160-bit secret in base32");
    assert_eq!(
        data["otpauthUri"],
        format!(
            "otpauth://totp/Gatehouse:nora@example.com?secret={secret}&issuer=Gatehouse&algorithm=SHA1&digits=6&period=30"
        )
    );
    assert!(data["qrCodeSvg"].as_str().unwrap().contains("<svg"));

    let (_, codes) = app.enable_two_factor(&access).await;
    assert_eq!(codes.len(), 10);
    let me = app.get("/api/v1/auth/me", &access).await;
    assert_eq!(me.data(200)["twoFactorEnabled"], true);
    assert_eq!(me.data(200)["recoveryCodesRemaining"], 10);
    let again = app.setup_two_factor(&access).await;
    again.error(409, "TWO_FACTOR_ALREADY_ENABLED");

    // Secrets are sealed at rest: the base32 secret is nowhere in the database.
    let sealed: Vec<u8> = app
        .scalar("SELECT totp_secret FROM users WHERE email_normalized = 'nora@example.com'")
        .await;
    let raw = crate::helpers::base32_decode(secret);
    assert!(!sealed.windows(raw.len()).any(|w| w == raw.as_slice()));
}

async fn enabling_needs_a_right_code_for_the_pending_secret(backend: Backend) {
    let app = spawn_app(backend).await;
    let (access, _) = app.logged_in_user("olga@example.com").await;
    let enable = |code: String| {
        app.call(
            Method::POST,
            "/api/v1/auth/2fa/enable",
            Some(&access),
            Some(json!({ "code": code })),
        )
    };
    enable("123456".into())
        .await
        .error(409, "TWO_FACTOR_NOT_SET_UP");
    let setup = app.setup_two_factor(&access).await;
    let secret = crate::helpers::base32_decode(setup.data(200)["secret"].as_str().unwrap());
    let wrong = format!(
        "{:06}",
        (code_at(&secret, now_seconds()).parse::<u32>().unwrap() + 1) % 1_000_000
    );
    let answer = enable(wrong).await;
    answer.error(403, "INVALID_2FA_CODE");
    let me = app.get("/api/v1/auth/me", &access).await;
    assert_eq!(me.data(200)["twoFactorEnabled"], false);
    enable(code_at(&secret, now_seconds())).await.data(200);
}

async fn a_two_factor_login_is_a_challenge_then_a_token_set(backend: Backend) {
    let app = spawn_app(backend).await;
    let (_, secret, _) = enrolled(&app, "pia@example.com").await;
    let temp = challenge(&app, "pia@example.com").await;
    let answer = verify(&app, &temp, &code_at(&secret, now_seconds())).await;
    let data = answer.data(200);
    assert_eq!(data["expiresIn"], 86400);
    assert_eq!(data["user"]["email"], "pia@example.com");
    let access = data["accessToken"].as_str().unwrap();
    assert_eq!(claims(access)["amr"], json!(["pwd", "otp"]));
    app.get("/api/v1/crm/contacts", access).await.data(200);
    let refreshed = app
        .post(
            "/api/v1/auth/refresh",
            json!({ "refreshToken": data["refreshToken"] }),
        )
        .await;
    assert_eq!(
        claims(refreshed.data(200)["accessToken"].as_str().unwrap())["amr"],
        json!(["pwd", "otp"])
    );

    // The challenge is single use, and is no bearer token.
    verify(&app, &temp, &code_at(&secret, now_seconds() + 30))
        .await
        .error(401, "TEMP_TOKEN_INVALID");
    app.get("/api/v1/auth/me", &temp)
        .await
        .error(401, "TOKEN_INVALID");
    app.post("/api/v1/auth/refresh", json!({ "refreshToken": temp }))
        .await
        .error(401, "REFRESH_TOKEN_INVALID");
}

async fn a_totp_code_is_accepted_once(backend: Backend) {
    let app = spawn_app(backend).await;
    let (_, secret, _) = enrolled(&app, "quinn@example.com").await;
    // The code that enabled 2FA (previous step) is used already.
    let temp = challenge(&app, "quinn@example.com").await;
    let answer = verify(&app, &temp, &code_at(&secret, now_seconds() - 30)).await;
    assert_eq!(
        answer.error(401, "INVALID_2FA_CODE")["details"]["attemptsRemaining"],
        4
    );
    let code = code_at(&secret, now_seconds());
    verify(&app, &temp, &code).await.data(200);
    let temp = challenge(&app, "quinn@example.com").await;
    verify(&app, &temp, &code)
        .await
        .error(401, "INVALID_2FA_CODE");
}

async fn five_wrong_codes_use_up_the_challenge(backend: Backend) {
    let app = spawn_app(backend).await;
    let (_, secret, _) = enrolled(&app, "rita@example.com").await;
    let temp = challenge(&app, "rita@example.com").await;
    let right = code_at(&secret, now_seconds());
    let wrong = format!(
        "{:06}",
        (right.parse::<u32>().unwrap() + 500_000) % 1_000_000
    );
    for remaining in [4, 3, 2, 1, 0] {
        let answer = verify(&app, &temp, &wrong).await;
        assert_eq!(
            answer.error(401, "INVALID_2FA_CODE")["details"]["attemptsRemaining"],
            remaining
        );
    }
    verify(&app, &temp, &right)
        .await
        .error(401, "TEMP_TOKEN_INVALID");
    // Five wrong codes in a row: the account's next code waits 30 s, whatever the challenge, and
    // the wait uses no attempt of it.
    let temp = challenge(&app, "rita@example.com").await;
    let answer = verify(&app, &temp, &right).await;
    assert_eq!(
        answer.error(429, "RATE_LIMITED")["details"]["retryAfter"],
        30
    );
    assert_eq!(answer.header("retry-after"), Some("30"));
    app.clock().advance(std::time::Duration::from_secs(30));
    let right = code_at(&secret, app.now_seconds());
    verify(&app, &temp, &right).await.data(200);
}

async fn recovery_codes_work_once_in_any_case_with_or_without_dash(backend: Backend) {
    let app = spawn_app(backend).await;
    let (access, _, codes) = enrolled(&app, "sam@example.com").await;
    let temp = challenge(&app, "sam@example.com").await;
    let shouted = codes[0].to_uppercase().replace('-', "");
    let answer = verify(&app, &temp, &shouted).await;
    assert_eq!(
        claims(answer.data(200)["accessToken"].as_str().unwrap())["amr"],
        json!(["pwd", "otp"])
    );
    let me = app.get("/api/v1/auth/me", &access).await;
    assert_eq!(me.data(200)["recoveryCodesRemaining"], 9);

    let temp = challenge(&app, "sam@example.com").await;
    verify(&app, &temp, &codes[0])
        .await
        .error(401, "INVALID_2FA_CODE");
    verify(&app, &temp, &format!(" {} ", codes[1]))
        .await
        .data(200);
    // Stored as keyed hashes, never as the codes themselves.
    let unused: i64 = app
        .scalar("SELECT COUNT(*) FROM recovery_codes WHERE used_at IS NULL")
        .await;
    assert_eq!(unused, 8);
    let stored: Vec<u8> = app
        .scalar("SELECT code_hash FROM recovery_codes LIMIT 1")
        .await;
    assert_eq!(stored.len(), 32);
    assert!(
        codes
            .iter()
            .all(|c| !String::from_utf8_lossy(&stored).contains(&c[..5]))
    );
}

async fn an_expired_challenge_is_refused(backend: Backend) {
    let app = spawn_app_with(
        backend,
        SettingsArgs {
            temp_token_ttl: Some("1s".into()),
            ..Default::default()
        },
    )
    .await;
    let (_, secret, _) = enrolled(&app, "tom@example.com").await;
    let temp = challenge(&app, "tom@example.com").await;
    app.clock().advance(std::time::Duration::from_millis(1100));
    verify(&app, &temp, &code_at(&secret, app.now_seconds()))
        .await
        .error(401, "TEMP_TOKEN_INVALID");
}
