//! Linking identities at other providers from the API (docs/api.md §14), the second factor of a
//! federated sign-in, REQUIRE_VERIFIED_EMAIL, and the provider's organisation joined; with a
//! second Gatehouse as the upstream (`federation_flow`).

use gatehouse::config::{Settings, SettingsArgs};
use gatehouse::{Application, Clock};
use reqwest::Method;
use serde_json::{Value, json};

use crate::federation_flow::{
    Hop, Pair, UP, authorize_upstream, finish, footprint, hop, providers_file, register_client,
    through, upstream_gatehouse, upstream_person, wait_available, with_providers,
};
use crate::helpers::{Backend, PASSWORD, TestApp, both_backends, claims, code_at, spawn_app_with};

both_backends!(
    an_account_links_and_unlinks_an_identity_from_the_api,
    a_local_second_factor_is_asked_unless_the_upstream_one_is_trusted,
    require_verified_email_holds_for_federated_sign_ins,
    a_providers_organisation_is_joined_and_must_exist_at_start,
    a_reset_of_a_never_verified_address_unlinks_what_was_linked_before,
    a_deleted_account_frees_its_identity,
    an_account_without_a_password_reauthenticates_through_its_provider,
);

/// `POST /auth/identities/start` as the holder of `token`.
async fn start_link(app: &TestApp, token: &str, body: Value) -> crate::helpers::Answer {
    app.call(
        Method::POST,
        "/api/v1/auth/identities/start",
        Some(token),
        Some(body),
    )
    .await
}

/// A link begun by the holder of `token` (password re-checked) and finished by the holder of
/// `upstream` at the provider: the callback's answer.
async fn link(pair: &Pair, token: &str, upstream: &str) -> Hop {
    let body = json!({"providerId": UP, "password": PASSWORD});
    through_api(pair, "/api/v1/auth/identities/start", token, body, upstream).await
}

/// The access token a finished sign-in gave.
fn access(answer: &crate::helpers::Answer) -> String {
    answer.data(200)["accessToken"].as_str().unwrap().to_owned()
}

