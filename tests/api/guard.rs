//! Guarding other services (docs/api.md §6), asked directly over HTTP as a proxy would: roles in
//! tokens and `/auth/me`, the forward-auth endpoints and their access rules. `proxies.rs` puts
//! real nginx and Caddy in front of the same endpoints; `introspection.rs` is the service's view.

use std::time::{Duration, Instant};

use gatehouse::config::SettingsArgs;
use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use serde_json::Value;

use crate::helpers::{
    Backend, PASSWORD, SPREAD_DEADLINE, TestApp, both_backends, claims, code_at, now_seconds,
    spawn_app, spawn_app_with,
};

both_backends!(
    forward_auth_tells_who_holds_a_live_token,
    roles_reach_tokens_the_account_and_forward_auth,
    access_rules_decide_by_host_path_method_role_and_factor,
    each_endpoint_reads_only_its_own_convention,
    a_bad_rules_file_stops_the_start_naming_the_rule,
);

pub const FORWARD_AUTH: &str = "/api/v1/authz/forward-auth";
pub const AUTH_REQUEST: &str = "/api/v1/authz/auth-request";

/// Status and headers of a forward-auth answer, which has no body.
pub struct Decision {
    pub status: StatusCode,
    pub headers: HeaderMap,
}

impl Decision {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// Asks an endpoint as a proxy would: the client's token, and the proxy's headers.
pub async fn ask(
    app: &crate::helpers::Http,
    path: &str,
    token: Option<&str>,
    headers: &[(&str, &str)],
) -> Decision {
    let mut request = app.client.get(app.url(path));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let body = response.bytes().await.unwrap();
    assert!(
        body.is_empty(),
        "forward-auth answers have no body: {body:?}"
    );
    assert_eq!(headers.get("cache-control").unwrap(), "no-store");
    Decision { status, headers }
}

fn trusting_loopback() -> SettingsArgs {
    SettingsArgs {
        trusted_proxies: Some("127.0.0.1/32".into()),
        ..Default::default()
    }
}

pub fn with_rules(rules: &str) -> (SettingsArgs, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rules.toml");
    std::fs::write(&path, rules).unwrap();
    let args = SettingsArgs {
        access_rules: Some(path.display().to_string()),
        ..trusting_loopback()
    };
    (args, dir)
}

pub fn roles(app: &TestApp, email: &str, change: &[&str]) -> Vec<String> {
    let mut args = vec!["user", "roles", email];
    args.extend_from_slice(change);
    let output = app.cli(&args, None);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Turns 2FA on for the holder of `token` (whose e-mail is `email`) and logs in again with a code:
/// an access token whose session has a second factor.
pub async fn two_factor_token(app: &TestApp, token: &str, email: &str) -> String {
    let (secret, _) = app.enable_two_factor(token).await;
    let challenge = app.login(email, PASSWORD).await;
    let temp = challenge.data(200)["tempToken"]
        .as_str()
        .unwrap()
        .to_owned();
    let verified = app
        .post(
            "/api/v1/auth/2fa/verify",
            serde_json::json!({ "tempToken": temp, "code": code_at(&secret, now_seconds()) }),
        )
        .await;
    verified.data(200)["accessToken"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Polls until `check` holds, for at most `limit`; returns how long it took.
pub async fn within<F, Fut>(limit: Duration, mut check: F) -> Duration
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let started = Instant::now();
    loop {
        if check().await {
            return started.elapsed();
        }
        assert!(started.elapsed() < limit, "not within {limit:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn forward_auth_tells_who_holds_a_live_token(backend: Backend) {
    let app = spawn_app(backend).await;
    let id = app
        .handle
        .add_user("zoe@example.com", "Zoë Ünal", PASSWORD)
        .await
        .unwrap();
    let login = app.login("zoe@example.com", PASSWORD).await;
    let data = login.data(200);
    let token = data["accessToken"].as_str().unwrap().to_owned();
    let refresh = data["refreshToken"].as_str().unwrap().to_owned();
    let sid = claims(&token)["sid"].as_str().unwrap().to_owned();

    for path in [FORWARD_AUTH, AUTH_REQUEST] {
        let none = ask(&app, path, None, &[]).await;
        assert_eq!(none.status, 401, "{path}");
        assert_eq!(none.header("www-authenticate"), Some("Bearer"));
        for bad in ["garbage", &refresh, &format!("{token}x")] {
            let refused = ask(&app, path, Some(bad), &[]).await;
            assert_eq!(refused.status, 401, "{path}");
            assert_eq!(
                refused.header("www-authenticate"),
                Some(r#"Bearer error="invalid_token""#)
            );
        }
        let ok = ask(&app, path, Some(&token), &[]).await;
        assert_eq!(ok.status, 200, "{path}");
        assert_eq!(ok.header("remote-user"), Some(id.to_string().as_str()));
        assert_eq!(ok.header("remote-email"), Some("zoe@example.com"));
        assert_eq!(ok.header("remote-email-verified"), Some("true"));
        assert_eq!(ok.header("remote-name"), Some("Zo%C3%AB %C3%9Cnal"));
        assert_eq!(ok.header("remote-groups"), Some(""));
        assert_eq!(ok.header("remote-session"), Some(sid.as_str()));
        assert!(ok.header("www-authenticate").is_none());

        // A token in the query string is not a credential.
        let query = format!("{path}?access_token={token}");
        assert_eq!(ask(&app, &query, None, &[]).await.status, 401);
    }
    // Any method a proxy may use.
    for method in [
        reqwest::Method::POST,
        reqwest::Method::DELETE,
        reqwest::Method::HEAD,
    ] {
        let answer = app
            .client
            .request(method.clone(), app.url(FORWARD_AUTH))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 200, "{method}");
    }

    // Logged out: refused at once on this instance.
    let (other, _) = app.logged_in_user("ann@example.com").await;
    assert_eq!(ask(&app, AUTH_REQUEST, Some(&other), &[]).await.status, 200);
    app.call(
        reqwest::Method::POST,
        "/api/v1/auth/logout",
        Some(&other),
        None,
    )
    .await
    .data(200);
    assert_eq!(ask(&app, AUTH_REQUEST, Some(&other), &[]).await.status, 401);

    // Expired: the bearer challenge says so.
    app.clock().advance(Duration::from_secs(86_400 + 6));
    let expired = ask(&app, FORWARD_AUTH, Some(&token), &[]).await;
    assert_eq!(expired.status, 401);
    assert!(
        expired
            .header("www-authenticate")
            .unwrap()
            .contains("expired")
    );
}

async fn roles_reach_tokens_the_account_and_forward_auth(backend: Backend) {
    let app = spawn_app(backend).await;
    let (old_token, _) = app.logged_in_user("ann@example.com").await;
    assert_eq!(claims(&old_token)["roles"], serde_json::json!([]));

    assert_eq!(
        roles(
            &app,
            "ann@example.com",
            &["--add", "ops", "--add", "admin", "--add", "ops"]
        ),
        ["admin", "ops"]
    );
    assert_eq!(roles(&app, "ANN@example.com", &[]), ["admin", "ops"]);
    let me = app.get("/api/v1/auth/me", &old_token).await;
    assert_eq!(me.data(200)["roles"], serde_json::json!(["admin", "ops"]));

    // Forward-auth answers with the roles as they are now, the old token notwithstanding; the
    // change was made by another process (the CLI), so it arrives by polling.
    let took = within(SPREAD_DEADLINE, || async {
        ask(&app, FORWARD_AUTH, Some(&old_token), &[])
            .await
            .header("remote-groups")
            == Some("admin,ops")
    })
    .await;
    eprintln!("roles reached forward-auth after {took:?}");
    // A new token carries them.
    let token = app.login("ann@example.com", PASSWORD).await.data(200)["accessToken"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(claims(&token)["roles"], serde_json::json!(["admin", "ops"]));

    assert_eq!(
        roles(
            &app,
            "ann@example.com",
            &["--remove", "ops", "--remove", "nope"]
        ),
        ["admin"]
    );
    within(SPREAD_DEADLINE, || async {
        ask(&app, FORWARD_AUTH, Some(&token), &[])
            .await
            .header("remote-groups")
            == Some("admin")
    })
    .await;

    // Bad names and unknown accounts: one clear line, nothing changed.
    for (args, expected) in [
        (
            vec!["user", "roles", "ann@example.com", "--add", "Admin"],
            "not a role name",
        ),
        (
            vec!["user", "roles", "ann@example.com", "--add", "a,b"],
            "not a role name",
        ),
        (
            vec!["user", "roles", "nobody@example.com", "--add", "x"],
            "no account",
        ),
    ] {
        let output = app.cli(&args, None);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{args:?}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    }
    assert_eq!(roles(&app, "ann@example.com", &[]), ["admin"]);

    // An invitation can carry roles; a bad one is refused before anything is made.
    let bad = app.cli(
        &[
            "user",
            "invite",
            "--email",
            "cy@example.com",
            "--name",
            "Cy",
            "--role",
            "Ops",
        ],
        None,
    );
    assert!(!bad.status.success());
    let invited = app.cli(
        &[
            "user",
            "invite",
            "--email",
            "cy@example.com",
            "--name",
            "Cy",
            "--role",
            "ops",
            "--role",
            "billing",
        ],
        None,
    );
    assert!(
        invited.status.success(),
        "{}",
        String::from_utf8_lossy(&invited.stderr)
    );
    assert_eq!(roles(&app, "cy@example.com", &[]), ["billing", "ops"]);

    let list = app.cli(&["user", "list", "--json"], None);
    let users: Value = serde_json::from_slice(&list.stdout).unwrap();
    let ann = users
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["email"] == "ann@example.com");
    assert_eq!(ann.unwrap()["roles"], serde_json::json!(["admin"]));
    let audit = app.cli(&["audit", "--json"], None);
    let events: Value = serde_json::from_slice(&audit.stdout).unwrap();
    let changes: Vec<&Value> = events
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["event"] == "user.roles_changed" && e["email"] == "ann@example.com")
        .collect();
    assert_eq!(changes.len(), 2);
    assert_eq!(changes[1]["detail"], "via=cli added= removed=ops");
}

/// The book's access rules (Guarding other services), as an operator would copy them.
pub fn readme_rules() -> String {
    let readme = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/guide/guarding.md"
    ))
    .unwrap();
    readme
        .split("<!-- access-rules-example -->")
        .nth(1)
        .and_then(|rest| rest.split("```toml").nth(1))
        .and_then(|rest| rest.split("```").next())
        .expect("the access rules example in the README")
        .to_owned()
}

async fn access_rules_decide_by_host_path_method_role_and_factor(backend: Backend) {
    let (args, _dir) = with_rules(&readme_rules());
    let app = spawn_app_with(backend, args).await;
    let (token, _) = app.logged_in_user("ann@example.com").await;
    let forwarded = |method: &'static str, host: &'static str, uri: &'static str| {
        [
            ("x-forwarded-method", method),
            ("x-forwarded-host", host),
            ("x-forwarded-uri", uri),
        ]
    };
    let status = |method, host, uri, token: Option<String>| {
        let app = &app;
        async move {
            ask(
                app,
                FORWARD_AUTH,
                token.as_deref(),
                &forwarded(method, host, uri),
            )
            .await
            .status
        }
    };
    let t = || Some(token.clone());

    // The role rule: its host, path prefix and methods all match.
    assert_eq!(
        status("POST", "admin.example.com", "/api/admin/users", t()).await,
        403
    );
    assert_eq!(
        status("delete", "Admin.Example.com:443", "/api/%61dmin", t()).await,
        403
    );
    assert_eq!(
        status("GET", "admin.example.com", "/api/admin", t()).await,
        200
    );
    assert_eq!(
        status("POST", "www.example.com", "/api/admin", t()).await,
        200
    );
    assert_eq!(
        status("POST", "admin.example.com", "/api/administrator", t()).await,
        200
    );
    // A denying rule refuses before the token is looked at; a spelling cannot walk around it.
    assert_eq!(status("GET", "x", "/internal/a", None).await, 403);
    assert_eq!(status("GET", "x", "/public/../internal", t()).await, 403);
    assert_eq!(status("GET", "x", "//internal?x=1", t()).await, 403);
    // A path that cannot be read one way is refused whatever the rules say of it.
    assert_eq!(
        status("GET", "x", "/public%2F..%2Finternal", t()).await,
        403
    );
    assert_eq!(status("GET", "x", "/../internal", t()).await, 403);
    assert_eq!(status("GET", "x", "/a%zz", t()).await, 403);
    // Spellings some upstreams read as `/internal`: path parameters (Tomcat), a backslash (IIS).
    assert_eq!(status("GET", "x", "/internal;jsessionid=1", t()).await, 403);
    // The same, escaped: an upstream that decodes before it splits reads it as `/internal` too.
    assert_eq!(
        status("GET", "x", "/internal%3Bjsessionid=1", t()).await,
        403
    );
    assert_eq!(status("GET", "x", "/internal%3bx", t()).await, 403);
    assert_eq!(status("GET", "x", "/x\\..\\internal", t()).await, 403);
    // No rule: a live session suffices; no token is still 401.
    assert_eq!(status("GET", "x", "/anything", t()).await, 200);
    assert_eq!(status("GET", "x", "/anything", None).await, 401);

    let denied = ask(
        &app,
        FORWARD_AUTH,
        Some(&token),
        &forwarded("POST", "admin.example.com", "/api/admin"),
    )
    .await;
    assert_eq!(
        denied.header("www-authenticate"),
        Some(r#"Bearer error="insufficient_scope""#)
    );

    // With the role, allowed (as soon as the change reaches this instance).
    roles(&app, "ann@example.com", &["--add", "ops"]);
    within(SPREAD_DEADLINE, || async {
        status("POST", "admin.example.com", "/api/admin", t()).await == 200
    })
    .await;

    // The two-factor rule: a password-only session is refused, one with a code is allowed.
    assert_eq!(status("GET", "x", "/reports/2026/export", t()).await, 403);
    let strong = two_factor_token(&app, &token, "ann@example.com").await;
    assert_eq!(
        status("GET", "x", "/reports/2026/export/csv", Some(strong)).await,
        200
    );
}

async fn each_endpoint_reads_only_its_own_convention(backend: Backend) {
    let (args, _dir) = with_rules(&readme_rules());
    let app = spawn_app_with(backend, args).await;
    let (token, _) = app.logged_in_user("ann@example.com").await;

    type Headers<'a> = &'a [(&'a str, &'a str)];
    let internal_original: Headers = &[
        ("x-original-method", "GET"),
        ("x-original-url", "https://h.example.com/internal/x?y"),
    ];
    let open_original: Headers = &[
        ("x-original-method", "GET"),
        ("x-original-url", "https://h.example.com/open"),
    ];
    let open_forwarded: Headers = &[
        ("x-forwarded-method", "GET"),
        ("x-forwarded-host", "h.example.com"),
        ("x-forwarded-uri", "/open"),
    ];
    let cases: &[(&str, Headers, u16, &str)] = &[
        (
            AUTH_REQUEST,
            internal_original,
            403,
            "nginx's own headers are read",
        ),
        (
            AUTH_REQUEST,
            open_original,
            200,
            "nginx's own headers are read",
        ),
        // Without its own headers an endpoint fails closed; the other convention's mean nothing.
        (
            AUTH_REQUEST,
            open_forwarded,
            403,
            "Caddy's headers at the nginx endpoint",
        ),
        (
            FORWARD_AUTH,
            open_original,
            403,
            "nginx's headers at the Caddy endpoint",
        ),
        (
            FORWARD_AUTH,
            open_forwarded,
            200,
            "Caddy's own headers are read",
        ),
        (
            FORWARD_AUTH,
            &[
                ("x-forwarded-method", "GET"),
                ("x-forwarded-host", "h.example.com"),
                ("x-forwarded-uri", "/open"),
                ("x-forwarded-uri", "/internal"),
            ],
            403,
            "a header given twice could be read two ways",
        ),
        (
            AUTH_REQUEST,
            &[("x-original-method", "GET"), ("x-original-url", "/open")],
            403,
            "a relative X-Original-URL names no host",
        ),
    ];
    for (endpoint, headers, expected, why) in cases {
        let status = ask(&app, endpoint, Some(&token), headers).await.status;
        assert_eq!(status, *expected, "{why}: {endpoint} {headers:?}");
    }
    // Huge headers are the HTTP layer's to refuse (431), not a 500.
    let huge = "/a".repeat(20_000);
    let answer = app
        .client
        .get(app.url(FORWARD_AUTH))
        .bearer_auth(&token)
        .header("x-forwarded-uri", huge)
        .send()
        .await
        .unwrap();
    assert!(
        answer.status() == 431 || answer.status() == 403,
        "{}",
        answer.status()
    );
    // From a peer that is not a trusted proxy: forward_auth_input.rs.
}

async fn a_bad_rules_file_stops_the_start_naming_the_rule(backend: Backend) {
    let db = crate::helpers::TestDatabase::new(&backend).await;
    let dir = tempfile::tempdir().unwrap();
    for (rules, expected) in [
        (
            "[[rule]]\npolicy = \"deny\"\n[[rule]]\npaths = [\"/a**\"]\npolicy = \"deny\"",
            "rule 2: path \"/a**\" is not a valid glob",
        ),
        (
            "[[rule]]\npolicy = \"roles\"",
            "rule 1: policy \"roles\" needs a list of roles",
        ),
        (
            "[[rule]]\npolicy = \"open\"",
            "rule 1: unknown policy \"open\"",
        ),
        (
            "[[rule]]\npolicy = \"roles\"\nroles = [\"Ad min\"]",
            "rule 1: \"Ad min\" is not a role name",
        ),
    ] {
        let path = dir.path().join("rules.toml");
        std::fs::write(&path, rules).unwrap();
        let output = crate::helpers::run(
            db.command().env("GATEHOUSE_ACCESS_RULES", &path).args([
                "serve",
                "--listen",
                "127.0.0.1:0",
            ]),
            None,
        );
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{rules}");
        assert!(stderr.contains("GATEHOUSE_ACCESS_RULES"), "{stderr}");
        assert!(stderr.contains(expected), "{stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    }
}
