//! Personal API keys (docs/api.md §12; migration 0019): a keyed hash per key, looked up by it,
//! and the addresses each key was used from.

use uuid::Uuid;

use super::{Store, on_pool, on_write_pool};
use crate::error::Result;
use crate::model::ApiKey;
use crate::model::sessions::ApiScopes;

#[derive(sqlx::FromRow)]
struct ApiKeyRow {
    id: Uuid,
    user_id: Uuid,
    name: String,
    prefix: String,
    scopes: String,
    org_id: Option<Uuid>,
    expires_at: Option<i64>,
    created_at: i64,
    last_used_at: Option<i64>,
}

impl From<ApiKeyRow> for ApiKey {
    fn from(r: ApiKeyRow) -> Self {
        ApiKey {
            id: r.id,
            user_id: r.user_id,
            name: r.name,
            prefix: r.prefix,
            scopes: ApiScopes::parse(&r.scopes),
            org_id: r.org_id,
            expires_at: r.expires_at,
            created_at: r.created_at,
            last_used_at: r.last_used_at,
        }
    }
}

macro_rules! key_columns {
    () => {
        "id, user_id, name, prefix, scopes, org_id, expires_at, created_at, last_used_at"
    };
}

pub(crate) const API_KEY_BY_HASH: &str = concat!(
    "SELECT ",
    key_columns!(),
    " FROM api_keys WHERE key_hash = $1"
);
const API_KEYS_OF: &str = concat!(
    "SELECT ",
    key_columns!(),
    " FROM api_keys WHERE user_id = $1 ORDER BY created_at DESC, id DESC"
);
// The limit and the insert in one statement: SQLite runs one writer at a time, so two racing
// creations cannot both see room for one more; on PostgreSQL two racing in the same instant could
// (READ COMMITTED), which bounds the overshoot by the racers, not by a caller's patience.
const INSERT_API_KEY: &str = "INSERT INTO api_keys \
     (id, user_id, name, prefix, key_hash, scopes, org_id, expires_at, created_at) \
     SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9 \
     WHERE (SELECT COUNT(*) FROM api_keys WHERE user_id = $2) < $10";
// Written at most once a minute per key: a use less than a minute after the last one written
// changes nothing, whichever instance saw it.
pub(crate) const TOUCH_API_KEY: &str = "UPDATE api_keys SET last_used_at = $2 \
     WHERE id = $1 AND (last_used_at IS NULL OR last_used_at <= $3)";

/// A key to keep.
pub struct NewKeyRecord<'a> {
    pub record: &'a ApiKey,
    pub key_hash: &'a [u8],
    /// At most this many keys per person.
    pub limit: i64,
}

impl Store {
    /// Keeps a new key unless its owner has `limit` already; false then. The owner's row is
    /// locked first: under PostgreSQL's READ COMMITTED two creations at once would each count
    /// the other's key as absent and both pass the limit (SQLite's one writer serialises anyway).
    pub async fn insert_api_key(&self, new: &NewKeyRecord<'_>) -> Result<bool> {
        let k = new.record;
        let scopes = k.scopes.scope_string();
        on_write_pool!(self, |pool| {
            let mut tx = pool.begin().await?;
            sqlx::query("UPDATE users SET updated_at = updated_at WHERE id = $1")
                .bind(k.user_id)
                .execute(&mut *tx)
                .await?;
            let kept = sqlx::query(INSERT_API_KEY)
                .bind(k.id)
                .bind(k.user_id)
                .bind(&k.name)
                .bind(&k.prefix)
                .bind(new.key_hash)
                .bind(&scopes)
                .bind(k.org_id)
                .bind(k.expires_at)
                .bind(k.created_at)
                .bind(new.limit)
                .execute(&mut *tx)
                .await?
                .rows_affected()
                == 1;
            tx.commit().await?;
            Ok(kept)
        })
    }

    /// The key whose keyed hash is `hash`, expired or not.
    pub async fn api_key_by_hash(&self, hash: &[u8]) -> Result<Option<ApiKey>> {
        let row: Option<ApiKeyRow> = on_pool!(self, |pool| sqlx::query_as(API_KEY_BY_HASH)
            .bind(hash)
            .fetch_optional(pool)
            .await)?;
        Ok(row.map(Into::into))
    }

    /// A person's keys, newest first.
    pub async fn api_keys_of(&self, user: Uuid) -> Result<Vec<ApiKey>> {
        let rows: Vec<ApiKeyRow> = on_pool!(self, |pool| sqlx::query_as(API_KEYS_OF)
            .bind(user)
            .fetch_all(pool)
            .await)?;
        Ok(rows.into_iter().map(Into::into).collect())
    }

    /// Deletes `user`'s key `id`; false if there is no such key of theirs.
    pub async fn delete_api_key(&self, user: Uuid, id: Uuid) -> Result<bool> {
        let sql = "DELETE FROM api_keys WHERE id = $1 AND user_id = $2";
        on_write_pool!(self, |pool| sqlx::query(sql)
            .bind(id)
            .bind(user)
            .execute(pool)
            .await
            .map(|r| r.rows_affected() == 1))
    }

    /// Records a use of key `id` at `now`, unless one at or after `now - min_gap_ms` is recorded.
    pub async fn touch_api_key(&self, id: Uuid, now: i64, min_gap_ms: i64) -> Result<()> {
        on_write_pool!(self, |pool| sqlx::query(TOUCH_API_KEY)
            .bind(id)
            .bind(now)
            .bind(now - min_gap_ms)
            .execute(pool)
            .await
            .map(|_| ()))
    }

    /// Records that key `id` was used from `address`; true if that is the first time.
    pub async fn note_api_key_address(&self, id: Uuid, address: &str) -> Result<bool> {
        // A key deleted meanwhile has no row to refer to: nothing is inserted (and nothing new).
        let sql = "INSERT INTO api_key_addresses (key_id, address) \
                   SELECT $1, $2 WHERE EXISTS (SELECT 1 FROM api_keys WHERE id = $1) \
                   ON CONFLICT (key_id, address) DO NOTHING";
        on_write_pool!(self, |pool| sqlx::query(sql)
            .bind(id)
            .bind(address)
            .execute(pool)
            .await
            .map(|r| r.rows_affected() == 1))
    }
}
