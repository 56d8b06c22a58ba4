//! A client's token for itself through real nginx and Caddy (docs/api.md §12), with the recipes
//! as they are: a `clients` rule lets exactly the client it names through, the upstream learns
//! the client from `Remote-User` and `Remote-Client` (never from what the caller sent), and the
//! proxy in front of one instance refuses the token within 2 s of the client's removal on another.

use gatehouse::config::SettingsArgs;

use crate::client_tokens::{client_token, given_to, service};
use crate::guard::within;
use crate::helpers::{Backend, SPREAD_DEADLINE, both_backends, claims};
use crate::oauth_helpers::{ISSUER, provider_app};
use crate::proxies::{Kind, Proxy, installed, rules_file};
use crate::upstream::Upstream;

both_backends!(
    nginx_passes_a_named_client_and_no_other,
    caddy_passes_a_named_client_and_no_other,
);

async fn nginx_passes_a_named_client_and_no_other(backend: Backend) {
    passes_a_named_client_and_no_other(Kind::Nginx, backend).await
}

async fn caddy_passes_a_named_client_and_no_other(backend: Backend) {
    passes_a_named_client_and_no_other(Kind::Caddy, backend).await
}

/// What a caller sends under Gatehouse's names, hoping the upstream believes it.
const FORGED: [(&str, &str); 4] = [
    ("Remote-User", "forged"),
    ("Remote-Client", "0190a000-0000-7000-8000-000000000001"),
    ("Remote-Key", "0190a000-0000-7000-8000-000000000002"),
    ("Remote-Email", "boss@example.com"),
];

async fn passes_a_named_client_and_no_other(kind: Kind, backend: Backend) {
    if !installed(kind) {
        return;
    }
    // Instance A registers the clients; instance B, with rules naming one of them, is the one
    // the proxy asks.
    let a = provider_app(backend, SettingsArgs::default()).await;
    let reports = service(&a, "Nightly reports");
    let other = service(&a, "Other service");
    let dir = tempfile::tempdir().unwrap();
    let rules = format!(
        "[[rule]]\npaths = [\"/export\"]\npolicy = \"clients\"\nclients = [\"{}\"]\n\n\
         [[rule]]\npaths = [\"/admin\"]\npolicy = \"roles\"\nroles = [\"admin\"]\n",
        reports.id
    );
    let b = a
        .twin_with(SettingsArgs {
            issuer: Some(ISSUER.into()),
            trusted_proxies: Some("127.0.0.1/32".into()),
            access_rules: Some(rules_file(&dir, &rules)),
            ..Default::default()
        })
        .await;
    let upstream = Upstream::start().await;
    let proxy = Proxy::start(kind, b.address.trim_start_matches("http://"), upstream.addr).await;
    let own = client_token(&a, &reports).await;
    let others = client_token(&a, &other).await;
    let (person, _) = a.logged_in_user("ann@example.com").await;

    // The named client passes; the upstream hears of the client from Gatehouse alone.
    assert_eq!(proxy.get("/export/today", Some(&own), &FORGED).await, 200);
    let mut remote = upstream.last().remote;
    for name in ["remote-user", "remote-client"] {
        assert_eq!(
            remote.remove(name),
            Some(vec![reports.id.clone()]),
            "{kind:?}: {name}"
        );
    }
    for (name, values) in &remote {
        assert!(
            values.iter().all(String::is_empty),
            "{kind:?}: {name} {values:?}"
        );
    }

    // Another client, a person, and the person's token given to the named client: refused there.
    let before = upstream.requests();
    let given = given_to(&a, &person, &reports).await;
    for token in [&others, &person, &given] {
        assert_eq!(
            proxy.get("/export", Some(token), &[]).await,
            403,
            "{kind:?}"
        );
    }
    // A client is no person: a roles rule refuses it.
    assert_eq!(proxy.get("/admin", Some(&own), &[]).await, 403, "{kind:?}");
    assert_eq!(upstream.requests(), before);

    // Elsewhere a live token suffices: the other client passes as itself, and a person's own
    // sign-in carries no client, whatever the caller sent.
    assert_eq!(proxy.get("/hello", Some(&others), &FORGED).await, 200);
    assert_eq!(
        upstream.last().remote["remote-client"],
        vec![other.id.clone()]
    );
    assert_eq!(proxy.get("/hello", Some(&person), &FORGED).await, 200);
    let remote = upstream.last().remote;
    assert_eq!(
        remote["remote-user"],
        [claims(&person)["sub"].as_str().unwrap()]
    );
    for name in ["remote-client", "remote-key"] {
        let values = remote.get(name).cloned().unwrap_or_default();
        assert!(
            values.iter().all(String::is_empty),
            "{kind:?}: {name} {values:?}"
        );
    }
    // The person's token given to a client names it.
    assert_eq!(proxy.get("/hello", Some(&given), &FORGED).await, 200);
    assert_eq!(
        upstream.last().remote["remote-client"],
        vec![reports.id.clone()]
    );

    // The client removed on A: the proxy in front of B refuses its token within 2 s.
    let removed = a.cli(&["clients", "remove", &reports.id], None);
    assert!(removed.status.success());
    let took = within(SPREAD_DEADLINE, || async {
        proxy.get("/export", Some(&own), &[]).await == 401
    })
    .await;
    eprintln!("{kind:?}: a removed client reached the proxy after {took:?}");
}