async fn an_account_links_and_unlinks_an_identity_from_the_api(backend: Backend) {
    let pair = Pair::new(backend, "").await;
    let (bob, _) = pair.app.logged_in_user("bob@example.com").await;
    let upstream_bob = upstream_person(&pair, "robert@elsewhere.example").await;

    // The password is re-checked; the provider must exist; the field is required.
    let wrong = start_link(
        &pair.app,
        &bob,
        json!({"providerId": UP, "password": "nope nope"}),
    )
    .await;
    wrong.error(403, "INVALID_CREDENTIALS");
    let unknown = start_link(
        &pair.app,
        &bob,
        json!({"providerId": "nope", "password": PASSWORD}),
    )
    .await;
    unknown.error(404, "NOT_FOUND");
    let missing = start_link(&pair.app, &bob, json!({"password": PASSWORD})).await;
    assert!(missing.error(400, "VALIDATION_ERROR")["details"]["fields"]["providerId"].is_string());
    let window = start_link(&pair.app, &bob, json!({"providerId": UP})).await;
    assert!(window.error(400, "VALIDATION_ERROR")["details"]["fields"]["password"].is_string());

    let started = start_link(
        &pair.app,
        &bob,
        json!({"providerId": UP, "password": PASSWORD}),
    )
    .await;
    let cookie = started.header("set-cookie").unwrap().to_owned();
    assert!(
        cookie.starts_with("gatehouse_federation=") && cookie.contains("Max-Age=600"),
        "{cookie}"
    );
    let linked = link(&pair, &bob, &upstream_bob).await;
    assert_eq!(linked.location, "/account?linked=up", "{linked:?}");
    let items = pair.app.get("/api/v1/auth/identities", &bob).await;
    let items = items.data(200)["items"].as_array().unwrap().clone();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["email"], "robert@elsewhere.example");
    assert!(items[0]["lastUsedAt"].is_null());
    assert_eq!(
        pair.app
            .audit_count("identity.linked", Some("provider=up"))
            .await,
        1
    );
    // One identity per provider.
    let twice = start_link(
        &pair.app,
        &bob,
        json!({"providerId": UP, "password": PASSWORD}),
    )
    .await;
    twice.error(409, "CONFLICT");

    // The upstream identity now signs Bob in (no account is made: the address differs).
    let before = footprint(&pair.app).await;
    let signed_in = through(&pair, &upstream_bob, "/account").await;
    let tokens = finish(&pair.app, &signed_in).await;
    assert_eq!(tokens.data(200)["user"]["email"], "bob@example.com");
    assert_eq!(claims(&access(&tokens))["amr"], json!(["fed"]));
    assert_eq!(footprint(&pair.app).await.0, before.0);

    // Another account cannot take the identity.
    let (carl, _) = pair.app.logged_in_user("carl@example.com").await;
    let taken = link(&pair, &carl, &upstream_bob).await;
    assert_eq!(
        taken.location, "/account?link_error=identity_taken&provider=up",
        "{taken:?}"
    );
    // The admin API shows the identity on Bob's account.
    let root = crate::admin::admin(&pair.app, "root@example.com").await;
    let bob_id = claims(&bob)["sub"].as_str().unwrap().to_owned();
    let user = pair
        .app
        .get(&format!("/api/v1/admin/users/{bob_id}"), &root.strong)
        .await;
    let subject = items[0]["subject"].clone();
    assert_eq!(
        user.data(200)["identities"],
        json!([{"providerId": UP, "subject": subject}])
    );
    let page = pair.app.get("/api/v1/admin/users", &root.strong).await;
    let listed = page.data(200)["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["id"] == bob_id.as_str())
        .unwrap()
        .clone();
    assert_eq!(listed["identities"].as_array().unwrap().len(), 1);

    // Bob has a password: unlinking leaves a way in.
    let gone = pair
        .app
        .call(
            Method::DELETE,
            "/api/v1/auth/identities/up",
            Some(&bob),
            None,
        )
        .await;
    assert_eq!(gone.data(200)["providerId"], UP);
    let again = pair
        .app
        .call(
            Method::DELETE,
            "/api/v1/auth/identities/up",
            Some(&bob),
            None,
        )
        .await;
    again.error(404, "NOT_FOUND");
    assert_eq!(
        pair.app
            .audit_count("identity.unlinked", Some("provider=up"))
            .await,
        1
    );
    // Unlinked, the identity signs no one in (signup is off).
    let refused = through(&pair, &upstream_bob, "/account").await;
    assert_eq!(
        refused.param("error").as_deref(),
        Some("no_account"),
        "{refused:?}"
    );
    // The session's re-authentication stands in for the password.
    let reauth = pair
        .app
        .call(
            Method::POST,
            "/api/v1/auth/reauthenticate",
            Some(&bob),
            Some(json!({"password": PASSWORD})),
        )
        .await;
    reauth.data(200);
    start_link(&pair.app, &bob, json!({"providerId": UP}))
        .await
        .data(200);
}

