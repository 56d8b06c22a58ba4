//! `gatehouse move-to-postgres URL` (docs/api.md §15): the SQLite database, as one consistent
//! snapshot taken while the service may still run, copied into a new PostgreSQL database: every
//! table, counted on both sides, in one transaction (all of it or nothing). The secrets stay
//! sealed under the same master key, so the instances on PostgreSQL need that key.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context as _;

use crate::config::Settings;
use crate::private_files;
use crate::services::{Opening, absolute, key_file_path, master_key, open_store};
use crate::store::Store;

pub(super) async fn move_to_postgres(settings: &Settings, target: &str) -> anyhow::Result<()> {
    let Some(db) = settings.sqlite_path() else {
        anyhow::bail!(
            "the database is PostgreSQL already ({}): this command moves a SQLite database",
            shown(settings.database_url.as_str())
        );
    };
    if !(target.starts_with("postgres://") || target.starts_with("postgresql://")) {
        anyhow::bail!("{} is not a PostgreSQL URL (postgres://…)", shown(target));
    }
    let source = open_store(settings, Opening::Existing).await?;
    // The moved secrets open only with this key: make sure it is here before anything moves.
    master_key(settings, &source, Opening::Existing).await?;
    let destination = Store::connect(target)
        .await
        .with_context(|| format!("cannot open {}", shown(target)))?;
    destination
        .migrate()
        .await
        .context("cannot apply the migrations to the PostgreSQL database")?;

    let snapshot = Snapshot::beside(&db)?;
    let taken = crate::clock::rfc3339(crate::clock::Clock::system().now_ms());
    source
        .backup_into(&snapshot.0.to_string_lossy())
        .await
        .context("cannot take a snapshot of the SQLite database")?;
    let started = Instant::now();
    let moved = destination
        .move_from_sqlite(&snapshot.0, &mut |table| {
            println!(
                "{:<28} {:>10} rows in SQLite, {:>10} in PostgreSQL",
                table.table, table.sqlite_rows, table.postgres_rows
            );
        })
        .await?;
    let rows: u64 = moved.iter().map(|t| t.postgres_rows).sum();
    println!(
        "moved {} tables, {rows} rows, in {:.1} s; every table's count is the same on both sides",
        moved.len(),
        started.elapsed().as_secs_f64()
    );
    let key = match settings.master_key {
        Some(_) => "the same GATEHOUSE_MASTER_KEY".to_owned(),
        None => format!(
            "GATEHOUSE_MASTER_KEY=\"$(cat {})\"",
            absolute(&key_file_path(&db)).display()
        ),
    };
    eprintln!(
        "gatehouse: moved the database as it was at {taken}; start every instance with \
         GATEHOUSE_DATABASE_URL={} and {key}. The SQLite database is unchanged: what it records \
         after the snapshot is not moved (stop the service first)",
        shown(target)
    );
    Ok(())
}

/// A URL as it may be printed: without its password.
fn shown(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) if parsed.password().is_some() => {
            let _ = parsed.set_password(Some("****"));
            parsed.to_string()
        }
        _ => url.to_owned(),
    }
}

/// The snapshot's file beside the database (mode 0600: it holds what the database holds), removed
/// when the move ends, however it ends.
struct Snapshot(PathBuf);

impl Snapshot {
    fn beside(db: &Path) -> anyhow::Result<Snapshot> {
        let mut name = db.as_os_str().to_owned();
        name.push(format!(".move-{}", std::process::id()));
        let path = PathBuf::from(name);
        private_files::create_owner_only(&path)
            .with_context(|| format!("cannot create the snapshot {}", path.display()))?;
        Ok(Snapshot(path))
    }
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
