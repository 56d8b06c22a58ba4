//! The Rust `openidconnect` crate (ramosbugs) as a relying party, with its defaults: its ID-token
//! verifier accepts RS256 only, which is what a client registered without `--id-token-alg` gets
//! (OIDC Core §15.1). Discovery, the code flow with PKCE and nonce, the ID token verified (with
//! `at_hash`), userinfo, refresh.

use openidconnect::core::{
    CoreAuthenticationFlow, CoreClient, CoreProviderMetadata, CoreUserInfoClaims,
};
use openidconnect::{
    AccessTokenHash, AuthorizationCode, ClientId, ClientSecret, CsrfToken, IssuerUrl, Nonce,
    OAuth2TokenResponse, PkceCodeChallenge, RedirectUrl, Scope, TokenResponse,
};

use super::{add_client, authorize, person_token, provider};
use crate::helpers::{Backend, PASSWORD, both_backends};

both_backends!(openidconnect_crate_signs_in_with_its_default_rs256_verifier);

const REDIRECT: &str = "http://127.0.0.1/callback";

async fn openidconnect_crate_signs_in_with_its_default_rs256_verifier(backend: Backend) {
    let provider = provider(backend, "127.0.0.1").await;
    let app = &provider.app;
    let user = app.create_user("ann@example.com", PASSWORD).await;
    // A loopback redirect URI (RFC 8252 §7.3): registered without a port, used with one.
    let registered = add_client(app, "Rust app", &["--redirect-uri", REDIRECT]);
    let redirect = REDIRECT.replace("127.0.0.1", "127.0.0.1:49152");

    // The crate's advice: an HTTP client that follows no redirects (SSRF).
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let metadata = CoreProviderMetadata::discover_async(
        IssuerUrl::new(provider.issuer.clone()).unwrap(),
        &http,
    )
    .await
    .expect("discovery and the JWK Set");
    let client = CoreClient::from_provider_metadata(
        metadata,
        ClientId::new(registered.id.clone()),
        Some(ClientSecret::new(registered.secret.clone().unwrap())),
    )
    .set_redirect_uri(RedirectUrl::new(redirect.clone()).unwrap());

    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let (url, state, nonce) = client
        .authorize_url(
            CoreAuthenticationFlow::AuthorizationCode,
            CsrfToken::new_random,
            Nonce::new_random,
        )
        .add_scope(Scope::new("profile".into()))
        .add_scope(Scope::new("email".into()))
        .add_scope(Scope::new("offline_access".into()))
        .set_pkce_challenge(challenge)
        .url();
    let token = person_token(app, "ann@example.com", PASSWORD).await;
    let back = authorize(app, &token, &url, "Rust app").await;
    let back = url::Url::parse(&back).unwrap();
    assert!(back.as_str().starts_with(&redirect), "{back}");
    let query: std::collections::HashMap<_, _> = back.query_pairs().into_owned().collect();
    assert_eq!(query.get("state"), Some(state.secret()));
    assert_eq!(query.get("iss"), Some(&provider.issuer));
    let code = AuthorizationCode::new(query["code"].clone());

    let tokens = client
        .exchange_code(code)
        .expect("a token endpoint")
        .set_pkce_verifier(verifier)
        .request_async(&http)
        .await
        .expect("the code exchange");
    let id_token = tokens.id_token().expect("an ID token for openid");
    let id_verifier = client.id_token_verifier();
    let claims = id_token
        .claims(&id_verifier, &nonce)
        .expect("the default verifier (RS256) accepts the ID token");
    assert_eq!(claims.subject().as_str(), user.to_string());
    assert_eq!(claims.email().map(|e| e.as_str()), Some("ann@example.com"));
    let expected_hash = AccessTokenHash::from_token(
        tokens.access_token(),
        id_token.signing_alg().unwrap(),
        id_token.signing_key(&id_verifier).unwrap(),
    )
    .unwrap();
    assert_eq!(claims.access_token_hash(), Some(&expected_hash));
    assert!(claims.auth_time().is_some());

    let info: CoreUserInfoClaims = client
        .user_info(
            tokens.access_token().clone(),
            Some(claims.subject().clone()),
        )
        .expect("a userinfo endpoint")
        .request_async(&http)
        .await
        .expect("userinfo");
    assert_eq!(info.email().map(|e| e.as_str()), Some("ann@example.com"));
    let name = info.name().and_then(|n| n.get(None)).map(|n| n.as_str());
    assert_eq!(name, Some("Test User"));

    let refresh = tokens
        .refresh_token()
        .expect("offline_access: a refresh token");
    let refreshed = client
        .exchange_refresh_token(refresh)
        .expect("a token endpoint")
        .request_async(&http)
        .await
        .expect("the refresh");
    let rotated = refreshed.refresh_token().expect("a rotated refresh token");
    assert_ne!(rotated.secret(), refresh.secret());
    assert_ne!(
        refreshed.access_token().secret(),
        tokens.access_token().secret()
    );
    if let Some(again) = refreshed.id_token() {
        // No nonce in a refreshed ID token's request; the subject is the same.
        let claims = again
            .claims(&id_verifier, |_: Option<&Nonce>| Ok(()))
            .unwrap();
        assert_eq!(claims.subject().as_str(), user.to_string());
    }
}