async fn a_local_second_factor_is_asked_unless_the_upstream_one_is_trusted(backend: Backend) {
    for trusted in [false, true] {
        let extra = if trusted {
            "trust_second_factor = true"
        } else {
            ""
        };
        let pair = Pair::new(backend.clone(), extra).await;
        let (ann, _) = pair.app.logged_in_user("ann@example.com").await;
        let (secret, _) = pair.app.enable_two_factor(&ann).await;
        // At the upstream, Ann signs in with the password only.
        let weak = upstream_person(&pair, "ann@up.example").await;
        assert_eq!(
            link(&pair, &ann, &weak).await.location,
            "/account?linked=up"
        );

        let landed = through(&pair, &weak, "/account").await;
        // No session yet, so no §6b cookie: only the challenge is handed off.
        assert!(landed.cookie("gatehouse_session").is_none(), "{landed:?}");
        let challenge = finish(&pair.app, &landed).await;
        let challenge = challenge.data(200);
        assert_eq!(challenge["requiresTwoFactor"], true);
        let code = code_at(&secret, pair.app.now_seconds());
        let verified = pair
            .app
            .post(
                "/api/v1/auth/2fa/verify",
                json!({"tempToken": challenge["tempToken"], "code": code}),
            )
            .await;
        assert_eq!(claims(&access(&verified))["amr"], json!(["fed", "otp"]));

        // With a second factor at the upstream: trusted, it counts; else the local one is asked.
        let (up_secret, _) = pair.up.enable_two_factor(&weak).await;
        let up_challenge = pair.up.login("ann@up.example", PASSWORD).await;
        let temp = up_challenge.data(200)["tempToken"].clone();
        let strong = pair
            .up
            .post(
                "/api/v1/auth/2fa/verify",
                json!({"tempToken": temp, "code": code_at(&up_secret, pair.up.now_seconds())}),
            )
            .await;
        let strong = access(&strong);
        let landed = through(&pair, &strong, "/account").await;
        let answer = finish(&pair.app, &landed).await;
        if trusted {
            assert!(landed.cookie("gatehouse_session").is_some());
            assert_eq!(claims(&access(&answer))["amr"], json!(["fed", "mfa"]));
        } else {
            assert_eq!(answer.data(200)["requiresTwoFactor"], true);
        }
    }
}

async fn require_verified_email_holds_for_federated_sign_ins(backend: Backend) {
    let pair = Pair::with(
        backend,
        "signup = true",
        "",
        SettingsArgs {
            require_verified_email: Some("on".into()),
            ..SettingsArgs::default()
        },
    )
    .await;
    // An address the provider does not vouch for makes no account.
    let eve = upstream_person(&pair, "eve@example.com").await;
    pair.up
        .execute(
            "UPDATE users SET email_verified = FALSE WHERE email_normalized = 'eve@example.com'",
        )
        .await;
    let before = footprint(&pair.app).await;
    let refused = through(&pair, &eve, "/account").await;
    assert_eq!(
        refused.param("error").as_deref(),
        Some("email_not_verified"),
        "{refused:?}"
    );
    assert_eq!(footprint(&pair.app).await, before);

    // A linked account whose address is not verified here is not signed in.
    let ada = upstream_person(&pair, "ada@example.com").await;
    let first = through(&pair, &ada, "/account").await;
    finish(&pair.app, &first).await.data(200);
    pair.app
        .execute(
            "UPDATE users SET email_verified = FALSE WHERE email_normalized = 'ada@example.com'",
        )
        .await;
    let sessions = footprint(&pair.app).await.2;
    let refused = through(&pair, &ada, "/account").await;
    assert_eq!(
        refused.param("error").as_deref(),
        Some("email_not_verified"),
        "{refused:?}"
    );
    // A disabled one neither.
    pair.app
        .execute("UPDATE users SET email_verified = TRUE, disabled = TRUE WHERE email_normalized = 'ada@example.com'")
        .await;
    let refused = through(&pair, &ada, "/account").await;
    assert_eq!(
        refused.param("error").as_deref(),
        Some("account_disabled"),
        "{refused:?}"
    );
    assert_eq!(footprint(&pair.app).await.2, sessions);
}

