//! Upgrades (docs/guide/deployment.md, "Upgrading"): databases made by earlier builds, kept in
//! tests/fixtures/upgrades/COMMIT/ (made by `scripts/upgrade-fixture.sh COMMIT`, which builds that
//! commit and fills a database through its API and CLI), are migrated by this build's
//! `gatehouse migrate` and served by its `gatehouse serve`, as an operator upgrades. Everything
//! made before the upgrade must still work: the passwords, a second factor and its recovery code,
//! a session made before (refreshed), roles, contacts, a personal API key, a client's secret, an
//! organisation. What an older build could not make is absent from its fixture and not checked.

use std::path::{Path, PathBuf};

use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{Backend, Http, Instance, TestDatabase, both_backends, code_at, spawn_app};

both_backends!(
    every_earlier_database_still_works_after_the_upgrade,
    a_database_a_newer_build_migrated_is_refused,
);

/// The schema the fixtures' PostgreSQL dumps name (scripts/upgrade_fixture.py).
pub(crate) const FIXTURE_SCHEMA: &str = "gatehouse_fixture";

pub(crate) fn fixtures() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/upgrades");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root)
        .expect("tests/fixtures/upgrades")
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("fixture.json").exists())
        .collect();
    dirs.sort();
    dirs
}

async fn every_earlier_database_still_works_after_the_upgrade(backend: Backend) {
    let dirs = fixtures();
    assert!(dirs.len() >= 2, "fixtures of two earlier builds: {dirs:?}");
    for dir in dirs {
        let fixture: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("fixture.json")).unwrap())
                .unwrap();
        let made = match backend {
            Backend::Sqlite => &fixture["sqlite"],
            Backend::Postgres(_) => &fixture["postgres"],
        };
        let commit = fixture["commit"].as_str().unwrap();
        let mut db = TestDatabase::new(&backend).await;
        db.master_key = Some(made["masterKey"].as_str().unwrap().to_owned());
        db.restore(
            &dir.join("sqlite.db"),
            &dir.join("postgres.sql"),
            FIXTURE_SCHEMA,
        )
        .await;
        // What would run is listed, and nothing changes; then it runs, and nothing is left.
        let applied: i64 = db.scalar("SELECT COUNT(*) FROM _sqlx_migrations").await;
        let listed = dry_run(&db, commit);
        assert!(!listed.is_empty(), "{commit}: no migration to run");
        let unchanged: i64 = db.scalar("SELECT COUNT(*) FROM _sqlx_migrations").await;
        assert_eq!(
            unchanged, applied,
            "{commit}: the dry run changed the database"
        );
        let migrated = db.cli(&["migrate"], None);
        assert!(
            migrated.status.success(),
            "{commit}: gatehouse migrate: {}",
            String::from_utf8_lossy(&migrated.stderr)
        );
        let now: i64 = db.scalar("SELECT COUNT(*) FROM _sqlx_migrations").await;
        assert_eq!(now, applied + listed.len() as i64, "{commit}: {listed:?}");
        assert_eq!(
            String::from_utf8_lossy(&migrated.stderr),
            format!(
                "gatehouse: applied {} migration(s); the database is up to date\n",
                listed.len()
            ),
            "{commit}"
        );
        assert_eq!(dry_run(&db, commit), Vec::<String>::new());
        // The settings the fixture was made with (scripts/upgrade_fixture.py): they go with the
        // database through an upgrade. The public URL is the tokens' issuer: a refresh token
        // names it, and is refused by a service of another.
        let server = Instance::start(
            &db,
            &[
                ("GATEHOUSE_REFRESH_TOKEN_TTL", "3650d"),
                (
                    "GATEHOUSE_PUBLIC_URL",
                    fixture["publicUrl"].as_str().unwrap(),
                ),
                ("GATEHOUSE_RATE_LIMIT", "off"),
            ],
        );
        check(commit, &server.http, made).await;
    }
}

/// A database with a migration this build does not know (a newer build applied it, and the
/// operator went back): `check` and `migrate --dry-run` name it and fail, and change nothing.
async fn a_database_a_newer_build_migrated_is_refused(backend: Backend) {
    let app = spawn_app(backend).await;
    app.execute(
        "INSERT INTO _sqlx_migrations \
         (version, description, installed_on, success, checksum, execution_time) \
         SELECT 99990101, 'from a newer build', installed_on, success, checksum, execution_time \
         FROM _sqlx_migrations WHERE version = 1",
    )
    .await;
    let applied: i64 = app.scalar("SELECT COUNT(*) FROM _sqlx_migrations").await;
    for args in [&["migrate", "--dry-run"][..], &["check"][..]] {
        let output = app.cli(args, None);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{args:?}: {stderr}");
        assert!(
            stderr.contains(
                "the database has migration 99990101, which this gatehouse does not know"
            ),
            "{args:?}: {stderr}"
        );
        assert!(output.stdout.is_empty() || args[0] == "check", "{args:?}");
    }
    let after: i64 = app.scalar("SELECT COUNT(*) FROM _sqlx_migrations").await;
    assert_eq!(after, applied);
}

