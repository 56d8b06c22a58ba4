//! Passkeys and the WebAuthn ceremonies in flight. A ceremony is taken by deleting it, so however
//! many requests (on however many instances) race to finish one, exactly one gets its state.

use uuid::Uuid;

use super::{Store, is_unique_violation, on_pool, on_write_pool};
use crate::error::{Error, Result};
use crate::model::passkeys::{Ceremony, CeremonyKind, PasskeyUse, StoredPasskey};

#[derive(sqlx::FromRow)]
struct PasskeyRow {
    id: Uuid,
    user_id: Uuid,
    credential_id: Vec<u8>,
    name: String,
    credential: String,
    sign_count: i64,
    backup_eligible: bool,
    backup_state: bool,
    created_at: i64,
    last_used_at: Option<i64>,
}

impl From<PasskeyRow> for StoredPasskey {
    fn from(r: PasskeyRow) -> Self {
        StoredPasskey {
            id: r.id,
            user_id: r.user_id,
            credential_id: r.credential_id,
            name: r.name,
            credential: r.credential,
            sign_count: r.sign_count,
            backup_eligible: r.backup_eligible,
            backup_state: r.backup_state,
            created_at: r.created_at,
            last_used_at: r.last_used_at,
        }
    }
}

macro_rules! passkey_columns {
    () => {
        "id, user_id, credential_id, name, credential, sign_count, backup_eligible, \
         backup_state, created_at, last_used_at"
    };
}

const PASSKEYS_OF: &str = concat!(
    "SELECT ",
    passkey_columns!(),
    " FROM passkeys WHERE user_id = $1 ORDER BY created_at, id"
);
const PASSKEY_BY_CREDENTIAL: &str = concat!(
    "SELECT ",
    passkey_columns!(),
    " FROM passkeys WHERE credential_id = $1"
);
const RENAME_PASSKEY: &str = concat!(
    "UPDATE passkeys SET name = $3 WHERE id = $1 AND user_id = $2 RETURNING ",
    passkey_columns!()
);

#[derive(sqlx::FromRow)]
struct CeremonyRow {
    id: Uuid,
    kind: String,
    user_id: Option<Uuid>,
    temp_token_hash: Option<Vec<u8>>,
    state: String,
    expires_at: i64,
}

impl TryFrom<CeremonyRow> for Ceremony {
    type Error = Error;
    fn try_from(r: CeremonyRow) -> Result<Self> {
        let kind = CeremonyKind::parse(&r.kind).ok_or_else(|| {
            Error::internal(anyhow::anyhow!("unknown ceremony kind {:?}", r.kind))
        })?;
        Ok(Ceremony {
            id: r.id,
            kind,
            user_id: r.user_id,
            temp_token_hash: r.temp_token_hash,
            state: r.state,
            expires_at: r.expires_at,
        })
    }
}

// The taking of a ceremony: a live one is deleted and its row returned, in one statement.
const TAKE_REGISTRATION: &str = "DELETE FROM passkey_ceremonies \
     WHERE id = $1 AND kind = 'register' AND user_id = $2 AND expires_at > $3 \
     RETURNING id, kind, user_id, temp_token_hash, state, expires_at";
const TAKE_SIGN_IN: &str = "DELETE FROM passkey_ceremonies \
     WHERE id = $1 AND kind <> 'register' AND expires_at > $2 \
     RETURNING id, kind, user_id, temp_token_hash, state, expires_at";

impl Store {
    pub async fn insert_ceremony(&self, c: &Ceremony) -> Result<()> {
        let sql = "INSERT INTO passkey_ceremonies \
             (id, kind, user_id, temp_token_hash, state, expires_at) VALUES ($1, $2, $3, $4, $5, $6)";
        on_write_pool!(self, |pool| sqlx::query(sql)
            .bind(c.id)
            .bind(c.kind.as_str())
            .bind(c.user_id)
            .bind(c.temp_token_hash.as_deref())
            .bind(&c.state)
            .bind(c.expires_at)
            .execute(pool)
            .await
            .map(|_| ()))
    }

    /// Takes (deletes) `user`'s live registration ceremony `id`. Another user's attempt takes
    /// nothing, so it cannot spoil the owner's ceremony.
    pub async fn take_registration(
        &self,
        id: Uuid,
        user: Uuid,
        now: i64,
    ) -> Result<Option<Ceremony>> {
        let row: Option<CeremonyRow> =
            on_write_pool!(self, |pool| sqlx::query_as(TAKE_REGISTRATION)
                .bind(id)
                .bind(user)
                .bind(now)
                .fetch_optional(pool)
                .await)?;
        row.map(Ceremony::try_from).transpose()
    }

