use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::helpers::{Backend, PASSWORD, SPREAD_DEADLINE, both_backends, run, spawn_app};

both_backends!(
    user_add_prints_the_id_and_refuses_duplicates_and_weak_passwords,
    user_list_json_has_the_contract_fields,
    disable_ends_every_session_and_enable_restores_login,
    set_password_and_reset_2fa,
    key_rotation_reaches_the_running_service,
    housekeep_runs_one_pass_and_says_what_it_deleted,
    end_sessions_send_reset_and_delete,
);

fn stdout(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A failed command: non-zero exit and one line on stderr containing `needle`.
#[track_caller]
fn fails_with(output: &std::process::Output, needle: &str) {
    assert!(
        !output.status.success(),
        "expected a failure: {}",
        stdout(output)
    );
    let err = stderr(output);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "one line on stderr: {err:?}");
    assert!(
        lines[0].contains(needle),
        "{err:?} should mention {needle:?}"
    );
}

async fn user_add_prints_the_id_and_refuses_duplicates_and_weak_passwords(backend: Backend) {
    let app = spawn_app(backend).await;
    let add = |email: &str, password: &str| {
        app.cli(
            &[
                "user",
                "add",
                "--email",
                email,
                "--name",
                "Ann Admin",
                "--password-stdin",
            ],
            Some(&format!("{password}\n")),
        )
    };
    let output = add("ann@example.com", PASSWORD);
    assert!(output.status.success(), "{}", stderr(&output));
    let id = stdout(&output);
    let id = id.strip_suffix('\n').expect("one line");
    assert!(uuid::Uuid::parse_str(id).is_ok(), "the id alone: {id:?}");
    let login = app.login("ann@example.com", PASSWORD).await;
    assert_eq!(
        login.data(200)["user"]["id"],
        id,
        "the trailing newline is not part of the password"
    );

    fails_with(&add("ANN@example.com", PASSWORD), "in use");
    fails_with(&add("new@example.com", "password1"), "common");
    fails_with(&add("new@example.com", "short"), "at least 8");
    fails_with(&add("not-an-email", PASSWORD), "e-mail");
    let output = app.cli(
        &["user", "add", "--email", "x@example.com", "--name", "X"],
        Some(PASSWORD),
    );
    fails_with(&output, "--password-stdin");
}

async fn user_list_json_has_the_contract_fields(backend: Backend) {
    let app = spawn_app(backend).await;
    let (token, _) = app.logged_in_user("bea@example.com").await;
    app.enable_two_factor(&token).await;
    app.create_user("cid@example.com", PASSWORD).await;
    let output = app.cli(&["user", "list", "--json"], None);
    assert!(output.status.success(), "{}", stderr(&output));
    let users: Vec<Value> = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(users.len(), 2);
    let bea = users
        .iter()
        .find(|u| u["email"] == "bea@example.com")
        .unwrap();
    let keys: Vec<&str> = bea
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "id",
            "email",
            "fullName",
            "disabled",
            "twoFactorEnabled",
            "roles",
            "createdAt",
            "emailVerified",
            "lastLoginAt"
        ]
    );
    assert_eq!(bea["twoFactorEnabled"], true);
    assert!(bea["lastLoginAt"].is_string());
    let cid = users.iter().find(|u| u["email"] == "cid@example.com");
    assert_eq!(cid.unwrap()["lastLoginAt"], Value::Null);
    assert_eq!(bea["disabled"], false);
    let text = app.cli(&["user", "list"], None);
    assert!(stdout(&text).contains("cid@example.com"));
}

async fn disable_ends_every_session_and_enable_restores_login(backend: Backend) {
    let app = spawn_app(backend).await;
    let (token, refresh) = app.logged_in_user("dan@example.com").await;
    let output = app.cli(&["user", "disable", "DAN@example.com"], None);
    assert!(output.status.success(), "{}", stderr(&output));
    // The CLI is another process: the service learns of the revocation by polling.
    app.refused_within(&token, SPREAD_DEADLINE).await;
    app.post("/api/v1/auth/refresh", json!({ "refreshToken": refresh }))
        .await
        .error(401, "REFRESH_TOKEN_INVALID");
    app.login("dan@example.com", PASSWORD)
        .await
        .error(403, "ACCOUNT_DISABLED");

    assert!(
        app.cli(&["user", "enable", "dan@example.com"], None)
            .status
            .success()
    );
    app.login("dan@example.com", PASSWORD).await.data(200);
    fails_with(
        &app.cli(&["user", "disable", "nobody@example.com"], None),
        "no account",
    );
}

