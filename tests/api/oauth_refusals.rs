//! Every refusal of the OpenID provider's flows (docs/api.md §11): what is never redirected to,
//! what goes back to the client as an error, and what the token endpoint and userinfo refuse.

use gatehouse::config::SettingsArgs;
use reqwest::Method;
use serde_json::json;

use crate::helpers::{Backend, both_backends, spawn_app};
use crate::oauth_helpers::{
    REDIRECT, add_client, authorization, authorize, code, exchange, param, pkce, provider_app,
    token, userinfo,
};

both_backends!(
    unknown_clients_and_redirect_uris_are_never_redirected_to,
    faulty_requests_go_back_to_the_client,
    codes_are_single_use_bound_and_short_lived,
    the_token_endpoint_refuses_clients_and_grants_not_theirs,
    userinfo_refuses_as_rfc_6750_says,
    the_provider_is_absent_when_off,
);

async fn unknown_clients_and_redirect_uris_are_never_redirected_to(backend: Backend) {
    let app = provider_app(backend, SettingsArgs::default()).await;
    let client = add_client(&app, "Known", &[]);
    let (person, _) = app.logged_in_user("ada@example.com").await;
    let (_, challenge) = pkce();

    let mut unknown = authorization(&client, "openid", &challenge);
    unknown["clientId"] = json!("00000000-0000-7000-8000-000000000000");
    authorize(&app, &person, unknown)
        .await
        .error(400, "VALIDATION_ERROR");
    let mut malformed = authorization(&client, "openid", &challenge);
    malformed["clientId"] = json!("not-a-uuid");
    authorize(&app, &person, malformed)
        .await
        .error(400, "VALIDATION_ERROR");
    let mut elsewhere = authorization(&client, "openid", &challenge);
    elsewhere["redirectUri"] = json!("https://evil.example.test/callback");
    authorize(&app, &person, elsewhere)
        .await
        .error(400, "VALIDATION_ERROR");

    // The page shows an error and sends the browser nowhere.
    let no_redirects = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    for (id, uri) in [
        (client.id.as_str(), "https://evil.example.test/callback"),
        ("00000000-0000-7000-8000-000000000000", REDIRECT),
        (client.id.as_str(), ""),
    ] {
        let page = no_redirects
            .get(app.url("/oauth2/authorize"))
            .query(&[
                ("response_type", "code"),
                ("client_id", id),
                ("redirect_uri", uri),
                ("scope", "openid"),
                ("code_challenge", challenge.as_str()),
                ("code_challenge_method", "S256"),
            ])
            .send()
            .await
            .unwrap();
        assert_eq!(page.status(), 400, "{id} {uri}");
        assert!(page.headers().get("location").is_none());
        assert!(page.text().await.unwrap().contains("authorize-error"));
    }
}

async fn faulty_requests_go_back_to_the_client(backend: Backend) {
    let app = provider_app(backend, SettingsArgs::default()).await;
    let client = add_client(&app, "Known", &["--first-party"]);
    let (person, _) = app.logged_in_user("bo@example.com").await;
    let (_, challenge) = pkce();
    let back = |body: serde_json::Value| {
        let app = &app;
        let person = person.clone();
        async move {
            let answer = authorize(app, &person, body).await;
            let to = answer.data(200)["redirectTo"].as_str().unwrap().to_owned();
            assert!(to.starts_with(REDIRECT), "{to}");
            assert_eq!(param(&to, "state").as_deref(), Some("st-123"));
            assert!(param(&to, "iss").is_some());
            assert!(param(&to, "code").is_none());
            (
                param(&to, "error").unwrap(),
                param(&to, "error_description").unwrap(),
            )
        }
    };
    let mut plain = authorization(&client, "openid", &challenge);
    plain["codeChallengeMethod"] = json!("plain");
    assert_eq!(back(plain).await.0, "invalid_request");
    let mut missing = authorization(&client, "openid", &challenge);
    missing.as_object_mut().unwrap().remove("codeChallenge");
    assert_eq!(back(missing).await.0, "invalid_request");
    let not_registered = authorization(&client, "openid contacts:write", &challenge);
    assert_eq!(back(not_registered).await.0, "invalid_scope");
    let unknown = authorization(&client, "openid admin", &challenge);
    assert_eq!(back(unknown).await.0, "invalid_scope");
    let mut resource = authorization(&client, "openid", &challenge);
    resource["resource"] = json!("https://other-api.example.test");
    assert_eq!(back(resource).await.0, "invalid_target");

    // The page sends the browser back at once, with no page.
    let no_redirects = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let page = no_redirects
        .get(app.url("/oauth2/authorize"))
        .query(&[
            ("response_type", "code"),
            ("client_id", client.id.as_str()),
            ("redirect_uri", REDIRECT),
            ("scope", "openid"),
            ("state", "s2"),
        ])
        .send()
        .await
        .unwrap();
    assert!(page.status().is_redirection());
    let to = page.headers()["location"].to_str().unwrap().to_owned();
    assert_eq!(param(&to, "error").as_deref(), Some("invalid_request"));
    assert_eq!(param(&to, "state").as_deref(), Some("s2"));
}

