//! Which provider speaks for an address (docs/guide/providers.md): each cell of the book's table,
//! with three providers at once: `up`, a second Gatehouse whose `domains` are `corp.test` (the
//! customer's own provider, joined to its organisation `corpco`); `fake`, a provider of anyone's
//! (`signup`, no `domains`) that vouches for any address it likes (`HostileIdp`); and `other`, a
//! provider with `domains = ["other.test"]`. The attack of issue 38: `fake` made an account for
//! `boss@corp.test` before `corp.test` was `up`'s; once it is, neither that account nor its
//! organisation is reached through `fake`, and `up` does not adopt what `fake` vouched for.

use gatehouse::config::SettingsArgs;
use reqwest::Method;
use serde_json::json;

use crate::federation_flow::{
    Hop, Pair, UP, footprint, hop, local, no_redirects, providers_file, register_client, start,
    through, upstream_gatehouse, upstream_person, wait_available, with_providers,
};
use crate::federation_idp::HostileIdp;
use crate::federation_idp::hostile::{HOSTILE_CLIENT_ID, HOSTILE_CLIENT_SECRET};
use crate::helpers::{Backend, PASSWORD, TestApp, both_backends, spawn_app};

both_backends!(a_provider_speaks_only_for_the_domains_it_owns);

/// A providers-file entry for a hostile provider at `issuer`.
fn hostile_entry(id: &str, issuer: &str, extra: &str) -> String {
    format!(
        "[[provider]]\nid = \"{id}\"\nname = \"{id}\"\nissuer = \"{issuer}\"\n\
         client_id = \"{HOSTILE_CLIENT_ID}\"\nclient_secret = \"{HOSTILE_CLIENT_SECRET}\"\n{extra}\n"
    )
}

/// The hostile provider's answer to a flow begun at `started`: where it sends the browser (it
/// signs in at once), as a path of the app.
async fn at_hostile(app: &TestApp, to: &str) -> String {
    let answer = no_redirects().get(to).send().await.unwrap();
    assert_eq!(answer.status(), 302, "{to}");
    let location = answer.headers()["location"].to_str().unwrap().to_owned();
    local(app, &location)
}

/// A sign-in through the hostile provider `id`, as the person `sub` whose address it says is
/// `email` (verified): the callback's answer.
async fn sign_in(app: &TestApp, idp: &HostileIdp, id: &str, sub: &str, email: &str) -> Hop {
    idp.claims(json!({"sub": sub, "email": email, "email_verified": true}));
    let (started, cookie) = start(app, id, "/account").await;
    let callback = at_hostile(app, &started.location).await;
    hop(app, &callback, Some(&cookie)).await
}

/// The holder of `token` links their identity `sub` at the hostile provider `id`, which says its
/// address is `email`: the callback's answer.
async fn link(
    app: &TestApp,
    token: &str,
    idp: &HostileIdp,
    id: &str,
    sub: &str,
    email: &str,
) -> Hop {
    idp.claims(json!({"sub": sub, "email": email, "email_verified": true}));
    let started = app
        .call(
            Method::POST,
            "/api/v1/auth/identities/start",
            Some(token),
            Some(json!({"providerId": id, "password": PASSWORD})),
        )
        .await;
    let cookie = started
        .header("set-cookie")
        .unwrap_or_else(|| panic!("{started:?}"))
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let to = started.data(200)["redirectTo"].as_str().unwrap().to_owned();
    let callback = at_hostile(app, &to).await;
    hop(app, &callback, Some(&cookie)).await
}

/// A sign-in refused with `wrong_provider`, having made and linked nothing.
async fn refused(app: &TestApp, landed: &Hop, before: (i64, i64, i64), why: &str) {
    assert_eq!(
        landed.param("error").as_deref(),
        Some("wrong_provider"),
        "{why}: {landed:?}"
    );
    assert_eq!(footprint(app).await, before, "{why}");
}

/// The members of the organisation `corpco`.
async fn members(app: &TestApp) -> i64 {
    app.scalar(
        "SELECT COUNT(*) FROM org_members m JOIN orgs o ON o.id = m.org_id WHERE o.slug = 'corpco'",
    )
    .await
}

/// Who vouched for an address (`NULL`: the account proved it itself, or was made by the operator).
async fn verified_by(app: &TestApp, email: &str) -> Option<String> {
    app.scalar(&format!(
        "SELECT email_verified_by FROM users WHERE email_normalized = '{email}'"
    ))
    .await
}

