//! Signing in with other identity providers (docs/api.md §14), with a second Gatehouse as the
//! upstream of the first: sign-up, sign-in, the handoff to the pages, linking and unlinking from
//! the API, the second factor, SSO_REQUIRED, the organisation joined; and every refusal lands on
//! `/sign-in?error=…`, makes nothing and is never a 5xx.

use gatehouse::config::SettingsArgs;
use reqwest::Method;
use serde_json::json;

use crate::federation_flow::{
    PUBLIC, Pair, UP, authorize_upstream, finish, footprint, hop, start, through, upstream_person,
    wait_available,
};
use crate::helpers::{Backend, PASSWORD, both_backends, claims, free_port, metric, scrape};

both_backends!(
    the_domains_provider_links_a_proven_account_at_its_first_sign_in,
    a_second_gatehouse_signs_a_person_up_then_in,
    a_callback_is_bound_to_its_browser_and_used_once,
    provider_answers_that_are_no_sign_in_land_on_the_sign_in_page,
    an_existing_address_is_never_linked_silently,
    addresses_under_a_providers_domains_sign_in_there,
    an_unreachable_provider_is_unavailable_not_slow,
    flows_and_handoffs_expire_and_are_purged,
    a_flood_of_starts_does_not_fill_the_table,
);

async fn a_second_gatehouse_signs_a_person_up_then_in(backend: Backend) {
    let pair = Pair::new(backend, "signup = true").await;
    let ada = upstream_person(&pair, "ada@example.com").await;
    let return_to = format!("{PUBLIC}/reports");
    let before = footprint(&pair.app).await;

    let landed = through(&pair, &ada, &return_to).await;
    assert_eq!(landed.status, 302, "{landed:?}");
    assert!(
        landed.location.starts_with("/sign-in?federated=1"),
        "{landed:?}"
    );
    assert_eq!(
        landed.param("return_to").as_deref(),
        Some(return_to.as_str())
    );
    // The §6b cookie is set by the callback itself, before any script runs.
    assert!(
        landed
            .cookie("gatehouse_session")
            .is_some_and(|v| !v.is_empty()),
        "{landed:?}"
    );
    let handoff = landed.cookie_line("gatehouse_federation").unwrap();
    assert!(
        handoff.contains("Max-Age=60") && handoff.contains("HttpOnly"),
        "{handoff}"
    );
    assert!(!handoff.contains("Domain="), "{handoff}");

    let tokens = finish(&pair.app, &landed).await;
    let data = tokens.data(200);
    assert_eq!(data["user"]["email"], "ada@example.com");
    let token = data["accessToken"].as_str().unwrap().to_owned();
    assert_eq!(claims(&token)["amr"], json!(["fed"]));
    // Collected once.
    finish(&pair.app, &landed).await.error(401, "TOKEN_INVALID");
    let signed_in = r#"gatehouse_federation_callbacks_total{provider="up",purpose="sign_in",outcome="signed_in"}"#;
    assert_eq!(metric(&scrape(&pair.app).await, signed_in), Some(1.0));

    // A new account: verified (the provider said so), no password, linked.
    let (users, identities, sessions) = footprint(&pair.app).await;
    assert_eq!(
        (users, identities, sessions),
        (before.0 + 1, before.1 + 1, before.2 + 1)
    );
    let me = pair.app.get("/api/v1/auth/me", &token).await;
    assert_eq!(me.data(200)["emailVerified"], true);
    assert_eq!(me.data(200)["hasPassword"], false);
    let hash: String = pair
        .app
        .scalar("SELECT password_hash FROM users WHERE email_normalized = 'ada@example.com'")
        .await;
    assert_eq!(hash, "");
    pair.app
        .login("ada@example.com", "")
        .await
        .error(400, "VALIDATION_ERROR");
    pair.app
        .login("ada@example.com", PASSWORD)
        .await
        .error(401, "INVALID_CREDENTIALS");
    let listed = pair.app.get("/api/v1/auth/identities", &token).await;
    let items = listed.data(200)["items"].as_array().unwrap().clone();
    assert_eq!(items.len(), 1, "{items:?}");
    assert_eq!(items[0]["providerId"], UP);
    assert_eq!(items[0]["providerName"], "Upstream Gatehouse");
    assert_eq!(items[0]["email"], "ada@example.com");
    assert_eq!(
        pair.app
            .audit_count("user.created", Some("provider provider=up"))
            .await,
        1
    );
    assert_eq!(
        pair.app
            .audit_count("login.succeeded", Some("fed provider=up"))
            .await,
        1
    );

    // Again: the same account, signed in.
    let again = through(&pair, &ada, &return_to).await;
    let data = finish(&pair.app, &again).await;
    assert_eq!(data.data(200)["user"]["id"], tokens.data(200)["user"]["id"]);
    assert_eq!(footprint(&pair.app).await.0, users);
    let used: Option<i64> = pair
        .app
        .scalar("SELECT last_used_at FROM federated_identities")
        .await;
    assert!(used.is_some());
    // The password-less account cannot leave itself without a way in.
    let token = data.data(200)["accessToken"].as_str().unwrap().to_owned();
    let unlink = pair
        .app
        .call(
            Method::DELETE,
            "/api/v1/auth/identities/up",
            Some(&token),
            None,
        )
        .await;
    unlink.error(409, "CONFLICT");
    assert_eq!(footprint(&pair.app).await.1, identities);
}

