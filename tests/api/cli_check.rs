//! `gatehouse check` (docs/api.md §4): what `serve` would read, printed one line each, nothing
//! made or changed; a bad setting, a missing key file or an unreachable database fail it with the
//! one line `serve` fails with.

use std::path::Path;
use std::process::Output;

use crate::helpers::{Backend, Instance, TestDatabase, both_backends, free_port};

both_backends!(a_good_configuration_passes_and_lists_what_it_found);

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Fails with one line on stderr that holds every needle; returns it.
#[track_caller]
fn one_line_error(output: &Output, code: i32, needles: &[&str]) -> String {
    assert_eq!(output.status.code(), Some(code), "{}", stdout(output));
    let err = stderr(output);
    assert_eq!(err.lines().count(), 1, "one line: {err:?}");
    for needle in needles {
        assert!(err.contains(needle), "{err:?} should say {needle:?}");
    }
    err
}

/// `serve`'s last line on stderr (its error) with the same settings.
fn serve_error(db: &TestDatabase, env: &[(&str, &str)]) -> String {
    let output = db
        .command()
        .envs(env.iter().copied())
        .args(["serve", "--listen", &format!("127.0.0.1:{}", free_port())])
        .output()
        .unwrap();
    assert!(!output.status.success());
    stderr(&output)
        .lines()
        .last()
        .unwrap_or_default()
        .to_owned()
}

fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

async fn a_good_configuration_passes_and_lists_what_it_found(backend: Backend) {
    let db = TestDatabase::migrated(&backend).await;
    let files = tempfile::tempdir().unwrap();
    let rules = files.path().join("rules.toml");
    std::fs::write(&rules, "[[rule]]\npolicy = \"authenticated\"\n").unwrap();
    let templates = files.path().join("templates");
    std::fs::create_dir(&templates).unwrap();
    std::fs::write(
        templates.join("reset.subject.txt"),
        "Reset at {{ product_name }}",
    )
    .unwrap();
    let config = files.path().join("gatehouse.toml");
    std::fs::write(
        &config,
        format!(
            "access_rules = {:?}\nmail_templates = {:?}\npublic_url = \"https://login.example.com\"\n",
            rules.display().to_string(),
            templates.display().to_string()
        ),
    )
    .unwrap();
    let config = config.display().to_string();
    // A first start makes the signing key, which check then opens with the master key.
    drop(Instance::start(&db, &[("GATEHOUSE_CONFIG", &config)]));
    let before = listing(db.mail_dir().as_ref()).len();

    let output = db
        .command()
        .env("GATEHOUSE_CONFIG", &config)
        .arg("check")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let out = stdout(&output);
    for needle in [
        &format!("settings       valid (flags, environment, and the file {config})"),
        "pages          https://login.example.com/sign-in",
        "issuer         https://login.example.com (audience gatehouse-api; access tokens signed EdDSA)",
        "passkeys       passkeys on for the relying party login.example.com",
        "provider       OpenID provider on: issuer https://login.example.com",
        "access rules   1 rule(s)",
        "mail           .eml files in",
        "mail templates reset.subject.txt replaced from",
        "schema up to date",
        "opens the active signing key",
        "accounts       no accounts yet",
        "gatehouse: ready to serve",
    ] {
        assert!(out.contains(needle), "{out} should say {needle:?}");
    }
    assert!(stderr(&output).is_empty(), "{}", stderr(&output));
    // Nothing made: no file in the mail folder, no account, no second key.
    assert_eq!(listing(db.mail_dir().as_ref()).len(), before);
}

#[test]
fn a_bad_setting_fails_as_serve_does() {
    let dir = tempfile::tempdir().unwrap();
    let db = TestDatabase::external(
        &format!("sqlite://{}", dir.path().join("gatehouse.db").display()),
        "x".into(),
    );
    let output = db.command().arg("check").output().unwrap();
    let err = one_line_error(&output, 2, &["invalid setting GATEHOUSE_MASTER_KEY"]);
    assert_eq!(err.trim(), serve_error(&db, &[]));
    let bad_rules = dir.path().join("rules.toml");
    std::fs::write(&bad_rules, "[[rule]]\npolicy = \"nobody\"\n").unwrap();
    let rules = bad_rules.display().to_string();
    let output = db
        .command()
        .env_remove("GATEHOUSE_MASTER_KEY")
        .env("GATEHOUSE_ACCESS_RULES", &rules)
        .arg("check")
        .output()
        .unwrap();
    one_line_error(&output, 2, &["GATEHOUSE_ACCESS_RULES", &rules]);
    assert_eq!(listing(dir.path()), ["rules.toml"], "check made nothing");
}

