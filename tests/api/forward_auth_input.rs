//! What forward-auth makes of the description a proxy sends (docs/api.md §6, issue 22), asked
//! directly as a proxy would: a host is `host[:port]` and nothing else, a target holds no raw `#`,
//! `HEAD` is judged as `GET`, and with rules a peer outside `GATEHOUSE_TRUSTED_PROXIES` is refused
//! and logged, unless the operator says otherwise. `proxy_attacks.rs` sends the same through real
//! nginx and Caddy.

use std::time::{Duration, Instant};

use gatehouse::config::SettingsArgs;

use crate::guard::{AUTH_REQUEST, FORWARD_AUTH, ask, two_factor_token, with_rules};
use crate::helpers::{Backend, Instance, PASSWORD, TestDatabase, both_backends, spawn_app_with};
use crate::instances::add_user;

both_backends!(
    hosts_and_targets_that_cannot_be_read_one_way_are_refused,
    head_is_judged_as_get_by_rules_that_name_get,
    with_rules_an_untrusted_peer_is_refused_unless_told_otherwise,
);

const RULES: &str = r#"
[[rule]]
hosts = ["ops.example.com"]
policy = "roles"
roles = ["ops"]

[[rule]]
paths = ["/internal"]
policy = "deny"

[[rule]]
paths = ["/reports"]
methods = ["GET"]
policy = "two_factor"
"#;

async fn hosts_and_targets_that_cannot_be_read_one_way_are_refused(backend: Backend) {
    let (args, _dir) = with_rules(RULES);
    let app = spawn_app_with(backend, args).await;
    let (token, _) = app.logged_in_user("ann@example.com").await;

    // nginx: X-Original-URL, one absolute URL.
    for (url, expected) in [
        ("https://app.example.com/public", 200),
        ("http://App.Example.com.:8443/public?q=1", 200),
        ("http://[::1]:8080/public", 200),
        ("http://10.0.0.1/public", 200),
        ("http://my_service/public", 200),
        ("http://app.example.com/public%23/x", 200),
        // A host that ends early, or holds what a host cannot: the path judged was `/`, or the
        // host what followed an `@`.
        ("http://app.example.com?/internal", 403),
        ("http://x#/internal", 403),
        ("http://app.example.com#/internal", 403),
        ("http://ops.example.com@pub.example.com/dash", 403),
        ("http://user@app.example.com/public", 403),
        ("http://app.example.com\\x/public", 403),
        ("http://app example.com/public", 403),
        ("http://app.example.com:x/public", 403),
        ("http://app.example.com:/public", 403),
        ("http://app.example.com:123456/public", 403),
        ("http://app.example.com:+80/public", 403),
        ("http://app..example.com/public", 403),
        ("http://app.example.com%2e/public", 403),
        ("http://[::1/public", 403),
        ("http://[v1.x]/public", 403),
        ("http:///public", 403),
        ("http://app.example.com", 403),
        ("ftp://app.example.com/public", 403),
        // A raw `#` anywhere in the target: upstreams disagree on where the path ends.
        ("http://app.example.com/public#/../internal", 403),
        ("http://app.example.com/public?a#/../internal", 403),
        // Whitespace, and escaped control characters (C upstreams stop at `%00`).
        ("http://app.example.com/pub lic", 403),
        ("http://app.example.com/internal%00.txt", 403),
        ("http://app.example.com/public%0A", 403),
        // An escaped escape: an upstream that decodes twice reads `/intern%2561l` as `/internal`.
        ("http://app.example.com/intern%2561l", 403),
        ("http://app.example.com/public/%252e%252e/internal", 403),
        ("http://app.example.com/100%25", 200),
    ] {
        let headers = [("x-original-method", "GET"), ("x-original-url", url)];
        let status = ask(&app, AUTH_REQUEST, Some(&token), &headers).await.status;
        assert_eq!(status, expected, "X-Original-URL: {url}");
    }

    // Caddy and Traefik: X-Forwarded-Host and X-Forwarded-Uri.
    for (host, uri, expected) in [
        ("app.example.com", "/public", 200),
        ("app.example.com:8443", "/public", 200),
        ("[::1]:8080", "/public", 200),
        ("app.example.com", "/public#/../internal", 403),
        ("app.example.com", "/public%23/../internal", 403),
        ("app.example.com", "/pub lic", 403),
        ("app.example.com", "http://app.example.com/public", 403),
        ("app.example.com?", "/public", 403),
        ("app.example.com:x", "/public", 403),
        ("a@app.example.com", "/public", 403),
        ("app.example.com,ops.example.com", "/public", 403),
        ("app.example.com/x", "/public", 403),
        ("", "/public", 403),
    ] {
        let headers = [
            ("x-forwarded-method", "GET"),
            ("x-forwarded-host", host),
            ("x-forwarded-uri", uri),
        ];
        let status = ask(&app, FORWARD_AUTH, Some(&token), &headers).await.status;
        assert_eq!(status, expected, "X-Forwarded-Host: {host}, -Uri: {uri}");
    }
}