async fn a_providers_organisation_is_joined_and_must_exist_at_start(backend: Backend) {
    let up = upstream_gatehouse(backend.clone()).await;
    let client = register_client(&up);
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, extra: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, providers_file(&up, &client, extra, "")).unwrap();
        path.to_str().unwrap().to_owned()
    };
    // The organisation exists before the provider names it.
    let base = spawn_app_with(backend, SettingsArgs::default()).await;
    let (owner, _) = base.logged_in_user("owner@example.com").await;
    crate::orgs::create_org(&base, &owner, "acme").await;

    let missing = write("missing.toml", "org = \"nope\"");
    let settings = Settings::resolve(&SettingsArgs {
        listen: Some("127.0.0.1:0".into()),
        database_url: Some(base.db.url.clone()),
        master_key: base.db.master_key.clone(),
        ..with_providers(&missing, SettingsArgs::default())
    })
    .unwrap();
    let refused = Application::build_with_clock(&settings, Clock::system()).await;
    let message = format!("{:#}", refused.err().expect("the start is refused"));
    assert!(
        message.contains("\"up\"") && message.contains("nope"),
        "{message}"
    );
    assert_eq!(message.lines().count(), 1, "{message}");

    let file = write("acme.toml", "signup = true\norg = \"acme\"");
    let app = base
        .twin_with(with_providers(&file, SettingsArgs::default()))
        .await;
    wait_available(&app, UP).await;
    let pair = Pair::from_parts(up, app, dir);
    let ada = upstream_person(&pair, "ada@example.com").await;
    let landed = through(&pair, &ada, "/account").await;
    let token = access(&finish(&pair.app, &landed).await);
    let orgs = pair.app.get("/api/v1/orgs", &token).await;
    let orgs = orgs.data(200)["items"].as_array().unwrap().clone();
    assert_eq!(orgs.len(), 1, "{orgs:?}");
    assert_eq!(orgs[0]["org"]["slug"], "acme");
    assert_eq!(orgs[0]["roles"], json!(["member"]));
    // The owner linking keeps their roles (signed in here: the twin is another issuer).
    let owner = access(&pair.app.login("owner@example.com", PASSWORD).await);
    let linked = link(
        &pair,
        &owner,
        &upstream_person(&pair, "owner@up.example").await,
    )
    .await;
    assert_eq!(linked.location, "/account?linked=up", "{linked:?}");
    let orgs = pair.app.get("/api/v1/orgs", &owner).await;
    assert_eq!(orgs.data(200)["items"][0]["roles"], json!(["owner"]));
}

/// The pre-account takeover by the other door: someone registers another person's address (never
/// verified) and links their own identity at a provider; the address's owner resets the password,
/// and the identity goes with the other sign-in methods added before the address was proved.
async fn a_reset_of_a_never_verified_address_unlinks_what_was_linked_before(backend: Backend) {
    let smtp = crate::smtp::SmtpServer::start();
    let pair = Pair::with(
        backend,
        "",
        "",
        SettingsArgs {
            smtp_url: Some(smtp.url()),
            registration: Some("open".into()),
            mail_retry_max: Some("1s".into()),
            ..SettingsArgs::default()
        },
    )
    .await;
    pair.app
        .post(
            "/api/v1/auth/register",
            json!({"email": "victim@example.com", "password": PASSWORD, "fullName": "V"}),
        )
        .await
        .data(201);
    let attacker = access(&pair.app.login("victim@example.com", PASSWORD).await);
    let upstream_attacker = upstream_person(&pair, "mallory@up.example").await;
    let linked = link(&pair, &attacker, &upstream_attacker).await;
    assert_eq!(linked.location, "/account?linked=up", "{linked:?}");

    pair.app
        .post(
            "/api/v1/auth/password/forgot",
            json!({"email": "victim@example.com"}),
        )
        .await;
    let mail = smtp
        .wait_for_mail("victim@example.com", "reset your password", 1)
        .await
        .pop()
        .unwrap();
    pair.app
        .post(
            "/api/v1/auth/password/reset",
            json!({"token": mail.token("/reset-password"), "newPassword": "a brand new passphrase"}),
        )
        .await
        .data(200);
    assert_eq!(footprint(&pair.app).await.1, 0);
    let detail = "unproven_address passkeys=0 authenticator=false identities=1";
    assert_eq!(
        pair.app
            .audit_count("credentials.removed", Some(detail))
            .await,
        1
    );
    let refused = through(&pair, &upstream_attacker, "/account").await;
    assert_eq!(
        refused.param("error").as_deref(),
        Some("no_account"),
        "{refused:?}"
    );
}

