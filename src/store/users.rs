//! Accounts, their 2FA state and recovery codes.

use uuid::Uuid;

use super::{Backend, Store, is_unique_violation, on_pool, on_write_pool};
use crate::error::Result;
use crate::model::User;

#[derive(sqlx::FromRow)]
pub(super) struct UserRow {
    pub(super) id: Uuid,
    pub(super) email: String,
    pub(super) email_normalized: String,
    pub(super) full_name: String,
    pub(super) password_hash: String,
    pub(super) disabled: bool,
    pub(super) totp_secret: Option<Vec<u8>>,
    pub(super) totp_pending: Option<Vec<u8>>,
    pub(super) auth_epoch: i64,
    pub(super) second_factor_blocked_until: Option<i64>,
    pub(super) roles: String,
    pub(super) created_at: i64,
    pub(super) email_verified: bool,
    pub(super) last_login_at: Option<i64>,
    pub(super) email_verified_by: Option<String>,
}

impl From<UserRow> for User {
    fn from(r: UserRow) -> Self {
        User {
            id: r.id,
            email: r.email,
            email_normalized: r.email_normalized,
            full_name: r.full_name,
            password_hash: r.password_hash,
            disabled: r.disabled,
            totp_secret: r.totp_secret,
            totp_pending: r.totp_pending,
            auth_epoch: r.auth_epoch,
            second_factor_blocked_until: r.second_factor_blocked_until,
            roles: r.roles.split_whitespace().map(str::to_owned).collect(),
            created_at: r.created_at,
            email_verified: r.email_verified,
            last_login_at: r.last_login_at,
            email_verified_by: r.email_verified_by,
        }
    }
}

/// The columns of `UserRow`, as a literal so that query texts can be `concat!`ed consts.
macro_rules! user_columns {
    () => {
        "id, email, email_normalized, full_name, password_hash, disabled, totp_secret, \
         totp_pending, auth_epoch, second_factor_blocked_until, roles, created_at, email_verified, \
         last_login_at, email_verified_by"
    };
}
pub(super) use user_columns;

// Hot-path query texts, shared with the plan tests (`store::plans`).
pub(super) const USER_BY_EMAIL: &str = concat!(
    "SELECT ",
    user_columns!(),
    " FROM users WHERE email_normalized = $1"
);
pub(super) const USER_BY_ID: &str =
    concat!("SELECT ", user_columns!(), " FROM users WHERE id = $1");
/// Bounded on both sides although only `since` matters: PostgreSQL's generic plan guesses that a
/// one-sided range of an unknown bound holds a third of the table and scans it, while a two-sided
/// one is guessed small and read from the index (`store::plans`).
pub(super) const USERS_CHANGED_SINCE: &str =
    "SELECT id FROM users WHERE updated_at >= $1 AND updated_at <= $2";
const ALL_USERS: &str = concat!(
    "SELECT ",
    user_columns!(),
    " FROM users WHERE deleted_at IS NULL ORDER BY created_at, email_normalized"
);

pub struct NewUser<'a> {
    pub id: Uuid,
    pub email: &'a str,
    pub email_normalized: &'a str,
    pub full_name: &'a str,
    pub password_hash: &'a str,
    pub created_at: i64,
}

/// Replaces a user's recovery codes with `hashes` inside the open transaction `tx` (of either
/// backend, hence a macro rather than a function generic over both drivers).
macro_rules! put_recovery_codes {
    ($tx:ident, $id:expr, $hashes:expr) => {
        sqlx::query("DELETE FROM recovery_codes WHERE user_id = $1")
            .bind($id)
            .execute(&mut *$tx)
            .await?;
        for hash in $hashes {
            sqlx::query("INSERT INTO recovery_codes (user_id, code_hash) VALUES ($1, $2)")
                .bind($id)
                .bind(&hash[..])
                .execute(&mut *$tx)
                .await?;
        }
    };
}

impl Store {
    /// Inserts the user; false if the e-mail is in use.
    pub async fn insert_user(&self, user: &NewUser<'_>) -> Result<bool> {
        let sql = "INSERT INTO users (id, email, email_normalized, full_name, password_hash, \
                   created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $6)";
        on_write_pool!(self, |pool| {
            let inserted = sqlx::query(sql)
                .bind(user.id)
                .bind(user.email)
                .bind(user.email_normalized)
                .bind(user.full_name)
                .bind(user.password_hash)
                .bind(user.created_at)
                .execute(pool)
                .await;
            match inserted {
                Ok(_) => Ok(true),
                Err(e) if is_unique_violation(&e) => Ok(false),
                Err(e) => Err(e),
            }
        })
    }

    pub async fn user_by_email(&self, email_normalized: &str) -> Result<Option<User>> {
        if let Backend::Sqlite { lite, .. } = &self.backend {
            return lite.user(USER_BY_EMAIL, email_normalized).await;
        }
        let row: Option<UserRow> = on_pool!(self, |pool| sqlx::query_as(USER_BY_EMAIL)
            .bind(email_normalized)
            .fetch_optional(pool)
            .await)?;
        Ok(row.map(User::from))
    }

