//! The OpenID provider's authorization code flow (docs/api.md §11) as a relying party and the
//! person's browser make it: consent, the code exchange, the ID token checked against the JWK
//! Set, userinfo, refresh with its scope narrowed, and the other grants.

use base64::Engine as _;
use gatehouse::config::SettingsArgs;
use reqwest::Method;
use serde_json::json;
use sha2::Digest as _;

use crate::helpers::{Backend, both_backends, claims, jwt_header};
use crate::oauth_helpers::{
    ISSUER, REDIRECT, add_client, authorization, authorize, exchange, param, pkce, provider_app,
    token, userinfo, verified,
};

both_backends!(
    a_third_party_client_signs_a_person_in_with_consent,
    a_first_party_client_skips_consent_and_a_public_client_has_no_secret,
    prompt_and_max_age_are_honoured,
    client_credentials_give_a_client_a_token_of_its_own,
);

/// The left half of the token's SHA-256 (RS256, ES256) or SHA-512 (EdDSA), base64url.
fn at_hash(alg: &str, token: &str) -> String {
    let digest: Vec<u8> = if alg == "EdDSA" {
        sha2::Sha512::digest(token.as_bytes()).to_vec()
    } else {
        sha2::Sha256::digest(token.as_bytes()).to_vec()
    };
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&digest[..digest.len() / 2])
}

