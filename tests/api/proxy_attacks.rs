//! The recipes under attack (issue 22), through real nginx and Caddy run with the recipes as they
//! are: hostile `Host` headers, a raw `#` in the target, absolute-form targets, `@` in the
//! authority, two `Authorization` headers, and forged `Remote-*` headers in every spelling, sent
//! over raw sockets, to a Rust and a WSGI upstream that record what they receive. What must hold:
//! an upstream only receives a request Gatehouse judged as the request the upstream serves (its
//! path and its host), and it learns who the caller is from Gatehouse alone.

use gatehouse::config::SettingsArgs;

use crate::guard::within;
use crate::helpers::{Backend, SPREAD_DEADLINE, both_backends, claims, spawn_app_with};
use crate::proxies::{Kind, Proxy, installed, rules_file};
use crate::upstream::Upstream;

both_backends!(
    nginx_passes_on_only_what_gatehouse_judged,
    caddy_passes_on_only_what_gatehouse_judged,
);

const RULES: &str = r#"
[[rule]]
hosts = ["*.corp.example.com"]
policy = "deny"

[[rule]]
hosts = ["ops.example.com"]
policy = "roles"
roles = ["ops"]

[[rule]]
paths = ["/internal"]
policy = "deny"
"#;

/// (request target, `Host`) pairs that must never reach an upstream for a signed-in user
/// without roles: each would be served as a denied host or path, and was judged as another one
/// (issue 22, finding 1), or cannot be read one way.
const HOSTILE: &[(&str, &str)] = &[
    // A host that ends the authority early: the path judged was `/`.
    ("/internal", "app.example.com?"),
    ("/internal", "x#"),
    ("/internal", "app.example.com?x=/public"),
    ("/internal", "app.example.com#/public"),
    ("/internal", "app.example.com/x"),
    ("/internal", "app.example.com\\x"),
    // A raw `#`: judged as `/public`, served by Go and WSGI upstreams as `/internal/…`.
    ("/public#/../internal/report.txt", "app.example.com"),
    ("/public?#/../internal", "app.example.com"),
    // Absolute-form: routed by its own host, judged by the Host header.
    ("http://ops.example.com/dash", "www.example.com"),
    ("http://a.corp.example.com/dash", "www.example.com"),
    ("http://u@ops.example.com/dash", "www.example.com"),
    // `@` in the host: judged as what follows the last `@`.
    ("/dash", "ops.example.com@pub.example.com"),
    ("/dash", "a.corp.example.com@pub.example.com"),
    ("/dash", "pub.example.com@ops.example.com"),
    // Not a host[:port].
    ("/dash", "ops.example.com:x"),
    ("/dash", "ops.example.com:80:81"),
    ("/dash", "ops.example.com%2e"),
];

/// The caller's own `Remote-*` headers, in every spelling a WSGI or Rack upstream folds into the
/// variables Gatehouse's headers fill (issue 22, finding 2).
const FORGED: &[&str] = &[
    "Remote-User: forged",
    "remote_user: forged",
    "REMOTE_USER: forged",
    "Remote_User: forged",
    "Remote-Groups: admin",
    "remote_groups: admin",
    "REMOTE-GROUPS: admin",
    "Remote_Groups: admin",
    "Remote-Email: boss@example.com",
    "Remote_Email: boss@example.com",
    "Remote-Name: Boss",
    "remote_name: Boss",
    "Remote-Session: forged",
    "Remote_Session: forged",
    "Remote-Email-Verified: true",
    "Remote_Email_Verified: true",
    "remote-email_verified: true",
    "Remote-Org: 0190a000-0000-7000-8000-000000000000",
    "Remote_Org: 0190a000-0000-7000-8000-000000000000",
    "Remote-Org-Roles: owner",
    "Remote_Org_Roles: owner",
    "remote-org_roles: owner",
    "Remote-Client: 0190a000-0000-7000-8000-000000000001",
    "Remote_Client: 0190a000-0000-7000-8000-000000000001",
    "REMOTE-CLIENT: 0190a000-0000-7000-8000-000000000001",
    "Remote-Actor: 0190a000-0000-7000-8000-000000000001",
    "Remote_Actor: 0190a000-0000-7000-8000-000000000001",
    "REMOTE-ACTOR: 0190a000-0000-7000-8000-000000000001",
    "Remote-Dpop: forged-thumbprint",
    "Remote_Dpop: forged-thumbprint",
    "Remote-Key: 0190a000-0000-7000-8000-000000000002",
    "remote_key: 0190a000-0000-7000-8000-000000000002",
];

/// The caller's own headers that some frameworks read as the request's path, method or host
/// instead of the request line's (`upstream::STEERING`), in both spellings: they would make the
/// upstream serve another request than the one judged.
const STEERING: &[&str] = &[
    "X-Original-URL: /internal",
    "X_Original_URL: /internal",
    "X-Rewrite-URL: /internal",
    "x_rewrite_url: /internal",
    "X-Forwarded-Uri: /internal",
    "X-Forwarded-Prefix: /internal",
    "X-HTTP-Method-Override: DELETE",
    "X_HTTP_Method_Override: DELETE",
    "X-HTTP-Method: DELETE",
    "X-Method-Override: DELETE",
    "Forwarded: host=ops.example.com",
    "X-Forwarded-Host: ops.example.com",
    "X_Forwarded_Host: ops.example.com",
];

