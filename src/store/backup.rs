//! SQLite's online backup: `VACUUM INTO` copies the database, as one read transaction sees it, into
//! a new file. It runs beside a serving instance (WAL: readers do not stop writers, and the copy
//! is a consistent snapshot of the last committed transaction).

use super::{Backend, Store, on_pool};
use crate::error::Result;

impl Store {
    /// Copies the database into `path`, which must be absent or empty (SQLite refuses anything
    /// else). `false` for PostgreSQL, which `pg_dump` backs up.
    pub async fn backup_into(&self, path: &str) -> Result<bool> {
        if let Backend::Postgres(_) = self.backend {
            return Ok(false);
        }
        on_pool!(self, |pool| sqlx::query("VACUUM INTO $1")
            .bind(path)
            .execute(pool)
            .await
            .map(|_| ()))?;
        Ok(true)
    }

    /// SQLite's own check of a database file's structure (`PRAGMA quick_check`): `ok`, or what is
    /// wrong.
    pub async fn quick_check(&self) -> Result<String> {
        if let Backend::Postgres(_) = self.backend {
            return Ok("ok".to_owned());
        }
        let rows: Vec<String> = on_pool!(self, |pool| sqlx::query_scalar("PRAGMA quick_check")
            .fetch_all(pool)
            .await)?;
        Ok(rows.join("; "))
    }
}
