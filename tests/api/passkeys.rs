//! Passkeys (docs/api.md §9) through HTTP, with a software authenticator (`authenticator`):
//! registering and managing them, signing in with an e-mail, without one and as a second factor,
//! unknown e-mails, and passkeys off. The helpers here serve `passkey_refusals` and
//! `passkey_input` too.

use gatehouse::config::SettingsArgs;
use reqwest::Method;
use serde_json::{Value, json};

use crate::authenticator::{Authenticator, b64, unb64};
use crate::helpers::{Answer, Backend, Http, PASSWORD, TestApp, both_backends, claims, code_at};

both_backends!(
    a_passkey_is_added_listed_renamed_and_removed,
    sign_in_with_an_email_or_a_discoverable_passkey,
    a_passkey_completes_a_two_factor_challenge,
    unknown_emails_look_like_accounts_without_passkeys,
    the_reference_software_authenticator_registers_and_signs_in,
    passkeys_are_off_without_a_domain,
);

pub const ORIGIN: &str = "https://login.example.test";

/// An app whose pages are at `ORIGIN` (the relying-party id is its host).
pub async fn spawn(backend: Backend) -> TestApp {
    crate::helpers::spawn_app_with(
        backend,
        SettingsArgs {
            public_url: Some(ORIGIN.into()),
            ..Default::default()
        },
    )
    .await
}

pub async fn call(
    http: &Http,
    method: Method,
    path: &str,
    token: Option<&str>,
    body: Value,
) -> Answer {
    http.call(
        method,
        &format!("/api/v1/auth/passkeys{path}"),
        token,
        Some(body),
    )
    .await
}

/// `register/start` with the test password, for the holder of `token`.
pub async fn register_start(http: &Http, token: &str) -> Answer {
    call(
        http,
        Method::POST,
        "/register/start",
        Some(token),
        json!({"password": PASSWORD}),
    )
    .await
}

/// `register/finish` with `body`, for the holder of `token`.
pub async fn register_finish(http: &Http, token: &str, body: Value) -> Answer {
    call(http, Method::POST, "/register/finish", Some(token), body).await
}

/// `login/start` with `body`, whatever the answer.
pub async fn login_start_answer(http: &Http, body: Value) -> Answer {
    call(http, Method::POST, "/login/start", None, body).await
}

/// Registers a passkey of `authenticator` for the holder of `token`: the passkey's view.
pub async fn register(http: &Http, token: &str, authenticator: &mut Authenticator) -> Value {
    let start = register_start(http, token).await;
    let start = start.data(200).clone();
    let credential = authenticator.create(&start["options"]);
    let finish = register_finish(
        http,
        token,
        json!({"ceremonyId": start["ceremonyId"], "credential": credential, "name": "Laptop"}),
    )
    .await;
    finish.data(201).clone()
}

/// `login/start` with `body`: (ceremonyId, options).
pub async fn login_start(http: &Http, body: Value) -> (Value, Value) {
    let start = call(http, Method::POST, "/login/start", None, body).await;
    let data = start.data(200);
    (data["ceremonyId"].clone(), data["options"].clone())
}

pub async fn login_finish(http: &Http, ceremony: &Value, credential: &Value) -> Answer {
    call(
        http,
        Method::POST,
        "/login/finish",
        None,
        json!({"ceremonyId": ceremony, "credential": credential}),
    )
    .await
}

/// A full sign-in with an e-mail.
pub async fn sign_in(http: &Http, email: &str, authenticator: &mut Authenticator) -> Answer {
    let (ceremony, options) = login_start(http, json!({ "email": email })).await;
    let credential = authenticator.get(&options);
    login_finish(http, &ceremony, &credential).await
}

