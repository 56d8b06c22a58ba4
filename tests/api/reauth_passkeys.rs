//! Re-authenticating with a passkey (docs/api.md §3): the ceremony is the caller's session's,
//! single use and short-lived, lists only the caller's passkeys, and opens the same window as the
//! password; a client's token or an API key cannot run it.

use std::time::Duration;

use gatehouse::config::SettingsArgs;
use reqwest::Method;
use serde_json::{Value, json};

use crate::authenticator::{Authenticator, b64};
use crate::helpers::{Answer, Backend, PASSWORD, TestApp, both_backends};
use crate::passkeys::{ORIGIN, register, sign_in};

both_backends!(
    a_passkey_opens_the_window_of_a_passkey_session,
    another_accounts_passkey_or_session_is_refused,
    a_ceremony_is_single_use_and_short_lived,
    failures_count_against_the_accounts_allowance,
    keys_and_client_tokens_cannot_reauthenticate,
);

const START: &str = "/api/v1/auth/reauthenticate/passkey/start";
const FINISH: &str = "/api/v1/auth/reauthenticate/passkey/finish";

async fn start(app: &TestApp, token: &str) -> Answer {
    app.call(Method::POST, START, Some(token), Some(json!({})))
        .await
}

/// `…/start` for the holder of `token`: (ceremonyId, options).
async fn started(app: &TestApp, token: &str) -> (Value, Value) {
    let answer = start(app, token).await;
    let data = answer.data(200);
    (data["ceremonyId"].clone(), data["options"].clone())
}

async fn finish(app: &TestApp, token: &str, ceremony: &Value, credential: &Value) -> Answer {
    let body = json!({ "ceremonyId": ceremony, "credential": credential });
    app.call(Method::POST, FINISH, Some(token), Some(body))
        .await
}

async fn until(app: &TestApp, token: &str) -> Value {
    app.get("/api/v1/auth/me", token).await.data(200)["reauthenticatedUntil"].clone()
}

/// A user with one passkey of `key`, signed in with it: the passkey session's access token.
async fn passkey_user(app: &TestApp, email: &str, key: &mut Authenticator) -> String {
    let (token, _) = app.logged_in_user(email).await;
    register(app, &token, key).await;
    let signed_in = sign_in(app, email, key).await;
    signed_in.data(200)["accessToken"]
        .as_str()
        .unwrap()
        .to_owned()
}

async fn a_passkey_opens_the_window_of_a_passkey_session(backend: Backend) {
    let app = crate::passkeys::spawn(backend).await;
    let mut key = Authenticator::new(ORIGIN);
    let token = passkey_user(&app, "pia@example.com", &mut key).await;
    assert_eq!(until(&app, &token).await, Value::Null);

    let (ceremony, options) = started(&app, &token).await;
    let allowed = options["allowCredentials"].as_array().unwrap();
    assert_eq!(allowed.len(), 1, "{options}");
    assert_eq!(options["userVerification"], "required");
    let credential = key.get(&options);
    assert_eq!(allowed[0]["id"], credential["id"]);
    let answer = finish(&app, &token, &ceremony, &credential).await;
    let given = answer.data(200)["reauthenticatedUntil"].clone();
    assert!(given.is_string(), "{given}");
    assert_eq!(until(&app, &token).await, given);
    assert_eq!(
        app.audit_count("reauthentication.succeeded", Some("hwk"))
            .await,
        1
    );
    // The window serves a call that would ask for the password this account may not remember.
    app.call(
        Method::POST,
        "/api/v1/auth/2fa/setup",
        Some(&token),
        Some(json!({})),
    )
    .await
    .data(200);

    // An account without a passkey is told to use its password.
    let (plain, _) = app.logged_in_user("pat@example.com").await;
    let refused = start(&app, &plain).await;
    let error = refused.error(400, "VALIDATION_ERROR");
    assert!(
        error["details"]["fields"]["passkeys"].is_string(),
        "{error}"
    );
}