async fn a_callback_is_bound_to_its_browser_and_used_once(backend: Backend) {
    let pair = Pair::new(backend, "signup = true").await;
    let ada = upstream_person(&pair, "ada@example.com").await;
    let before = footprint(&pair.app).await;

    // Without the flow's cookie (another browser, or a link sent to someone): nothing happens.
    let (started, cookie) = start(&pair.app, UP, "/account").await;
    let callback = authorize_upstream(&pair, &started.location, &ada).await;
    let stranger = hop(&pair.app, &callback, None).await;
    assert_eq!(stranger.status, 302);
    assert!(
        stranger.location.starts_with("/sign-in?error=expired"),
        "{stranger:?}"
    );
    // Anyone can send that: it writes nothing, not even to the audit trail.
    let forged = "gatehouse_federation=made-up-value";
    hop(&pair.app, &callback, Some(forged)).await;
    assert_eq!(pair.app.audit_count("login.failed", None).await, 0);
    // With another flow's cookie, and the state of this one: nothing either.
    let (_, other) = start(&pair.app, UP, "/account").await;
    let crossed = hop(&pair.app, &callback, Some(&other)).await;
    assert!(
        crossed.location.starts_with("/sign-in?error=expired"),
        "{crossed:?}"
    );
    // A state changed on the way.
    let (started, cookie2) = start(&pair.app, UP, "/account").await;
    let callback2 = authorize_upstream(&pair, &started.location, &ada).await;
    let state = crate::oauth_helpers::param(&format!("http://x{callback2}"), "state").unwrap();
    let forged = callback2.replace(&state, "forged-state");
    let mismatch = hop(&pair.app, &forged, Some(&cookie2)).await;
    assert!(
        mismatch
            .location
            .starts_with("/sign-in?error=expired&provider=up"),
        "{mismatch:?}"
    );
    // The flow was used up by the mismatch: the right state now is a replay.
    let replay = hop(&pair.app, &callback2, Some(&cookie2)).await;
    assert!(
        replay.location.starts_with("/sign-in?error=expired"),
        "{replay:?}"
    );
    assert_eq!(footprint(&pair.app).await, before);

    // The right browser finishes; the same callback again is a replay.
    let (started, cookie3) = start(&pair.app, UP, "/account").await;
    let callback3 = authorize_upstream(&pair, &started.location, &ada).await;
    let done = hop(&pair.app, &callback3, Some(&cookie3)).await;
    assert!(
        done.location.starts_with("/sign-in?federated=1"),
        "{done:?}"
    );
    let replayed = hop(&pair.app, &callback3, Some(&cookie3)).await;
    assert!(
        replayed.location.starts_with("/sign-in?error=expired"),
        "{replayed:?}"
    );
    // The first flow's cookie, still unused, with a code already exchanged: the provider refuses.
    let code = crate::oauth_helpers::param(&format!("http://x{callback3}"), "code").unwrap();
    let first_state = crate::oauth_helpers::param(&format!("http://x{callback}"), "state").unwrap();
    let stolen = format!("/auth/providers/{UP}/callback?code={code}&state={first_state}");
    let refused = hop(&pair.app, &stolen, Some(&cookie)).await;
    assert!(
        refused
            .location
            .starts_with("/sign-in?error=provider_error"),
        "{refused:?}"
    );
    assert_eq!(footprint(&pair.app).await.0, before.0 + 1);
    assert!(
        pair.app
            .audit_count("login.failed", Some("fed provider=up reason=expired"))
            .await
            >= 3
    );
}

