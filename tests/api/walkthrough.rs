//! The book's walk-through (docs/guide/getting-started.md) is run as written, twice, against a
//! running `gatehouse serve`: the commands a reader copies are the commands that are tested, so
//! they cannot drift from the service, and a reader can run them again.

use std::process::{Command, Stdio};

use serde_json::Value;

use crate::helpers::{Backend, Instance, TestDatabase, both_backends, installed_or_skipped};

both_backends!(
    the_books_walk_through_runs_as_written_twice,
    the_chapter_on_command_line_tools_runs_as_written,
);

const CHAPTER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/guide/getting-started.md");
const AGENTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/guide/agents.md");

/// The walk-through's first `sh` block.
fn walk_through() -> String {
    first_sh_block(CHAPTER)
}

/// A chapter's first `sh` block.
fn first_sh_block(chapter: &str) -> String {
    let text = std::fs::read_to_string(chapter).unwrap();
    text.split("```sh\n")
        .nth(1)
        .and_then(|rest| rest.split("\n```").next())
        .expect("a sh block in the walk-through")
        .to_owned()
}

fn on_path(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The JSON values the commands printed after the new account's id (jq prints each answer
/// whole, over several lines).
fn answers(stdout: &str) -> Vec<Value> {
    let json = &stdout[stdout.find('{').unwrap_or(stdout.len())..];
    serde_json::Deserializer::from_str(json)
        .into_iter::<Value>()
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("the walk-through printed JSON: {e}\n{stdout}"))
}

async fn the_books_walk_through_runs_as_written_twice(backend: Backend) {
    let missing: Vec<&str> = ["curl", "jq", "oathtool", "bash"]
        .into_iter()
        .filter(|p| !on_path(p))
        .collect();
    if !installed_or_skipped(&missing, "the book's walk-through") {
        return;
    }
    let db = TestDatabase::migrated(&backend).await;
    let server = Instance::start(&db, &[]);
    let folder = tempfile::tempdir().unwrap();
    let script = format!("set -euo pipefail\n{}\n", walk_through());
    for run in 1..=2 {
        let cli = db.command();
        let output = Command::new("bash")
            .args(["-c", &script])
            .current_dir(folder.path())
            .envs(cli.get_envs().filter_map(|(k, v)| Some((k, v?))))
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("GH", env!("CARGO_BIN_EXE_gatehouse"))
            .env("API", server.url("/api/v1"))
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            output.status.success(),
            "run {run} failed:\n{stdout}\n{stderr}"
        );
        let id = stdout.lines().next().unwrap_or_default();
        assert!(
            uuid::Uuid::parse_str(id).is_ok(),
            "run {run}: user add prints the id: {id}"
        );
        let printed = answers(&stdout);
        let success = |v: &Value| v["success"] == true;
        assert!(
            printed
                .iter()
                .all(|v| success(v) || v.get("secret").is_some()),
            "run {run}: every answer a success:\n{stdout}"
        );
        assert!(
            printed
                .iter()
                .any(|v| v["data"]["requiresTwoFactor"] == true),
            "run {run}: the second login is a challenge"
        );
        // The list at the end: this run's account holds the one contact it made.
        let list = printed.last().unwrap();
        let items = list["data"]["items"].as_array().unwrap();
        assert_eq!(items.len(), 1, "run {run}: {list:#}");
        assert_eq!(items[0]["fullName"], "Bob Buyer");
    }
}

/// docs/guide/agents.md's flow, as written: the operator registers a tool, the tool starts a
/// device authorization, the person allows it through the page's call, the tool polls (waiting
/// the real interval) and calls userinfo with its token.
async fn the_chapter_on_command_line_tools_runs_as_written(backend: Backend) {
    let missing: Vec<&str> = ["curl", "jq", "bash"]
        .into_iter()
        .filter(|p| !on_path(p))
        .collect();
    if !installed_or_skipped(&missing, "the chapter on command-line tools") {
        return;
    }
    let db = TestDatabase::migrated(&backend).await;
    // Any absolute public URL turns the provider on; the commands reach the server directly.
    let server = Instance::start(
        &db,
        &[("GATEHOUSE_PUBLIC_URL", "https://login.example.test")],
    );
    let folder = tempfile::tempdir().unwrap();
    let script = format!("set -euo pipefail\n{}\n", first_sh_block(AGENTS));
    let cli = db.command();
    let output = Command::new("bash")
        .args(["-c", &script])
        .current_dir(folder.path())
        .envs(cli.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("GH", env!("CARGO_BIN_EXE_gatehouse"))
        .env("BASE", server.url(""))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let printed = answers(&stdout);
    let codes = &printed[0];
    assert_eq!(
        codes["verification_uri"], "https://login.example.test/device",
        "{stdout}"
    );
    assert_eq!(printed[1]["status"], "approved", "{stdout}");
    assert_eq!(printed[2]["token_type"], "Bearer", "{stdout}");
    assert_eq!(printed[2]["refresh"], true, "{stdout}");
    assert_eq!(printed[3]["name"], "Dev Example", "{stdout}");
}