    pub async fn user_by_id(&self, id: Uuid) -> Result<Option<User>> {
        if let Backend::Sqlite { lite, .. } = &self.backend {
            return lite.user(USER_BY_ID, *id.as_bytes()).await;
        }
        let row: Option<UserRow> = on_pool!(self, |pool| sqlx::query_as(USER_BY_ID)
            .bind(id)
            .fetch_optional(pool)
            .await)?;
        Ok(row.map(User::from))
    }

    /// Replaces an account's roles if they are still `old` (compare-and-set: two operators'
    /// changes never lose one another's). `updated_at` moves with them: other instances learn of
    /// the change by polling it (`users_changed_since`).
    pub async fn set_roles(
        &self,
        id: Uuid,
        old: &[String],
        new: &[String],
        now: i64,
    ) -> Result<bool> {
        let sql = "UPDATE users SET roles = $3, updated_at = $4 WHERE id = $1 AND roles = $2";
        on_write_pool!(self, |pool| sqlx::query(sql)
            .bind(id)
            .bind(old.join(" "))
            .bind(new.join(" "))
            .bind(now)
            .execute(pool)
            .await
            .map(|r| r.rows_affected() == 1))
    }

    /// The accounts written at or after `since` (ms): what an instance must forget of the accounts
    /// it remembers. One range read of the `users_updated_at` index.
    pub async fn users_changed_since(&self, since: i64) -> Result<Vec<Uuid>> {
        on_pool!(self, |pool| sqlx::query_scalar(USERS_CHANGED_SINCE)
            .bind(since)
            .bind(i64::MAX)
            .fetch_all(pool)
            .await)
    }

    /// Renames an account; false if there is no such account (or it was deleted). `updated_at`
    /// moves: forward-auth's directory on every instance forgets the old name.
    pub async fn set_full_name(&self, id: Uuid, full_name: &str, now: i64) -> Result<bool> {
        let sql = "UPDATE users SET full_name = $2, updated_at = $3 \
                   WHERE id = $1 AND deleted_at IS NULL";
        on_write_pool!(self, |pool| sqlx::query(sql)
            .bind(id)
            .bind(full_name)
            .bind(now)
            .execute(pool)
            .await
            .map(|r| r.rows_affected() == 1))
    }

    pub async fn list_users(&self) -> Result<Vec<User>> {
        let rows: Vec<UserRow> =
            on_pool!(self, |pool| sqlx::query_as(ALL_USERS).fetch_all(pool).await)?;
        Ok(rows.into_iter().map(User::from).collect())
    }

    /// Replaces a hash only if it is still the one that was verified, so a concurrent password
    /// change is never overwritten by an upgrade of the old password. Not a change of password:
    /// `auth_epoch` stays. False when the hash had changed meanwhile (nothing was replaced).
    pub async fn upgrade_password_hash(&self, id: Uuid, old: &str, new: &str) -> Result<bool> {
        let sql = "UPDATE users SET password_hash = $3 WHERE id = $1 AND password_hash = $2";
        on_write_pool!(self, |pool| sqlx::query(sql)
            .bind(id)
            .bind(old)
            .bind(new)
            .execute(pool)
            .await
            .map(|done| done.rows_affected() == 1))
    }

    /// Enables or disables an account, without ending its sessions (see `revoke_user_sessions`
    /// and `set_disabled_and_revoke`).
    pub async fn set_disabled(&self, id: Uuid, disabled: bool, now: i64) -> Result<()> {
        let sql = "UPDATE users SET disabled = $2, updated_at = $3 WHERE id = $1";
        on_write_pool!(self, |pool| sqlx::query(sql)
            .bind(id)
            .bind(disabled)
            .bind(now)
            .execute(pool)
            .await
            .map(|_| ()))
    }

    pub async fn set_totp_pending(&self, id: Uuid, sealed: &[u8], now: i64) -> Result<()> {
        let sql = "UPDATE users SET totp_pending = $2, updated_at = $3 WHERE id = $1";
        on_write_pool!(self, |pool| sqlx::query(sql)
            .bind(id)
            .bind(sealed)
            .bind(now)
            .execute(pool)
            .await
            .map(|_| ()))
    }

    /// Turns the pending secret into the enabled one and stores the recovery codes, in one
    /// transaction. `pending` must still be the pending secret (a second setup in between makes
    /// this fail), and 2FA must not be on yet. `step` is the accepted code's time step.
    pub async fn enable_totp(
        &self,
        id: Uuid,
        pending: &[u8],
        step: i64,
        recovery_hashes: &[[u8; 32]],
        now: i64,
    ) -> Result<bool> {
        let enable = "UPDATE users SET totp_secret = totp_pending, totp_pending = NULL, \
                      totp_last_step = $3, second_factor_failures = 0, \
                      second_factor_blocked_until = NULL, updated_at = $4 \
                      WHERE id = $1 AND totp_pending = $2 AND totp_secret IS NULL";
        on_write_pool!(self, |pool| {
            let mut tx = pool.begin().await?;
            let enabled = sqlx::query(enable)
                .bind(id)
                .bind(pending)
                .bind(step)
                .bind(now)
                .execute(&mut *tx)
                .await?
                .rows_affected();
            if enabled != 1 {
                return Ok(false);
            }
            put_recovery_codes!(tx, id, recovery_hashes);
            tx.commit().await?;
            Ok(true)
        })
    }

