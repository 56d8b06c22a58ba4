//! Passkeys against bad input and across instances: malformed, oversized and wrongly encoded
//! `credential` objects, address throttling, ceremonies finished on another `gatehouse serve`
//! than the one that started them, and the relying-party settings checked at start.

use base64::Engine as _;
use serde_json::{Value, json};

use crate::authenticator::{Authenticator, b64};
use crate::helpers::{Backend, Instance, PASSWORD, TestDatabase, both_backends, run};
use crate::passkeys::{
    ORIGIN, login_finish, login_start, login_start_answer, register, register_finish,
    register_start, spawn,
};

both_backends!(
    malformed_credentials_are_refused_without_using_the_ceremony,
    random_damage_to_real_credentials_is_refused_never_a_5xx,
    passkey_attempts_are_throttled_per_address,
    the_registrations_password_check_draws_on_the_accounts_allowance,
    a_ceremony_finishes_on_another_instance_than_the_one_that_started_it,
    relying_party_settings_are_checked_at_start,
);

/// A change made to a credential.
type Alteration = Box<dyn Fn(&mut Value)>;

/// `f` applied to a copy of `credential`.
fn altered(credential: &Value, f: impl FnOnce(&mut Value)) -> Value {
    let mut c = credential.clone();
    f(&mut c);
    c
}

