//! What operators see: metrics on their own listener, request ids, logs without secrets, the
//! audit trail, and a clean shutdown under load.

use crate::helpers::code_at;
use futures::future::join_all;
use gatehouse::config::SettingsArgs;
use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{
    Backend, Http, Instance, PASSWORD, TestDatabase, base32_decode, both_backends, now_seconds,
    sample, scrape, spawn_app_with,
};

both_backends!(
    metrics_are_on_their_own_listener_by_route_template,
    every_request_has_an_id_given_or_made,
    logs_carry_request_ids_and_no_secret,
    a_rule_says_whom_it_refused_and_the_access_log_each_request,
    the_audit_trail_records_who_did_what_from_where,
    shutdown_answers_every_accepted_request,
);

async fn metrics_are_on_their_own_listener_by_route_template(backend: Backend) {
    let app = spawn_app_with(
        backend,
        SettingsArgs {
            metrics_listen: Some("127.0.0.1:0".into()),
            ..Default::default()
        },
    )
    .await;
    let (access, refresh) = app.logged_in_user("mia@example.com").await;
    app.login("mia@example.com", "a wrong password")
        .await
        .error(401, "INVALID_CREDENTIALS");
    app.post("/api/v1/auth/refresh", json!({ "refreshToken": refresh }))
        .await
        .data(200);
    let id = uuid::Uuid::now_v7();
    app.get(&format!("/api/v1/crm/contacts/{id}"), &access)
        .await
        .error(404, "NOT_FOUND");
    app.call(Method::POST, "/api/v1/auth/logout", Some(&access), None)
        .await
        .data(200);
    // Not on the API's address.
    let on_api = app.client.get(app.url("/metrics")).send().await.unwrap();
    assert_eq!(on_api.status(), 404);

    let text = scrape(&app).await;
    assert!(
        !text.contains(&id.to_string()),
        "a raw path leaked into a label"
    );
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        assert!(line.starts_with("gatehouse_"), "{line}");
    }
    let route = r#"gatehouse_http_requests_total{method="GET",route="/api/v1/crm/contacts/{id}",status="404"}"#;
    assert_eq!(sample(&text, route), 1.0);
    let count = r#"gatehouse_http_request_duration_seconds_count{method="POST",route="/api/v1/auth/login"}"#;
    assert_eq!(sample(&text, count), 2.0);
    assert_eq!(
        sample(&text, r#"gatehouse_logins_total{outcome="success"}"#),
        1.0
    );
    assert_eq!(
        sample(
            &text,
            r#"gatehouse_logins_total{outcome="bad_credentials"}"#
        ),
        1.0
    );
    assert_eq!(
        sample(&text, r#"gatehouse_refreshes_total{outcome="rotated"}"#),
        1.0
    );
    assert_eq!(
        sample(
            &text,
            r#"gatehouse_session_revocations_total{reason="logout"}"#
        ),
        1.0
    );
    assert_eq!(sample(&text, "gatehouse_password_hash_queue"), 0.0);
    assert!(sample(&text, "gatehouse_password_hash_wait_seconds_count") >= 2.0);
    // The logins' Argon2 memory (19 MiB), held until the hashing thread idles.
    assert!(sample(&text, "gatehouse_password_hash_memory_bytes") >= 19.0 * 1024.0 * 1024.0);
    assert!(sample(&text, r#"gatehouse_db_connections{state="idle"}"#) >= 0.0);
}

async fn every_request_has_an_id_given_or_made(backend: Backend) {
    let app = spawn_app_with(backend, SettingsArgs::default()).await;
    let made = app.client.get(app.url("/healthz")).send().await.unwrap();
    let id = made.headers()["x-request-id"].to_str().unwrap().to_owned();
    assert!(uuid::Uuid::parse_str(&id).is_ok(), "{id}");
    let given = app
        .client
        .get(app.url("/no/such/route"))
        .header("x-request-id", "trace-42.a_b:c")
        .send()
        .await
        .unwrap();
    assert_eq!(given.headers()["x-request-id"], "trace-42.a_b:c");
    // Not a plausible id: replaced, so it cannot forge anything in the logs.
    let odd = app
        .client
        .get(app.url("/healthz"))
        .header("x-request-id", "evil\" id {}")
        .send()
        .await
        .unwrap();
    let replaced = odd.headers()["x-request-id"].to_str().unwrap();
    assert!(uuid::Uuid::parse_str(replaced).is_ok(), "{replaced}");
}

/// A full session through the real binary at debug level with JSON logs; afterwards no log line
/// holds any secret that crossed the wire.
async fn logs_carry_request_ids_and_no_secret(backend: Backend) {
    let db = TestDatabase::migrated(&backend).await;
    let output = db.cli(
        &[
            "user",
            "add",
            "--email",
            "lea@example.com",
            "--name",
            "Lea",
            "--password-stdin",
        ],
        Some(&format!("{PASSWORD}\n")),
    );
    assert!(output.status.success());
    let mut server = Instance::start(
        &db,
        &[("GATEHOUSE_LOG", "debug"), ("GATEHOUSE_LOG_FORMAT", "json")],
    );
    let mut secrets: Vec<String> = vec![PASSWORD.into()];
    if let Some(key) = &db.master_key {
        secrets.push(key.clone());
    }
    let http: &Http = &server;
    let answer = http
        .send(
            http.client
                .post(http.url("/api/v1/auth/login"))
                .header("x-request-id", "lea-login-1")
                .json(&json!({ "email": "lea@example.com", "password": PASSWORD })),
        )
        .await;
    let access = answer.data(200)["accessToken"].as_str().unwrap().to_owned();
    let refresh = answer.data(200)["refreshToken"]
        .as_str()
        .unwrap()
        .to_owned();
    let setup = http
        .call(
            Method::POST,
            "/api/v1/auth/2fa/setup",
            Some(&access),
            Some(json!({ "password": PASSWORD })),
        )
        .await;
    let secret_b32 = setup.data(200)["secret"].as_str().unwrap().to_owned();
    let secret = base32_decode(&secret_b32);
    let (codes, enabling) = http.enable_with_previous_code(&access, &secret).await;
    let challenge = http.login("lea@example.com", PASSWORD).await;
    let temp = challenge.data(200)["tempToken"]
        .as_str()
        .unwrap()
        .to_owned();
    let code = code_at(&secret, now_seconds());
    let verified = http
        .post(
            "/api/v1/auth/2fa/verify",
            json!({ "tempToken": temp, "code": code }),
        )
        .await;
    let second_access = verified.data(200)["accessToken"]
        .as_str()
        .unwrap()
        .to_owned();
    let rotated = http
        .post("/api/v1/auth/refresh", json!({ "refreshToken": refresh }))
        .await;
    let rotated_refresh = rotated.data(200)["refreshToken"]
        .as_str()
        .unwrap()
        .to_owned();
    let new_password = "a secret new passphrase";
    http.call(
        Method::POST,
        "/api/v1/auth/password",
        Some(&second_access),
        Some(json!({ "currentPassword": PASSWORD, "newPassword": new_password })),
    )
    .await
    .data(200);
    // A failed login with a password that is someone's secret too.
    http.login("lea@example.com", "wrong but private words")
        .await
        .error(401, "INVALID_CREDENTIALS");
    secrets.extend([
        access,
        refresh,
        secret_b32,
        enabling,
        temp,
        code,
        second_access,
        rotated_refresh,
        new_password.into(),
        "wrong but private words".into(),
    ]);
    secrets.extend(codes);
    assert!(server.stop().success());

    let log = server.log.lock().unwrap().clone();
    assert!(log.len() > 10, "{log:#?}");
    for line in &log {
        let entry: Value =
            serde_json::from_str(line).unwrap_or_else(|_| panic!("not JSON: {line}"));
        for secret in &secrets {
            assert!(
                !line.contains(secret.as_str()),
                "a secret in the log: {entry}"
            );
        }
    }
    assert!(
        log.iter().any(|l| l.contains("lea-login-1")),
        "the request id is in the request's log lines"
    );
}

/// Issue 45: "which rule refused Bob?" is in the log, the rule named, at most a line per rule
/// every 10 s (the refusals in between counted); with `GATEHOUSE_ACCESS_LOG=on`, a line per
/// request with its route template, status and client, never the raw path or query.
async fn a_rule_says_whom_it_refused_and_the_access_log_each_request(backend: Backend) {
    let db = TestDatabase::migrated(&backend).await;
    let output = db.cli(
        &[
            "user",
            "add",
            "--email",
            "bob@example.com",
            "--name",
            "Bob",
            "--password-stdin",
        ],
        Some(&format!("{PASSWORD}\n")),
    );
    assert!(output.status.success());
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("rules.toml");
    std::fs::write(
        &rules,
        "[[rule]]\nname = \"admin area\"\npaths = [\"/admin\"]\npolicy = \"roles\"\nroles = [\"admin\"]\n",
    )
    .unwrap();
    let rules = rules.display().to_string();
    let mut server = Instance::start(
        &db,
        &[
            ("GATEHOUSE_ACCESS_RULES", rules.as_str()),
            ("GATEHOUSE_TRUSTED_PROXIES", "127.0.0.1/32"),
            ("GATEHOUSE_ACCESS_LOG", "on"),
        ],
    );
    let http: &Http = &server;
    let login = http.login("bob@example.com", PASSWORD).await;
    let token = login.data(200)["accessToken"].as_str().unwrap().to_owned();
    let user = login.data(200)["user"]["id"].as_str().unwrap().to_owned();
    for _ in 0..3 {
        // forward-auth's answers carry no body: the proxy's client sees the application's.
        let refused = (http.client.get(http.url("/api/v1/authz/forward-auth")))
            .bearer_auth(&token)
            .header("x-forwarded-method", "GET")
            .header("x-forwarded-host", "app.example.test")
            .header("x-forwarded-uri", "/admin/users?q=secret-search")
            .send()
            .await
            .unwrap();
        assert_eq!(refused.status(), 403);
    }
    http.get_json("/healthz").await;
    assert!(server.stop().success());
    let log = server.log.lock().unwrap().clone();
    let refusals: Vec<&String> = log
        .iter()
        .filter(|l| {
            l.contains("forward-auth: rule 1 (admin area) refused GET app.example.test/admin/users")
        })
        .collect();
    assert_eq!(
        refusals.len(),
        1,
        "one line for three refusals within 10 s: {log:#?}"
    );
    assert!(refusals[0].contains(&user), "{}", refusals[0]);
    assert!(
        log.iter()
            .any(|l| l.contains("gatehouse::access") && l.contains("GET /healthz 200")),
        "{log:#?}"
    );
    assert!(
        log.iter()
            .any(|l| l.contains("GET /api/v1/authz/forward-auth 403")),
        "{log:#?}"
    );
    assert!(!log.iter().any(|l| l.contains("secret-search")), "{log:#?}");
}

fn audit_events(db: &TestDatabase, args: &[&str]) -> Vec<Value> {
    let mut all = vec!["audit", "--json"];
    all.extend_from_slice(args);
    let output = db.cli(&all, None);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

async fn the_audit_trail_records_who_did_what_from_where(backend: Backend) {
    let app = spawn_app_with(backend, SettingsArgs::default()).await;
    app.create_user("ned@example.com", PASSWORD).await;
    app.create_user("ola@example.com", PASSWORD).await;
    app.login("ned@example.com", "a wrong password").await;
    app.login("nobody@example.com", "a wrong password").await;
    let answer = app
        .send(
            app.client
                .post(app.url("/api/v1/auth/login"))
                .header("user-agent", "AuditTest/1.0")
                .json(&json!({ "email": "ned@example.com", "password": PASSWORD })),
        )
        .await;
    let access = answer.data(200)["accessToken"].as_str().unwrap().to_owned();
    let (secret, codes) = app.enable_two_factor(&access).await;
    let temp = app.login("ned@example.com", PASSWORD).await.data(200)["tempToken"]
        .as_str()
        .unwrap()
        .to_owned();
    app.post(
        "/api/v1/auth/2fa/verify",
        json!({ "tempToken": temp, "code": "000000" }),
    )
    .await;
    app.post(
        "/api/v1/auth/2fa/verify",
        json!({ "tempToken": temp, "code": codes[0] }),
    )
    .await
    .data(200);
    let _ = secret;
    app.call(
        Method::POST,
        "/api/v1/auth/logout",
        Some(&access),
        Some(json!({ "scope": "all" })),
    )
    .await
    .data(200);
    assert!(
        app.cli(&["user", "disable", "ola@example.com"], None)
            .status
            .success()
    );
    assert!(app.cli(&["keys", "rotate"], None).status.success());

    let events = audit_events(&app.db, &[]);
    let names: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "user.created",
            "user.created",
            "login.failed",
            "login.failed",
            "login.succeeded",
            "two_factor.enabled",
            "login.challenged",
            "two_factor.failed",
            "recovery_code.used",
            "two_factor.succeeded",
            "logout",
            "user.disabled",
            "key.rotated",
        ]
    );
    let succeeded = &events[4];
    assert_eq!(succeeded["email"], "ned@example.com");
    assert_eq!(succeeded["ip"], "127.0.0.1");
    assert_eq!(succeeded["userAgent"], "AuditTest/1.0");
    assert!(succeeded["sessionId"].is_string());
    assert!(succeeded["at"].as_str().unwrap().ends_with('Z'));
    // An unknown e-mail is not recorded (it may be a password typed in the wrong box).
    assert_eq!(events[3]["userId"], Value::Null);
    assert_eq!(events[3]["detail"], "unknown_account");
    assert_eq!(events[2]["detail"], "wrong_password");
    assert_eq!(events[10]["detail"], "scope=all sessions=2");

    let ned = audit_events(&app.db, &["--user", "ned@example.com"]);
    assert!(ned.iter().all(|e| e["email"] == "ned@example.com"));
    assert_eq!(ned.len(), 9);
    let later = audit_events(&app.db, &["--since", "2999-01-01T00:00:00Z"]);
    assert!(later.is_empty());
    let text = app.cli(&["audit", "--user", "ned@example.com"], None);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.lines()
            .any(|l| l.contains("login.succeeded") && l.contains("ip=127.0.0.1"))
    );

    // Kept 90 days by default, then purged by housekeeping.
    app.clock()
        .advance(std::time::Duration::from_secs(91 * 86_400));
    let purged = app.handle.housekeep().await.unwrap();
    assert_eq!(purged.audit_events, events.len() as u64);
    assert!(audit_events(&app.db, &["--since", "1970-01-01T00:00:00Z"]).is_empty());
}

/// SIGTERM during a burst of logins: every request the server began to handle is answered (200,
/// or 503 once the hash pool is closed), and the process exits 0. Which requests it began is read
/// from its own log (each request names its id), not guessed from timing: a connection still in the
/// kernel's queue when the listener closes is reset and was never the server's to answer.
async fn shutdown_answers_every_accepted_request(backend: Backend) {
    let db = TestDatabase::migrated(&backend).await;
    let output = db.cli(
        &[
            "user",
            "add",
            "--email",
            "sid@example.com",
            "--name",
            "Sid",
            "--password-stdin",
        ],
        Some(&format!("{PASSWORD}\n")),
    );
    assert!(output.status.success());
    let mut server = Instance::start(
        &db,
        &[
            ("GATEHOUSE_RATE_LIMIT", "off"),
            ("GATEHOUSE_LOG", "tower_http=debug,info"),
            ("GATEHOUSE_LOG_FORMAT", "json"),
        ],
    );
    let http: &Http = &server;
    // A burst of logins (each a ~20 ms hash, two at a time): in flight when SIGTERM arrives.
    let burst = join_all((0..24).map(|i| {
        let client = reqwest::Client::new();
        let url = http.url("/api/v1/auth/login");
        async move {
            let id = format!("burst-{i}");
            let answer = client
                .post(url)
                .header("x-request-id", &id)
                .json(&json!({ "email": "sid@example.com", "password": PASSWORD }))
                .send()
                .await;
            (id, answer)
        }
    }));
    let pid = server.pid();
    let log = server.log.clone();
    // SIGTERM once the server has begun one of them (not after a fixed delay: on a loaded machine
    // none might have begun by then, and the test would prove nothing).
    let stop = async move {
        let begun = || {
            log.lock()
                .unwrap()
                .iter()
                .any(|line| line.contains("started processing request"))
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !begun() && std::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status();
    };
    let (answers, ()) = tokio::join!(burst, stop);
    assert!(server.wait().success(), "exit 0 after SIGTERM");
    let log = server.log.lock().unwrap().clone();
    let logged = |id: &str, message: &str| {
        log.iter().any(|line| {
            serde_json::from_str::<Value>(line)
                .is_ok_and(|entry| entry["message"] == message && entry["span"]["id"] == id)
        })
    };
    let mut answered = 0;
    for (id, answer) in answers {
        match answer {
            Ok(answer) => {
                assert!(
                    answer.status() == 200 || answer.status() == 503,
                    "{id}: {}",
                    answer.status()
                );
                answered += 1;
            }
            Err(error) => assert!(
                !logged(&id, "started processing request"),
                "{id} was begun and never answered: {error}"
            ),
        }
        assert_eq!(
            logged(&id, "started processing request"),
            logged(&id, "finished processing request"),
            "{id}: every request begun is finished"
        );
    }
    assert!(answered > 0, "the burst was under way at SIGTERM");
    // And it is gone: nothing listens any more.
    assert!(
        reqwest::get(server.url("/healthz")).await.is_err(),
        "still serving after shutdown"
    );
}
