//! The CLI as a new operator meets it: a command run from the wrong folder, a database restored
//! without its key, a port already taken, the help of one command, and what a command prints.

use std::path::Path;
use std::process::{Command, Output};

use crate::helpers::{Backend, PASSWORD, TestDatabase, both_backends, run, spawn_app};

both_backends!(administration_commands_say_only_what_they_did);

fn gatehouse(dir: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_gatehouse"));
    command.env_clear().current_dir(dir);
    command
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// What is in a folder, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// One failed line on stderr that contains every needle.
#[track_caller]
fn refused(output: &Output, needles: &[&str]) {
    assert!(!output.status.success(), "must fail: {}", stdout(output));
    let err = stderr(output);
    assert_eq!(err.lines().count(), 1, "one line: {err:?}");
    for needle in needles {
        assert!(err.contains(needle), "{err:?} should say {needle:?}");
    }
}

/// Run from a folder where the service keeps no data, an administration command makes neither a
/// database nor a key (the running server would never see the account it made) and says which
/// database it looked for.
#[test]
fn commands_other_than_serve_and_migrate_create_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let expected = std::path::absolute(dir.path().join("gatehouse.db")).unwrap();
    let user_add = run(
        gatehouse(dir.path()).args([
            "user",
            "add",
            "--email",
            "ann@example.com",
            "--name",
            "Ann",
            "--password-stdin",
        ]),
        Some(&format!("{PASSWORD}\n")),
    );
    refused(
        &user_add,
        &["no database at", &expected.display().to_string()],
    );
    for args in [
        &["user", "list"][..],
        &["keys", "list"],
        &["clients", "list"],
        &["audit"],
    ] {
        refused(
            &run(gatehouse(dir.path()).args(args), None),
            &["no database at"],
        );
    }
    assert!(listing(dir.path()).is_empty(), "{:?}", listing(dir.path()));
}

/// A database whose secrets are sealed under a key that is not there: no command makes a new key
/// beside it (it would open nothing, and sit where the right one must be restored); each says to
/// restore the key. A new database gets its key from `migrate`, and the commands work after it.
#[test]
fn a_database_restored_without_its_key_is_never_given_a_new_one() {
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("gatehouse.master.key");
    let migrate = run(gatehouse(dir.path()).arg("migrate"), None);
    assert!(migrate.status.success(), "{}", stderr(&migrate));
    assert!(key.exists(), "migrate makes the key of a new database");
    let add = run(
        gatehouse(dir.path()).args([
            "user",
            "add",
            "--email",
            "ann@example.com",
            "--name",
            "Ann",
            "--password-stdin",
        ]),
        Some(&format!("{PASSWORD}\n")),
    );
    assert!(add.status.success(), "{}", stderr(&add));

    // The database comes back from a backup; the key file does not.
    std::fs::remove_file(&key).unwrap();
    let expected = std::path::absolute(&key).unwrap().display().to_string();
    for args in [&["user", "list"][..], &["migrate"], &["keys", "list"]] {
        refused(
            &run(gatehouse(dir.path()).args(args), None),
            &[
                "no master key file at",
                &expected,
                "restore it from your backup",
            ],
        );
        assert!(!key.exists(), "{args:?} made a key");
    }
    let serve = run(
        gatehouse(dir.path()).args(["serve", "--listen", "127.0.0.1:0"]),
        None,
    );
    assert!(!serve.status.success());
    assert!(
        stderr(&serve).contains("restore it from your backup"),
        "{}",
        stderr(&serve)
    );
    assert!(!key.exists(), "serve made a key");
}

/// A port in use stops `serve` before it makes a database, a key or a mail folder.
#[test]
fn serve_on_a_taken_port_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = taken.local_addr().unwrap().to_string();
    let serve = run(
        gatehouse(dir.path()).args(["serve", "--listen", &address]),
        None,
    );
    refused(&serve, &["cannot listen on", &address]);
    assert!(listing(dir.path()).is_empty(), "{:?}", listing(dir.path()));
}

