use jsonwebtoken::{DecodingKey, Validation, jwk::JwkSet};
use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{Backend, both_backends, claims, spawn_app};

both_backends!(
    access_tokens_verify_offline_with_the_jwk_set,
    an_expired_access_token_asks_for_a_refresh,
    a_token_verified_once_still_expires_and_is_still_revoked,
    forged_and_foreign_tokens_are_invalid,
    a_missing_or_non_bearer_credential_is_unauthenticated,
    token_kinds_are_never_interchangeable,
);

async fn access_tokens_verify_offline_with_the_jwk_set(backend: Backend) {
    let app = spawn_app(backend).await;
    let (access, _) = app.logged_in_user("ivy@example.com").await;
    let response = app
        .client
        .get(app.url("/.well-known/jwks.json"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let set: JwkSet = response.json().await.unwrap();
    let header = jsonwebtoken::decode_header(&access).unwrap();
    let jwk = set
        .find(header.kid.as_deref().unwrap())
        .expect("the signing key is published");
    let mut validation = Validation::new(jsonwebtoken::Algorithm::EdDSA);
    validation.set_audience(&["gatehouse-api"]);
    validation.set_issuer(&["gatehouse"]);
    let data =
        jsonwebtoken::decode::<Value>(&access, &DecodingKey::from_jwk(jwk).unwrap(), &validation)
            .unwrap();
    assert_eq!(data.claims["amr"], json!(["pwd"]));
}

/// Moves the app's clock to `offset_ms` past the token's `exp` (plus what real time adds).
fn move_past_exp(app: &crate::helpers::TestApp, token: &str, offset_ms: i64) {
    let exp = claims(token)["exp"].as_i64().unwrap();
    let by = exp * 1000 + offset_ms - app.clock().now_ms();
    app.clock()
        .advance(std::time::Duration::from_millis(by.max(0) as u64));
}

async fn an_expired_access_token_asks_for_a_refresh(backend: Backend) {
    let app = spawn_app(backend).await;
    let (access, _) = app.logged_in_user("jack@example.com").await;
    // The leeway is at most 5 s, to the millisecond: 4.5 s past `exp` still passes ...
    move_past_exp(&app, &access, 4_500);
    app.get("/api/v1/crm/contacts", &access).await.data(200);
    // ... 5.5 s past it does not (a whole-second comparison allowed up to 5.999 s).
    move_past_exp(&app, &access, 5_500);
    let answer = app.get("/api/v1/crm/contacts", &access).await;
    answer.error(401, "TOKEN_EXPIRED");
    assert!(
        answer
            .header("www-authenticate")
            .unwrap()
            .starts_with("Bearer error=\"invalid_token\"")
    );
}

/// Verified tokens are remembered (no second signature check), but never past their `exp` and
/// never past their session's end.
async fn a_token_verified_once_still_expires_and_is_still_revoked(backend: Backend) {
    let app = spawn_app(backend).await;
    let (access, _) = app.logged_in_user("kim@example.com").await;
    let (other, _) = app.logged_in_user("lou@example.com").await;
    app.get("/api/v1/auth/me", &access).await.data(200);
    app.get("/api/v1/auth/me", &other).await.data(200);
    app.call(
        reqwest::Method::POST,
        "/api/v1/auth/logout",
        Some(&other),
        None,
    )
    .await
    .data(200);
    app.get("/api/v1/auth/me", &other)
        .await
        .error(401, "TOKEN_INVALID");
    // A day and the leeway later, the remembered token has expired.
    move_past_exp(&app, &access, 5_001);
    app.get("/api/v1/auth/me", &access)
        .await
        .error(401, "TOKEN_EXPIRED");
}

async fn forged_and_foreign_tokens_are_invalid(backend: Backend) {
    let app = spawn_app(backend.clone()).await;
    let other = spawn_app(backend).await;
    let (access, _) = app.logged_in_user("kim@example.com").await;
    let (foreign, _) = other.logged_in_user("kim@example.com").await;

    let mut parts: Vec<String> = access.split('.').map(str::to_owned).collect();
    // A middle character: the last one of a base64url signature carries only two bits.
    let mut signature: Vec<char> = parts[2].chars().collect();
    signature[20] = if signature[20] == 'A' { 'B' } else { 'A' };
    let tampered_sig = format!(
        "{}.{}.{}",
        parts[0],
        parts[1],
        signature.into_iter().collect::<String>()
    );
    parts[1] = parts[1].chars().rev().collect();
    let tampered_claims = parts.join(".");
    let alg_none = {
        use base64::Engine as _;
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let header = b64.encode(br#"{"alg":"none","typ":"at+jwt"}"#);
        format!("{header}.{}.", access.split('.').nth(1).unwrap())
    };
    for token in [
        foreign.as_str(),
        &tampered_sig,
        &tampered_claims,
        &alg_none,
        "garbage",
        "a.b.c",
    ] {
        let answer = app.get("/api/v1/crm/contacts", token).await;
        answer.error(401, "TOKEN_INVALID");
        assert!(
            answer
                .header("www-authenticate")
                .unwrap()
                .contains("invalid_token")
        );
    }
}

async fn a_missing_or_non_bearer_credential_is_unauthenticated(backend: Backend) {
    let app = spawn_app(backend).await;
    let (access, _) = app.logged_in_user("lee@example.com").await;
    let bare = app
        .send(app.client.get(app.url("/api/v1/crm/contacts")))
        .await;
    bare.error(401, "UNAUTHENTICATED");
    assert_eq!(bare.header("www-authenticate"), Some("Bearer"));
    for value in [
        format!("Basic {access}"),
        "Bearer ".into(),
        "Bearer".into(),
        access.clone(),
    ] {
        let answer = app
            .send(
                app.client
                    .get(app.url("/api/v1/crm/contacts"))
                    .header("authorization", value),
            )
            .await;
        answer.error(401, "UNAUTHENTICATED");
    }
    let lower = app
        .send(
            app.client
                .get(app.url("/api/v1/crm/contacts"))
                .header("authorization", format!("bearer {access}")),
        )
        .await;
    lower.data(200);
}

async fn token_kinds_are_never_interchangeable(backend: Backend) {
    let app = spawn_app(backend).await;
    let (access, refresh) = app.logged_in_user("mia@example.com").await;
    app.get("/api/v1/auth/me", &refresh)
        .await
        .error(401, "TOKEN_INVALID");
    app.post("/api/v1/auth/refresh", json!({ "refreshToken": access }))
        .await
        .error(401, "REFRESH_TOKEN_INVALID");
    let answer = app
        .call(
            Method::POST,
            "/api/v1/auth/2fa/verify",
            None,
            Some(json!({ "tempToken": access, "code": "123456" })),
        )
        .await;
    answer.error(401, "TEMP_TOKEN_INVALID");
}