async fn a_provider_speaks_only_for_the_domains_it_owns(backend: Backend) {
    let up = upstream_gatehouse(backend.clone()).await;
    let client = register_client(&up);
    let fake = HostileIdp::start().await;
    let other = HostileIdp::start().await;
    let base = spawn_app(backend).await;
    let (owner, _) = base.logged_in_user("owner@example.com").await;
    crate::orgs::create_org(&base, &owner, "corpco").await;
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: String| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_owned()
    };

    // Before corp.test is `up`'s: `fake` makes an account for the address (any provider could).
    let fake_entry = hostile_entry("fake", &fake.issuer, "signup = true");
    let before_file = write(
        "before.toml",
        providers_file(&up, &client, "signup = true", &fake_entry),
    );
    let early = base
        .twin_with(with_providers(&before_file, SettingsArgs::default()))
        .await;
    wait_available(&early, "fake").await;
    let planted = sign_in(&early, &fake, "fake", "attacker", "boss@corp.test").await;
    assert!(
        planted.location.starts_with("/sign-in?federated=1"),
        "{planted:?}"
    );
    assert_eq!(
        verified_by(&early, "boss@corp.test").await.as_deref(),
        Some("fake")
    );
    drop(early);

    // corp.test becomes `up`'s, with its organisation; `other` owns other.test.
    let more = format!(
        "{fake_entry}\n{}",
        hostile_entry(
            "other",
            &other.issuer,
            "signup = true\ndomains = [\"other.test\"]"
        )
    );
    let file = write(
        "after.toml",
        providers_file(
            &up,
            &client,
            "signup = true\ndomains = [\"corp.test\"]\norg = \"corpco\"",
            &more,
        ),
    );
    let app = base
        .twin_with(with_providers(&file, SettingsArgs::default()))
        .await;
    for id in [UP, "fake", "other"] {
        wait_available(&app, id).await;
    }
    let pair = Pair::from_parts(up, app, dir);
    let app = &pair.app;
    let corpco_before = members(app).await;

    // 1. Another provider's identity linked to an account of the domain signs in no more.
    let before = footprint(app).await;
    let landed = sign_in(app, &fake, "fake", "attacker", "boss@corp.test").await;
    refused(app, &landed, before, "fake's linked identity").await;

    // 2. The domain's provider does not adopt an account another provider vouched for: the
    //    real boss is refused rather than joined to the account the attacker can reach.
    let boss = upstream_person(&pair, "boss@corp.test").await;
    let landed = through(&pair, &boss, "/account").await;
    assert_eq!(
        landed.param("error").as_deref(),
        Some("account_exists"),
        "{landed:?}"
    );
    assert_eq!(footprint(app).await, before);
    assert_eq!(members(app).await, corpco_before);

    // 3. Another provider cannot sign up an address of the domain.
    let landed = sign_in(app, &fake, "fake", "newcomer", "newcomer@corp.test").await;
    refused(app, &landed, before, "fake signs up corp.test").await;
    let landed = sign_in(app, &fake, "fake", "sub-domain", "x@eu.corp.test").await;
    refused(
        app,
        &landed,
        before,
        "fake signs up a subdomain of corp.test",
    )
    .await;

    // 4. A provider with domains signs up none outside them (nor another's).
    let landed = sign_in(app, &other, "other", "x", "x@elsewhere.test").await;
    refused(app, &landed, before, "other signs up outside its domains").await;
    let landed = sign_in(app, &other, "other", "y", "y@corp.test").await;
    refused(app, &landed, before, "other signs up corp.test").await;

    // 5. Inside its domains it does, and is recorded as the one that vouched.
    let landed = sign_in(app, &other, "other", "dan", "dan@other.test").await;
    assert!(
        landed.location.starts_with("/sign-in?federated=1"),
        "{landed:?}"
    );
    assert_eq!(
        verified_by(app, "dan@other.test").await.as_deref(),
        Some("other")
    );

    // 6. A provider without domains still signs up addresses no provider owns.
    let landed = sign_in(app, &fake, "fake", "eve", "eve@nowhere.test").await;
    assert!(
        landed.location.starts_with("/sign-in?federated=1"),
        "{landed:?}"
    );
    assert_eq!(
        verified_by(app, "eve@nowhere.test").await.as_deref(),
        Some("fake")
    );

    // 7. The domain's provider signs up its own people, into its organisation.
    let carl = upstream_person(&pair, "carl@corp.test").await;
    let landed = through(&pair, &carl, "/account").await;
    let carl_token = crate::federation_flow::finish(app, &landed).await.data(200)["accessToken"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        verified_by(app, "carl@corp.test").await.as_deref(),
        Some(UP)
    );
    assert_eq!(members(app).await, corpco_before + 1);

    // 8. An account of the domain links no other provider: refused before anything starts.
    let started = app
        .call(
            Method::POST,
            "/api/v1/auth/identities/start",
            Some(&carl_token),
            Some(json!({"providerId": "fake"})),
        )
        .await;
    assert_eq!(
        started.error(403, "SSO_REQUIRED")["details"],
        json!({"provider": UP})
    );

    // 9. An account of no domain links no identity whose provider does not speak for the address
    //    it names: another provider's domain, or outside the provider's own.
    app.create_user("ann@example.com", PASSWORD).await;
    let ann = app.login("ann@example.com", PASSWORD).await.data(200)["accessToken"]
        .as_str()
        .unwrap()
        .to_owned();
    let before = footprint(app).await;
    for (idp, id, email) in [
        (&fake, "fake", "ann@corp.test"),
        (&other, "other", "ann@elsewhere.test"),
    ] {
        let linked = link(app, &ann, idp, id, "ann-there", email).await;
        assert!(
            linked
                .location
                .starts_with("/account?link_error=wrong_provider"),
            "{id} {email}: {linked:?}"
        );
        assert_eq!(footprint(app).await, before, "{id} {email}");
    }
    // 10. One that speaks for the address it names links, as before.
    let linked = link(app, &ann, &fake, "fake", "ann-there", "ann@example.com").await;
    assert_eq!(linked.location, "/account?linked=fake", "{linked:?}");

    // 11. An address the account proved by mail is the domain's provider's to adopt (the rule
    //     the attack bent): once boss has proved it (a mailed link clears who vouched, as
    //     verification and reset do), `up` links, and `fake` still signs in no one there.
    app.execute(
        "UPDATE users SET email_verified_by = NULL WHERE email_normalized = 'boss@corp.test'",
    )
    .await;
    let landed = through(&pair, &boss, "/account").await;
    assert!(
        landed.location.starts_with("/sign-in?federated=1"),
        "{landed:?}"
    );
    assert_eq!(members(app).await, corpco_before + 2);
    let before = footprint(app).await;
    let landed = sign_in(app, &fake, "fake", "attacker", "boss@corp.test").await;
    refused(app, &landed, before, "fake's identity after the adoption").await;
}