/// `gatehouse migrate --dry-run`: its lines (`0024 trust between parties`), each checked for form.
fn dry_run(db: &TestDatabase, commit: &str) -> Vec<String> {
    let output = db.cli(&["migrate", "--dry-run"], None);
    assert!(
        output.status.success(),
        "{commit}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let lines: Vec<String> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    for line in &lines {
        let (version, name) = line.split_once(' ').unwrap_or_default();
        assert!(
            version.len() == 4 && version.bytes().all(|b| b.is_ascii_digit()) && !name.is_empty(),
            "{commit}: {line}"
        );
    }
    lines
}

pub(crate) async fn check(commit: &str, http: &Http, made: &Value) {
    let ann = &made["ann"];
    let password = ann["password"].as_str().unwrap();

    // A session made before the upgrade goes on.
    let refreshed = http
        .post(
            "/api/v1/auth/refresh",
            json!({ "refreshToken": ann["refreshToken"] }),
        )
        .await;
    let access = refreshed.data(200)["accessToken"]
        .as_str()
        .unwrap_or_else(|| panic!("{commit}: no access token"))
        .to_owned();
    let me = http
        .call(Method::GET, "/api/v1/auth/me", Some(&access), None)
        .await;
    let me = me.data(200);
    assert_eq!(me["email"], ann["email"], "{commit}");
    if let Some(roles) = ann.get("roles") {
        assert_eq!(&me["roles"], roles, "{commit}");
    }

    // The password still signs in, and the contacts made before are there.
    let login = http.login(ann["email"].as_str().unwrap(), password).await;
    let token = login.data(200)["accessToken"].as_str().unwrap().to_owned();
    let contacts = http
        .call(Method::GET, "/api/v1/crm/contacts", Some(&token), None)
        .await;
    let names: Vec<&str> = contacts.data(200)["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["fullName"].as_str())
        .collect();
    assert_eq!(
        names,
        [made["contact"]["fullName"].as_str().unwrap()],
        "{commit}"
    );

    // The second factor: a code of the secret made before, and a recovery code.
    let bo = &made["bo"];
    let email = bo["email"].as_str().unwrap();
    let secret = crate::helpers::base32_decode(bo["totpSecret"].as_str().unwrap());
    for proof in ["totp", "recovery"] {
        let login = http.login(email, password).await;
        let data = login.data(200);
        assert_eq!(data["requiresTwoFactor"], true, "{commit}");
        let code = match proof {
            "totp" => code_at(&secret, crate::helpers::now_seconds()),
            _ => bo["recoveryCode"].as_str().unwrap().to_owned(),
        };
        http.post(
            "/api/v1/auth/2fa/verify",
            json!({ "tempToken": data["tempToken"], "code": code }),
        )
        .await
        .data(200);
    }

    if let Some(key) = ann.get("apiKey").and_then(Value::as_str) {
        http.call(Method::GET, "/api/v1/crm/contacts", Some(key), None)
            .await
            .data(200);
    }
    if let Some(org) = made.get("org") {
        let mine = http
            .call(Method::GET, "/api/v1/orgs", Some(&token), None)
            .await;
        let items = mine.data(200)["items"].as_array().unwrap().clone();
        let found: Vec<(&Value, &Value, &Value)> = items
            .iter()
            .map(|m| (&m["org"]["id"], &m["org"]["slug"], &m["roles"]))
            .collect();
        assert_eq!(
            found,
            [(&org["id"], &org["slug"], &json!(["owner"]))],
            "{commit}"
        );
    }
    if let Some(client) = made.get("client") {
        let answer = reqwest::Client::new()
            .post(http.url("/oauth2/token"))
            .basic_auth(client["id"].as_str().unwrap(), client["secret"].as_str())
            .form(&[("grant_type", "client_credentials")])
            .send()
            .await
            .unwrap();
        let status = answer.status();
        let body: Value = answer.json().await.unwrap();
        assert_eq!(status, 200, "{commit}: {body}");
        assert!(body["access_token"].is_string(), "{commit}: {body}");
    }
}
