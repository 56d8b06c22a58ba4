//! A change an operator makes to a client reaches every instance (docs/api.md §11), and an
//! instance that still holds the client as it was (for up to `CLIENT_CACHE_MS`) answers as if the
//! change had reached it, never with a 500 (issue 38, F12 and F4). Clients change without being
//! removed (issue 45): `clients update`, a secret rotated with an overlap, a PKCE policy.

use gatehouse::config::SettingsArgs;
use reqwest::Method;
use serde_json::{Value, json};

use crate::admin::admin;
use crate::guard::within;
use crate::helpers::{Backend, SPREAD_DEADLINE, TestApp, both_backends};
use crate::oauth_helpers::{
    add_client, authorization, authorize, code, exchange, pkce, provider_app, provider_pair, token,
};

both_backends!(
    a_client_removed_elsewhere_is_gone_here_too_and_never_a_500,
    a_scope_taken_from_a_client_is_issued_no_more,
    a_rotated_secret_overlaps_the_old_one_on_every_instance,
    the_cli_changes_a_client_and_every_instance_sees_it,
    a_client_let_off_pkce_needs_a_nonce_and_refuses_a_late_verifier,
);

/// The client's refresh at `app`: status and answer.
async fn refresh(
    app: &TestApp,
    client: &crate::oauth_helpers::Client,
    refresh: &str,
) -> (u16, Value) {
    let secret = client.secret.as_deref().unwrap();
    let (status, _, body) = token(
        app,
        Some((&client.id, secret)),
        &[("grant_type", "refresh_token"), ("refresh_token", refresh)],
    )
    .await;
    (status, body)
}

/// `gatehouse clients remove` while the instance holds the client in memory (its clock stopped, so
/// that its copy stays fresh): the authorization that would write a code for it is the refusal
/// of a client that is not registered (400), on this instance and on another, never a 500.
async fn a_client_removed_elsewhere_is_gone_here_too_and_never_a_500(backend: Backend) {
    let (app, twin) = provider_pair(backend).await;
    let client = add_client(&app, "Reports", &[]);
    let (person, _) = app.logged_in_user("ada@example.com").await;
    // Both instances read the client (and the consent is given).
    code(&app, &person, &client, "openid").await;
    let (person_there, _) = twin.logged_in_user("bob@example.com").await;
    code(&twin, &person_there, &client, "openid").await;
    app.clock().freeze();
    twin.clock().freeze();

    let removed = app.cli(&["clients", "remove", &client.id], None);
    assert!(removed.status.success(), "{removed:?}");
    for (app, person) in [(&app, &person), (&twin, &person_there)] {
        let (_, challenge) = pkce();
        let mut body = authorization(&client, "openid", &challenge);
        body["consent"] = json!(true);
        let answer = authorize(app, person, body).await;
        assert_eq!(
            answer.error(400, "VALIDATION_ERROR")["details"]["fields"]["clientId"],
            "is not a registered client",
            "{answer:?}"
        );
        // The page, which writes nothing, is no 5xx either.
        let page = crate::federation_flow::no_redirects()
            .get(app.url(&format!(
                "/oauth2/authorize?client_id={}&redirect_uri={}&response_type=code&scope=openid",
                client.id,
                crate::oauth_helpers::REDIRECT
            )))
            .send()
            .await
            .unwrap();
        assert!(page.status().as_u16() < 500, "{}", page.status());
    }
}

/// The operator takes `contacts:read` from a client: the refresh of a grant that had it issues
/// it no more, on either instance within §2's 2 s, to the end of the grant.
async fn a_scope_taken_from_a_client_is_issued_no_more(backend: Backend) {
    let (app, twin) = provider_pair(backend).await;
    let client = add_client(
        &app,
        "Reports",
        &["--scope", "openid offline_access contacts:read"],
    );
    let (person, _) = app.logged_in_user("ada@example.com").await;
    let (code, verifier) = code(
        &app,
        &person,
        &client,
        "openid offline_access contacts:read",
    )
    .await;
    let (status, tokens) = exchange(&app, &client, &code, &verifier).await;
    assert_eq!(status, 200, "{tokens}");
    assert_eq!(tokens["scope"], "openid offline_access contacts:read");
    let mut current = tokens["refresh_token"].as_str().unwrap().to_owned();
    // The twin has read the client.
    let (status, renewed) = refresh(&twin, &client, &current).await;
    assert_eq!(status, 200, "{renewed}");
    current = renewed["refresh_token"].as_str().unwrap().to_owned();

    let root = admin(&app, "root@example.com").await;
    app.call(
        Method::PATCH,
        &format!("/api/v1/admin/clients/{}", client.id),
        Some(&root.strong),
        Some(json!({"scopes": ["openid", "offline_access"]})),
    )
    .await
    .data(200);
    let current = std::sync::Mutex::new(current);
    within(SPREAD_DEADLINE, || async {
        let presented = current.lock().unwrap().clone();
        let (status, renewed) = refresh(&twin, &client, &presented).await;
        assert_eq!(status, 200, "{renewed}");
        *current.lock().unwrap() = renewed["refresh_token"].as_str().unwrap().to_owned();
        renewed["scope"] == "openid offline_access"
    })
    .await;
    // And on the instance that made the change, at once.
    let presented = current.lock().unwrap().clone();
    let (status, renewed) = refresh(&app, &client, &presented).await;
    assert_eq!(
        (status, &renewed["scope"]),
        (200, &json!("openid offline_access"))
    );
    let access = renewed["access_token"].as_str().unwrap();
    assert_eq!(
        crate::helpers::claims(access)["scope"],
        "openid offline_access"
    );
}