async fn provider_answers_that_are_no_sign_in_land_on_the_sign_in_page(backend: Backend) {
    let pair = Pair::new(backend, "signup = true").await;
    let before = footprint(&pair.app).await;
    let return_to = format!("{PUBLIC}/reports");
    for (error, code) in [
        ("access_denied", "provider_denied"),
        ("server_error", "provider_error"),
        ("temporarily_unavailable", "provider_error"),
    ] {
        let (started, cookie) = start(&pair.app, UP, &return_to).await;
        let state = crate::oauth_helpers::param(&started.location, "state").unwrap();
        let path = format!(
            "/auth/providers/{UP}/callback?error={error}&error_description=%3Cb%3Eno%3C%2Fb%3E&state={state}"
        );
        let landed = hop(&pair.app, &path, Some(&cookie)).await;
        assert_eq!(landed.status, 302);
        assert_eq!(landed.param("error").as_deref(), Some(code), "{landed:?}");
        assert_eq!(landed.param("provider").as_deref(), Some(UP));
        assert_eq!(
            landed.param("return_to").as_deref(),
            Some(return_to.as_str())
        );
        // Nothing of the provider's text travels on.
        assert!(!landed.location.contains("no"), "{landed:?}");
        assert_eq!(landed.cookie("gatehouse_federation").as_deref(), Some(""));
    }
    // Neither a code nor an error; an unknown provider; a provider's URL with junk.
    let (_, cookie) = start(&pair.app, UP, "/account").await;
    let bare = hop(
        &pair.app,
        &format!("/auth/providers/{UP}/callback?code=%FF&state=%FF&error"),
        Some(&cookie),
    )
    .await;
    assert!(
        bare.location.starts_with("/sign-in?error=expired"),
        "{bare:?}"
    );
    for path in [
        "/auth/providers/nope/callback?code=x&state=y",
        "/auth/providers/nope/start",
        "/auth/providers/%3Cscript%3E/start",
        "/auth/providers/%FF/callback?code=%FF&state=%00",
        "/auth/providers/nope/start?return_to=%FF%FE&login_hint=%00",
    ] {
        let landed = hop(&pair.app, path, None).await;
        assert_eq!(landed.status, 302, "{path}");
        assert_eq!(
            landed.param("error").as_deref(),
            Some("provider_unknown"),
            "{path}"
        );
        // A made-up id is not echoed into the page's URL.
        assert_eq!(landed.param("provider"), None, "{path}");
    }
    // An unknown return_to is the account page.
    let (_, _) = start(&pair.app, UP, "https://evil.example/").await;
    let finish_nothing = pair
        .app
        .call(Method::POST, "/api/v1/auth/providers/finish", None, None)
        .await;
    finish_nothing.error(401, "TOKEN_INVALID");
    assert_eq!(footprint(&pair.app).await, before);
    // Operators see each return by provider and outcome; a made-up id is one series, `unknown`.
    let text = scrape(&pair.app).await;
    let count = |provider: &str, outcome: &str| {
        metric(
            &text,
            &format!(
                r#"gatehouse_federation_callbacks_total{{provider="{provider}",purpose="sign_in",outcome="{outcome}"}}"#
            ),
        )
    };
    assert_eq!(count(UP, "provider_denied"), Some(1.0), "{text}");
    assert_eq!(count(UP, "provider_error"), Some(2.0));
    assert_eq!(count(UP, "expired"), Some(1.0));
    // `nope`'s callback (the undecodable `%FF` is refused before it reaches the callback).
    assert_eq!(count("unknown", "provider_unknown"), Some(1.0));
    assert!(!text.contains("nope"));
}