async fn codes_are_single_use_bound_and_short_lived(backend: Backend) {
    let app = provider_app(backend, SettingsArgs::default()).await;
    let client = add_client(&app, "One", &["--first-party"]);
    let other = add_client(&app, "Two", &["--first-party"]);
    let (person, _) = app.logged_in_user("cy@example.com").await;
    let scope = "openid offline_access";

    // A wrong verifier, another client, another redirect URI: refused.
    let (code1, verifier) = code(&app, &person, &client, scope).await;
    let (status, refused) = exchange(&app, &client, &code1, &pkce().0).await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (400, Some("invalid_grant"))
    );
    let (code2, verifier2) = code(&app, &person, &client, scope).await;
    let (status, refused) = exchange(&app, &other, &code2, &verifier2).await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (400, Some("invalid_grant"))
    );
    let (code3, verifier3) = code(&app, &person, &client, scope).await;
    let secret = client.secret.clone().unwrap();
    let (status, _, refused) = token(
        &app,
        Some((&client.id, &secret)),
        &[
            ("grant_type", "authorization_code"),
            ("code", &code3),
            ("redirect_uri", "https://app.example.test/other"),
            ("code_verifier", &verifier3),
        ],
    )
    .await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (400, Some("invalid_grant"))
    );
    let _ = verifier;

    // An expired code.
    let (code4, verifier4) = code(&app, &person, &client, scope).await;
    app.execute("UPDATE oauth_codes SET expires_at = 0").await;
    let (status, refused) = exchange(&app, &client, &code4, &verifier4).await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (400, Some("invalid_grant"))
    );

    // A code used twice: refused, and what its first use gave is revoked.
    let (code5, verifier5) = code(&app, &person, &client, scope).await;
    let (status, tokens) = exchange(&app, &client, &code5, &verifier5).await;
    assert_eq!(status, 200, "{tokens}");
    let access = tokens["access_token"].as_str().unwrap();
    assert_eq!(userinfo(&app, access).await.0, 200);
    let (status, refused) = exchange(&app, &client, &code5, &verifier5).await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (400, Some("invalid_grant"))
    );
    assert_eq!(
        userinfo(&app, access).await.0,
        401,
        "the first use's tokens are revoked"
    );
    let (status, _, refused) = token(
        &app,
        Some((&client.id, &secret)),
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", tokens["refresh_token"].as_str().unwrap()),
        ],
    )
    .await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (400, Some("invalid_grant"))
    );
}