    /// Replaces the recovery codes of an account whose 2FA is on, in one transaction; false if
    /// 2FA is off (turned off by a concurrent request).
    pub async fn replace_recovery_codes(
        &self,
        id: Uuid,
        recovery_hashes: &[[u8; 32]],
        now: i64,
    ) -> Result<bool> {
        // The UPDATE comes first: it locks the user row, so a concurrent disable either ran before
        // (and this finds 2FA off) or waits for these codes and then deletes them.
        let lock = "UPDATE users SET updated_at = $2 WHERE id = $1 AND totp_secret IS NOT NULL";
        on_write_pool!(self, |pool| {
            let mut tx = pool.begin().await?;
            let enabled = sqlx::query(lock)
                .bind(id)
                .bind(now)
                .execute(&mut *tx)
                .await?
                .rows_affected();
            if enabled != 1 {
                return Ok(false);
            }
            put_recovery_codes!(tx, id, recovery_hashes);
            tx.commit().await?;
            Ok(true)
        })
    }

    /// Turns 2FA off and forgets the secret, the pending secret and the recovery codes.
    pub async fn disable_totp(&self, id: Uuid, now: i64) -> Result<bool> {
        let sql = "UPDATE users SET totp_secret = NULL, totp_pending = NULL, totp_last_step = NULL, \
                   second_factor_failures = 0, second_factor_blocked_until = NULL, updated_at = $2 \
                   WHERE id = $1";
        on_write_pool!(self, |pool| {
            let mut tx = pool.begin().await?;
            let changed = sqlx::query(sql)
                .bind(id)
                .bind(now)
                .execute(&mut *tx)
                .await?
                .rows_affected();
            sqlx::query("DELETE FROM recovery_codes WHERE user_id = $1")
                .bind(id)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok(changed == 1)
        })
    }

    /// Records `step` as used if it is newer than every step used before: false means a replay.
    pub async fn claim_totp_step(&self, id: Uuid, step: i64) -> Result<bool> {
        let sql = "UPDATE users SET totp_last_step = $2 \
                   WHERE id = $1 AND (totp_last_step IS NULL OR totp_last_step < $2)";
        let n = on_write_pool!(self, |pool| sqlx::query(sql)
            .bind(id)
            .bind(step)
            .execute(pool)
            .await
            .map(|r| r.rows_affected()))?;
        Ok(n == 1)
    }

    /// Marks an unused recovery code used; false if there is no such unused code.
    pub async fn use_recovery_code(&self, id: Uuid, hash: &[u8; 32], now: i64) -> Result<bool> {
        let sql = "UPDATE recovery_codes SET used_at = $3 \
                   WHERE user_id = $1 AND code_hash = $2 AND used_at IS NULL";
        let n = on_write_pool!(self, |pool| sqlx::query(sql)
            .bind(id)
            .bind(&hash[..])
            .bind(now)
            .execute(pool)
            .await
            .map(|r| r.rows_affected()))?;
        Ok(n == 1)
    }

    pub async fn recovery_codes_remaining(&self, id: Uuid) -> Result<i64> {
        let sql = "SELECT COUNT(*) FROM recovery_codes WHERE user_id = $1 AND used_at IS NULL";
        on_pool!(self, |pool| sqlx::query_scalar(sql)
            .bind(id)
            .fetch_one(pool)
            .await)
    }

    /// Counts a wrong second-factor code; returns the consecutive failures so far, and sets the
    /// wait that `block_for` gives for that count (ms, from `now`; none for 0).
    pub async fn second_factor_failed(
        &self,
        id: Uuid,
        now: i64,
        block_for: impl Fn(i64) -> i64,
    ) -> Result<i64> {
        let count = "UPDATE users SET second_factor_failures = second_factor_failures + 1 \
                     WHERE id = $1 RETURNING second_factor_failures";
        let block = "UPDATE users SET second_factor_blocked_until = $2 WHERE id = $1";
        on_write_pool!(self, |pool| {
            let mut tx = pool.begin().await?;
            let failures: i64 = sqlx::query_scalar(count)
                .bind(id)
                .fetch_optional(&mut *tx)
                .await?
                .unwrap_or(0);
            let wait = block_for(failures);
            if wait > 0 {
                sqlx::query(block)
                    .bind(id)
                    .bind(now + wait)
                    .execute(&mut *tx)
                    .await?;
            }
            tx.commit().await?;
            Ok(failures)
        })
    }

    /// A right second-factor code: the run of failures is over.
    pub async fn second_factor_succeeded(&self, id: Uuid) -> Result<()> {
        let sql = "UPDATE users SET second_factor_failures = 0, second_factor_blocked_until = NULL \
                   WHERE id = $1 AND second_factor_failures > 0";
        on_write_pool!(self, |pool| sqlx::query(sql)
            .bind(id)
            .execute(pool)
            .await
            .map(|_| ()))
    }
}
