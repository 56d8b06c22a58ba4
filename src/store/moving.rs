//! Moving a SQLite database into PostgreSQL (`gatehouse move-to-postgres`, docs/api.md §15): every
//! table of a consistent snapshot of the SQLite file, copied row for row into a migrated, empty
//! PostgreSQL database in one transaction, the counts compared before it commits. The copy is by
//! the tables PostgreSQL has after its migrations, column by column and by their PostgreSQL type,
//! so a table a later migration adds is moved with no change here; a column type this file does not
//! know stops the move with its name (a test moves a database of every table).
//!
//! The rows go by `COPY … FROM STDIN` (text format): a million accounts take seconds where as many
//! INSERTs would take minutes. The snapshot is read on a thread of its own (rusqlite, in-process),
//! which turns rows into COPY text while the database takes the previous chunk.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

use anyhow::Context as _;
use rusqlite::types::ValueRef;
use sqlx::Row as _;

use super::{Backend, Store};

/// A table moved: its rows in the snapshot and in PostgreSQL after the copy.
#[derive(Debug, Clone)]
pub struct TableMoved {
    pub table: String,
    pub sqlite_rows: u64,
    pub postgres_rows: u64,
}

/// What the reading thread hands over: a table's COPY text, a chunk at a time.
enum Piece {
    Chunk(Vec<u8>),
    /// The table's rows are all sent: how many.
    End(u64),
}

/// COPY text is sent in chunks of about this size.
const CHUNK: usize = 1 << 20;

impl Store {
    /// Copies every table of the SQLite file `snapshot` into this (PostgreSQL, migrated) store,
    /// in one transaction, calling `moved` after each table. Refused when this database has
    /// accounts already: a move is into a new database.
    pub async fn move_from_sqlite(
        &self,
        snapshot: &Path,
        moved: &mut dyn FnMut(&TableMoved),
    ) -> anyhow::Result<Vec<TableMoved>> {
        let Backend::Postgres(pool) = &self.backend else {
            anyhow::bail!("the database to move into is not PostgreSQL");
        };
        // The connection is dropped unsettled at the end: closed, not pooled (a one-off command).
        let mut held = pool.acquire().await?;
        move_tables(&mut held, snapshot, moved).await
    }
}

async fn move_tables(
    conn: &mut sqlx::PgConnection,
    snapshot: &Path,
    moved: &mut dyn FnMut(&TableMoved),
) -> anyhow::Result<Vec<TableMoved>> {
    use sqlx::Connection as _;
    let snapshot = snapshot.to_owned();
    let accounts: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM users")
        .fetch_one(&mut *conn)
        .await?;
    if accounts > 0 {
        return Err(anyhow::anyhow!(
            "the PostgreSQL database has {accounts} account(s) already: move into a new, \
                 empty database"
        ));
    }
    let tables = tables_in_order(&mut *conn).await?;
    let mut tx = conn.begin().await?;
    // Anything a start against the new database left (a signing key, a throttle) gives
    // way to what is moved; children first.
    for (table, _) in tables.iter().rev() {
        sqlx::query(&format!("DELETE FROM {}", quoted(table)))
            .execute(&mut *tx)
            .await?;
    }
    let plan = tables.clone();
    let (pieces, arriving) = flume::bounded::<anyhow::Result<Piece>>(4);
    let reader = std::thread::Builder::new()
        .name("gatehouse-move".into())
        .spawn(move || read_tables(&snapshot, &plan, &pieces))?;
    let mut done = Vec::with_capacity(tables.len());
    for (table, columns) in &tables {
        let names: Vec<String> = columns.iter().map(|(c, _)| quoted(c)).collect();
        let statement = format!("COPY {} ({}) FROM STDIN", quoted(table), names.join(", "));
        let mut copy = tx.copy_in_raw(&statement).await?;
        let sent = loop {
            match arriving.recv_async().await {
                Ok(Ok(Piece::Chunk(chunk))) => {
                    copy.send(chunk).await?;
                }
                Ok(Ok(Piece::End(rows))) => break rows,
                Ok(Err(error)) => {
                    let _ = copy.abort("the snapshot could not be read").await;
                    return Err(error);
                }
                Err(_) => {
                    let _ = copy.abort("the reading thread ended").await;
                    anyhow::bail!("the reading thread ended before {table}");
                }
            }
        };
        let copied = copy.finish().await?;
        let counted: i64 = sqlx::query_scalar(&format!("SELECT COUNT(*) FROM {}", quoted(table)))
            .fetch_one(&mut *tx)
            .await?;
        let table_moved = TableMoved {
            table: table.clone(),
            sqlite_rows: sent,
            postgres_rows: u64::try_from(counted).unwrap_or_default(),
        };
        if copied != sent || table_moved.postgres_rows != sent {
            anyhow::bail!(
                "{table}: {sent} rows read, {copied} copied, {counted} in PostgreSQL; \
                     nothing was moved"
            );
        }
        moved(&table_moved);
        done.push(table_moved);
    }
    let _ = reader.join();
    tx.commit().await?;
    Ok(done)
}

