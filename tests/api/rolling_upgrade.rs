//! A rolling upgrade on PostgreSQL (docs/guide/moving-in.md, "Upgrading without stopping"): an
//! instance of the previous build serves, the current build migrates the database under it and
//! starts beside it, and both serve the same people at once: what one issues the other accepts, a
//! sign-out on either ends the session on both, and what each makes the other finds. The previous
//! build's binary is made by `scripts/previous-build.sh` (CI runs it before the tests); without it
//! the test says it was skipped.

use std::path::PathBuf;
use std::time::Duration;

use reqwest::Method;
use serde_json::json;

use crate::helpers::{Backend, Http, Instance, SPREAD_DEADLINE, TestDatabase, both_backends};

both_backends!(the_previous_build_serves_beside_the_current_one);

/// The build before this round's work: the one deployments upgrade from.
const PREVIOUS: &str = "8d32687";

const PASSWORD: &str = "rolling-upgrade-7q";

fn previous_binary() -> Option<PathBuf> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join(format!("target/previous/gatehouse-{PREVIOUS}"));
    path.exists().then_some(path)
}

async fn the_previous_build_serves_beside_the_current_one(backend: Backend) {
    // Several instances on one database: PostgreSQL's case.
    let Backend::Postgres(_) = &backend else {
        return;
    };
    let Some(previous) = previous_binary() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI builds the previous build first (scripts/previous-build.sh)"
        );
        eprintln!("skipped: no previous build (run scripts/previous-build.sh)");
        return;
    };
    let db = TestDatabase::new(&backend).await;
    let env = [("GATEHOUSE_RATE_LIMIT", "off")];
    let run_previous = |args: &[&str], stdin: Option<&str>| {
        crate::helpers::run(db.command_of(&previous).args(args), stdin)
    };
    let made = run_previous(&["migrate"], None);
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let old = Instance::start_binary(&previous, &db, &env);
    let added = run_previous(
        &[
            "user",
            "add",
            "--email",
            "ada@example.com",
            "--name",
            "Ada",
            "--password-stdin",
        ],
        Some(&format!("{PASSWORD}\n")),
    );
    assert!(
        added.status.success(),
        "{}",
        String::from_utf8_lossy(&added.stderr)
    );
    let before = tokens(&old.http, "ada@example.com").await;

    // The current build migrates the database under the running previous one, and starts.
    let migrated = db.cli(&["migrate"], None);
    assert!(
        migrated.status.success(),
        "{}",
        String::from_utf8_lossy(&migrated.stderr)
    );
    let new = Instance::start(&db, &env);
    let added = db.cli(
        &[
            "user",
            "add",
            "--email",
            "bo@example.com",
            "--name",
            "Bo",
            "--password-stdin",
        ],
        Some(&format!("{PASSWORD}\n")),
    );
    assert!(added.status.success());

    // Each serves what the other made: sessions, accounts, signing keys.
    for (one, other) in [(&old, &new), (&new, &old)] {
        for email in ["ada@example.com", "bo@example.com"] {
            let (access, refresh) = tokens(&one.http, email).await;
            me(&other.http, &access, email).await;
            let refreshed = other
                .http
                .post("/api/v1/auth/refresh", json!({ "refreshToken": refresh }))
                .await;
            let access = refreshed.data(200)["accessToken"]
                .as_str()
                .unwrap()
                .to_owned();
            me(&one.http, &access, email).await;
        }
    }
    // The session made before the upgrade refreshes at the new build.
    let refreshed = new
        .http
        .post("/api/v1/auth/refresh", json!({ "refreshToken": before.1 }))
        .await;
    let access = refreshed.data(200)["accessToken"]
        .as_str()
        .unwrap()
        .to_owned();

    // A sign-out at the new build ends the session at the previous one.
    let logout = new
        .http
        .call(
            Method::POST,
            "/api/v1/auth/logout",
            Some(&access),
            Some(json!({})),
        )
        .await;
    assert!(logout.status.is_success(), "{}", logout.body);
    let deadline = std::time::Instant::now() + SPREAD_DEADLINE;
    loop {
        let answer = old
            .http
            .call(Method::GET, "/api/v1/auth/me", Some(&access), None)
            .await;
        if answer.status == 401 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the previous build still accepts it"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // A previous-build instance that restarts now refuses, and says why.
    let check = run_previous(&["migrate"], None);
    let said = String::from_utf8_lossy(&check.stderr);
    assert!(!check.status.success());
    assert!(said.contains("previously applied but is missing"), "{said}");
    drop(old);
}

async fn tokens(http: &Http, email: &str) -> (String, String) {
    let login = http.login(email, PASSWORD).await;
    let data = login.data(200);
    (
        data["accessToken"].as_str().unwrap().to_owned(),
        data["refreshToken"].as_str().unwrap().to_owned(),
    )
}

async fn me(http: &Http, access: &str, email: &str) {
    let answer = http
        .call(Method::GET, "/api/v1/auth/me", Some(access), None)
        .await;
    assert_eq!(answer.data(200)["email"], email);
}
