//! Signing in with another identity provider in Chromium (tests/browser/federation.mjs): panva's
//! oidc-provider as the upstream, its own login form filled in by the browser; the provider's
//! button, the domain's redirect, an existing address never linked, and linking from /account.

use gatehouse::config::SettingsArgs;
use serde_json::json;

use super::{BROWSER_DIR, CHROMIUM, browser_ready, node, site_at};
use crate::federation_flow::wait_available;
use crate::federation_idp::{Upstream, UpstreamClient, write_providers_file};
use crate::helpers::{Backend, PASSWORD, both_backends, free_port};

both_backends!(a_provider_signs_people_in_and_links_from_the_account_page);

const PROVIDER: &str = "Upstream Login";

async fn a_provider_signs_people_in_and_links_from_the_account_page(backend: Backend) {
    if !browser_ready() {
        return;
    }
    let port = free_port();
    let url = format!("http://localhost:{port}");
    let client = UpstreamClient {
        client_id: "gatehouse".into(),
        client_secret: "a secret shared with the upstream only".into(),
        redirect_uris: vec![format!("{url}/auth/providers/upstream/callback")],
    };
    let Some(upstream) = Upstream::start(std::slice::from_ref(&client)).await else {
        return;
    };
    let verified =
        |email: &str, name: &str| json!({"email": email, "email_verified": true, "name": name});
    upstream
        .account(
            "newcomer",
            verified("nia@acme.test", "Nia Newcomer"),
            &["pwd"],
        )
        .await;
    // The provider speaks for acme.test only (docs/guide/providers.md): the clash is an account
    // of its domain whose address was never proved (never adopted), the link an address of it.
    upstream
        .account("clash", verified("ben@acme.test", "Not Ben"), &["pwd"])
        .await;
    upstream
        .account(
            "linker",
            verified("owen@acme.test", "Owen Upstream"),
            &["pwd"],
        )
        .await;
    let dir = tempfile::tempdir().unwrap();
    let extra = "domains = [\"acme.test\"]\nsignup = true";
    let file = write_providers_file(
        &dir,
        ("upstream", PROVIDER),
        &upstream.issuer,
        &client,
        extra,
    );
    let args = SettingsArgs {
        identity_providers: Some(file),
        ..SettingsArgs::default()
    };
    let app = site_at(backend, port, args).await.app;
    wait_available(&app, "upstream").await;
    app.create_user("owen@example.com", PASSWORD).await;
    app.create_user("ben@acme.test", PASSWORD).await;
    app.execute("UPDATE users SET email_verified = FALSE WHERE email_normalized = 'ben@acme.test'")
        .await;

    let env = [
        ("GATEHOUSE_URL", url.clone()),
        ("GATEHOUSE_EMAIL", "owen@example.com".into()),
        ("GATEHOUSE_PASSWORD", PASSWORD.into()),
        ("CHROMIUM", CHROMIUM.into()),
        ("PROVIDER_NAME", PROVIDER.into()),
        ("UPSTREAM_NEWCOMER", "newcomer".into()),
        ("UPSTREAM_NEWCOMER_NAME", "Nia Newcomer".into()),
        ("UPSTREAM_NEWCOMER_EMAIL", "nia@acme.test".into()),
        ("UPSTREAM_CLASH", "clash".into()),
        ("UPSTREAM_LINKER", "linker".into()),
    ]
    .map(|(k, v)| (k.to_owned(), v));
    let mut env = env.to_vec();
    // `SCREENSHOTS_DIR=$PWD/docs/screenshots cargo test -- browser::federation::sqlite` makes the
    // book's pictures of these pages.
    if let Ok(dir) = std::env::var("SCREENSHOTS_DIR") {
        env.push(("SCREENSHOTS_DIR".into(), dir));
    }
    node(BROWSER_DIR, &["federation.mjs"], env).await;

    // What the pages did, as the service recorded it: one account made (the newcomer, signed in
    // twice through the provider), the clash refused, the password account linked.
    let users: i64 = app.scalar("SELECT COUNT(*) FROM users").await;
    assert_eq!(
        users, 3,
        "the owner, the clash's and the newcomer, nobody new for the clash"
    );
    let linked: i64 = app
        .scalar("SELECT COUNT(*) FROM federated_identities WHERE provider_id = 'upstream'")
        .await;
    assert_eq!(
        linked, 2,
        "the newcomer's identity and the one linked from /account"
    );
}