/// The tables of the migrated PostgreSQL database (its migrations table left out) with their
/// columns and types, parents before the children whose foreign keys name them.
async fn tables_in_order(
    conn: &mut sqlx::PgConnection,
) -> anyhow::Result<Vec<(String, Vec<(String, String)>)>> {
    let rows = sqlx::query(
        "SELECT table_name::text, column_name::text, data_type::text \
         FROM information_schema.columns \
         WHERE table_schema = current_schema() AND table_name <> '_sqlx_migrations' \
         ORDER BY table_name, ordinal_position",
    )
    .fetch_all(&mut *conn)
    .await?;
    let mut columns: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for row in rows {
        columns
            .entry(row.try_get(0)?)
            .or_default()
            .push((row.try_get(1)?, row.try_get(2)?));
    }
    let edges = sqlx::query(
        "SELECT conrelid::regclass::text, confrelid::regclass::text FROM pg_constraint \
         WHERE contype = 'f' AND connamespace = current_schema()::regnamespace",
    )
    .fetch_all(&mut *conn)
    .await?;
    let mut parents: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for edge in edges {
        let (child, parent): (String, String) = (edge.try_get(0)?, edge.try_get(1)?);
        if child != parent {
            parents.entry(child).or_default().insert(parent);
        }
    }
    // Kahn's order, alphabetical among equals, so every move copies in the same order.
    let mut ordered = Vec::with_capacity(columns.len());
    let mut placed = BTreeSet::new();
    while placed.len() < columns.len() {
        let ready: Vec<String> = columns
            .keys()
            .filter(|t| !placed.contains(*t))
            .filter(|t| {
                parents.get(*t).is_none_or(|ps| {
                    ps.iter()
                        .all(|p| placed.contains(p) || !columns.contains_key(p))
                })
            })
            .cloned()
            .collect();
        anyhow::ensure!(!ready.is_empty(), "the tables' foreign keys form a circle");
        for table in ready {
            placed.insert(table.clone());
            let table_columns = columns.get(&table).cloned().unwrap_or_default();
            ordered.push((table, table_columns));
        }
    }
    Ok(ordered)
}

/// The reading thread: each table of `plan` from the snapshot, as COPY text in chunks.
fn read_tables(
    snapshot: &Path,
    plan: &[(String, Vec<(String, String)>)],
    pieces: &flume::Sender<anyhow::Result<Piece>>,
) {
    let flags =
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let opened = rusqlite::Connection::open_with_flags(snapshot, flags)
        .with_context(|| format!("cannot open the snapshot {}", snapshot.display()));
    let db = match opened {
        Ok(db) => db,
        Err(error) => {
            let _ = pieces.send(Err(error));
            return;
        }
    };
    for (table, columns) in plan {
        if let Err(error) = read_table(&db, table, columns, pieces) {
            let _ = pieces.send(Err(error.context(format!("reading {table}"))));
            return;
        }
    }
}

