//! Passkey ceremonies that must fail (docs/api.md §9): used, expired, unknown or foreign
//! ceremonies, replayed assertions, wrong origins, no user verification, counters that go back,
//! another account's passkey, disabled and deleted accounts, ceremonies in a frame of another
//! origin.

use serde_json::json;

use crate::authenticator::Authenticator;
use crate::helpers::{Backend, both_backends};
use crate::passkeys::{
    ORIGIN, login_finish, login_start, register, register_finish, register_start, sign_in, spawn,
};

both_backends!(
    ceremonies_are_single_use_short_lived_and_the_starters_own,
    wrong_origins_and_unverified_users_are_refused,
    a_counter_that_goes_back_is_refused_and_audited,
    another_accounts_passkey_does_not_sign_in,
    disabled_accounts_cannot_sign_in_with_a_passkey,
    a_deleted_accounts_passkeys_go_with_it,
    ceremonies_in_a_frame_of_another_origin_are_refused,
);

async fn ceremonies_are_single_use_short_lived_and_the_starters_own(backend: Backend) {
    let app = spawn(backend).await;
    let (ann, _) = app.logged_in_user("ann@example.com").await;
    let (bob, _) = app.logged_in_user("bob@example.com").await;
    let mut key = Authenticator::new(ORIGIN);

    // A registration finished by another user fails, and leaves the owner's ceremony whole.
    let start = register_start(&app, &ann).await;
    let start = start.data(200).clone();
    let credential = key.create(&start["options"]);
    let body = json!({"ceremonyId": start["ceremonyId"], "credential": credential});
    register_finish(&app, &bob, body.clone())
        .await
        .error(401, "PASSKEY_INVALID");
    register_finish(&app, &ann, body.clone()).await.data(201);
    // Finished twice: the second is refused.
    register_finish(&app, &ann, body)
        .await
        .error(401, "PASSKEY_INVALID");

    // A replayed assertion: on the same ceremony, then on a new one.
    let (ceremony, options) = login_start(&app, json!({"email": "ann@example.com"})).await;
    let credential = key.get(&options);
    login_finish(&app, &ceremony, &credential).await.data(200);
    login_finish(&app, &ceremony, &credential)
        .await
        .error(401, "PASSKEY_INVALID");
    let (fresh, _) = login_start(&app, json!({"email": "ann@example.com"})).await;
    login_finish(&app, &fresh, &credential)
        .await
        .error(401, "PASSKEY_INVALID");

    // Expired: 5 minutes of life.
    let (ceremony, options) = login_start(&app, json!({"email": "ann@example.com"})).await;
    let credential = key.get(&options);
    app.clock().advance(std::time::Duration::from_secs(301));
    login_finish(&app, &ceremony, &credential)
        .await
        .error(401, "PASSKEY_INVALID");
    // Housekeeping deletes the ceremonies nobody finished.
    let pending = "SELECT COUNT(*) FROM passkey_ceremonies";
    assert!(app.scalar::<i64>(pending).await > 0);
    app.handle.housekeep().await.unwrap();
    assert_eq!(app.scalar::<i64>(pending).await, 0);

    // Unknown ids, and a registration's id at the sign-in.
    let (_, options) = login_start(&app, json!({})).await;
    let credential = key.get(&options);
    let unknown = json!(uuid::Uuid::new_v4().to_string());
    login_finish(&app, &unknown, &credential)
        .await
        .error(401, "PASSKEY_INVALID");
    let start = register_start(&app, &ann).await;
    login_finish(&app, &start.data(200)["ceremonyId"], &credential)
        .await
        .error(401, "PASSKEY_INVALID");
    let bad = login_finish(&app, &json!("not-a-uuid"), &credential).await;
    assert!(bad.error(400, "VALIDATION_ERROR")["details"]["fields"]["ceremonyId"].is_string());
    assert!(app.audit_count("passkey.failed", None).await >= 6);
}