/// The client-credentials grant with `secret`: its status.
async fn grant_with(app: &TestApp, client: &crate::oauth_helpers::Client, secret: &str) -> u16 {
    let form = [
        ("grant_type", "client_credentials"),
        ("scope", "contacts:read"),
    ];
    token(app, Some((&client.id, secret)), &form).await.0
}

/// A secret rotated through the CLI: both work on every instance for the overlap, the old one not
/// after it; through the admin API with no overlap, the old one ends at once. Audited.
async fn a_rotated_secret_overlaps_the_old_one_on_every_instance(backend: Backend) {
    let (app, twin) = provider_pair(backend).await;
    let client = add_client(
        &app,
        "Reports",
        &["--grant", "client_credentials", "--scope", "contacts:read"],
    );
    let old = client.secret.clone().unwrap();
    assert_eq!(grant_with(&twin, &client, &old).await, 200);
    // Made before the clock moves: its second factor's codes follow the real time.
    let root = admin(&app, "root@example.com").await;

    let output = app.cli(
        &[
            "clients",
            "rotate-secret",
            &client.id,
            "--overlap",
            "1h",
            "--json",
        ],
        None,
    );
    assert!(output.status.success(), "{output:?}");
    let rotated: Value = serde_json::from_slice(&output.stdout).unwrap();
    let new = rotated["clientSecret"].as_str().unwrap().to_owned();
    assert_ne!(new, old);
    assert!(rotated["previousSecretExpiresAt"].is_string(), "{rotated}");
    let listed = String::from_utf8(app.cli(&["clients", "list", "--json"], None).stdout).unwrap();
    assert!(
        !listed.contains(&new) && !listed.contains(&old),
        "secrets are shown once"
    );
    within(SPREAD_DEADLINE, || async {
        grant_with(&twin, &client, &new).await == 200
    })
    .await;
    assert_eq!(grant_with(&twin, &client, &old).await, 200, "the overlap");
    assert_eq!(grant_with(&app, &client, &old).await, 200);
    // Past the overlap, only the new one.
    app.clock().advance(std::time::Duration::from_secs(3601));
    assert_eq!(grant_with(&app, &client, &old).await, 401);
    assert_eq!(grant_with(&app, &client, &new).await, 200);
    assert_eq!(app.audit_count("client.secret_rotated", None).await, 1);

    // The admin API, ending the old one now.
    let answer = app
        .call(
            Method::POST,
            &format!("/api/v1/admin/clients/{}/rotate-secret", client.id),
            Some(&root.strong),
            Some(json!({"overlapSeconds": 0})),
        )
        .await;
    let newest = answer.data(200)["clientSecret"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(grant_with(&app, &client, &new).await, 401);
    assert_eq!(grant_with(&app, &client, &newest).await, 200);
    for (body, field) in [
        (json!({"overlapSeconds": -1}), "overlapSeconds"),
        (json!({"overlapSeconds": 2_592_001}), "overlapSeconds"),
    ] {
        let refused = app
            .call(
                Method::POST,
                &format!("/api/v1/admin/clients/{}/rotate-secret", client.id),
                Some(&root.strong),
                Some(body),
            )
            .await;
        assert!(
            refused.error(400, "VALIDATION_ERROR")["details"]["fields"][field].is_string(),
            "{refused:?}"
        );
    }
    // A public client has none; an unknown one is 404.
    let public = add_client(&app, "Mobile", &["--public"]);
    let refused = app.cli(&["clients", "rotate-secret", &public.id], None);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("public client"));
    let unknown = uuid::Uuid::now_v7();
    app.call(
        Method::POST,
        &format!("/api/v1/admin/clients/{unknown}/rotate-secret"),
        Some(&root.strong),
        Some(json!({})),
    )
    .await
    .error(404, "NOT_FOUND");
}