fn read_table(
    db: &rusqlite::Connection,
    table: &str,
    columns: &[(String, String)],
    pieces: &flume::Sender<anyhow::Result<Piece>>,
) -> anyhow::Result<()> {
    let names: Vec<String> = columns.iter().map(|(c, _)| quoted(c)).collect();
    let sql = format!("SELECT {} FROM {}", names.join(", "), quoted(table));
    let mut statement = db
        .prepare(&sql)
        .with_context(|| format!("the SQLite database has no table {table} of these columns"))?;
    let mut rows = statement.query([])?;
    let mut chunk = Vec::with_capacity(CHUNK + 4096);
    let mut line = String::new();
    let mut count = 0u64;
    while let Some(row) = rows.next()? {
        line.clear();
        for (i, (column, pg_type)) in columns.iter().enumerate() {
            if i > 0 {
                line.push('\t');
            }
            copy_field(&mut line, row.get_ref(i)?, pg_type)
                .with_context(|| format!("{table}.{column}"))?;
        }
        line.push('\n');
        chunk.extend_from_slice(line.as_bytes());
        count += 1;
        if chunk.len() >= CHUNK {
            let full = std::mem::replace(&mut chunk, Vec::with_capacity(CHUNK + 4096));
            if pieces.send(Ok(Piece::Chunk(full))).is_err() {
                return Ok(());
            }
        }
    }
    if !chunk.is_empty() && pieces.send(Ok(Piece::Chunk(chunk))).is_err() {
        return Ok(());
    }
    let _ = pieces.send(Ok(Piece::End(count)));
    Ok(())
}

/// One field in COPY's text form: `\N` for NULL, backslash escapes in text, bytea as `\\x` hex,
/// SQLite's 16-byte UUIDs and 0/1 booleans as PostgreSQL reads them.
fn copy_field(out: &mut String, value: ValueRef<'_>, pg_type: &str) -> anyhow::Result<()> {
    match (value, pg_type) {
        (ValueRef::Null, _) => out.push_str("\\N"),
        (
            ValueRef::Integer(n),
            "bigint" | "integer" | "smallint" | "numeric" | "double precision" | "real",
        ) => {
            let _ = write!(out, "{n}");
        }
        (ValueRef::Real(x), "double precision" | "real" | "numeric") => {
            let _ = write!(out, "{x:?}");
        }
        (ValueRef::Integer(n), "boolean") => out.push(if n != 0 { 't' } else { 'f' }),
        (ValueRef::Blob(bytes), "uuid") => {
            let id = uuid::Uuid::from_slice(bytes).context("a UUID that is not 16 bytes")?;
            let _ = write!(out, "{id}");
        }
        (ValueRef::Text(text), "uuid") => {
            let id = uuid::Uuid::try_parse_ascii(text).context("a UUID that does not parse")?;
            let _ = write!(out, "{id}");
        }
        (ValueRef::Blob(bytes) | ValueRef::Text(bytes), "bytea") => {
            out.push_str("\\\\x");
            for byte in bytes {
                let _ = write!(out, "{byte:02x}");
            }
        }
        (ValueRef::Text(text), "text" | "character varying" | "json" | "jsonb") => {
            let text = std::str::from_utf8(text).context("text that is not UTF-8")?;
            for c in text.chars() {
                match c {
                    '\\' => out.push_str("\\\\"),
                    '\n' => out.push_str("\\n"),
                    '\r' => out.push_str("\\r"),
                    '\t' => out.push_str("\\t"),
                    c => out.push(c),
                }
            }
        }
        (ValueRef::Integer(n), "text" | "character varying") => {
            let _ = write!(out, "{n}");
        }
        (value, pg_type) => anyhow::bail!(
            "a SQLite {:?} value where PostgreSQL has {pg_type}: the move does not know this \
             column's type (src/store/moving.rs)",
            value.data_type()
        ),
    }
    Ok(())
}

/// A table or column name as SQL names it, whatever it is.
fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}
