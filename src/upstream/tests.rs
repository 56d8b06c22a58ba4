//! `Providers` without the network: lookups, domains and the authorization request.

use secrecy::SecretString;

use super::*;

fn config(id: &str, domains: &[&str]) -> ProviderConfig {
    ProviderConfig {
        id: id.into(),
        name: format!("{id} sign-in"),
        issuer: url::Url::parse("https://idp.example").unwrap(),
        client_id: "gatehouse".into(),
        client_secret: SecretString::from("s3cret"),
        scopes: vec!["openid".into(), "email".into()],
        domains: domains.iter().map(|d| d.to_string()).collect(),
        org: None,
        signup: false,
        trust_second_factor: false,
    }
}

#[test]
fn a_domain_covers_its_subdomains_and_nothing_else() {
    let providers = Providers::new(vec![
        config("acme", &["acme.example"]),
        config("other", &[]),
    ]);
    let id = |address: &str| providers.for_address(address).map(|c| c.id.clone());
    assert_eq!(id("jane@acme.example").as_deref(), Some("acme"));
    assert_eq!(id("jane@eu.acme.example").as_deref(), Some("acme"));
    assert_eq!(id("jane@notacme.example"), None);
    assert_eq!(id("jane@acme.example.org"), None);
    assert_eq!(id("no-at-sign"), None);
}

#[test]
fn undiscovered_providers_are_listed_unavailable_and_refuse_to_start() {
    let providers = Providers::new(vec![config("acme", &["acme.example"])]);
    assert_eq!(
        providers.list(),
        [ProviderSummary {
            id: "acme".into(),
            name: "acme sign-in".into(),
            available: false,
            domains: vec!["acme.example".into()],
        }]
    );
    assert!(providers.get("acme").is_some() && providers.get("nope").is_none());
    assert!(matches!(
        providers.authorization("acme", "https://gh.example/cb", None),
        Err(UpstreamError::Unavailable(_))
    ));
    assert!(matches!(
        providers.authorization("nope", "https://gh.example/cb", None),
        Err(UpstreamError::UnknownProvider)
    ));
    assert!(Providers::none().list().is_empty());
}

#[test]
fn userinfo_counts_only_for_the_same_subject_and_address() {
    let mut identity = UpstreamIdentity {
        subject: "s1".into(),
        email: None,
        email_verified: false,
        name: None,
        amr: vec![],
        auth_time: None,
    };
    let other = serde_json::json!({"sub": "s2", "email": "x@a.example", "email_verified": true});
    merge_userinfo(&mut identity, &other);
    assert_eq!(identity.email, None);
    let same = serde_json::json!({"sub": "s1", "email": "x@a.example", "email_verified": true, "name": "X"});
    merge_userinfo(&mut identity, &same);
    assert_eq!(identity.email.as_deref(), Some("x@a.example"));
    assert!(identity.email_verified);
    assert_eq!(identity.name.as_deref(), Some("X"));
    // A verified flag for another address, or an unverified one, does not verify the token's.
    identity.email = Some("y@a.example".into());
    identity.email_verified = false;
    merge_userinfo(&mut identity, &same);
    assert!(!identity.email_verified);
}

#[test]
fn random_values_are_43_characters_and_differ() {
    let (a, b) = (random(), random());
    assert_eq!(a.len(), 43);
    assert_ne!(a, b);
}