async fn the_token_endpoint_refuses_clients_and_grants_not_theirs(backend: Backend) {
    let app = provider_app(backend, SettingsArgs::default()).await;
    let client = add_client(&app, "One", &["--first-party"]);
    let other = add_client(&app, "Two", &["--first-party"]);
    let public = add_client(&app, "Public", &["--public", "--first-party"]);
    let (person, _) = app.logged_in_user("di@example.com").await;
    let secret = client.secret.clone().unwrap();

    // A wrong secret: 401 invalid_client with a Basic challenge.
    let (status, headers, refused) = token(
        &app,
        Some((&client.id, "wrong")),
        &[("grant_type", "client_credentials")],
    )
    .await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (401, Some("invalid_client"))
    );
    assert!(
        headers["www-authenticate"]
            .to_str()
            .unwrap()
            .starts_with("Basic")
    );
    // A confidential client naming itself without its secret is no client.
    let (status, _, refused) = token(
        &app,
        None,
        &[
            ("grant_type", "authorization_code"),
            ("client_id", &client.id),
            ("code", "x"),
        ],
    )
    .await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (401, Some("invalid_client"))
    );
    // A public client cannot have a grant that needs a secret.
    let (status, _, refused) = token(
        &app,
        None,
        &[
            ("grant_type", "client_credentials"),
            ("client_id", &public.id),
        ],
    )
    .await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (400, Some("unauthorized_client"))
    );
    // Nor a confidential one a grant it was not given.
    let (status, _, refused) = token(
        &app,
        Some((&client.id, &secret)),
        &[("grant_type", "client_credentials")],
    )
    .await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (400, Some("unauthorized_client"))
    );
    let (status, _, refused) = token(
        &app,
        Some((&client.id, &secret)),
        &[("grant_type", "password")],
    )
    .await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (400, Some("unsupported_grant_type"))
    );
    let (status, _, refused) = token(&app, Some((&client.id, &secret)), &[]).await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (400, Some("invalid_request"))
    );

    // A refresh token works for its own client only, and stays good for it.
    let (code, verifier) = code(&app, &person, &client, "openid offline_access").await;
    let (status, tokens) = exchange(&app, &client, &code, &verifier).await;
    assert_eq!(status, 200);
    let refresh = tokens["refresh_token"].as_str().unwrap();
    let (status, _, refused) = token(
        &app,
        Some((&other.id, other.secret.as_deref().unwrap())),
        &[("grant_type", "refresh_token"), ("refresh_token", refresh)],
    )
    .await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (400, Some("invalid_grant"))
    );
    let (status, _, renewed) = token(
        &app,
        Some((&client.id, &secret)),
        &[("grant_type", "refresh_token"), ("refresh_token", refresh)],
    )
    .await;
    assert_eq!(status, 200, "{renewed}");
    // A person's own refresh token is no client's.
    let (_, own_refresh) = app.logged_in_user("ed@example.com").await;
    let (status, _, refused) = token(
        &app,
        Some((&client.id, &secret)),
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", &own_refresh),
        ],
    )
    .await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (400, Some("invalid_grant"))
    );
}

async fn userinfo_refuses_as_rfc_6750_says(backend: Backend) {
    let app = provider_app(backend, SettingsArgs::default()).await;
    let client = add_client(&app, "One", &["--first-party"]);
    let (person, _) = app.logged_in_user("fa@example.com").await;
    let (status, challenge, _) = userinfo(&app, "garbage").await;
    assert_eq!(status, 401);
    assert!(challenge.unwrap().contains(r#"error="invalid_token""#));
    // The person's own token carries no openid scope.
    let (status, challenge, _) = userinfo(&app, &person).await;
    assert_eq!(status, 403);
    assert!(challenge.unwrap().contains(r#"error="insufficient_scope""#));
    let (code, verifier) = code(&app, &person, &client, "email").await;
    let (_, tokens) = exchange(&app, &client, &code, &verifier).await;
    assert!(tokens.get("id_token").is_none(), "no openid: no ID token");
    let (status, _, _) = userinfo(&app, tokens["access_token"].as_str().unwrap()).await;
    assert_eq!(status, 403);
    let bare = app
        .client
        .get(app.url("/oauth2/userinfo"))
        .send()
        .await
        .unwrap();
    assert_eq!(bare.status(), 401);
    assert!(
        bare.headers()["www-authenticate"]
            .to_str()
            .unwrap()
            .starts_with("Bearer")
    );
}

async fn the_provider_is_absent_when_off(backend: Backend) {
    let app = spawn_app(backend).await;
    let (person, _) = app.logged_in_user("ga@example.com").await;
    let answer = app
        .call(
            Method::POST,
            "/api/v1/oauth2/authorize",
            Some(&person),
            Some(json!({
                "clientId": "x", "redirectUri": REDIRECT, "scope": "openid"
            })),
        )
        .await;
    answer.error(404, "NOT_FOUND");
    for path in ["/oauth2/authorize?client_id=x", "/oauth2/userinfo"] {
        let got = app.client.get(app.url(path)).send().await.unwrap();
        assert_eq!(got.status(), 404, "{path}");
    }
    let posted = app
        .client
        .post(app.url("/oauth2/token"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("grant_type=client_credentials")
        .send()
        .await
        .unwrap();
    assert_eq!(posted.status(), 404);
}
