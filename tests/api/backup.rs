//! `gatehouse backup PATH` and the restore procedure of docs/api.md §4, followed as an operator
//! would: a serving SQLite instance under a load of writes is backed up; the file and its key
//! are put in place elsewhere; a server started there signs in, refreshes a session of before the
//! backup, and reads every contact made before it.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{Backend, Http, Instance, PASSWORD, TestDatabase};
use crate::instances::add_user;

const EMAIL: &str = "ann@example.com";

async fn tokens(http: &Http) -> (String, String) {
    let answer = http.login(EMAIL, PASSWORD).await;
    let data = answer.data(200);
    (
        data["accessToken"].as_str().unwrap().to_owned(),
        data["refreshToken"].as_str().unwrap().to_owned(),
    )
}

async fn create_contact(http: &Http, token: &str, name: &str) {
    let body = json!({ "fullName": name, "email": format!("{name}@example.com") });
    http.call(
        Method::POST,
        "/api/v1/crm/contacts",
        Some(token),
        Some(body),
    )
    .await
    .data(201);
}

/// Every contact's name, following the cursor to the end.
async fn contact_names(http: &Http, token: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            Some(c) => format!("/api/v1/crm/contacts?limit=100&cursor={c}"),
            None => "/api/v1/crm/contacts?limit=100".to_owned(),
        };
        let page = http.get(&path, token).await;
        let data: Value = page.data(200).clone();
        for item in data["items"].as_array().unwrap() {
            names.push(item["fullName"].as_str().unwrap().to_owned());
        }
        match data["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return names,
        }
    }
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[tokio::test]
async fn a_backup_under_load_restores_elsewhere_and_signs_in() {
    let db = TestDatabase::migrated(&Backend::Sqlite).await;
    add_user(&db, EMAIL);
    let server = Arc::new(Instance::start(&db, &[]));
    // A session of before the backup, used only after the restore.
    let (_, kept_refresh) = tokens(&server).await;
    let (access, _) = tokens(&server).await;
    let mut before = Vec::new();
    for i in 0..20 {
        let name = format!("before-{i}");
        create_contact(&server, &access, &name).await;
        before.push(name);
    }

    // The load: contacts written and sessions refreshed until the backup is done.
    let stop = Arc::new(AtomicBool::new(false));
    let written = Arc::new(AtomicUsize::new(0));
    let progress = Arc::new(tokio::sync::Notify::new());
    let mut load = Vec::new();
    for worker in 0..4 {
        let (server, stop, written) = (server.clone(), stop.clone(), written.clone());
        let progress = progress.clone();
        load.push(tokio::spawn(async move {
            let (access, mut refresh) = tokens(&server).await;
            let mut i = 0;
            while !stop.load(Ordering::SeqCst) {
                create_contact(&server, &access, &format!("load-{worker}-{i}")).await;
                let answer = server
                    .post("/api/v1/auth/refresh", json!({ "refreshToken": refresh }))
                    .await;
                refresh = answer.data(200)["refreshToken"]
                    .as_str()
                    .unwrap()
                    .to_owned();
                written.fetch_add(1, Ordering::SeqCst);
                progress.notify_one();
                i += 1;
            }
        }));
    }
    // The backup starts once the load is under way.
    while written.load(Ordering::SeqCst) < 10 {
        progress.notified().await;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gatehouse-backup.db");
    let command = {
        let mut command = db.command();
        command.args(["backup", path.to_str().unwrap()]);
        command
    };
    let output = tokio::task::spawn_blocking(move || {
        let mut command = command;
        command.output().unwrap()
    })
    .await
    .unwrap();
    stop.store(true, Ordering::SeqCst);
    for task in load {
        task.await.unwrap();
    }
    let said = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "{said}");
    assert!(
        said.contains("backed up") && said.contains("checked"),
        "{said}"
    );
    let key = dir.path().join("gatehouse-backup.db.master.key");
    #[cfg(unix)]
    {
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(&key), 0o600);
    }

    // A second backup to the same path is refused, and replaces nothing.
    let again = db.cli(&["backup", path.to_str().unwrap()], None);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("exists already"));

    // The restore: the file and its key in the folder of a new installation.
    let restored_dir = tempfile::tempdir().unwrap();
    std::fs::copy(&path, restored_dir.path().join("gatehouse.db")).unwrap();
    std::fs::copy(&key, restored_dir.path().join("gatehouse.master.key")).unwrap();
    let restored = TestDatabase::sqlite_in(restored_dir);
    let check = restored.cli(&["check"], None);
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    let other = Instance::start(&restored, &[]);
    let (access, _) = tokens(&other).await;
    let refreshed = other
        .post(
            "/api/v1/auth/refresh",
            json!({ "refreshToken": kept_refresh }),
        )
        .await;
    refreshed.data(200);
    let names = contact_names(&other, &access).await;
    for name in &before {
        assert!(names.contains(name), "{name} is missing from the restore");
    }
    // A consistent copy: every contact of the load in it is whole (it decrypted and listed).
    assert!(names.len() >= before.len());
}

#[tokio::test]
async fn postgres_is_backed_up_with_pg_dump() {
    let url = "postgres://gatehouse:hunter2x@127.0.0.1:1/gatehouse";
    let key = gatehouse::config::MasterKey::generate().encode();
    let db = TestDatabase::external(url, key);
    let output = db.cli(&["backup", "/tmp/never-made.dump"], None);
    assert_eq!(output.status.code(), Some(1));
    let err = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("pg_dump --format=custom --file=/tmp/never-made.dump"),
        "{err}"
    );
    assert!(
        !err.contains("hunter2x"),
        "the password is not shown: {err}"
    );
    assert!(!Path::new("/tmp/never-made.dump").exists());
}