async fn a_third_party_client_signs_a_person_in_with_consent(backend: Backend) {
    let app = provider_app(backend, SettingsArgs::default()).await;
    let client = add_client(
        &app,
        "Acme Reports",
        &[
            "--scope",
            "openid",
            "--scope",
            "profile",
            "--scope",
            "email",
            "--scope",
            "offline_access",
            "--scope",
            "roles",
        ],
    );
    let (person, _) = app.logged_in_user("ada@example.com").await;
    let user_id = claims(&person)["sub"].as_str().unwrap().to_owned();

    // Consent is asked, with the client's name and the scopes.
    let scope = "openid profile email offline_access";
    let (verifier, challenge) = pkce();
    let asked = authorize(&app, &person, authorization(&client, scope, &challenge)).await;
    let asked = asked.data(200);
    assert_eq!(asked["consentRequired"], true);
    assert_eq!(asked["client"]["name"], "Acme Reports");
    assert_eq!(asked["client"]["clientId"], client.id.as_str());
    assert_eq!(asked["client"]["firstParty"], false);
    assert_eq!(
        asked["scopes"],
        json!(["openid", "profile", "email", "offline_access"])
    );

    let mut body = authorization(&client, scope, &challenge);
    body["consent"] = json!(true);
    let given = authorize(&app, &person, body).await;
    let to = given.data(200)["redirectTo"].as_str().unwrap().to_owned();
    assert!(to.starts_with(&format!("{REDIRECT}?")), "{to}");
    assert_eq!(param(&to, "state").as_deref(), Some("st-123"));
    assert_eq!(param(&to, "iss").as_deref(), Some(ISSUER));
    let code = param(&to, "code").unwrap();
    assert!(code.len() >= 22, "at least 128 bits: {code}");

    let (status, tokens) = exchange(&app, &client, &code, &verifier).await;
    assert_eq!(status, 200, "{tokens}");
    assert_eq!(tokens["token_type"], "Bearer");
    assert_eq!(tokens["scope"], scope);
    assert!(tokens["expires_in"].as_i64().unwrap() > 0);
    let access = tokens["access_token"].as_str().unwrap();
    let refresh = tokens["refresh_token"]
        .as_str()
        .expect("offline_access: a refresh token");
    let id_token = tokens["id_token"].as_str().expect("openid: an ID token");

    // The access token: §2's claims, with the client and its scopes.
    let at = claims(access);
    assert_eq!(jwt_header(access)["typ"], "at+jwt");
    assert_eq!(at["sub"], user_id.as_str());
    assert_eq!(at["client_id"], client.id.as_str());
    assert_eq!(at["scope"], scope);
    assert_eq!(at["aud"], "gatehouse-api");
    assert_ne!(
        at["sid"],
        claims(&person)["sid"],
        "an authorization is a session of its own"
    );

    // The ID token verifies against the JWK Set.
    let header = jwt_header(id_token);
    assert_eq!(header["typ"], "JWT");
    let id = verified(&app, id_token, &client.id).await;
    assert_eq!(id["iss"], ISSUER);
    assert_eq!(id["sub"], user_id.as_str());
    assert_eq!(id["aud"], client.id.as_str());
    assert_eq!(id["azp"], client.id.as_str());
    assert_eq!(id["nonce"], "n-456");
    assert_eq!(id["sid"], at["sid"]);
    assert_eq!(id["amr"], json!(["pwd"]));
    assert_eq!(id["email"], "ada@example.com");
    assert!(id["email_verified"].is_boolean());
    assert!(id["name"].is_string());
    assert!(id["updated_at"].is_i64());
    assert!(id.get("roles").is_none(), "roles was not granted");
    let (iat, exp) = (id["iat"].as_i64().unwrap(), id["exp"].as_i64().unwrap());
    assert!(exp > iat && exp - iat <= 3600);
    assert!(id["auth_time"].as_i64().unwrap() <= iat);
    assert_eq!(
        id["at_hash"],
        at_hash(header["alg"].as_str().unwrap(), access)
    );

    // Userinfo: the same claims.
    let (status, _, info) = userinfo(&app, access).await;
    assert_eq!(status, 200, "{info}");
    assert_eq!(info["sub"], user_id.as_str());
    assert_eq!(info["email"], "ada@example.com");
    assert_eq!(info["name"], id["name"]);

    // Refresh: rotation, and the scope narrowed, never widened.
    let secret = client.secret.as_deref().unwrap();
    let basic = Some((client.id.as_str(), secret));
    let (status, _, wider) = token(
        &app,
        basic,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh),
            ("scope", "openid roles"),
        ],
    )
    .await;
    assert_eq!(
        (status, wider["error"].as_str()),
        (400, Some("invalid_scope"))
    );
    let (status, _, narrowed) = token(
        &app,
        basic,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh),
            ("scope", "openid email"),
        ],
    )
    .await;
    assert_eq!(status, 200, "{narrowed}");
    assert_eq!(narrowed["scope"], "openid email");
    assert_eq!(
        claims(narrowed["access_token"].as_str().unwrap())["scope"],
        "openid email"
    );
    let next = narrowed["refresh_token"].as_str().unwrap();
    assert_ne!(next, refresh);
    let (status, _, again) = token(
        &app,
        basic,
        &[("grant_type", "refresh_token"), ("refresh_token", next)],
    )
    .await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(
        again["scope"], scope,
        "the authorization's scope, not the last refresh's"
    );

    // The client's refresh token is nothing at the person's own refresh.
    let own = app
        .post(
            "/api/v1/auth/refresh",
            json!({ "refreshToken": again["refresh_token"] }),
        )
        .await;
    own.error(401, "REFRESH_TOKEN_INVALID");
    // Nor does a client's access token authorize another client.
    let (_, challenge) = pkce();
    let refused = authorize(&app, access, authorization(&client, "openid", &challenge)).await;
    refused.error(403, "INSUFFICIENT_SCOPE");

    // The consent is remembered; a new scope asks again, for it alone.
    let (_, challenge) = pkce();
    let remembered = authorize(&app, &person, authorization(&client, scope, &challenge)).await;
    assert!(remembered.data(200)["redirectTo"].is_string());
    let more = authorize(
        &app,
        &person,
        authorization(&client, "openid roles", &challenge),
    )
    .await;
    assert_eq!(more.data(200)["scopes"], json!(["roles"]));
    // prompt=consent asks for everything again; a refusal goes back as access_denied.
    let mut body = authorization(&client, "openid", &challenge);
    body["prompt"] = json!("consent");
    assert_eq!(
        authorize(&app, &person, body.clone()).await.data(200)["scopes"],
        json!(["openid"])
    );
    body["consent"] = json!(false);
    let denied = authorize(&app, &person, body).await;
    let to = denied.data(200)["redirectTo"].as_str().unwrap().to_owned();
    assert_eq!(param(&to, "error").as_deref(), Some("access_denied"));
    assert_eq!(param(&to, "state").as_deref(), Some("st-123"));
}

async fn a_first_party_client_skips_consent_and_a_public_client_has_no_secret(backend: Backend) {
    let app = provider_app(backend, SettingsArgs::default()).await;
    let spa = add_client(&app, "Team SPA", &["--public", "--first-party"]);
    assert!(spa.secret.is_none(), "a public client has no secret");
    let (person, _) = app.logged_in_user("bo@example.com").await;
    let (verifier, challenge) = pkce();
    let answer = authorize(
        &app,
        &person,
        authorization(&spa, "openid email", &challenge),
    )
    .await;
    let to = answer.data(200)["redirectTo"].as_str().unwrap().to_owned();
    let code = param(&to, "code").expect("no consent asked: a code");

    // No secret: the client_id alone.
    let (status, _, tokens) = token(
        &app,
        None,
        &[
            ("grant_type", "authorization_code"),
            ("client_id", &spa.id),
            ("code", &code),
            ("redirect_uri", REDIRECT),
            ("code_verifier", &verifier),
        ],
    )
    .await;
    assert_eq!(status, 200, "{tokens}");
    assert!(
        tokens.get("refresh_token").is_none(),
        "no offline_access: no refresh token"
    );
    assert!(tokens["id_token"].is_string());
    let id = verified(&app, tokens["id_token"].as_str().unwrap(), &spa.id).await;
    assert!(id.get("name").is_none(), "profile was not granted");
    assert_eq!(id["email"], "bo@example.com");
}