async fn nginx_passes_on_only_what_gatehouse_judged(backend: Backend) {
    passes_on_only_what_gatehouse_judged(Kind::Nginx, backend).await
}

async fn caddy_passes_on_only_what_gatehouse_judged(backend: Backend) {
    passes_on_only_what_gatehouse_judged(Kind::Caddy, backend).await
}

async fn passes_on_only_what_gatehouse_judged(kind: Kind, backend: Backend) {
    if !installed(kind) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let app = spawn_app_with(
        backend,
        SettingsArgs {
            trusted_proxies: Some("127.0.0.1/32".into()),
            access_rules: Some(rules_file(&dir, RULES)),
            ..Default::default()
        },
    )
    .await;
    let (token, _) = app.logged_in_user("ann@example.com").await;
    let c = claims(&token);
    let bearer = format!("Authorization: Bearer {token}");
    let gatehouse = app.address.trim_start_matches("http://").to_owned();
    let mut sites = Vec::new();
    let upstreams = [Some(Upstream::start().await), Upstream::wsgi()];
    for upstream in upstreams.into_iter().flatten() {
        let proxy = Proxy::start(kind, &gatehouse, upstream.addr).await;
        sites.push((upstream, proxy));
    }

    for (upstream, proxy) in &sites {
        let what = format!("{kind:?} before the {}", upstream.kind());
        // What may pass does, as it was judged.
        for host in ["app.example.com", "App.Example.com.", "[::1]:8080"] {
            assert_eq!(proxy.raw("/public", host, &[&bearer]).await, 200, "{what}");
            assert_eq!(upstream.last().target, "/public", "{what}");
        }

        for (target, host) in HOSTILE {
            let before = upstream.requests();
            let status = proxy.raw(target, host, &[&bearer]).await;
            let reached = upstream.seen().into_iter().skip(before).collect::<Vec<_>>();
            assert!(
                (status == 400 || status == 403) && reached.is_empty(),
                "{what}: GET {target} with Host {host} answered {status}; the upstream got {reached:?}"
            );
        }

        // Two Authorization headers: which one the upstream reads is anyone's guess. nginx
        // refuses them itself (400), Caddy asks Gatehouse, which refuses them (401).
        let before = upstream.requests();
        let twice = [bearer.as_str(), "Authorization: Bearer garbage"];
        let status = proxy.raw("/public", "app.example.com", &twice).await;
        assert!(status == 400 || status == 401, "{what}: {status}");
        assert_eq!(upstream.requests(), before, "{what}");

        // The caller's own Remote-* headers, in every spelling: the upstream sees Gatehouse's.
        let mut headers = vec![bearer.as_str()];
        headers.extend_from_slice(FORGED);
        headers.extend_from_slice(STEERING);
        assert_eq!(
            proxy.raw("/public", "app.example.com", &headers).await,
            200,
            "{what}"
        );
        let mut remote = upstream.last().remote;
        // Empty (or, with nginx, dropped): no roles, no active organisation, no client, no
        // actor, no key.
        for empty in [
            "remote-groups",
            "remote-org",
            "remote-org-roles",
            "remote-client",
            "remote-actor",
            "remote-dpop",
            "remote-key",
        ] {
            let values = remote.remove(empty).unwrap_or_default();
            assert!(
                values.iter().all(String::is_empty),
                "{what}: {empty} {values:?}"
            );
        }
        let expected = [
            ("remote-email", "ann@example.com"),
            ("remote-email-verified", "true"),
            ("remote-name", "Test User"),
            ("remote-session", c["sid"].as_str().unwrap()),
            ("remote-user", c["sub"].as_str().unwrap()),
        ];
        let expected: std::collections::BTreeMap<String, Vec<String>> = expected
            .iter()
            .map(|(k, v)| (k.to_string(), vec![v.to_string()]))
            .collect();
        assert_eq!(remote, expected, "{what}");
        // Nothing steers the upstream elsewhere: the host it may read is the one judged.
        let mut steering = upstream.last().steering;
        let forwarded_host = steering.remove("x-forwarded-host").unwrap_or_default();
        assert!(
            forwarded_host.iter().all(|h| h == "app.example.com"),
            "{what}: {forwarded_host:?}"
        );
        assert!(steering.is_empty(), "{what}: {steering:?}");
    }

    // With the role a host rule asks for, an absolute-form target passes, and the upstream is
    // given the host that was judged, not the Host header.
    crate::guard::roles(&app, "ann@example.com", &["--add", "ops"]);
    let (_, first) = &sites[0];
    within(SPREAD_DEADLINE, || async {
        first.raw("/dash", "ops.example.com", &[&bearer]).await == 200
    })
    .await;
    for (upstream, proxy) in &sites {
        let what = format!("{kind:?} before the {}", upstream.kind());
        for (target, host) in [
            ("http://ops.example.com/dash", "www.example.com"),
            ("/dash", "OPS.example.com:8080"),
        ] {
            assert_eq!(proxy.raw(target, host, &[&bearer]).await, 200, "{what}");
            let seen = upstream.last();
            assert_eq!(seen.target, "/dash", "{what}");
            let given = seen.host.unwrap_or_default().to_ascii_lowercase();
            assert_eq!(
                given.split(':').next(),
                Some("ops.example.com"),
                "{what}: {target} {host}"
            );
        }
    }
}