    /// Takes (deletes) the live sign-in ceremony `id`, of any sign-in kind.
    pub async fn take_sign_in(&self, id: Uuid, now: i64) -> Result<Option<Ceremony>> {
        let row: Option<CeremonyRow> = on_write_pool!(self, |pool| sqlx::query_as(TAKE_SIGN_IN)
            .bind(id)
            .bind(now)
            .fetch_optional(pool)
            .await)?;
        row.map(Ceremony::try_from).transpose()
    }

    /// `user`'s passkeys, oldest first.
    pub async fn passkeys_of(&self, user: Uuid) -> Result<Vec<StoredPasskey>> {
        let rows: Vec<PasskeyRow> = on_pool!(self, |pool| sqlx::query_as(PASSKEYS_OF)
            .bind(user)
            .fetch_all(pool)
            .await)?;
        Ok(rows.into_iter().map(Into::into).collect())
    }

    pub async fn passkey_by_credential_id(
        &self,
        credential_id: &[u8],
    ) -> Result<Option<StoredPasskey>> {
        let row: Option<PasskeyRow> = on_pool!(self, |pool| sqlx::query_as(PASSKEY_BY_CREDENTIAL)
            .bind(credential_id)
            .fetch_optional(pool)
            .await)?;
        Ok(row.map(Into::into))
    }

    /// Stores a new passkey; false if its credential id is registered already (to anyone).
    pub async fn insert_passkey(&self, p: &StoredPasskey) -> Result<bool> {
        let sql = concat!(
            "INSERT INTO passkeys (",
            passkey_columns!(),
            ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
        );
        on_write_pool!(self, |pool| {
            let inserted = sqlx::query(sql)
                .bind(p.id)
                .bind(p.user_id)
                .bind(&p.credential_id)
                .bind(&p.name)
                .bind(&p.credential)
                .bind(p.sign_count)
                .bind(p.backup_eligible)
                .bind(p.backup_state)
                .bind(p.created_at)
                .bind(p.last_used_at)
                .execute(pool)
                .await;
            match inserted {
                Ok(_) => Ok(true),
                Err(e) if is_unique_violation(&e) => Ok(false),
                Err(e) => Err(e),
            }
        })
    }

    /// Records a use of a passkey, unless its counter did not move past the stored one (both 0:
    /// an authenticator without a counter, as most synced passkeys are). False: the counter went
    /// back or stood still, a sign of a cloned authenticator, or the passkey is gone.
    pub async fn passkey_used(&self, u: &PasskeyUse<'_>) -> Result<bool> {
        let sql = "UPDATE passkeys SET credential = $2, sign_count = $3, backup_eligible = $4, \
             backup_state = $5, last_used_at = $6 \
             WHERE id = $1 AND (sign_count < $3 OR (sign_count = 0 AND $3 = 0))";
        let n = on_write_pool!(self, |pool| sqlx::query(sql)
            .bind(u.id)
            .bind(u.credential)
            .bind(u.sign_count)
            .bind(u.backup_eligible)
            .bind(u.backup_state)
            .bind(u.at)
            .execute(pool)
            .await
            .map(|r| r.rows_affected()))?;
        Ok(n == 1)
    }

    /// Renames one of `user`'s passkeys; `None` if it is not theirs.
    pub async fn rename_passkey(
        &self,
        user: Uuid,
        id: Uuid,
        name: &str,
    ) -> Result<Option<StoredPasskey>> {
        let row: Option<PasskeyRow> = on_write_pool!(self, |pool| sqlx::query_as(RENAME_PASSKEY)
            .bind(id)
            .bind(user)
            .bind(name)
            .fetch_optional(pool)
            .await)?;
        Ok(row.map(Into::into))
    }

    /// Deletes one of `user`'s passkeys; false if it is not theirs.
    pub async fn delete_passkey(&self, user: Uuid, id: Uuid) -> Result<bool> {
        let sql = "DELETE FROM passkeys WHERE id = $1 AND user_id = $2";
        let n = on_write_pool!(self, |pool| sqlx::query(sql)
            .bind(id)
            .bind(user)
            .execute(pool)
            .await
            .map(|r| r.rows_affected()))?;
        Ok(n == 1)
    }
}