async fn a_passkey_is_added_listed_renamed_and_removed(backend: Backend) {
    let app = spawn(backend).await;
    let (token, _) = app.logged_in_user("ann@example.com").await;
    let mut key = Authenticator::new(ORIGIN);

    // The password is re-checked, as for 2FA setup.
    let wrong = call(
        &app,
        Method::POST,
        "/register/start",
        Some(&token),
        json!({"password": "not it at all"}),
    )
    .await;
    wrong.error(403, "INVALID_CREDENTIALS");
    let start = register_start(&app, &token).await;
    let options = &start.data(200)["options"];
    assert_eq!(options["rp"]["id"], "login.example.test");
    assert_eq!(
        options["authenticatorSelection"]["userVerification"],
        "required"
    );
    assert_eq!(
        options["authenticatorSelection"]["residentKey"],
        "preferred"
    );
    assert_eq!(options["user"]["name"], "ann@example.com");

    let passkey = register(&app, &token, &mut key).await;
    assert_eq!(passkey["name"], "Laptop");
    assert!(passkey["createdAt"].as_str().unwrap().ends_with('Z'));
    assert_eq!(passkey["lastUsedAt"], Value::Null);
    let id = passkey["id"].as_str().unwrap().to_owned();
    assert_eq!(app.audit_count("passkey.added", None).await, 1);

    // A second registration excludes the credential the account has.
    let again = register_start(&app, &token).await;
    let excluded = &again.data(200)["options"]["excludeCredentials"];
    assert_eq!(excluded[0]["id"], b64(&key.credentials[0].id));

    let list = app.get("/api/v1/auth/passkeys", &token).await;
    assert_eq!(list.data(200)["items"], json!([passkey]));
    let renamed = call(
        &app,
        Method::PATCH,
        &format!("/{id}"),
        Some(&token),
        json!({"name": "  Phone "}),
    )
    .await;
    assert_eq!(renamed.data(200)["name"], "Phone");
    let blank = call(
        &app,
        Method::PATCH,
        &format!("/{id}"),
        Some(&token),
        json!({"name": " "}),
    )
    .await;
    assert!(blank.error(400, "VALIDATION_ERROR")["details"]["fields"]["name"].is_string());

    // Another user sees none of it.
    let (other, _) = app.logged_in_user("bob@example.com").await;
    call(
        &app,
        Method::PATCH,
        &format!("/{id}"),
        Some(&other),
        json!({"name": "Mine"}),
    )
    .await
    .error(404, "NOT_FOUND");
    app.call(
        Method::DELETE,
        &format!("/api/v1/auth/passkeys/{id}"),
        Some(&other),
        None,
    )
    .await
    .error(404, "NOT_FOUND");
    assert_eq!(
        app.get("/api/v1/auth/passkeys", &other).await.data(200)["items"],
        json!([])
    );

    sign_in(&app, "ann@example.com", &mut key).await.data(200);
    let removed = app
        .call(
            Method::DELETE,
            &format!("/api/v1/auth/passkeys/{id}"),
            Some(&token),
            None,
        )
        .await;
    assert_eq!(removed.data(200)["id"], id.as_str());
    assert_eq!(app.audit_count("passkey.removed", None).await, 1);
    assert_eq!(
        app.get("/api/v1/auth/passkeys", &token).await.data(200)["items"],
        json!([])
    );
    // The removed passkey signs in no more.
    let (ceremony, options) = login_start(&app, json!({})).await;
    let credential = key.get_with(&options, 0);
    login_finish(&app, &ceremony, &credential)
        .await
        .error(401, "PASSKEY_INVALID");
}