/// Every upstream answers HEAD as GET without the body: a rule for GET covers it.
async fn head_is_judged_as_get_by_rules_that_name_get(backend: Backend) {
    let (args, _dir) = with_rules(RULES);
    let app = spawn_app_with(backend, args).await;
    let (token, _) = app.logged_in_user("ann@example.com").await;
    let status = |method: &'static str, token: String| {
        let app = &app;
        async move {
            let forwarded = [
                ("x-forwarded-method", method),
                ("x-forwarded-host", "h"),
                ("x-forwarded-uri", "/reports/7"),
            ];
            let original = [
                ("x-original-method", method),
                ("x-original-url", "https://h/reports/7"),
            ];
            let a = ask(app, FORWARD_AUTH, Some(&token), &forwarded).await;
            let b = ask(app, AUTH_REQUEST, Some(&token), &original).await;
            assert_eq!(a.status, b.status, "{method}");
            a.status
        }
    };
    for method in ["GET", "HEAD", "head"] {
        assert_eq!(status(method, token.clone()).await, 403, "{method}");
    }
    assert_eq!(status("POST", token.clone()).await, 200);
    let strong = two_factor_token(&app, &token, "ann@example.com").await;
    assert_eq!(status("HEAD", strong).await, 200);
}

/// One wrong CIDR in GATEHOUSE_TRUSTED_PROXIES must not switch every rule off in silence.
async fn with_rules_an_untrusted_peer_is_refused_unless_told_otherwise(backend: Backend) {
    let described = [
        ("x-forwarded-method", "GET"),
        ("x-forwarded-host", "h"),
        ("x-forwarded-uri", "/public"),
    ];
    for (untrusted, expected) in [
        (None, 403),
        (Some("refuse"), 403),
        (Some("token-only"), 200),
    ] {
        let (mut args, _dir) = with_rules(RULES);
        args.trusted_proxies = Some("10.0.0.0/8".into());
        args.untrusted_forward_auth = untrusted.map(str::to_owned);
        let app = spawn_app_with(backend.clone(), args).await;
        let (token, _) = app.logged_in_user("bob@example.com").await;
        for path in [FORWARD_AUTH, AUTH_REQUEST] {
            for headers in [&described[..], &[]] {
                let status = ask(&app, path, Some(&token), headers).await.status;
                assert_eq!(status, expected, "{untrusted:?} {path} {headers:?}");
            }
            // Judged by the token alone means the token is still needed.
            if expected == 200 {
                assert_eq!(ask(&app, path, None, &described).await.status, 401);
            }
        }
    }
    // Without rules there is nothing to walk around: the token decides, from any peer.
    let app = spawn_app_with(backend.clone(), SettingsArgs::default()).await;
    let (token, _) = app.logged_in_user("bob@example.com").await;
    assert_eq!(ask(&app, FORWARD_AUTH, Some(&token), &[]).await.status, 200);

    // The real binary: a warning at the start, and the refusals logged, at most once a minute.
    let db = TestDatabase::new(&backend).await;
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("rules.toml");
    std::fs::write(&rules, RULES).unwrap();
    let mut instance = Instance::start(&db, &[("GATEHOUSE_ACCESS_RULES", rules.to_str().unwrap())]);
    // After the start: `serve` makes the database, the CLI only uses one.
    add_user(&db, "cy@example.com");
    let token = instance.login("cy@example.com", PASSWORD).await.data(200)["accessToken"]
        .as_str()
        .unwrap()
        .to_owned();
    for _ in 0..20 {
        let status = ask(&instance, FORWARD_AUTH, Some(&token), &described).await;
        assert_eq!(status.status, 403);
    }
    instance.stop();
    let deadline = Instant::now() + Duration::from_secs(5);
    let log = loop {
        let log = instance.log.lock().unwrap().clone();
        if log.iter().any(|l| l.contains("shutting down")) {
            break log;
        }
        assert!(Instant::now() < deadline, "no shutdown line: {log:#?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let warned = |needles: &[&str]| {
        log.iter()
            .filter(|l| l.contains("WARN") && needles.iter().all(|n| l.contains(n)))
            .count()
    };
    assert_eq!(
        warned(&["GATEHOUSE_ACCESS_RULES", "GATEHOUSE_TRUSTED_PROXIES"]),
        1,
        "{log:#?}"
    );
    assert_eq!(
        warned(&[
            "127.0.0.1",
            "GATEHOUSE_TRUSTED_PROXIES",
            "GATEHOUSE_UNTRUSTED_FORWARD_AUTH"
        ]),
        1,
        "{log:#?}"
    );
}