async fn an_existing_address_is_never_linked_silently(backend: Backend) {
    let pair = Pair::new(backend.clone(), "signup = true").await;
    pair.app.create_user("ada@example.com", PASSWORD).await;
    let ada = upstream_person(&pair, "ADA@example.com").await;
    let before = footprint(&pair.app).await;
    let landed = through(&pair, &ada, "/account").await;
    assert_eq!(
        landed.param("error").as_deref(),
        Some("account_exists"),
        "{landed:?}"
    );
    assert_eq!(footprint(&pair.app).await, before);
    // Signup off: an unknown person gets no account.
    let closed = Pair::new(backend, "").await;
    let bob = upstream_person(&closed, "bob@example.com").await;
    let landed = through(&closed, &bob, "/account").await;
    assert_eq!(
        landed.param("error").as_deref(),
        Some("no_account"),
        "{landed:?}"
    );
    assert_eq!(footprint(&closed.app).await, (0, 0, 0));
}

/// An account made before its domain became the provider's cannot sign in with its password any
/// more (`SSO_REQUIRED`), nor reach `/account` to link: the domain's own provider links it at its
/// first sign-in, when the provider vouches for the address and the account proved it too. An
/// account whose address was never proved is not linked (it may be a squat of the address).
async fn the_domains_provider_links_a_proven_account_at_its_first_sign_in(backend: Backend) {
    let pair = Pair::new(backend, "domains = [\"acme.example\"]").await;
    let ada_id = pair.app.create_user("ada@acme.example", PASSWORD).await;
    pair.app.create_user("ben@acme.example", PASSWORD).await;
    pair.app
        .execute(
            "UPDATE users SET email_verified = FALSE WHERE email_normalized = 'ben@acme.example'",
        )
        .await;

    let ben = upstream_person(&pair, "ben@acme.example").await;
    let before = footprint(&pair.app).await;
    let landed = through(&pair, &ben, "/account").await;
    assert_eq!(
        landed.param("error").as_deref(),
        Some("account_exists"),
        "{landed:?}"
    );
    assert_eq!(footprint(&pair.app).await, before);

    let ada = upstream_person(&pair, "ada@acme.example").await;
    let landed = through(&pair, &ada, "/account").await;
    assert!(
        landed.location.starts_with("/sign-in?federated=1"),
        "{landed:?}"
    );
    let answer = finish(&pair.app, &landed).await;
    assert_eq!(answer.data(200)["user"]["id"], ada_id.to_string());
    assert_eq!(pair.app.audit_count("identity.linked", None).await, 1);
    let linked: i64 = pair
        .app
        .scalar("SELECT COUNT(*) FROM federated_identities WHERE provider_id = 'up'")
        .await;
    assert_eq!(linked, 1);
    // The next sign-in is the linked identity's.
    let again = through(&pair, &ada, "/account").await;
    let answer = finish(&pair.app, &again).await;
    assert_eq!(answer.data(200)["user"]["id"], ada_id.to_string());
    assert_eq!(pair.app.audit_count("identity.linked", None).await, 1);
}

async fn addresses_under_a_providers_domains_sign_in_there(backend: Backend) {
    let pair = Pair::with(
        backend,
        "signup = true\ndomains = [\"acme.example\"]",
        "",
        SettingsArgs {
            registration: Some("open".into()),
            ..SettingsArgs::default()
        },
    )
    .await;
    let listed = pair
        .app
        .call(Method::GET, "/api/v1/auth/providers", None, None)
        .await;
    assert_eq!(
        listed.data(200)["items"],
        json!([{"id": "up", "name": "Upstream Gatehouse", "available": true, "domains": ["acme.example"]}])
    );
    // An account made before the domain was the provider's, and an address with none: one answer.
    pair.app.create_user("ada@acme.example", PASSWORD).await;
    for email in [
        "ada@acme.example",
        "nobody@acme.example",
        "x@eu.ACME.example",
    ] {
        for password in [PASSWORD, "wrong password"] {
            let refused = pair.app.login(email, password).await;
            let error = refused.error(403, "SSO_REQUIRED");
            assert_eq!(error["details"], json!({"provider": "up"}), "{email}");
        }
    }
    let register = pair
        .app
        .post(
            "/api/v1/auth/register",
            json!({"email": "new@acme.example", "password": PASSWORD, "fullName": "New"}),
        )
        .await;
    assert_eq!(
        register.error(403, "SSO_REQUIRED")["details"]["provider"],
        "up"
    );
    // Other domains are not the provider's (a look-alike neither).
    pair.app.create_user("ada@notacme.example", PASSWORD).await;
    pair.app
        .login("ada@notacme.example", PASSWORD)
        .await
        .data(200);
}