async fn set_password_and_reset_2fa(backend: Backend) {
    let app = spawn_app(backend).await;
    let (token, _) = app.logged_in_user("eli@example.com").await;
    let (secret, _) = app.enable_two_factor(&token).await;
    let new_password = "a brand new passphrase";
    let output = app.cli(
        &[
            "user",
            "set-password",
            "eli@example.com",
            "--password-stdin",
        ],
        Some(&format!("{new_password}\r\n")),
    );
    assert!(output.status.success(), "{}", stderr(&output));
    app.refused_within(&token, SPREAD_DEADLINE).await;
    app.login("eli@example.com", PASSWORD)
        .await
        .error(401, "INVALID_CREDENTIALS");
    let challenge = app.login("eli@example.com", new_password).await;
    assert_eq!(challenge.data(200)["requiresTwoFactor"], true);
    let temp = challenge.data(200)["tempToken"].clone();
    let code = crate::helpers::code_at(&secret, crate::helpers::now_seconds());
    let verified = app
        .post(
            "/api/v1/auth/2fa/verify",
            json!({ "tempToken": temp, "code": code }),
        )
        .await;
    let strong = verified.data(200)["accessToken"]
        .as_str()
        .unwrap()
        .to_owned();

    assert!(
        app.cli(&["user", "reset-2fa", "eli@example.com"], None)
            .status
            .success()
    );
    // The sessions the lost authenticator vouched for end too (the same action as the API's).
    app.refused_within(&strong, SPREAD_DEADLINE).await;
    let login = app.login("eli@example.com", new_password).await;
    assert!(login.data(200)["accessToken"].is_string(), "2FA is off");
    fails_with(
        &app.cli(
            &[
                "user",
                "set-password",
                "eli@example.com",
                "--password-stdin",
            ],
            Some("qwertyuiop\n"),
        ),
        "common",
    );
}