async fn a_deleted_account_frees_its_identity(backend: Backend) {
    let pair = Pair::new(backend, "signup = true").await;
    let ada = upstream_person(&pair, "ada@example.com").await;
    let first = finish(&pair.app, &through(&pair, &ada, "/account").await).await;
    let id = first.data(200)["user"]["id"].as_str().unwrap().to_owned();
    let root = crate::admin::admin(&pair.app, "root@example.com").await;
    pair.app
        .call(
            Method::DELETE,
            &format!("/api/v1/admin/users/{id}"),
            Some(&root.strong),
            None,
        )
        .await
        .data(200);
    let linked: i64 = pair
        .app
        .scalar("SELECT COUNT(*) FROM federated_identities")
        .await;
    assert_eq!(linked, 0);
    // The same person signs up anew: a new account, not the deleted one.
    let again = finish(&pair.app, &through(&pair, &ada, "/account").await).await;
    assert_ne!(again.data(200)["user"]["id"], id.as_str());
}

/// A flow begun through the API (`path` with `body`, as the holder of `token`) and finished by the
/// holder of `upstream` at the provider: the callback's answer.
async fn through_api(pair: &Pair, path: &str, token: &str, body: Value, upstream: &str) -> Hop {
    let started = pair
        .app
        .call(Method::POST, path, Some(token), Some(body))
        .await;
    let cookie = started
        .header("set-cookie")
        .unwrap_or_else(|| panic!("{started:?}"))
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let to = started.data(200)["redirectTo"].as_str().unwrap().to_owned();
    let callback = authorize_upstream(pair, &to, upstream).await;
    hop(&pair.app, &callback, Some(&cookie)).await
}

async fn an_account_without_a_password_reauthenticates_through_its_provider(backend: Backend) {
    const REAUTH: &str = "/api/v1/auth/reauthenticate/provider";
    let pair = Pair::new(backend, "signup = true").await;
    let ada_up = upstream_person(&pair, "ada@example.com").await;
    let ada = access(&finish(&pair.app, &through(&pair, &ada_up, "/account").await).await);
    let key = json!({"name": "CI"});
    let refused = pair
        .app
        .call(
            Method::POST,
            "/api/v1/auth/api-keys",
            Some(&ada),
            Some(key.clone()),
        )
        .await;
    assert!(refused.error(400, "VALIDATION_ERROR")["details"]["fields"]["password"].is_string());

    // Someone else signed in at the provider proves nothing of Ada's session.
    let bob_up = upstream_person(&pair, "bob@example.com").await;
    let body = json!({"providerId": UP});
    let other = through_api(&pair, REAUTH, &ada, body.clone(), &bob_up).await;
    assert_eq!(
        other.location, "/account?reauth_error=not_linked&provider=up",
        "{other:?}"
    );
    let me = pair.app.get("/api/v1/auth/me", &ada).await;
    assert!(me.data(200)["reauthenticatedUntil"].is_null());

    let done = through_api(&pair, REAUTH, &ada, body.clone(), &ada_up).await;
    assert_eq!(done.location, "/account?reauthenticated=up", "{done:?}");
    let me = pair.app.get("/api/v1/auth/me", &ada).await;
    assert!(me.data(200)["reauthenticatedUntil"].is_string());
    assert_eq!(
        pair.app
            .audit_count("reauthentication.succeeded", Some("fed"))
            .await,
        1
    );
    pair.app
        .call(Method::POST, "/api/v1/auth/api-keys", Some(&ada), Some(key))
        .await
        .data(201);

    // An account with no identity at the provider has nothing to re-authenticate with there.
    let (zoe, _) = pair.app.logged_in_user("zoe@example.com").await;
    let none = pair
        .app
        .call(Method::POST, REAUTH, Some(&zoe), Some(body))
        .await;
    none.error(404, "NOT_FOUND");
}