async fn another_accounts_passkey_or_session_is_refused(backend: Backend) {
    let app = crate::passkeys::spawn(backend).await;
    // One authenticator holding both accounts' passkeys: index 0 is ann's, 1 is bob's.
    let mut key = Authenticator::new(ORIGIN);
    let ann = passkey_user(&app, "ann@example.com", &mut key).await;
    let bob = passkey_user(&app, "bob@example.com", &mut key).await;

    // Bob's passkey answering ann's ceremony: refused, and the ceremony is used up.
    let (ceremony, options) = started(&app, &ann).await;
    assert_eq!(options["allowCredentials"].as_array().unwrap().len(), 1);
    let bobs = key.get_with(&options, 1);
    finish(&app, &ann, &ceremony, &bobs)
        .await
        .error(403, "PASSKEY_INVALID");
    let own = key.get_with(&options, 0);
    finish(&app, &ann, &ceremony, &own)
        .await
        .error(403, "PASSKEY_INVALID");
    assert_eq!(until(&app, &ann).await, Value::Null);

    // Bob cannot finish (nor spoil) ann's ceremony, even with ann's passkey's assertion.
    let (ceremony, options) = started(&app, &ann).await;
    let own = key.get_with(&options, 0);
    finish(&app, &bob, &ceremony, &own)
        .await
        .error(403, "PASSKEY_INVALID");
    assert_eq!(until(&app, &bob).await, Value::Null);
    finish(&app, &ann, &ceremony, &own).await.data(200);

    // A ceremony begun in one of ann's sessions opens no window in another of hers.
    let other = app.login("ann@example.com", PASSWORD).await.data(200)["accessToken"]
        .as_str()
        .unwrap()
        .to_owned();
    let (ceremony, options) = started(&app, &ann).await;
    let own = key.get_with(&options, 0);
    finish(&app, &other, &ceremony, &own)
        .await
        .error(403, "PASSKEY_INVALID");
    assert_eq!(until(&app, &other).await, Value::Null);
    assert_eq!(
        app.audit_count("reauthentication.failed", Some("wrong_passkey"))
            .await,
        1
    );
    assert_eq!(
        app.audit_count("reauthentication.failed", Some("unknown_ceremony"))
            .await,
        3
    );
}

async fn a_ceremony_is_single_use_and_short_lived(backend: Backend) {
    let app = crate::passkeys::spawn(backend).await;
    let mut key = Authenticator::new(ORIGIN);
    let token = passkey_user(&app, "rob@example.com", &mut key).await;

    // Replayed: the same ceremony and assertion a second time.
    let (ceremony, options) = started(&app, &token).await;
    let credential = key.get(&options);
    finish(&app, &token, &ceremony, &credential).await.data(200);
    finish(&app, &token, &ceremony, &credential)
        .await
        .error(403, "PASSKEY_INVALID");

    // A sign-in does not take a re-authentication's ceremony.
    let (ceremony, options) = started(&app, &token).await;
    let credential = key.get(&options);
    crate::passkeys::login_finish(&app, &ceremony, &credential)
        .await
        .error(401, "PASSKEY_INVALID");

    // Expired: 5 minutes.
    let (ceremony, options) = started(&app, &token).await;
    app.clock().advance(Duration::from_secs(301));
    let credential = key.get(&options);
    finish(&app, &token, &ceremony, &credential)
        .await
        .error(403, "PASSKEY_INVALID");

    // Malformed bodies are the caller's mistake, not a failed attempt.
    let bad = finish(&app, &token, &json!("not-a-uuid"), &json!({})).await;
    let error = bad.error(400, "VALIDATION_ERROR");
    assert!(
        error["details"]["fields"]["ceremonyId"].is_string(),
        "{error}"
    );
}

async fn failures_count_against_the_accounts_allowance(backend: Backend) {
    let app = crate::passkeys::spawn(backend).await;
    app.clock().freeze();
    let mut key = Authenticator::new(ORIGIN);
    let token = passkey_user(&app, "sue@example.com", &mut key).await;
    // A forged signature: the assertion of one ceremony sent to another.
    let (_, options) = started(&app, &token).await;
    let stale = key.get(&options);
    let (ceremony, _) = started(&app, &token).await;
    finish(&app, &token, &ceremony, &stale)
        .await
        .error(403, "PASSKEY_INVALID");
    assert_eq!(
        app.audit_count("reauthentication.failed", Some("wrong_passkey"))
            .await,
        1
    );
    // The allowance (a burst of 50) is shared with sign-in: 49 wrong logins use the rest.
    for _ in 0..49 {
        app.login("sue@example.com", "a wrong password")
            .await
            .error(401, "INVALID_CREDENTIALS");
    }
    let (ceremony, options) = started(&app, &token).await;
    let credential = key.get(&options);
    finish(&app, &token, &ceremony, &credential)
        .await
        .error(429, "RATE_LIMITED");
    assert_eq!(until(&app, &token).await, Value::Null);
}

async fn keys_and_client_tokens_cannot_reauthenticate(backend: Backend) {
    let app = crate::oauth_helpers::provider_app(
        backend,
        SettingsArgs {
            public_url: Some(ORIGIN.into()),
            ..Default::default()
        },
    )
    .await;
    let (token, _) = app.logged_in_user("ann@example.com").await;
    let (_, api_key) = crate::api_keys::new_key(&app, &token, json!({ "name": "script" })).await;
    let reports = crate::client_tokens::service(&app, "reports");
    let given = crate::client_tokens::given_to(&app, &token, &reports).await;
    let body = json!({ "ceremonyId": uuid::Uuid::new_v4(), "credential": { "id": b64(b"x") } });
    for bearer in [&api_key, &given] {
        start(&app, bearer).await.error(403, "INSUFFICIENT_SCOPE");
        app.call(Method::POST, FINISH, Some(bearer), Some(body.clone()))
            .await
            .error(403, "INSUFFICIENT_SCOPE");
    }
}