async fn key_rotation_reaches_the_running_service(backend: Backend) {
    let app = spawn_app(backend).await;
    let (old_token, _) = app.logged_in_user("fox@example.com").await;
    let old_kid = crate::helpers::jwt_header(&old_token)["kid"]
        .as_str()
        .unwrap()
        .to_owned();
    let output = app.cli(&["keys", "rotate"], None);
    assert!(output.status.success(), "{}", stderr(&output));
    let new_kid = crate::helpers::rotated_kid(&stdout(&output), "EdDSA");
    assert_ne!(new_kid, old_kid);

    let listed = stdout(&app.cli(&["keys", "list"], None));
    assert!(
        listed
            .lines()
            .any(|l| l.starts_with(&new_kid) && l.contains("active")),
        "{listed}"
    );
    assert!(
        listed
            .lines()
            .any(|l| l.starts_with(&old_kid) && l.contains("retired")),
        "{listed}"
    );

    // Within 10 s the service signs with the new key and publishes both.
    let started = Instant::now();
    loop {
        let login = app.login("fox@example.com", PASSWORD).await;
        let token = login.data(200)["accessToken"].as_str().unwrap().to_owned();
        if crate::helpers::jwt_header(&token)["kid"] == new_kid.as_str() {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "still signing with the old key"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let jwks = app.get_json("/.well-known/jwks.json").await;
    let kids: Vec<&str> = jwks["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["kid"].as_str().unwrap())
        .collect();
    assert!(
        kids.contains(&new_kid.as_str()) && kids.contains(&old_kid.as_str()),
        "{kids:?}"
    );
    app.get("/api/v1/crm/contacts", &old_token).await.data(200);

    // Revoked (a key believed stolen), the old key verifies nothing any more, and leaves the
    // JWK Set, within 10 s; the active key cannot be revoked.
    let output = app.cli(&["keys", "revoke", &new_kid], None);
    fails_with(&output, "no retired key");
    let output = app.cli(&["keys", "revoke", &old_kid], None);
    assert!(output.status.success(), "{}", stderr(&output));
    let started = Instant::now();
    loop {
        let answer = app.get("/api/v1/crm/contacts", &old_token).await;
        if answer.status == 401 {
            answer.error(401, "TOKEN_INVALID");
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "still accepted"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let jwks = app.get_json("/.well-known/jwks.json").await;
    // The three active keys a rotation makes (this instance, without the provider, had made only
    // its EdDSA key, now revoked).
    assert_eq!(jwks["keys"].as_array().unwrap().len(), 3, "{jwks}");
    assert!(!jwks.to_string().contains(&old_kid), "{jwks}");
    assert!(
        stdout(&app.cli(&["keys", "list"], None))
            .lines()
            .any(|l| l.starts_with(&old_kid) && l.contains("revoked"))
    );
}

/// Settings resolve flag, then environment, then file, then default; observed through which
/// database file `migrate` creates.
#[test]
fn settings_precedence_flag_env_file_default() {
    let dir = tempfile::tempdir().unwrap();
    let db = |name: &str| dir.path().join(name);
    let config = dir.path().join("gatehouse.toml");
    std::fs::write(
        &config,
        format!("database_url = \"sqlite://{}\"\n", db("file.db").display()),
    )
    .unwrap();
    let migrate = |env: Option<&str>, flag: Option<&str>| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_gatehouse"));
        command
            .env_clear()
            .current_dir(dir.path())
            .env("GATEHOUSE_CONFIG", &config);
        if let Some(name) = env {
            command.env(
                "GATEHOUSE_DATABASE_URL",
                format!("sqlite://{}", db(name).display()),
            );
        }
        command.arg("migrate");
        if let Some(name) = flag {
            command
                .arg("--database-url")
                .arg(format!("sqlite://{}", db(name).display()));
        }
        let output = run(&mut command, None);
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    };
    migrate(Some("env.db"), Some("flag.db"));
    assert!(db("flag.db").exists() && !db("env.db").exists());
    migrate(Some("env.db"), None);
    assert!(db("env.db").exists() && !db("file.db").exists());
    migrate(None, None);
    assert!(db("file.db").exists());
    std::fs::remove_file(&config).unwrap();
    let output = run(
        Command::new(env!("CARGO_BIN_EXE_gatehouse"))
            .env_clear()
            .current_dir(dir.path())
            .arg("migrate"),
        None,
    );
    assert!(output.status.success());
    assert!(
        dir.path().join("gatehouse.db").exists(),
        "default sqlite://gatehouse.db"
    );
}

#[test]
fn bad_settings_stop_the_program_with_one_line_naming_the_setting() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, &str, &str); 5] = [
        (
            "GATEHOUSE_ACCESS_TOKEN_TTL",
            "forever",
            "GATEHOUSE_ACCESS_TOKEN_TTL",
        ),
        ("GATEHOUSE_LISTEN", "not an address", "GATEHOUSE_LISTEN"),
        (
            "GATEHOUSE_DATABASE_URL",
            "mysql://x",
            "GATEHOUSE_DATABASE_URL",
        ),
        ("GATEHOUSE_MASTER_KEY", "c2hvcnQ=", "GATEHOUSE_MASTER_KEY"),
        ("GATEHOUSE_REGISTRATION", "maybe", "GATEHOUSE_REGISTRATION"),
    ];
    for (var, value, needle) in cases {
        let output = run(
            Command::new(env!("CARGO_BIN_EXE_gatehouse"))
                .env_clear()
                .current_dir(dir.path())
                .env(var, value)
                .arg("serve"),
            None,
        );
        assert!(
            !output.status.success(),
            "{var}={value} must stop the program"
        );
        let err = String::from_utf8_lossy(&output.stderr);
        assert_eq!(err.lines().count(), 1, "{err:?}");
        assert!(err.contains(needle), "{err:?}");
    }
    let output = run(
        Command::new(env!("CARGO_BIN_EXE_gatehouse"))
            .env_clear()
            .current_dir(dir.path())
            .env("GATEHOUSE_DATABASE_URL", "postgres://x@127.0.0.1/y")
            .arg("serve"),
        None,
    );
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(
        !output.status.success() && err.contains("GATEHOUSE_MASTER_KEY"),
        "{err}"
    );
    assert!(
        !dir.path().join("gatehouse.db").exists(),
        "nothing was opened"
    );
}

/// `gatehouse serve` as an operator runs it: the log names the bound address, the first start
/// creates the database and the master key file readable by their owner only, and SIGTERM ends it
/// cleanly.
#[test]
fn serve_names_its_address_creates_the_key_file_and_stops_on_sigterm() {
    use std::io::{BufRead as _, BufReader};
    use std::os::unix::fs::PermissionsExt as _;

    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_gatehouse"))
        .env_clear()
        .current_dir(dir.path())
        .args(["serve", "--listen", "127.0.0.1:0"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let address = loop {
        let line = lines.next().expect("serve logs before it exits").unwrap();
        if let Some(rest) = line.split("listening on http://").nth(1) {
            break rest.trim().to_owned();
        }
    };
    assert!(
        !address.ends_with(":0"),
        "the bound port, not the requested one: {address}"
    );
    let mut stream = std::net::TcpStream::connect(&address).unwrap();
    std::io::Write::write_all(
        &mut stream,
        b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    let mut reply = String::new();
    std::io::Read::read_to_string(&mut stream, &mut reply).unwrap();
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");

    // The database holds the password hashes and the encrypted secrets; SQLite gives its -wal and
    // -shm files (present while it runs) the database file's mode.
    for file in [
        "gatehouse.master.key",
        "gatehouse.db",
        "gatehouse.db-wal",
        "gatehouse.db-shm",
    ] {
        let mode = std::fs::metadata(dir.path().join(file))
            .unwrap_or_else(|e| panic!("{file}: {e}"))
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{file}: {:o}", mode & 0o777);
    }

    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = child.wait().unwrap();
    assert!(status.success(), "exit after SIGTERM: {status}");
}

/// A database or key file that others can read (made by an older version, or copied) is named in
/// a warning when `serve` starts.
#[test]
fn serve_warns_when_the_database_or_key_file_is_open_to_others() {
    use std::os::unix::fs::PermissionsExt as _;

    let dir = tempfile::tempdir().unwrap();
    let gatehouse = || {
        let mut command = Command::new(env!("CARGO_BIN_EXE_gatehouse"));
        command.env_clear().current_dir(dir.path());
        command
    };
    // `migrate` makes both files of a new database (`serve` does too; no other command does).
    assert!(run(gatehouse().arg("migrate"), None).status.success());
    let open_to_others = std::fs::Permissions::from_mode(0o644);
    for file in ["gatehouse.db", "gatehouse.master.key"] {
        std::fs::set_permissions(dir.path().join(file), open_to_others.clone()).unwrap();
    }
    let mut child = gatehouse()
        .args(["serve", "--listen", "127.0.0.1:0"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut log = Vec::new();
    for line in std::io::BufRead::lines(std::io::BufReader::new(child.stderr.take().unwrap())) {
        let line = line.unwrap();
        let listening = line.contains("listening on");
        log.push(line);
        if listening {
            break;
        }
    }
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let _ = child.wait();
    for (what, file) in [
        ("database file", "gatehouse.db"),
        ("master key file", "gatehouse.master.key"),
    ] {
        assert!(
            log.iter().any(|l| l.contains("WARN")
                && l.contains(what)
                && l.contains(file)
                && l.contains("chmod 600")),
            "no warning about {file}: {log:#?}"
        );
    }
}

/// Settings that only the real binary shows: JSON logs are one object per line; an in-memory
/// SQLite URL and an unknown key in the settings file stop the program with one line.
#[test]
fn json_logs_and_refused_settings_through_the_binary() {
    let dir = tempfile::tempdir().unwrap();
    let gatehouse = || {
        let mut command = Command::new(env!("CARGO_BIN_EXE_gatehouse"));
        command.env_clear().current_dir(dir.path());
        command
    };

    // A first `migrate` creates the master key and warns about it: a log line to look at.
    let output = run(
        gatehouse()
            .env("GATEHOUSE_LOG_FORMAT", "json")
            .arg("migrate"),
        None,
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(!err.trim().is_empty(), "the master-key warning is logged");
    // The command's own answer is a sentence; every other line is a log entry.
    for line in err.lines().filter(|l| !l.starts_with("gatehouse: ")) {
        let entry: Value =
            serde_json::from_str(line).unwrap_or_else(|_| panic!("not JSON: {line}"));
        assert!(
            entry["level"].is_string() && entry["timestamp"].is_string(),
            "{entry}"
        );
    }

    let output = run(
        gatehouse()
            .env("GATEHOUSE_DATABASE_URL", "sqlite::memory:")
            .arg("migrate"),
        None,
    );
    fails_with(&output, "in-memory");

    let config = dir.path().join("gatehouse.toml");
    std::fs::write(&config, "listen = \"127.0.0.1:0\"\nlisten_port = 8080\n").unwrap();
    let output = run(
        gatehouse().arg("--config").arg(&config).arg("migrate"),
        None,
    );
    fails_with(&output, "listen_port");

    // The retired metadata-fetch switch: a file that says "off" (the book's example did) still
    // starts; "on" is refused, since nothing may turn the fetch's address rules off any more.
    for (value, starts) in [("off", true), ("on", false)] {
        std::fs::write(
            &config,
            format!("oauth_client_metadata_insecure_loopback = \"{value}\"\n"),
        )
        .unwrap();
        let output = run(
            gatehouse().arg("--config").arg(&config).arg("migrate"),
            None,
        );
        if starts {
            assert!(output.status.success(), "{}", stderr(&output));
        } else {
            fails_with(&output, "no longer a setting");
        }
    }
}

/// The book's settings file with every key (Deployment) is valid, and does name every key.
#[test]
fn the_readme_settings_example_is_valid_and_complete() {
    let readme = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/guide/deployment.md"
    ))
    .unwrap();
    let block = readme
        .split("<!-- settings-example -->")
        .nth(1)
        .and_then(|rest| rest.split("```toml").nth(1))
        .and_then(|rest| rest.split("```").next())
        .expect("the settings example in the README");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gatehouse.toml");
    std::fs::write(&path, block).unwrap();
    let settings = gatehouse::config::Settings::resolve(&gatehouse::config::SettingsArgs {
        config: Some(path),
        ..Default::default()
    })
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(settings.audience, "crm-api");
    assert_eq!(settings.max_connections, 1024);
    assert!(settings.metrics_listen.is_some());
    let keys: Vec<&str> = block
        .lines()
        .filter_map(|l| l.split_once(" = ").map(|(k, _)| k.trim()))
        .collect();
    let help = String::from_utf8(
        Command::new(env!("CARGO_BIN_EXE_gatehouse"))
            .args(["serve", "--help"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    // Every flag of a setting (all but --config and --help) has its key in the example.
    for flag in help.split_whitespace().filter(|w| w.starts_with("--")) {
        let key = flag.trim_start_matches("--").replace('-', "_");
        if key == "config" || key == "help" {
            continue;
        }
        assert!(
            keys.contains(&key.as_str()),
            "{key} is missing from the example"
        );
    }
}

async fn housekeep_runs_one_pass_and_says_what_it_deleted(backend: Backend) {
    let app = spawn_app(backend).await;
    // 1 234 audit events from 1970, far past retention: more than one batch (500 rows first),
    // and two recent ones that stay.
    let id = if app.db.url.starts_with("sqlite:") {
        "randomblob(16)"
    } else {
        "gen_random_uuid()"
    };
    app.execute(&format!(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1236) \
         INSERT INTO audit_events (id, at, event) \
         SELECT {id}, CASE WHEN i > 1234 THEN {} ELSE i END, 'login.succeeded' FROM n",
        app.now_seconds() * 1000
    ))
    .await;
    let output = app.cli(&["housekeep"], None);
    assert!(output.status.success(), "{}", stderr(&output));
    let out = stdout(&output);
    assert!(
        out.starts_with("deleted 0 sessions, 0 refresh-token records, 0 challenges, ")
            && out.contains(
                ", 1234 audit events, 0 mailed tokens, 0 invitations, 0 federation sign-ins in "
            )
            && out.contains("longest batch"),
        "{out:?}"
    );
    let old: i64 = app
        .scalar("SELECT COUNT(*) FROM audit_events WHERE at <= 1234")
        .await;
    let recent: i64 = app
        .scalar("SELECT COUNT(*) FROM audit_events WHERE at > 1234")
        .await;
    assert_eq!((old, recent), (0, 2));
    // Hidden from the help, which lists what most operators need.
    let help = stdout(&app.cli(&["--help"], None));
    assert!(!help.contains("housekeep"), "{help}");
}

/// The administration API's actions that the command has too (the same functions, §8).
async fn end_sessions_send_reset_and_delete(backend: Backend) {
    let app = spawn_app(backend).await;
    let (token, _) = app.logged_in_user("gus@example.com").await;
    let ended = app.cli(&["user", "end-sessions", "gus@example.com"], None);
    assert!(ended.status.success(), "{}", stderr(&ended));
    assert!(stderr(&ended).contains("ended 1 session"));
    app.refused_within(&token, SPREAD_DEADLINE).await;

    // Reset links go to the outbox (a running server delivers them), 3 an hour.
    for _ in 0..3 {
        let sent = app.cli(&["user", "send-reset", "gus@example.com"], None);
        assert!(sent.status.success(), "{}", stderr(&sent));
    }
    let links: i64 = app
        .scalar("SELECT COUNT(*) FROM mail_tokens WHERE purpose = 'reset'")
        .await;
    assert_eq!(links, 3);
    fails_with(
        &app.cli(&["user", "send-reset", "gus@example.com"], None),
        "too many",
    );

    let token = app.login("gus@example.com", PASSWORD).await.data(200)["accessToken"]
        .as_str()
        .unwrap()
        .to_owned();
    let deleted = app.cli(&["user", "delete", "gus@example.com"], None);
    assert!(deleted.status.success(), "{}", stderr(&deleted));
    app.refused_within(&token, SPREAD_DEADLINE).await;
    app.login("gus@example.com", PASSWORD)
        .await
        .error(401, "INVALID_CREDENTIALS");
    fails_with(
        &app.cli(&["user", "delete", "gus@example.com"], None),
        "no account",
    );
}
