//! `gatehouse move-to-postgres` (docs/api.md §15): a SQLite database made by an earlier build (the
//! newest upgrade fixture, tests/fixtures/upgrades/) is moved into a new PostgreSQL database, and
//! two instances on PostgreSQL serve everything it held: a session made before the move refreshes,
//! the passwords, the second factor, contacts, API keys, clients and organisations work (the
//! upgrade test's checks), the counts of every table are equal on both sides.

use serde_json::Value;

use crate::authenticator::Authenticator;
use crate::helpers::{Backend, Instance, TestDatabase, both_backends};
use crate::passkeys::{ORIGIN, register, sign_in};
use crate::upgrades::{FIXTURE_SCHEMA, check, fixtures};

both_backends!(
    a_sqlite_database_moved_to_postgres_serves_what_it_held,
    a_passkey_signs_in_after_a_move_made_while_serving,
);

/// Tables whose rows every fixture has; the command checks every table's count itself.
const COUNTED: [&str; 6] = [
    "users",
    "sessions",
    "refresh_tokens",
    "contacts",
    "audit_events",
    "signing_keys",
];

async fn a_sqlite_database_moved_to_postgres_serves_what_it_held(backend: Backend) {
    let Backend::Postgres(_) = &backend else {
        return a_move_needs_a_sqlite_source_and_a_postgres_target().await;
    };
    let dir = fixtures().pop().expect("an upgrade fixture");
    let fixture: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("fixture.json")).unwrap()).unwrap();
    let commit = fixture["commit"].as_str().unwrap();
    let made = &fixture["sqlite"];
    let mut source = TestDatabase::new(&Backend::Sqlite).await;
    source.master_key = Some(made["masterKey"].as_str().unwrap().to_owned());
    source
        .restore(
            &dir.join("sqlite.db"),
            &dir.join("postgres.sql"),
            FIXTURE_SCHEMA,
        )
        .await;
    let mut target = TestDatabase::new(&backend).await;
    target.master_key = source.master_key.clone();

    let output = source.cli(&["move-to-postgres", &target.url], None);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}{stderr}");
    assert!(
        stdout.contains("every table's count is the same on both sides"),
        "{stdout}"
    );
    assert!(stderr.contains("the same GATEHOUSE_MASTER_KEY"), "{stderr}");
    for table in COUNTED {
        let sql = format!("SELECT COUNT(*) FROM {table}");
        let (before, after): (i64, i64) = (source.scalar(&sql).await, target.scalar(&sql).await);
        assert_eq!(before, after, "{table}");
        assert!(after > 0, "{table}: the fixture has rows");
        assert!(
            stdout.contains(&format!("{after} in PostgreSQL")),
            "{table}: {stdout}"
        );
    }
    // No snapshot is left beside the database.
    let folder = std::path::Path::new(source.url.strip_prefix("sqlite://").unwrap())
        .parent()
        .unwrap();
    let left: Vec<_> = std::fs::read_dir(folder)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".move-"))
        .collect();
    assert!(left.is_empty(), "{left:?}");

    let env = [
        ("GATEHOUSE_REFRESH_TOKEN_TTL", "3650d"),
        (
            "GATEHOUSE_PUBLIC_URL",
            fixture["publicUrl"].as_str().unwrap(),
        ),
        ("GATEHOUSE_RATE_LIMIT", "off"),
    ];
    let first = Instance::start(&target, &env);
    let second = Instance::start(&target, &env);
    check(commit, &first.http, made).await;
    // The other instance knows the same accounts and keys: the password signs in there too, and
    // its token is good at the first.
    let ann = &made["ann"];
    let login = second
        .http
        .login(
            ann["email"].as_str().unwrap(),
            ann["password"].as_str().unwrap(),
        )
        .await;
    let token = login.data(200)["accessToken"].as_str().unwrap().to_owned();
    let me = first
        .http
        .call(reqwest::Method::GET, "/api/v1/auth/me", Some(&token), None)
        .await;
    assert_eq!(me.data(200)["email"], ann["email"]);

    // A second move into the same database is refused, and changes nothing.
    let users: i64 = target.scalar("SELECT COUNT(*) FROM users").await;
    let again = source.cli(&["move-to-postgres", &target.url], None);
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(!again.status.success());
    assert!(
        stderr.contains("account(s) already: move into a new, empty database"),
        "{stderr}"
    );
    assert_eq!(
        target.scalar::<i64>("SELECT COUNT(*) FROM users").await,
        users
    );
}

/// Without PostgreSQL: what the command refuses before it touches anything.
async fn a_move_needs_a_sqlite_source_and_a_postgres_target() {
    let source = TestDatabase::migrated(&Backend::Sqlite).await;
    let output = source.cli(&["move-to-postgres", "mysql://localhost/gatehouse"], None);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(stderr.contains("is not a PostgreSQL URL"), "{stderr}");
    let output = source.cli(
        &[
            "move-to-postgres",
            "postgres://nobody:secret@127.0.0.1:1/none",
        ],
        None,
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains("cannot open postgres://nobody:****@127.0.0.1:1/none"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("secret"),
        "the password is not printed: {stderr}"
    );
}

/// A passkey registered on SQLite signs in on PostgreSQL; the move ran while the SQLite service
/// was serving (it reads a snapshot), with the master key from the key file beside the database.
async fn a_passkey_signs_in_after_a_move_made_while_serving(backend: Backend) {
    let Backend::Postgres(_) = &backend else {
        return;
    };
    let app = crate::passkeys::spawn(Backend::Sqlite).await;
    let (token, _) = app.logged_in_user("pia@example.com").await;
    let mut authenticator = Authenticator::new(ORIGIN);
    register(&app.http, &token, &mut authenticator).await;
    let mut target = TestDatabase::new(&backend).await;
    let database = std::path::Path::new(app.db.url.strip_prefix("sqlite://").unwrap());
    let key_file = database.with_file_name("gatehouse.master.key");
    target.master_key = Some(
        std::fs::read_to_string(&key_file)
            .unwrap()
            .trim()
            .to_owned(),
    );

    let output = app.cli(&["move-to-postgres", &target.url], None);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "GATEHOUSE_MASTER_KEY=\"$(cat {})\"",
            key_file.display()
        )),
        "{stderr}"
    );
    let moved = Instance::start(&target, &[("GATEHOUSE_PUBLIC_URL", ORIGIN)]);
    let answer = sign_in(&moved.http, "pia@example.com", &mut authenticator).await;
    assert!(answer.data(200)["accessToken"].is_string());
}