async fn sign_in_with_an_email_or_a_discoverable_passkey(backend: Backend) {
    let app = spawn(backend).await;
    let (token, _) = app.logged_in_user("ann@example.com").await;
    // 2FA on: a passkey sign-in satisfies it (no challenge).
    app.enable_two_factor(&token).await;
    let mut key = Authenticator::new(ORIGIN);
    key.backup_eligible = true;
    register(&app, &token, &mut key).await;

    let (ceremony, options) = login_start(&app, json!({"email": " ANN@example.com "})).await;
    assert_eq!(
        options["allowCredentials"][0]["id"],
        b64(&key.credentials[0].id)
    );
    assert_eq!(options["userVerification"], "required");
    let credential = key.get(&options);
    let answer = login_finish(&app, &ceremony, &credential).await;
    let tokens = answer.data(200);
    assert_eq!(tokens["user"]["email"], "ann@example.com");
    assert_eq!(
        claims(tokens["accessToken"].as_str().unwrap())["amr"],
        json!(["hwk", "user"])
    );
    app.get("/api/v1/auth/me", tokens["accessToken"].as_str().unwrap())
        .await
        .data(200);
    // The refresh token works like any other.
    let refreshed = app
        .post(
            "/api/v1/auth/refresh",
            json!({"refreshToken": tokens["refreshToken"]}),
        )
        .await;
    refreshed.data(200);

    // The counter and the backup flags are saved on each use.
    assert_eq!(
        app.scalar::<i64>("SELECT sign_count FROM passkeys").await,
        1
    );
    key.backup_state = true;
    let (ceremony, options) = login_start(&app, json!({})).await;
    assert_eq!(options["allowCredentials"], json!([]));
    let credential = key.get(&options);
    assert_eq!(
        credential["response"]["userHandle"],
        b64(&key.credentials[0].user_handle)
    );
    let answer = login_finish(&app, &ceremony, &credential).await;
    assert_eq!(answer.data(200)["user"]["email"], "ann@example.com");
    assert_eq!(
        app.scalar::<i64>("SELECT sign_count FROM passkeys").await,
        2
    );
    assert!(
        app.scalar::<bool>("SELECT backup_state FROM passkeys")
            .await
    );
    let list = app.get("/api/v1/auth/passkeys", &token).await;
    assert!(list.data(200)["items"][0]["lastUsedAt"].is_string());
    assert_eq!(
        app.audit_count("login.succeeded", None).await,
        3,
        "one password login, two passkey sign-ins"
    );
}

async fn a_passkey_completes_a_two_factor_challenge(backend: Backend) {
    let app = spawn(backend).await;
    let (token, _) = app.logged_in_user("ann@example.com").await;
    let (secret, _) = app.enable_two_factor(&token).await;
    let mut key = Authenticator::new(ORIGIN);

    // An account with 2FA and no passkey: a passkey cannot be its second factor.
    let login = app.login("ann@example.com", PASSWORD).await;
    let temp = login.data(200)["tempToken"].clone();
    login_start_answer(&app, json!({"tempToken": temp}))
        .await
        .error(401, "PASSKEY_INVALID");

    register(&app, &token, &mut key).await;
    let login = app.login("ann@example.com", PASSWORD).await;
    let temp = login.data(200)["tempToken"].clone();
    let (ceremony, options) = login_start(&app, json!({"tempToken": temp})).await;
    let credential = key.get(&options);
    let answer = login_finish(&app, &ceremony, &credential).await;
    let access = answer.data(200)["accessToken"].as_str().unwrap().to_owned();
    assert_eq!(claims(&access)["amr"], json!(["pwd", "hwk", "user"]));
    // The challenge is used up: a right code no longer completes it.
    let code = code_at(&secret, app.now_seconds() + 30);
    let verify = app
        .post(
            "/api/v1/auth/2fa/verify",
            json!({"tempToken": temp, "code": code}),
        )
        .await;
    verify.error(401, "TEMP_TOKEN_INVALID");
    // Nor does another passkey ceremony for it start.
    login_start_answer(&app, json!({"tempToken": temp}))
        .await
        .error(401, "TEMP_TOKEN_INVALID");
    login_start_answer(&app, json!({"tempToken": "made-up"}))
        .await
        .error(401, "TEMP_TOKEN_INVALID");
    let both =
        login_start_answer(&app, json!({"tempToken": temp, "email": "ann@example.com"})).await;
    both.error(400, "VALIDATION_ERROR");

    // A challenge that lapses while its passkey ceremony runs completes nothing.
    let login = app.login("ann@example.com", PASSWORD).await;
    let temp = login.data(200)["tempToken"].clone();
    app.clock().advance(std::time::Duration::from_secs(299));
    let (ceremony, options) = login_start(&app, json!({"tempToken": temp})).await;
    let credential = key.get(&options);
    app.clock().advance(std::time::Duration::from_secs(2));
    login_finish(&app, &ceremony, &credential)
        .await
        .error(401, "TEMP_TOKEN_INVALID");
}

