//! SQLite's write-ahead log is copied back into the database by the running service (no COMMIT
//! does it, so that no writer waits for it): the database file alone holds what was written,
//! within the checkpoint interval. SQLite only; PostgreSQL has no such file.

use std::time::{Duration, Instant};

use sqlx::Connection as _;

use crate::helpers::{Backend, PASSWORD, spawn_app};

/// A small write leaves the log far below the 1 000 pages at which a COMMIT would have copied it
/// back by itself, so only the service's own checkpoint puts it into the database file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_database_file_alone_holds_what_was_written() {
    let app = spawn_app(Backend::Sqlite).await;
    let db = gatehouse::config::sqlite_path(&app.db.url).expect("a SQLite file");
    app.create_user("ann@example.com", PASSWORD).await;
    let copy_dir = tempfile::tempdir().unwrap();
    let copy = copy_dir.path().join("copy.db");
    let started = Instant::now();
    loop {
        // The main file without its -wal and -shm: what a backup of that file alone would hold.
        std::fs::copy(&db, &copy).unwrap();
        let url = format!("sqlite://{}?mode=ro", copy.display());
        let found: i64 = match sqlx::SqliteConnection::connect(&url).await {
            Ok(mut conn) => sqlx::query_scalar(
                "SELECT COUNT(*) FROM users WHERE email_normalized = 'ann@example.com'",
            )
            .fetch_one(&mut conn)
            .await
            .unwrap_or(0),
            Err(_) => 0,
        };
        if found == 1 {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the account is still only in the write-ahead log"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