/// Each command's help shows its own options and the few settings every command reads; the
/// server's settings are under `serve` and in one help topic.
#[test]
fn each_command_helps_with_its_own_options() {
    let dir = tempfile::tempdir().unwrap();
    let help = |args: &[&str]| {
        let output = run(gatehouse(dir.path()).args(args), None);
        assert!(output.status.success(), "{args:?}: {}", stderr(&output));
        stdout(&output)
    };
    let user_add = help(&["user", "add", "--help"]);
    for own in [
        "--email <EMAIL>",
        "--name <NAME>",
        "--password-stdin",
        "--database-url",
    ] {
        assert!(user_add.contains(own), "{own} in {user_add}");
    }
    assert!(
        user_add.contains("e-mail address"),
        "--email is described: {user_add}"
    );
    for server in ["--listen", "--smtp-url", "--access-token-ttl"] {
        assert!(!user_add.contains(server), "{server} in {user_add}");
    }
    assert!(
        user_add.lines().count() < 30,
        "{} lines",
        user_add.lines().count()
    );
    let serve = help(&["serve", "--help"]);
    let settings = help(&["help", "settings"]);
    for server in ["--listen", "--smtp-url", "GATEHOUSE_ACCESS_TOKEN_TTL"] {
        assert!(serve.contains(server), "{server} in serve --help");
        assert!(settings.contains(server), "{server} in help settings");
    }
    // A server setting is still taken before the command name, as before.
    let output = run(
        gatehouse(dir.path()).args(["--listen", "not an address", "serve"]),
        None,
    );
    refused(&output, &["GATEHOUSE_LISTEN"]);
}

/// An administration command's stderr holds what it did, not its log (no INFO lines, no driver
/// notices such as PostgreSQL's "relation _sqlx_migrations already exists"); `user list` is a
/// table whose columns line up, with the roles.
async fn administration_commands_say_only_what_they_did(backend: Backend) {
    let app = spawn_app(backend).await;
    // What an operator's shell gives: no GATEHOUSE_LOG.
    let quiet = |args: &[&str], stdin: Option<&str>| {
        run(
            app.db.command().env_remove("GATEHOUSE_LOG").args(args),
            stdin,
        )
    };
    // A new database: made, and every migration applied.
    let fresh = TestDatabase::new(&Backend::Sqlite).await;
    let made = run(
        fresh.command().env_remove("GATEHOUSE_LOG").arg("migrate"),
        None,
    );
    let said = stderr(&made);
    // Its last line (before it, the warning that a new master key was made).
    let last = said.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("gatehouse: made the database and applied its ")
            && last.ends_with(" migrations; it is up to date"),
        "{said}"
    );
    for _ in 0..2 {
        let migrate = quiet(&["migrate"], None);
        assert!(migrate.status.success());
        assert_eq!(stderr(&migrate), "gatehouse: the database is up to date\n");
    }
    let add = quiet(
        &[
            "user",
            "add",
            "--email",
            "zoë.long-address@example.org",
            "--name",
            "Zoë Long",
            "--password-stdin",
        ],
        Some(&format!("{PASSWORD}\n")),
    );
    assert!(add.status.success());
    assert_eq!(stderr(&add), "", "nothing but the id");
    app.create_user("al@example.com", PASSWORD).await;
    let roles = quiet(
        &[
            "user",
            "roles",
            "al@example.com",
            "--add",
            "ops",
            "--add",
            "admin",
        ],
        None,
    );
    assert_eq!(stdout(&roles), "admin\nops\n");

    let list = quiet(&["user", "list"], None);
    assert_eq!(stderr(&list), "");
    let table = stdout(&list);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 3, "{table}");
    let column = |line: &str, name: &str| {
        let header = lines[0];
        let at = header.find(name).unwrap();
        // Character offsets, not bytes: "ë" is one column.
        let chars: Vec<char> = line.chars().collect();
        let head_chars = header[..at].chars().count();
        chars[head_chars..].iter().collect::<String>()
    };
    for line in &lines[1..] {
        for name in ["EMAIL", "NAME", "ROLES", "STATE", "CREATED"] {
            let cell = column(line, name);
            assert!(
                !cell.starts_with(' '),
                "{name} starts where its header does: {line:?}"
            );
        }
    }
    let al = lines.iter().find(|l| l.contains("al@example.com")).unwrap();
    assert!(column(al, "ROLES").starts_with("admin,ops "), "{al}");
}