async fn wrong_origins_and_unverified_users_are_refused(backend: Backend) {
    let app = spawn(backend).await;
    let (token, _) = app.logged_in_user("ann@example.com").await;
    let mut key = Authenticator::new(ORIGIN);
    register(&app, &token, &mut key).await;

    // A page of another site relaying the ceremony (phishing).
    key.origin = "https://login.example.test.evil.example".into();
    let answer = sign_in(&app, "ann@example.com", &mut key).await;
    let error = answer.error(401, "PASSKEY_INVALID");
    assert!(!error.to_string().contains("login.example.test"), "{error}");
    let mut phished = Authenticator::new("https://evil.example");
    let start = register_start(&app, &token).await;
    let start = start.data(200).clone();
    let credential = phished.create(&start["options"]);
    let finish = register_finish(
        &app,
        &token,
        json!({"ceremonyId": start["ceremonyId"], "credential": credential}),
    )
    .await;
    finish.error(401, "PASSKEY_INVALID");

    // User verification is required.
    key.origin = ORIGIN.into();
    key.user_verified = false;
    sign_in(&app, "ann@example.com", &mut key)
        .await
        .error(401, "PASSKEY_INVALID");
    key.user_verified = true;
    sign_in(&app, "ann@example.com", &mut key).await.data(200);
}

async fn a_counter_that_goes_back_is_refused_and_audited(backend: Backend) {
    let app = spawn(backend).await;
    let (token, _) = app.logged_in_user("ann@example.com").await;
    let mut key = Authenticator::new(ORIGIN);
    register(&app, &token, &mut key).await;
    sign_in(&app, "ann@example.com", &mut key).await.data(200);
    sign_in(&app, "ann@example.com", &mut key).await.data(200);
    assert_eq!(
        app.scalar::<i64>("SELECT sign_count FROM passkeys").await,
        2
    );

    // A copy of the credential, a step behind: its next counter (2) is not past the stored one.
    key.credentials[0].counter = 1;
    sign_in(&app, "ann@example.com", &mut key)
        .await
        .error(401, "PASSKEY_INVALID");
    // Discoverable: checked against the stored counter too.
    let (ceremony, options) = login_start(&app, json!({})).await;
    key.credentials[0].counter = 0;
    let credential = key.get(&options);
    login_finish(&app, &ceremony, &credential)
        .await
        .error(401, "PASSKEY_INVALID");
    assert_eq!(app.audit_count("passkey.clone_detected", None).await, 2);
    assert_eq!(
        app.scalar::<i64>("SELECT sign_count FROM passkeys").await,
        2
    );
    // The original, ahead of the copy, still signs in.
    key.credentials[0].counter = 7;
    sign_in(&app, "ann@example.com", &mut key).await.data(200);
    assert_eq!(
        app.scalar::<i64>("SELECT sign_count FROM passkeys").await,
        8
    );

    // Two ceremonies started together, answered by the original and by a copy with the same
    // counter: each is past the counter its ceremony saw, only the first past the stored one.
    let (first, options) = login_start(&app, json!({"email": "ann@example.com"})).await;
    let (second, options_2) = login_start(&app, json!({"email": "ann@example.com"})).await;
    let original = key.get(&options);
    key.credentials[0].counter = 8;
    let copy = key.get(&options_2);
    login_finish(&app, &first, &original).await.data(200);
    login_finish(&app, &second, &copy)
        .await
        .error(401, "PASSKEY_INVALID");
    assert_eq!(app.audit_count("passkey.clone_detected", None).await, 3);
    let detail: String = app
        .scalar("SELECT detail FROM audit_events WHERE event = 'passkey.clone_detected' ORDER BY at DESC LIMIT 1")
        .await;
    assert!(
        detail.ends_with("stored_counter=9 presented_counter=9"),
        "{detail}"
    );
}