#[tokio::test]
async fn a_missing_key_file_fails_as_serve_does() {
    let db = TestDatabase::migrated(&Backend::Sqlite).await;
    drop(Instance::start(&db, &[]));
    let dir = Path::new(&db.mail_dir()).parent().unwrap().to_owned();
    let key = dir.join("gatehouse.master.key");
    std::fs::rename(&key, dir.join("elsewhere.key")).unwrap();
    let output = db.cli(&["check"], None);
    let err = one_line_error(
        &output,
        1,
        &["no master key file at", "restore it from your backup"],
    );
    assert_eq!(err.trim(), serve_error(&db, &[]));
    assert!(!key.exists(), "check made no key");
    // Another key in its place: its signing key cannot be opened.
    std::fs::write(
        &key,
        format!("{}\n", gatehouse::config::MasterKey::generate().encode()),
    )
    .unwrap();
    let output = db.cli(&["check"], None);
    let err = one_line_error(&output, 1, &["cannot be decrypted", "GATEHOUSE_MASTER_KEY"]);
    assert_eq!(err.trim(), serve_error(&db, &[]));
}

#[test]
fn an_unreachable_database_fails_as_serve_does() {
    let url = format!("postgres://postgres@127.0.0.1:{}/nowhere", free_port());
    let key = gatehouse::config::MasterKey::generate().encode();
    let db = TestDatabase::external(&url, key);
    let output = db.command().arg("check").output().unwrap();
    let err = one_line_error(&output, 1, &["cannot open the database", "127.0.0.1"]);
    assert_eq!(err.trim(), serve_error(&db, &[]));
}

#[test]
fn a_sqlite_database_not_made_yet_is_what_serve_would_make() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gatehouse.db");
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_gatehouse"));
    command
        .env_clear()
        .env(
            "GATEHOUSE_DATABASE_URL",
            format!("sqlite://{}", path.display()),
        )
        .arg("check");
    let output = command.output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stdout(&output).contains("none yet at"),
        "{}",
        stdout(&output)
    );
    assert!(listing(dir.path()).is_empty(), "check made nothing");
    // In a folder that does not exist, serve could not make it either.
    let missing = dir.path().join("no/such/folder/gatehouse.db");
    command.env(
        "GATEHOUSE_DATABASE_URL",
        format!("sqlite://{}", missing.display()),
    );
    one_line_error(
        &command.output().unwrap(),
        1,
        &["cannot create the database file"],
    );
}

#[test]
fn identity_providers_are_listed_and_a_bad_file_fails_as_serve_does() {
    let dir = tempfile::tempdir().unwrap();
    let providers = dir.path().join("providers.toml");
    std::fs::write(
        &providers,
        "[[provider]]\nid = \"acme-sso\"\nname = \"Acme\"\nissuer = \"https://login.acme.example\"\n\
         client_id = \"gatehouse\"\nclient_secret = \"s3cret\"\ndomains = [\"acme.example\"]\n\
         org = \"acme\"\nsignup = true\n",
    )
    .unwrap();
    let db = TestDatabase::external(
        &format!("sqlite://{}", dir.path().join("gatehouse.db").display()),
        gatehouse::config::MasterKey::generate().encode(),
    );
    let path = providers.display().to_string();
    let output = db
        .command()
        .env("GATEHOUSE_IDENTITY_PROVIDERS", &path)
        .arg("check")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let needle = "upstream       acme-sso (\"Acme\") at https://login.acme.example/, required for \
                  acme.example, joins organisation acme, signup on";
    assert!(stdout(&output).contains(needle), "{}", stdout(&output));
    assert!(!stdout(&output).contains("s3cret"));
    // Two providers under one id: one line naming the provider, as serve says it.
    let text = std::fs::read_to_string(&providers).unwrap();
    std::fs::write(
        &providers,
        format!("{text}\n{}", text.replace("domains", "# domains")),
    )
    .unwrap();
    let env = [("GATEHOUSE_IDENTITY_PROVIDERS", path.as_str())];
    let output = db.command().envs(env).arg("check").output().unwrap();
    let err = one_line_error(
        &output,
        2,
        &[
            "GATEHOUSE_IDENTITY_PROVIDERS",
            "provider \"acme-sso\": the id is used by an earlier provider",
        ],
    );
    assert_eq!(err.trim(), serve_error(&db, &env));
}
