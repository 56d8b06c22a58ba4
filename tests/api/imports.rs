//! `gatehouse import` (docs/api.md §15): exports of Auth0, Keycloak, Firebase, Supabase, Authelia,
//! Django and a plain CSV, with hashes made by the real libraries (tests/fixtures/import/, made by
//! its `make_fixtures.py`: bcrypt, passlib, argon2-cffi, Django's own hashers, Firebase's scrypt).
//! A person who signs in with the old password after the import gets in, and from then on has an
//! Argon2id hash; what the export says of them (name, verified address, disabled, roles, second
//! factor) is what their account says; bad records are refused one by one, by number.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::helpers::{
    Backend, TestApp, base32_decode, both_backends, code_at, now_seconds, spawn_app_with,
};

both_backends!(
    people_of_every_source_sign_in_with_the_passwords_they_had,
    a_dry_run_changes_nothing_and_a_second_run_imports_no_one_twice,
    bad_records_are_refused_one_by_one_and_the_rest_imported,
);

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/import")
}

fn expectations() -> Value {
    let text = std::fs::read_to_string(fixtures().join("people.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

async fn app(backend: Backend) -> TestApp {
    // Fifty sign-ins from one address in a few seconds are this test, not an attack.
    spawn_app_with(
        backend,
        gatehouse::config::SettingsArgs {
            rate_limit: Some("off".into()),
            ..Default::default()
        },
    )
    .await
}

/// `gatehouse import --from FORMAT FILE [extra…]`: (succeeded, stdout, stderr).
fn import(app: &TestApp, format: &str, file: &str, extra: &[&str]) -> (bool, String, String) {
    let path = fixtures().join(file);
    let mut args = vec!["import", "--from", format, path.to_str().unwrap()];
    let firebase = firebase_flags();
    if format == "firebase" {
        args.extend(firebase.iter().map(String::as_str));
    }
    args.extend(extra);
    let output = app.cli(&args, None);
    (
        output.status.success(),
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

/// The project's hash parameters, as Firebase's console shows them.
fn firebase_flags() -> Vec<String> {
    let text = std::fs::read_to_string(fixtures().join("firebase-hash-config.json")).unwrap();
    let config: Value = serde_json::from_str(&text).unwrap();
    vec![
        format!(
            "--hash-key={}",
            config["base64_signer_key"].as_str().unwrap()
        ),
        format!(
            "--salt-separator={}",
            config["base64_salt_separator"].as_str().unwrap()
        ),
        format!("--rounds={}", config["rounds"]),
        format!("--mem-cost={}", config["mem_cost"]),
    ]
}

fn accounts(app: &TestApp) -> Vec<Value> {
    let output = app.cli(&["user", "list", "--json"], None);
    assert!(output.status.success());
    serde_json::from_slice::<Value>(&output.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

fn account<'a>(accounts: &'a [Value], email: &str) -> Option<&'a Value> {
    accounts
        .iter()
        .find(|a| a["email"].as_str().unwrap().eq_ignore_ascii_case(email))
}

/// The roles an import gives: the export's, but never `admin` (granted by the operator alone).
fn imported_roles(person: &Value) -> Vec<String> {
    let mut roles: Vec<String> = person["roles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap().to_owned())
        .filter(|r| r != "admin")
        .collect();
    roles.sort();
    roles
}

async fn people_of_every_source_sign_in_with_the_passwords_they_had(backend: Backend) {
    let app = app(backend).await;
    let expected = expectations();
    let people = expected["people"].as_array().unwrap();
    let mut files: Vec<(&str, &str)> = people
        .iter()
        .map(|p| (p["format"].as_str().unwrap(), p["file"].as_str().unwrap()))
        .collect();
    files.dedup();
    assert_eq!(files.len(), 8, "{files:?}");
    for (format, file) in &files {
        let (ok, stdout, stderr) = import(&app, format, file, &[]);
        assert!(ok, "{file}: {stdout}{stderr}");
        let importable = people
            .iter()
            .filter(|p| p["file"] == *file && p["importable"] == true)
            .count();
        assert!(
            stdout.contains(&format!("imported {importable} of ")),
            "{file}: {stdout}"
        );
        if people
            .iter()
            .any(|p| p["file"] == *file && p["roles"].to_string().contains("\"admin\""))
        {
            assert!(
                stdout.contains("the role admin is not imported"),
                "{file}: {stdout}"
            );
        }
    }
    let accounts = accounts(&app);
    // Firebase's signer key (the project's pepper) is kept sealed, never in the clear.
    let firebase = |form: &str| {
        format!("SELECT COUNT(*) FROM users WHERE password_hash LIKE '$firebase-scrypt$%{form}%'")
    };
    assert!(app.scalar::<i64>(&firebase(",ks=")).await > 0);
    assert_eq!(app.scalar::<i64>(&firebase(",k=")).await, 0);

    for person in people {
        let email = person["email"].as_str().unwrap();
        let found = account(&accounts, email);
        if person["importable"] == false {
            assert!(found.is_none(), "{email} was skipped in the source");
            continue;
        }
        let found = found.unwrap_or_else(|| panic!("{email} was imported"));
        let what = format!("{email} ({})", person["algorithm"]);
        if let Some(name) = person["name"].as_str() {
            assert_eq!(found["fullName"], name, "{what}");
        }
        assert_eq!(found["emailVerified"], person["email_verified"], "{what}");
        assert_eq!(found["disabled"], person["disabled"], "{what}");
        assert_eq!(found["roles"], json!(imported_roles(person)), "{what}");
        let totp = person["totp_secret_base32"].as_str();
        assert_eq!(found["twoFactorEnabled"], totp.is_some(), "{what}");

        let Some(password) = person["password"].as_str() else {
            // No password in the source: no password gets in.
            app.login(email, "some password")
                .await
                .error(401, "INVALID_CREDENTIALS");
            continue;
        };
        app.login(email, &format!("{password}x"))
            .await
            .error(401, "INVALID_CREDENTIALS");
        if person["disabled"] == true {
            app.login(email, password)
                .await
                .error(403, "ACCOUNT_DISABLED");
            continue;
        }
        let normalized = email.to_lowercase();
        let kept: String = app
            .scalar(&format!(
                "SELECT password_hash FROM users WHERE email_normalized = '{normalized}'"
            ))
            .await;
        signs_in(&app, email, password, totp, &what).await;
        if at_least_current_argon2id(&kept) {
            continue;
        }
        // The old hash is replaced by Argon2id (after the answer), and that is audited.
        let replaced = format!(
            "SELECT COUNT(*) FROM users WHERE email_normalized = '{normalized}' \
             AND password_hash LIKE '$argon2id$v=19$m=19456,t=2,p=1$%'"
        );
        let audited = format!(
            "SELECT COUNT(*) FROM audit_events WHERE event = 'password.rehashed' \
             AND user_id = (SELECT id FROM users WHERE email_normalized = '{normalized}')"
        );
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
        while app.scalar::<i64>(&audited).await == 0 {
            assert!(std::time::Instant::now() < deadline, "{what}: not rehashed");
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        assert_eq!(app.scalar::<i64>(&replaced).await, 1, "{what}");
        signs_in_at(&app, email, password, totp, &what, 1).await;
    }
}

/// An Argon2id hash at least as strong as the current parameters (m = 19456, t = 2) is kept.
fn at_least_current_argon2id(hash: &str) -> bool {
    let Some(params) = hash.strip_prefix("$argon2id$v=19$") else {
        return false;
    };
    let param = |name: &str| -> u32 {
        params
            .split(['$', ','])
            .find_map(|p| p.strip_prefix(name))
            .unwrap()
            .parse()
            .unwrap()
    };
    param("m=") >= 19456 && param("t=") >= 2
}

/// Signs in with the password (and the TOTP code of an imported second factor): tokens.
async fn signs_in(app: &TestApp, email: &str, password: &str, totp: Option<&str>, what: &str) {
    signs_in_at(app, email, password, totp, what, 0).await;
}

/// `signs_in` with the code of `steps` TOTP steps ahead (a code once used is a replay; the next
/// step's is accepted, as a clock one step ahead would be).
async fn signs_in_at(
    app: &TestApp,
    email: &str,
    password: &str,
    totp: Option<&str>,
    what: &str,
    steps: u64,
) {
    let answer = app.login(email, password).await;
    assert_eq!(answer.status, 200, "{what}: {}", answer.body);
    let data = &answer.body["data"];
    let Some(secret) = totp else {
        assert!(data["accessToken"].is_string(), "{what}: {data}");
        return;
    };
    assert_eq!(data["requiresTwoFactor"], true, "{what}: {data}");
    let code = code_at(&base32_decode(secret), now_seconds() + 30 * steps);
    let verified = app
        .post(
            "/api/v1/auth/2fa/verify",
            json!({ "tempToken": data["tempToken"], "code": code }),
        )
        .await;
    assert_eq!(verified.status, 200, "{what}: {}", verified.body);
    assert!(verified.body["data"]["accessToken"].is_string(), "{what}");
}

async fn a_dry_run_changes_nothing_and_a_second_run_imports_no_one_twice(backend: Backend) {
    let app = app(backend).await;
    let people = expectations()["people"].as_array().unwrap().clone();
    let csv: Vec<&Value> = people.iter().filter(|p| p["file"] == "users.csv").collect();

    let (ok, stdout, stderr) = import(&app, "csv", "users.csv", &["--dry-run"]);
    assert!(ok, "{stdout}{stderr}");
    for (i, person) in csv.iter().enumerate() {
        let line = format!(
            "record {} (line {}): would import {}",
            i + 1,
            i + 2,
            person["email"].as_str().unwrap()
        );
        assert!(stdout.contains(&line), "{line}\n{stdout}");
    }
    assert!(stdout.contains("nothing was changed"), "{stdout}");
    assert!(accounts(&app).is_empty(), "the dry run made accounts");

    let (ok, stdout, _) = import(&app, "csv", "users.csv", &[]);
    assert!(ok);
    let n = csv.len();
    assert!(
        stdout.contains(&format!("imported {n} of {n} records")),
        "{stdout}"
    );
    let made = app.scalar::<i64>("SELECT COUNT(*) FROM audit_events WHERE event = 'user.created' AND detail = 'import from=csv'").await;
    assert_eq!(made, n as i64, "each account's creation is audited");

    // Once imported, a person who has signed in keeps the new hash whatever the file says.
    let first = csv[0];
    let email = first["email"].as_str().unwrap();
    signs_in(
        &app,
        email,
        first["password"].as_str().unwrap(),
        None,
        email,
    )
    .await;
    for dry in [true, false] {
        let extra: &[&str] = if dry { &["--dry-run"] } else { &[] };
        let (ok, stdout, _) = import(&app, "csv", "users.csv", extra);
        assert!(ok, "{stdout}");
        assert!(
            stdout.contains(&format!("0 of {n} records"))
                && stdout.contains(&format!("{n} already there")),
            "{stdout}"
        );
        assert_eq!(
            dry,
            stdout.contains(&format!("already there: {email}")),
            "{stdout}"
        );
    }
    assert_eq!(accounts(&app).len(), n);
}

async fn bad_records_are_refused_one_by_one_and_the_rest_imported(backend: Backend) {
    let app = app(backend).await;
    let expected = expectations();
    for bad in expected["bad_files"].as_array().unwrap() {
        let file = bad["file"].as_str().unwrap();
        let format = bad["format"].as_str().unwrap();
        let record = bad["bad_record"].as_u64().unwrap();

        // A dry run tells the same refusals and changes nothing.
        let before = accounts(&app).len();
        let (ok, dry, _) = import(&app, format, file, &["--dry-run"]);
        assert!(!ok, "{file}: the dry run exits 1: {dry}");
        assert_eq!(
            accounts(&app).len(),
            before,
            "{file}: the dry run changed nothing"
        );

        let (ok, stdout, stderr) = import(&app, format, file, &[]);
        assert!(!ok, "{file}: exits 1");
        assert_eq!(stderr.lines().count(), 1, "{file}: {stderr}");
        if format == "keycloak" {
            // The file breaks off inside record 2: the one before it is in.
            assert!(
                stderr.contains(&format!("breaks off after record {}", record - 1)),
                "{file}: {stderr}"
            );
        } else {
            let place = format!("record {record} (line {}): refused: ", bad["bad_line"]);
            assert!(stdout.contains(&place), "{file}: {place}\n{stdout}");
            assert!(dry.contains(&place), "{file}: dry run: {dry}");
            assert!(stderr.contains("1 record(s) refused"), "{file}: {stderr}");
        }
        let accounts = accounts(&app);
        for person in bad["valid_people"].as_array().unwrap() {
            let email = person["email"].as_str().unwrap();
            assert!(account(&accounts, email).is_some(), "{file}: {email}");
            signs_in(
                &app,
                email,
                person["password"].as_str().unwrap(),
                None,
                email,
            )
            .await;
        }
        for key in ["cut_people", "duplicate_people"] {
            for person in bad[key].as_array().into_iter().flatten() {
                let email = person["email"].as_str().unwrap();
                let password = person["password"].as_str().unwrap();
                app.login(email, password)
                    .await
                    .error(401, "INVALID_CREDENTIALS");
            }
        }
    }
    // The refusals name what is wrong, never a hash or a password.
    let (_, stdout, _) = import(&app, "csv", "bad/unknown-hash.csv", &[]);
    assert!(
        stdout.contains("a form Gatehouse cannot verify") && stdout.contains("{SSHA}…"),
        "{stdout}"
    );
    let (_, stdout, _) = import(&app, "csv", "bad/duplicate.csv", &["--dry-run"]);
    assert!(stdout.contains("the address is record 1's too"), "{stdout}");

    // A file that is not what it says (here: `;` between the columns) is refused once, at its
    // header, not once a record.
    let dir = tempfile::tempdir().unwrap();
    let semicolons = dir.path().join("people.csv");
    std::fs::write(
        &semicolons,
        "email;name;password_hash\na@example.com;A;$2b$10$x\n",
    )
    .unwrap();
    let output = app.cli(
        &["import", "--from", "csv", semicolons.to_str().unwrap()],
        None,
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains("the header line has no email column"),
        "{stderr}"
    );
    assert!(String::from_utf8_lossy(&output.stdout).contains("imported 0 of 0 records"));

    // --stop-on-error: nothing after the first refusal is read.
    let (ok, stdout, _) = import(
        &app,
        "auth0",
        "bad/auth0-corrupt.ndjson",
        &["--stop-on-error", "--dry-run"],
    );
    assert!(!ok);
    assert!(stdout.contains("stopped at the first refusal"), "{stdout}");
    assert!(!stdout.contains("record 3"), "{stdout}");
    // Also when the refused record is the first: nobody waits before it.
    let first_bad = dir.path().join("first-bad.csv");
    std::fs::write(
        &first_bad,
        "email,name\nnot an address,A\nb@example.com,B\n",
    )
    .unwrap();
    let path = first_bad.to_str().unwrap();
    let args = [
        "import",
        "--from",
        "csv",
        path,
        "--stop-on-error",
        "--dry-run",
    ];
    let output = app.cli(&args, None);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(!output.status.success());
    assert!(stdout.contains("record 1 (line 2): refused"), "{stdout}");
    assert!(stdout.contains("stopped at the first refusal"), "{stdout}");
    assert!(!stdout.contains("record 2"), "{stdout}");
}