/// `gatehouse clients update`: a moved application's redirect URI, and a client let off PKCE,
/// seen by another instance within 2 s; what it refuses names the flag.
async fn the_cli_changes_a_client_and_every_instance_sees_it(backend: Backend) {
    let (app, twin) = provider_pair(backend).await;
    let client = add_client(&app, "Reports", &["--first-party"]);
    let (person, _) = twin.logged_in_user("ada@example.com").await;
    code(&twin, &person, &client, "openid").await;
    let moved = "https://reports.example.test/oidc/callback";
    let output = app.cli(
        &[
            "clients",
            "update",
            &client.id,
            "--redirect-uri",
            moved,
            "--name",
            "Reports (new home)",
            "--pkce",
            "optional",
            "--json",
        ],
        None,
    );
    assert!(output.status.success(), "{output:?}");
    let changed: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(changed["redirectUris"], json!([moved]));
    assert_eq!(changed["pkceRequired"], false);
    assert_eq!(
        changed["scopes"],
        json!(["openid", "profile", "email", "offline_access"])
    );
    let listed = String::from_utf8(app.cli(&["clients", "list"], None).stdout).unwrap();
    assert!(listed.contains("pkce=optional"), "{listed}");
    assert_eq!(app.audit_count("client.changed", None).await, 1);
    // The twin sends codes to the new address within 2 s, and refuses the old one.
    let (_, challenge) = pkce();
    within(SPREAD_DEADLINE, || async {
        let mut body = authorization(&client, "openid", &challenge);
        body["redirectUri"] = json!(moved);
        authorize(&twin, &person, body).await.status == 200
    })
    .await;
    let old = authorize(&twin, &person, authorization(&client, "openid", &challenge)).await;
    old.error(400, "VALIDATION_ERROR");
    for (flags, named) in [
        (
            vec!["--redirect-uri", "http://reports.example.test/cb"],
            "--redirect-uri",
        ),
        (vec!["--scope", "orders:nope"], "--scope"),
        (vec!["--id-token-alg", "HS256"], "--id-token-alg"),
    ] {
        let mut args = vec!["clients", "update", client.id.as_str()];
        args.extend(flags.iter());
        let refused = app.cli(&args, None);
        assert!(!refused.status.success(), "{flags:?}");
        let said = String::from_utf8_lossy(&refused.stderr);
        assert!(said.contains(named), "{flags:?}: {said}");
    }
    let public = add_client(&app, "Mobile", &["--public"]);
    let refused = app.cli(
        &["clients", "update", &public.id, "--pkce", "optional"],
        None,
    );
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--pkce"));
    let nothing = app.cli(&["clients", "update", &client.id], None);
    assert!(!nothing.status.success());
}

/// A confidential client the operator let off PKCE: its authorization without a challenge must
/// be an OpenID one with a nonce, and its exchange takes no verifier (one would mean the
/// challenge was stripped); a client that must use PKCE is refused without it, as before.
async fn a_client_let_off_pkce_needs_a_nonce_and_refuses_a_late_verifier(backend: Backend) {
    let app = provider_app(backend, SettingsArgs::default()).await;
    let legacy = add_client(&app, "Legacy", &["--first-party", "--pkce", "optional"]);
    let strict = add_client(&app, "Strict", &["--first-party"]);
    let (person, _) = app.logged_in_user("ada@example.com").await;
    let without = |client: &crate::oauth_helpers::Client, nonce: Option<&str>| {
        let mut body = authorization(client, "openid email", "");
        let object = body.as_object_mut().unwrap();
        object.remove("codeChallenge");
        object.remove("codeChallengeMethod");
        object.remove("nonce");
        if let Some(nonce) = nonce {
            object.insert("nonce".into(), json!(nonce));
        }
        body
    };
    let error = |answer: crate::helpers::Answer| {
        let to = answer.data(200)["redirectTo"].as_str().unwrap().to_owned();
        crate::oauth_helpers::param(&to, "error")
    };
    let refused = authorize(&app, &person, without(&strict, Some("n-1"))).await;
    assert_eq!(error(refused).as_deref(), Some("invalid_request"));
    let refused = authorize(&app, &person, without(&legacy, None)).await;
    assert_eq!(error(refused).as_deref(), Some("invalid_request"));

    let granted = authorize(&app, &person, without(&legacy, Some("n-1"))).await;
    let to = granted.data(200)["redirectTo"].as_str().unwrap().to_owned();
    let code = crate::oauth_helpers::param(&to, "code").expect("a code");
    let secret = legacy.secret.as_deref().unwrap();
    let late = "a".repeat(43);
    let with_verifier = [
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("redirect_uri", crate::oauth_helpers::REDIRECT),
        ("code_verifier", late.as_str()),
    ];
    let (status, _, answer) = token(&app, Some((&legacy.id, secret)), &with_verifier).await;
    assert_eq!((status, &answer["error"]), (400, &json!("invalid_grant")));
    // That attempt spent the code (a replay ends what it gave): a new one, exchanged as is.
    let granted = authorize(&app, &person, without(&legacy, Some("n-2"))).await;
    let to = granted.data(200)["redirectTo"].as_str().unwrap().to_owned();
    let code = crate::oauth_helpers::param(&to, "code").expect("a code");
    let (status, _, answer) = token(
        &app,
        Some((&legacy.id, secret)),
        &[
            ("grant_type", "authorization_code"),
            ("code", code.as_str()),
            ("redirect_uri", crate::oauth_helpers::REDIRECT),
        ],
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    let id_token = crate::helpers::claims(answer["id_token"].as_str().unwrap());
    assert_eq!(id_token["nonce"], "n-2");
}