async fn unknown_emails_look_like_accounts_without_passkeys(backend: Backend) {
    let app = spawn(backend).await;
    app.create_user("ann@example.com", PASSWORD).await;
    let offered = |options: &Value| -> Vec<String> {
        options["allowCredentials"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["id"].as_str().unwrap().to_owned())
            .collect()
    };
    let (_, unknown) = login_start(&app, json!({"email": "nobody@example.com"})).await;
    let (_, unknown_again) = login_start(&app, json!({"email": "Nobody@example.com"})).await;
    let (_, known) = login_start(&app, json!({"email": "ann@example.com"})).await;
    // One id each, of a credential id's usual length, stable for the e-mail.
    assert_eq!(offered(&unknown).len(), 1);
    assert_eq!(offered(&unknown), offered(&unknown_again));
    assert_eq!(offered(&known).len(), 1);
    assert_ne!(offered(&known), offered(&unknown));
    assert_eq!(unb64(&offered(&unknown)[0]).len(), 32);
    assert_eq!(unb64(&offered(&known)[0]).len(), 32);
    let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(&unknown), keys(&known));
    // Whatever answers such a ceremony fails the same way.
    let (token, _) = app.logged_in_user("bob@example.com").await;
    let mut key = Authenticator::new(ORIGIN);
    register(&app, &token, &mut key).await;
    let (ceremony, options) = login_start(&app, json!({"email": "nobody@example.com"})).await;
    let credential = key.get_with(&options, 0);
    login_finish(&app, &ceremony, &credential)
        .await
        .error(401, "PASSKEY_INVALID");
}

async fn passkeys_are_off_without_a_domain(backend: Backend) {
    // The default public URL is http://<listen address>: an IP address, which no browser takes as
    // a relying-party id.
    let app = crate::helpers::spawn_app(backend).await;
    let (token, _) = app.logged_in_user("ann@example.com").await;
    let start = register_start(&app, &token).await;
    start.error(404, "NOT_FOUND");
    login_start_answer(&app, json!({}))
        .await
        .error(404, "NOT_FOUND");
    assert_eq!(
        app.get("/api/v1/auth/passkeys", &token).await.data(200)["items"],
        json!([])
    );
}

/// Interoperability with an authenticator this project did not write: webauthn-authenticator-rs's
/// `SoftPasskey` (by webauthn-rs's authors), through its browser-side checks of origin and
/// relying-party id. It has no user verification of its own, so it is told to claim it
/// (`falsify_uv`), as the service requires; it makes "packed" self-attestations, where the test
/// authenticator makes "none".
async fn the_reference_software_authenticator_registers_and_signs_in(backend: Backend) {
    use webauthn_authenticator_rs::WebauthnAuthenticator;
    use webauthn_authenticator_rs::prelude::{
        CreationChallengeResponse, RequestChallengeResponse, Url,
    };
    use webauthn_authenticator_rs::softpasskey::SoftPasskey;

    let app = spawn(backend).await;
    let (token, _) = app.logged_in_user("ann@example.com").await;
    let mut soft = WebauthnAuthenticator::new(SoftPasskey::new(true));
    let origin = Url::parse(ORIGIN).unwrap();

    let start = register_start(&app, &token).await;
    let start = start.data(200).clone();
    let options: CreationChallengeResponse =
        serde_json::from_value(json!({ "publicKey": start["options"] })).unwrap();
    let credential = soft.do_registration(origin.clone(), options).unwrap();
    let body = json!({"ceremonyId": start["ceremonyId"], "credential": credential});
    register_finish(&app, &token, body).await.data(201);

    for _ in 0..2 {
        let (ceremony, options) = login_start(&app, json!({"email": "ann@example.com"})).await;
        let options: RequestChallengeResponse =
            serde_json::from_value(json!({ "publicKey": options })).unwrap();
        let credential = soft.do_authentication(origin.clone(), options).unwrap();
        let credential = serde_json::to_value(&credential).unwrap();
        let answer = login_finish(&app, &ceremony, &credential).await;
        let access = answer.data(200)["accessToken"].as_str().unwrap().to_owned();
        assert_eq!(claims(&access)["amr"], json!(["hwk", "user"]));
    }
}