async fn an_unreachable_provider_is_unavailable_not_slow(backend: Backend) {
    let closed = free_port();
    let down = format!(
        "[[provider]]\nid = \"down\"\nname = \"Down\"\nissuer = \"http://127.0.0.1:{closed}\"\n\
         client_id = \"x\"\nclient_secret = \"y\"\n"
    );
    let pair = Pair::with(backend, "signup = true", &down, SettingsArgs::default()).await;
    let listed = pair
        .app
        .call(Method::GET, "/api/v1/auth/providers", None, None)
        .await;
    let items = listed.data(200)["items"].as_array().unwrap().clone();
    let down_item = items.iter().find(|p| p["id"] == "down").unwrap();
    assert_eq!(down_item["available"], false);
    let before = footprint(&pair.app).await;
    let started = std::time::Instant::now();
    let landed = hop(&pair.app, "/auth/providers/down/start?return_to=/x", None).await;
    assert!(started.elapsed() < std::time::Duration::from_secs(3));
    assert_eq!(landed.status, 302);
    assert!(
        landed
            .location
            .starts_with("/sign-in?error=provider_unavailable&provider=down"),
        "{landed:?}"
    );
    assert!(landed.cookie("gatehouse_federation").is_none());
    // The other provider and the password are unaffected.
    wait_available(&pair.app, UP).await;
    let (zoe, _) = pair.app.logged_in_user("zoe@example.com").await;
    // Linking to it is 503, and begins nothing.
    let link = pair
        .app
        .call(
            Method::POST,
            "/api/v1/auth/identities/start",
            Some(&zoe),
            Some(json!({"providerId": "down", "password": PASSWORD})),
        )
        .await;
    link.error(503, "SERVICE_UNAVAILABLE");
    assert!(link.header("set-cookie").is_none());
    assert_eq!(
        crate::federation_flow::count(&pair.app, "federation_flows").await,
        0
    );
    assert_eq!(footprint(&pair.app).await.1, before.1);
}

async fn flows_and_handoffs_expire_and_are_purged(backend: Backend) {
    let pair = Pair::new(backend, "signup = true").await;
    let ada = upstream_person(&pair, "ada@example.com").await;
    let clock = pair.app.clock();

    // Ten minutes at the provider, no more.
    let (started, cookie) = start(&pair.app, UP, "/account").await;
    let callback = authorize_upstream(&pair, &started.location, &ada).await;
    clock.advance(std::time::Duration::from_secs(601));
    let late = hop(&pair.app, &callback, Some(&cookie)).await;
    assert!(
        late.location.starts_with("/sign-in?error=expired"),
        "{late:?}"
    );
    assert_eq!(footprint(&pair.app).await.0, 0);

    // A finished sign-in waits 60 s for the pages.
    let landed = through(&pair, &ada, "/account").await;
    assert!(
        landed.location.starts_with("/sign-in?federated=1"),
        "{landed:?}"
    );
    clock.advance(std::time::Duration::from_secs(61));
    finish(&pair.app, &landed).await.error(401, "TOKEN_INVALID");

    // Flows begun and never finished, handoffs never collected: housekeeping deletes them.
    start(&pair.app, UP, "/account").await;
    let _ = through(&pair, &ada, "/account").await;
    clock.advance(std::time::Duration::from_secs(601));
    let purged = pair.app.handle.housekeep().await.unwrap();
    assert!(purged.federation >= 2, "{purged:?}");
    assert_eq!(
        crate::federation_flow::count(&pair.app, "federation_flows").await,
        0
    );
    assert_eq!(
        crate::federation_flow::count(&pair.app, "federation_handoffs").await,
        0
    );
}

async fn a_flood_of_starts_does_not_fill_the_table(backend: Backend) {
    let pair = Pair::new(backend, "signup = true").await;
    // A burst of 30 from one address, then one every 2 s: the clock stands still, so that a slow
    // machine does not earn the next one meanwhile.
    pair.app.clock().freeze();
    for _ in 0..30 {
        start(&pair.app, UP, "/account").await;
    }
    let refused = hop(&pair.app, "/auth/providers/up/start", None).await;
    assert_eq!(refused.status, 302);
    assert_eq!(
        refused.param("error").as_deref(),
        Some("provider_unavailable"),
        "{refused:?}"
    );
    assert!(refused.cookie("gatehouse_federation").is_none());
    assert_eq!(
        crate::federation_flow::count(&pair.app, "federation_flows").await,
        30
    );
}
