//! Gatehouse's relying party towards upstream providers (`gatehouse::upstream`), driven without
//! the flow's endpoints: against oidc-provider (a provider no one here wrote) for the whole code
//! flow, and against the hostile provider for each way an answer can be wrong.

use std::time::{Duration, Instant};

use gatehouse::upstream::{Providers, UpstreamError, UpstreamIdentity};
use serde_json::json;

use crate::federation_idp::{
    Browser, HOSTILE_SUBJECT, HostileIdp, Scenario, Upstream, UpstreamClient, provider_config,
};

/// Nothing serves it: the walk stops there and the test reads the code from the URL.
const REDIRECT_URI: &str = "http://127.0.0.1:9/callback";

/// Providers with discovery done (polled: it runs in the background, as at a real start).
async fn discovered(providers: &Providers) {
    providers.discover_in_background();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !providers.list().iter().all(|p| p.available) {
        assert!(
            Instant::now() < deadline,
            "discovery did not finish: {:?}",
            providers.list()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Authorization at `id`, the walk through the provider, and the code exchange.
async fn sign_in(
    providers: &Providers,
    id: &str,
    login: Option<&str>,
) -> Result<UpstreamIdentity, UpstreamError> {
    let authorization = providers.authorization(id, REDIRECT_URI, login).unwrap();
    let mut browser = Browser::new(login).stop_at(REDIRECT_URI);
    let landing = browser.browse(&authorization.url).await;
    let query: std::collections::HashMap<String, String> =
        landing.url.query_pairs().into_owned().collect();
    assert_eq!(
        query.get("state"),
        Some(&authorization.state),
        "{landing:?}"
    );
    let code = query
        .get("code")
        .unwrap_or_else(|| panic!("no code: {landing:?}"));
    providers
        .complete(
            id,
            REDIRECT_URI,
            code,
            &authorization.pkce_verifier,
            &authorization.nonce,
        )
        .await
}

fn client() -> UpstreamClient {
    UpstreamClient {
        client_id: "gatehouse-test".into(),
        client_secret: "a-long-enough-client-secret-for-oidc-provider".into(),
        redirect_uris: vec![REDIRECT_URI.into()],
    }
}

#[tokio::test]
async fn oidc_provider_signs_a_person_in_with_claims_from_userinfo_and_amr() {
    let Some(upstream) = Upstream::start(&[client()]).await else {
        return;
    };
    upstream
        .account(
            "ann",
            json!({"email": "ann@acme.example", "email_verified": true, "name": "Ann Upstream"}),
            &["pwd", "otp"],
        )
        .await;
    let providers = Providers::new(vec![provider_config("acme", &upstream.issuer, &client())]);
    discovered(&providers).await;
    let identity = sign_in(&providers, "acme", Some("ann")).await.unwrap();
    assert_eq!(
        identity,
        UpstreamIdentity {
            subject: "ann".into(),
            email: Some("ann@acme.example".into()),
            email_verified: true,
            name: Some("Ann Upstream".into()),
            amr: vec!["pwd".into(), "otp".into()],
            // Said only when asked for (max_age, a re-authentication): tests/api/federation_link.rs.
            auth_time: identity.auth_time,
        }
    );
}

#[tokio::test]
async fn oidc_provider_claims_in_the_id_token_and_an_unverified_address() {
    let Some(upstream) = Upstream::start_with(&[client()], true).await else {
        return;
    };
    upstream
        .account(
            "bob",
            json!({"email": "bob@acme.example", "email_verified": false}),
            &[],
        )
        .await;
    let providers = Providers::new(vec![provider_config("acme", &upstream.issuer, &client())]);
    discovered(&providers).await;
    let identity = sign_in(&providers, "acme", Some("bob")).await.unwrap();
    assert_eq!(identity.subject, "bob");
    assert_eq!(identity.email.as_deref(), Some("bob@acme.example"));
    assert!(!identity.email_verified);
    assert_eq!(identity.name, None);
}

#[tokio::test]
async fn oidc_provider_refuses_another_verifier_and_a_code_used_twice() {
    let Some(upstream) = Upstream::start(&[client()]).await else {
        return;
    };
    upstream
        .account("ann", json!({"email": "ann@acme.example"}), &[])
        .await;
    let providers = Providers::new(vec![provider_config("acme", &upstream.issuer, &client())]);
    discovered(&providers).await;
    let authorization = providers.authorization("acme", REDIRECT_URI, None).unwrap();
    let landing = Browser::new(Some("ann"))
        .stop_at(REDIRECT_URI)
        .browse(&authorization.url)
        .await;
    let code = landing
        .url
        .query_pairs()
        .find(|(k, _)| k == "code")
        .unwrap()
        .1
        .into_owned();
    let other = providers.authorization("acme", REDIRECT_URI, None).unwrap();
    let wrong_verifier = providers
        .complete(
            "acme",
            REDIRECT_URI,
            &code,
            &other.pkce_verifier,
            &authorization.nonce,
        )
        .await;
    assert!(
        matches!(wrong_verifier, Err(UpstreamError::Refused(_))),
        "{wrong_verifier:?}"
    );
    // The right verifier still gets it, once.
    let exchange = || {
        providers.complete(
            "acme",
            REDIRECT_URI,
            &code,
            &authorization.pkce_verifier,
            &authorization.nonce,
        )
    };
    assert_eq!(exchange().await.unwrap().subject, "ann");
    let again = exchange().await;
    assert!(matches!(again, Err(UpstreamError::Refused(_))), "{again:?}");
}

#[tokio::test]
async fn a_person_who_cancels_at_oidc_provider_comes_back_with_access_denied() {
    let Some(upstream) = Upstream::start(&[client()]).await else {
        return;
    };
    let providers = Providers::new(vec![provider_config("acme", &upstream.issuer, &client())]);
    discovered(&providers).await;
    let authorization = providers.authorization("acme", REDIRECT_URI, None).unwrap();
    let landing = Browser::new(None)
        .stop_at(REDIRECT_URI)
        .browse(&authorization.url)
        .await;
    let query: std::collections::HashMap<String, String> =
        landing.url.query_pairs().into_owned().collect();
    assert_eq!(
        query.get("error").map(String::as_str),
        Some("access_denied")
    );
    assert_eq!(query.get("state"), Some(&authorization.state));
    assert!(
        landing.status.is_none() && landing.body.is_empty(),
        "{landing:?}"
    );
    assert!(
        landing.visited.iter().any(|u| u.path().ends_with("/abort")),
        "the Cancel button was pressed: {landing:?}"
    );
}

async fn hostile() -> (HostileIdp, Providers) {
    let idp = HostileIdp::start().await;
    let config = provider_config("hostile", &idp.issuer, &HostileIdp::client(REDIRECT_URI));
    let providers = Providers::new(vec![config]);
    discovered(&providers).await;
    (idp, providers)
}

#[tokio::test]
async fn the_authorization_request_carries_pkce_state_nonce_scopes_and_the_hint() {
    let (_idp, providers) = hostile().await;
    let a = providers
        .authorization("hostile", REDIRECT_URI, Some("eve@hostile.example"))
        .unwrap();
    let url = url::Url::parse(&a.url).unwrap();
    let query: std::collections::HashMap<String, String> = url.query_pairs().into_owned().collect();
    assert_eq!(query["response_type"], "code");
    assert_eq!(query["client_id"], "gatehouse");
    assert_eq!(query["redirect_uri"], REDIRECT_URI);
    assert_eq!(query["scope"], "openid email profile");
    assert_eq!(query["state"], a.state);
    assert_eq!(query["nonce"], a.nonce);
    assert_eq!(query["code_challenge_method"], "S256");
    assert_eq!(query["login_hint"], "eve@hostile.example");
    use base64::Engine as _;
    use sha2::Digest as _;
    let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(sha2::Sha256::digest(a.pkce_verifier.as_bytes()));
    assert_eq!(query["code_challenge"], challenge);
    let b = providers
        .authorization("hostile", REDIRECT_URI, None)
        .unwrap();
    assert!(a.state != b.state && a.nonce != b.nonce && a.pkce_verifier != b.pkce_verifier);
    assert!(!b.url.contains("login_hint"));
}

#[tokio::test]
async fn good_tokens_signed_with_eddsa_or_es256_are_accepted() {
    let (idp, providers) = hostile().await;
    for scenario in [Scenario::Good, Scenario::GoodEs256] {
        idp.set(scenario);
        let identity = sign_in(&providers, "hostile", None).await.unwrap();
        assert_eq!(identity.subject, HOSTILE_SUBJECT, "{scenario:?}");
        assert_eq!(identity.email.as_deref(), Some("eve@hostile.example"));
        assert!(identity.email_verified);
        assert_eq!(identity.name.as_deref(), Some("Eve Hostile"));
        assert_eq!(identity.amr, ["pwd"]);
    }
    idp.set(Scenario::ClaimsInUserinfo);
    let identity = sign_in(&providers, "hostile", None).await.unwrap();
    assert_eq!(identity.email.as_deref(), Some("eve@hostile.example"));
    assert!(identity.email_verified);
    assert_eq!(identity.name.as_deref(), Some("Eve from userinfo"));
}

#[tokio::test]
async fn each_bad_answer_is_its_own_refusal() {
    let (idp, providers) = hostile().await;
    let cases = [
        (Scenario::ForeignKey, "InvalidToken"),
        (Scenario::WrongAudience, "InvalidToken"),
        (Scenario::Expired, "InvalidToken"),
        (Scenario::WrongNonce, "InvalidToken"),
        (Scenario::WrongIssuer, "InvalidToken"),
        (Scenario::Symmetric, "InvalidToken"),
        (Scenario::NoIdToken, "InvalidToken"),
        (Scenario::InvalidGrant, "Refused"),
        (Scenario::ServerError, "Unavailable"),
    ];
    for (scenario, expected) in cases {
        idp.set(scenario);
        let outcome = sign_in(&providers, "hostile", None).await;
        let got = match &outcome {
            Err(UpstreamError::InvalidToken(_)) => "InvalidToken",
            Err(UpstreamError::Refused(_)) => "Refused",
            Err(UpstreamError::Unavailable(_)) => "Unavailable",
            _ => "something else",
        };
        assert_eq!(got, expected, "{scenario:?}: {outcome:?}");
    }
    // Claims the flow decides on come through as the provider says them; userinfo does not
    // overrule the token's own email_verified.
    idp.set(Scenario::Good);
    idp.claims(json!({"email_verified": false}));
    let identity = sign_in(&providers, "hostile", None).await.unwrap();
    assert_eq!(identity.email.as_deref(), Some("eve@hostile.example"));
    assert!(!identity.email_verified);
}

#[tokio::test]
async fn a_rotated_key_is_fetched_once_and_unknown_kids_at_most_once_a_minute() {
    let (idp, providers) = hostile().await;
    assert_eq!(idp.jwks_fetches(), 1);
    idp.set(Scenario::RotatedKey);
    let identity = sign_in(&providers, "hostile", None).await.unwrap();
    assert_eq!(identity.subject, HOSTILE_SUBJECT);
    assert_eq!(idp.jwks_fetches(), 2, "one refetch for the new kid");
    // The new key is held now: no more fetches for it.
    sign_in(&providers, "hostile", None).await.unwrap();
    assert_eq!(idp.jwks_fetches(), 2);
    // A made-up kid within the minute: refused without asking the provider again.
    idp.set(Scenario::UnknownKid);
    for _ in 0..3 {
        let outcome = sign_in(&providers, "hostile", None).await;
        assert!(
            matches!(outcome, Err(UpstreamError::InvalidToken(_))),
            "{outcome:?}"
        );
    }
    assert_eq!(idp.jwks_fetches(), 2);
}

#[tokio::test]
async fn a_provider_that_never_answers_costs_at_most_the_exchange_budget() {
    let (idp, providers) = hostile().await;
    idp.set(Scenario::NeverAnswers);
    let started = Instant::now();
    let outcome = sign_in(&providers, "hostile", None).await;
    let took = started.elapsed();
    assert!(
        matches!(outcome, Err(UpstreamError::Unavailable(_))),
        "{outcome:?}"
    );
    assert!(
        took >= Duration::from_secs(4) && took < Duration::from_millis(6500),
        "{took:?}"
    );
    assert_eq!(idp.token_requests(), 1);
}

#[tokio::test]
async fn an_unreachable_issuer_is_listed_unavailable_and_refuses_to_start() {
    // A port bound then released: nothing listens there.
    let port = crate::helpers::free_port();
    let client = HostileIdp::client(REDIRECT_URI);
    let down = provider_config("down", &format!("http://127.0.0.1:{port}"), &client);
    let providers = Providers::new(vec![down]);
    providers.discover_in_background();
    // Long enough for the first discovery attempt to fail (connection refused); the answers
    // below never wait for it.
    let started = Instant::now();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let listed = providers.list();
    assert_eq!(listed.len(), 1);
    assert!(!listed[0].available);
    assert!(matches!(
        providers.authorization("down", REDIRECT_URI, None),
        Err(UpstreamError::Unavailable(_))
    ));
    assert!(matches!(
        providers
            .complete("down", REDIRECT_URI, "code", "verifier", "nonce")
            .await,
        Err(UpstreamError::Unavailable(_))
    ));
    assert!(matches!(
        providers
            .complete("nope", REDIRECT_URI, "code", "verifier", "nonce")
            .await,
        Err(UpstreamError::UnknownProvider)
    ));
    assert!(started.elapsed() < Duration::from_secs(1));
}

#[tokio::test]
async fn a_provider_that_comes_up_later_is_discovered_by_the_retries() {
    let port = crate::helpers::free_port();
    let client = HostileIdp::client(REDIRECT_URI);
    let providers = Providers::new(vec![provider_config(
        "late",
        &format!("http://127.0.0.1:{port}"),
        &client,
    )]);
    providers.discover_in_background();
    // The first attempt meets a closed port; the retries (1 s, then 2 s later) find it up.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!providers.list()[0].available);
    let idp = HostileIdp::start_on(port).await;
    let deadline = Instant::now() + Duration::from_secs(5);
    while !providers.list()[0].available {
        assert!(Instant::now() < deadline, "not discovered after it came up");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let identity = sign_in(&providers, "late", None).await.unwrap();
    assert_eq!(identity.subject, HOSTILE_SUBJECT);
    assert_eq!(idp.jwks_fetches(), 1);
}