async fn malformed_credentials_are_refused_without_using_the_ceremony(backend: Backend) {
    let app = spawn(backend).await;
    let (token, _) = app.logged_in_user("ann@example.com").await;
    let mut key = Authenticator::new(ORIGIN);
    register(&app, &token, &mut key).await;
    let (ceremony, options) = login_start(&app, json!({"email": "ann@example.com"})).await;
    let good = key.get(&options);
    let standard = base64::engine::general_purpose::STANDARD;

    // Refused before the ceremony is looked at (400, naming the field): the ceremony stays.
    let cases: Vec<(Value, &str)> = vec![
        (Value::Null, "credential"),
        (json!("a string"), "credential"),
        (json!([good.clone()]), "credential"),
        (
            altered(&good, |c| c["type"] = json!("password")),
            "credential.type",
        ),
        // Standard base64 with padding (44 characters for 32 bytes), not base64url.
        (
            altered(&good, |c| {
                c["rawId"] = json!(standard.encode(&key.credentials[0].id))
            }),
            "credential.rawId",
        ),
        (
            altered(&good, |c| {
                let s = c["response"]["signature"].as_str().unwrap().replacen(
                    |ch: char| ch.is_ascii_alphabetic(),
                    "+",
                    1,
                );
                c["response"]["signature"] = json!(s);
            }),
            "credential.response.signature",
        ),
        (
            altered(&good, |c| {
                c["response"]["authenticatorData"] = json!([1, 2, 3])
            }),
            "credential.response.authenticatorData",
        ),
        (
            altered(&good, |c| {
                c["response"]
                    .as_object_mut()
                    .unwrap()
                    .remove("clientDataJSON");
            }),
            "credential.response.clientDataJSON",
        ),
        (
            altered(&good, |c| c["response"] = json!("x")),
            "credential.response.clientDataJSON",
        ),
    ];
    for (credential, field) in cases {
        let answer = login_finish(&app, &ceremony, &credential).await;
        let error = answer.error(400, "VALIDATION_ERROR");
        assert!(
            error["details"]["fields"][field].is_string(),
            "{field}: {error}"
        );
    }
    // Nested past serde's depth limit.
    let deep = format!(
        r#"{{"ceremonyId": {ceremony}, "credential": {}{}}}"#,
        "[".repeat(200),
        "]".repeat(200)
    );
    let request = app
        .client
        .post(app.url("/api/v1/auth/passkeys/login/finish"))
        .header("content-type", "application/json")
        .body(deep);
    app.send(request).await.error(400, "VALIDATION_ERROR");
    // Over the body limit.
    let huge = altered(&good, |c| {
        c["response"]["clientDataJSON"] = json!("A".repeat(70_000))
    });
    login_finish(&app, &ceremony, &huge)
        .await
        .error(413, "PAYLOAD_TOO_LARGE");
    // The ceremony is whole: the real answer signs in.
    login_finish(&app, &ceremony, &good).await.data(200);

    // Well-formed but wrong: 401, each on a ceremony of its own (a failure uses it up).
    let wrong: Vec<Alteration> = vec![
        Box::new(|c| c["response"]["clientDataJSON"] = json!(b64(b"not json"))),
        Box::new(|c| c["response"]["clientDataJSON"] = json!(b64(&vec![b'{'; 40_000]))),
        Box::new(|c| c["response"]["authenticatorData"] = json!(b64(&[1, 2, 3, 4, 5]))),
        Box::new(|c| c["response"]["signature"] = json!(b64(&[0x30, 0x02, 0x00, 0x00]))),
        Box::new(|c| c["response"]["userHandle"] = json!(b64(b"someone else"))),
        Box::new(|c| {
            c["rawId"] = json!(b64(&[9; 16]));
            c["id"] = c["rawId"].clone();
        }),
    ];
    for alter in wrong {
        let (ceremony, options) = login_start(&app, json!({})).await;
        let credential = altered(&key.get(&options), alter);
        login_finish(&app, &ceremony, &credential)
            .await
            .error(401, "PASSKEY_INVALID");
    }

    // A registration: a garbled attestation object, and one for another relying party.
    for alter in [
        Box::new(|c: &mut Value| c["response"]["attestationObject"] = json!(b64(b"\xa1\x63fmt")))
            as Alteration,
        Box::new(|c: &mut Value| c["response"]["attestationObject"] = json!(b64(&[0xff; 600]))),
    ] {
        let start = register_start(&app, &token).await;
        let start = start.data(200).clone();
        let credential = altered(&key.create(&start["options"]), alter);
        let body = json!({"ceremonyId": start["ceremonyId"], "credential": credential});
        register_finish(&app, &token, body)
            .await
            .error(401, "PASSKEY_INVALID");
    }
    let start = register_start(&app, &token).await;
    let start = start.data(200).clone();
    let mut options = start["options"].clone();
    options["rp"]["id"] = json!("example.org");
    let credential = key.create(&options);
    let body = json!({"ceremonyId": start["ceremonyId"], "credential": credential, "name": "x".repeat(65)});
    let answer = register_finish(&app, &token, body.clone()).await;
    assert!(answer.error(400, "VALIDATION_ERROR")["details"]["fields"]["name"].is_string());
    let body = json!({"ceremonyId": start["ceremonyId"], "credential": body["credential"]});
    register_finish(&app, &token, body)
        .await
        .error(401, "PASSKEY_INVALID");
    assert_eq!(
        app.get("/api/v1/auth/passkeys", &token).await.data(200)["items"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

/// Real credentials with one binary member damaged at random (a byte flipped, cut short,
/// lengthened, replaced): an assertion so damaged is a 401 `PASSKEY_INVALID` or a 400, never a
/// 5xx. A registration may still succeed: a "none" attestation is signed by nobody, so damage to
/// its unchecked parts (the AAGUID, the public key, trailing bytes) registers what it says; it
/// must only never be a 5xx. Seeded, so a failure can be replayed.
async fn random_damage_to_real_credentials_is_refused_never_a_5xx(backend: Backend) {
    use rand::{Rng, SeedableRng};
    let app = crate::helpers::spawn_app_with(
        backend,
        gatehouse::config::SettingsArgs {
            public_url: Some(ORIGIN.into()),
            rate_limit: Some("off".into()),
            ..Default::default()
        },
    )
    .await;
    let (token, _) = app.logged_in_user("ann@example.com").await;
    let mut key = Authenticator::new(ORIGIN);
    register(&app, &token, &mut key).await;
    let mut rng = rand::rngs::StdRng::seed_from_u64(13);
    let mut damage = |value: &Value| -> Value {
        let mut bytes = crate::authenticator::unb64(value.as_str().unwrap());
        match rng.gen_range(0..4) {
            0 if !bytes.is_empty() => {
                let i = rng.gen_range(0..bytes.len());
                bytes[i] ^= 1 << rng.gen_range(0..8);
            }
            1 if !bytes.is_empty() => bytes.truncate(rng.gen_range(0..bytes.len())),
            2 => bytes.extend((0..rng.gen_range(1..64)).map(|_| rng.r#gen::<u8>())),
            _ => {
                bytes = (0..rng.gen_range(0..300))
                    .map(|_| rng.r#gen::<u8>())
                    .collect()
            }
        }
        json!(b64(&bytes))
    };
    let members = [
        "clientDataJSON",
        "authenticatorData",
        "signature",
        "userHandle",
    ];
    for round in 0..80 {
        let body = if round % 3 == 0 {
            json!({})
        } else {
            json!({"email": "ann@example.com"})
        };
        let (ceremony, options) = login_start(&app, body).await;
        let mut credential = key.get(&options);
        let member = members[round % members.len()];
        credential["response"][member] = damage(&credential["response"][member]);
        let answer = login_finish(&app, &ceremony, &credential).await;
        assert!(
            matches!(answer.status.as_u16(), 400 | 401),
            "{member}: {}",
            answer.body
        );
    }
    for round in 0..20 {
        let start = register_start(&app, &token).await;
        let start = start.data(200).clone();
        let mut credential = key.create(&start["options"]);
        let member = ["clientDataJSON", "attestationObject"][round % 2];
        credential["response"][member] = damage(&credential["response"][member]);
        let body = json!({"ceremonyId": start["ceremonyId"], "credential": credential});
        let answer = register_finish(&app, &token, body).await;
        assert!(
            matches!(answer.status.as_u16(), 201 | 400 | 401),
            "{member}: {}",
            answer.body
        );
    }
}

async fn passkey_attempts_are_throttled_per_address(backend: Backend) {
    let app = spawn(backend).await;
    // The allowance refills one attempt per 6 s: a slow run must not get one back half-way.
    app.clock().freeze();
    app.create_user("ivy@example.com", PASSWORD).await;
    // The address's budget is the logins' own: 150 passkey starts spend it.
    for _ in 0..150 {
        login_start_answer(&app, json!({"email": "ivy@example.com"}))
            .await
            .data(200);
    }
    let answer = login_start_answer(&app, json!({})).await;
    answer.error(429, "RATE_LIMITED");
    assert!(answer.header("retry-after").is_some());
    app.login("ivy@example.com", PASSWORD)
        .await
        .error(429, "RATE_LIMITED");
}

async fn the_registrations_password_check_draws_on_the_accounts_allowance(backend: Backend) {
    let app = spawn(backend).await;
    app.clock().freeze();
    let (token, _) = app.logged_in_user("ivy@example.com").await;
    let wrong = || {
        crate::passkeys::call(
            &app,
            reqwest::Method::POST,
            "/register/start",
            Some(&token),
            json!({"password": "a wrong password"}),
        )
    };
    // The account's burst of failures (docs/api.md §5), shared with logins and the other checks.
    for _ in 0..50 {
        wrong().await.error(403, "INVALID_CREDENTIALS");
    }
    let answer = wrong().await;
    answer.error(429, "RATE_LIMITED");
    register_start(&app, &token)
        .await
        .error(429, "RATE_LIMITED");
    app.login("ivy@example.com", PASSWORD)
        .await
        .error(429, "RATE_LIMITED");
    // The session in hand is untouched.
    app.get("/api/v1/auth/passkeys", &token).await.data(200);
}

async fn a_ceremony_finishes_on_another_instance_than_the_one_that_started_it(backend: Backend) {
    let db = TestDatabase::migrated(&backend).await;
    crate::instances::add_user(&db, "ann@example.com");
    let env = [("GATEHOUSE_PUBLIC_URL", ORIGIN)];
    let (a, b) = (Instance::start(&db, &env), Instance::start(&db, &env));
    let token = a.login("ann@example.com", PASSWORD).await.data(200)["accessToken"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut key = Authenticator::new(ORIGIN);

    // Registration: started on A, finished on B.
    let start = register_start(&a, &token).await;
    let start = start.data(200).clone();
    let credential = key.create(&start["options"]);
    let body = json!({"ceremonyId": start["ceremonyId"], "credential": credential});
    register_finish(&b, &token, body).await.data(201);

    // Sign-in with the e-mail: started on B, finished on A; then discoverable, A to B.
    let (ceremony, options) = login_start(&b, json!({"email": "ann@example.com"})).await;
    let credential = key.get(&options);
    login_finish(&a, &ceremony, &credential).await.data(200);
    let (ceremony, options) = login_start(&a, json!({})).await;
    let credential = key.get(&options);
    let tokens = login_finish(&b, &ceremony, &credential).await;
    assert_eq!(tokens.data(200)["user"]["email"], "ann@example.com");
    // Used on B, it is used on A too.
    login_finish(&a, &ceremony, &credential)
        .await
        .error(401, "PASSKEY_INVALID");
}

async fn relying_party_settings_are_checked_at_start(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    for (env, needle) in [
        (
            vec![("GATEHOUSE_PUBLIC_URL", "login.example.test")],
            "GATEHOUSE_PUBLIC_URL",
        ),
        (
            vec![
                ("GATEHOUSE_PUBLIC_URL", ORIGIN),
                ("GATEHOUSE_WEBAUTHN_ORIGINS", "https://evil.example"),
            ],
            "is not within the relying-party id login.example.test",
        ),
        (
            vec![("GATEHOUSE_WEBAUTHN_RP_ID", "https://example.test")],
            "GATEHOUSE_WEBAUTHN_RP_ID",
        ),
        (
            vec![("GATEHOUSE_WEBAUTHN_ORIGINS", "https://a.example.test")],
            "GATEHOUSE_WEBAUTHN_RP_ID",
        ),
    ] {
        let mut command = db.command();
        command.envs(env).args(["serve", "--listen", "127.0.0.1:0"]);
        let output = run(&mut command, None);
        assert!(!output.status.success());
        let err = String::from_utf8_lossy(&output.stderr);
        assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
        assert!(err.contains(needle), "{err} should mention {needle}");
    }
}