async fn another_accounts_passkey_does_not_sign_in(backend: Backend) {
    let app = spawn(backend).await;
    let (ann, _) = app.logged_in_user("ann@example.com").await;
    let (bob, _) = app.logged_in_user("bob@example.com").await;
    let mut anns = Authenticator::new(ORIGIN);
    let mut bobs = Authenticator::new(ORIGIN);
    register(&app, &ann, &mut anns).await;
    register(&app, &bob, &mut bobs).await;

    // Ann's ceremony answered with Bob's passkey.
    let (ceremony, options) = login_start(&app, json!({"email": "ann@example.com"})).await;
    let credential = bobs.get_with(&options, 0);
    login_finish(&app, &ceremony, &credential)
        .await
        .error(401, "PASSKEY_INVALID");
    // Bob's passkey claiming to be Ann's (her user handle) in a discoverable sign-in.
    let (ceremony, options) = login_start(&app, json!({})).await;
    bobs.credentials[0].user_handle = anns.credentials[0].user_handle.clone();
    let credential = bobs.get(&options);
    login_finish(&app, &ceremony, &credential)
        .await
        .error(401, "PASSKEY_INVALID");
    // Ann's passkey naming another user (a user handle that is not hers), in a ceremony for
    // Ann's e-mail.
    let (ceremony, options) = login_start(&app, json!({"email": "ann@example.com"})).await;
    let mut credential = anns.get(&options);
    credential["response"]["userHandle"] = json!(crate::authenticator::b64(&[7; 16]));
    login_finish(&app, &ceremony, &credential)
        .await
        .error(401, "PASSKEY_INVALID");
    // Ann's own still works.
    sign_in(&app, "ann@example.com", &mut anns).await.data(200);
}

async fn disabled_accounts_cannot_sign_in_with_a_passkey(backend: Backend) {
    let app = spawn(backend).await;
    let (token, _) = app.logged_in_user("ann@example.com").await;
    let mut key = Authenticator::new(ORIGIN);
    register(&app, &token, &mut key).await;
    let (ceremony, options) = login_start(&app, json!({"email": "ann@example.com"})).await;
    app.handle.disable_user("ann@example.com").await.unwrap();
    // The start looks the same as for anyone; the finish tells, once the passkey proved itself.
    let credential = key.get(&options);
    login_finish(&app, &ceremony, &credential)
        .await
        .error(403, "ACCOUNT_DISABLED");
    let (ceremony, options) = login_start(&app, json!({})).await;
    let credential = key.get(&options);
    login_finish(&app, &ceremony, &credential)
        .await
        .error(403, "ACCOUNT_DISABLED");
}

/// Issue 22, finding 8: deleting an account deletes its passkeys, and one of them then signs in
/// to nothing, with the answer any unknown passkey gets.
async fn a_deleted_accounts_passkeys_go_with_it(backend: Backend) {
    let app = spawn(backend).await;
    let (token, _) = app.logged_in_user("ann@example.com").await;
    let mut key = Authenticator::new(ORIGIN);
    register(&app, &token, &mut key).await;
    app.call(
        reqwest::Method::DELETE,
        "/api/v1/auth/me",
        Some(&token),
        Some(json!({ "password": crate::helpers::PASSWORD })),
    )
    .await
    .data(200);
    assert_eq!(app.scalar::<i64>("SELECT COUNT(*) FROM passkeys").await, 0);
    let (ceremony, options) = login_start(&app, json!({})).await;
    let credential = key.get(&options);
    login_finish(&app, &ceremony, &credential)
        .await
        .error(401, "PASSKEY_INVALID");
}

/// Issue 22, finding 10: a ceremony the browser ran in a frame of another origin
/// (`crossOrigin: true`) is refused, though the origin itself is the service's.
async fn ceremonies_in_a_frame_of_another_origin_are_refused(backend: Backend) {
    let app = spawn(backend).await;
    let (token, _) = app.logged_in_user("ann@example.com").await;
    let mut key = Authenticator::new(ORIGIN);
    key.cross_origin = true;
    let start = register_start(&app, &token).await;
    let start = start.data(200).clone();
    let credential = key.create(&start["options"]);
    let body = json!({"ceremonyId": start["ceremonyId"], "credential": credential});
    register_finish(&app, &token, body)
        .await
        .error(401, "PASSKEY_INVALID");
    key.credentials.clear();
    key.cross_origin = false;
    register(&app, &token, &mut key).await;
    key.cross_origin = true;
    sign_in(&app, "ann@example.com", &mut key)
        .await
        .error(401, "PASSKEY_INVALID");
    key.cross_origin = false;
    sign_in(&app, "ann@example.com", &mut key).await.data(200);
}