async fn prompt_and_max_age_are_honoured(backend: Backend) {
    let app = provider_app(backend, SettingsArgs::default()).await;
    let third = add_client(&app, "Third", &[]);
    let first = add_client(&app, "First", &["--first-party"]);
    let (person, _) = app.logged_in_user("cy@example.com").await;
    let (_, challenge) = pkce();

    // prompt=none without consent: consent_required, at the redirect URI.
    let mut body = authorization(&third, "openid", &challenge);
    body["prompt"] = json!("none");
    let answer = authorize(&app, &person, body).await;
    let to = answer.data(200)["redirectTo"].as_str().unwrap().to_owned();
    assert_eq!(param(&to, "error").as_deref(), Some("consent_required"));
    assert_eq!(param(&to, "iss").as_deref(), Some(ISSUER));

    // prompt=login and an exceeded max_age ask for the password again.
    let mut body = authorization(&first, "openid", &challenge);
    body["prompt"] = json!("login");
    assert_eq!(
        authorize(&app, &person, body).await.data(200)["loginRequired"],
        true
    );
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    let mut body = authorization(&first, "openid", &challenge);
    body["maxAge"] = json!(0);
    assert_eq!(
        authorize(&app, &person, body).await.data(200)["loginRequired"],
        true
    );
    let mut body = authorization(&first, "openid", &challenge);
    body["maxAge"] = json!(3600);
    assert!(authorize(&app, &person, body).await.data(200)["redirectTo"].is_string());

    // The page: prompt=none without a session goes back with login_required, never a page.
    let no_redirects = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let page = |cookie: Option<String>| {
        let mut request = no_redirects.get(app.url("/oauth2/authorize")).query(&[
            ("response_type", "code"),
            ("client_id", first.id.as_str()),
            ("redirect_uri", REDIRECT),
            ("scope", "openid"),
            ("state", "s1"),
            ("code_challenge", challenge.as_str()),
            ("code_challenge_method", "S256"),
            ("prompt", "none"),
        ]);
        if let Some(cookie) = cookie {
            request = request.header("cookie", cookie);
        }
        request.send()
    };
    let silent = page(None).await.unwrap();
    assert!(silent.status().is_redirection(), "{}", silent.status());
    let location = silent.headers()["location"].to_str().unwrap().to_owned();
    assert_eq!(param(&location, "error").as_deref(), Some("login_required"));
    assert_eq!(param(&location, "state").as_deref(), Some("s1"));

    // With the browser's session cookie (§6b), the first-party client gets its code silently.
    let set = app
        .client
        .post(app.url("/api/v1/auth/browser-session"))
        .bearer_auth(&person)
        .send()
        .await
        .unwrap();
    let cookie = set.headers()["set-cookie"].to_str().unwrap();
    let cookie = cookie.split(';').next().unwrap().to_owned();
    let silent = page(Some(cookie)).await.unwrap();
    let location = silent.headers()["location"].to_str().unwrap().to_owned();
    assert!(param(&location, "code").is_some(), "{location}");
}

async fn client_credentials_give_a_client_a_token_of_its_own(backend: Backend) {
    let app = provider_app(backend, SettingsArgs::default()).await;
    let service = add_client(
        &app,
        "Nightly export",
        &["--grant", "client_credentials", "--scope", "contacts:read"],
    );
    let secret = service.secret.as_deref().unwrap();
    // client_secret_post this time.
    let (status, _, tokens) = token(
        &app,
        None,
        &[
            ("grant_type", "client_credentials"),
            ("client_id", &service.id),
            ("client_secret", secret),
        ],
    )
    .await;
    assert_eq!(status, 200, "{tokens}");
    assert!(tokens.get("id_token").is_none() && tokens.get("refresh_token").is_none());
    assert_eq!(tokens["scope"], "contacts:read");
    let access = tokens["access_token"].as_str().unwrap();
    let at = claims(access);
    assert_eq!(at["sub"], service.id.as_str());
    assert_eq!(at["client_id"], service.id.as_str());
    // It names no person: a person's calls refuse it, userinfo has nothing to say.
    app.call(Method::GET, "/api/v1/auth/me", Some(access), None)
        .await
        .error(401, "TOKEN_INVALID");
    let (status, challenge, _) = userinfo(&app, access).await;
    assert_eq!(status, 403);
    assert!(challenge.unwrap().contains("insufficient_scope"));
    // A person's scope cannot be asked for.
    let (status, _, refused) = token(
        &app,
        Some((&service.id, secret)),
        &[("grant_type", "client_credentials"), ("scope", "openid")],
    )
    .await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (400, Some("invalid_scope"))
    );
}
