//! Mailed tokens (reset, verification, invitation) and the changes they make, each in one
//! transaction with the token's consumption and the mails it causes: a token is used at most once
//! (a conditional UPDATE, so of two racing posts one wins), and no mail goes out for a change that
//! did not happen, nor a change happen without its mail.

use uuid::Uuid;

use super::credentials::prove_address;
use super::outbox::queue_mail;
use super::sessions::{end_logins, revoke_all};
use super::users::NewUser;
use super::{Store, is_unique_violation, on_pool, on_write_pool};
use crate::error::{Error, Result};
use crate::model::AddressProof;
use crate::model::mail::OutboxMail;

/// A token about to be mailed: only its hash is kept.
pub struct NewMailToken<'a> {
    pub hash: [u8; 32],
    pub user_id: Uuid,
    /// `reset`, `verify` or `invite`.
    pub purpose: &'static str,
    /// For a verification: the new address it confirms (an address change), none for the
    /// account's own.
    pub email: Option<&'a str>,
    pub created_at: i64,
    pub expires_at: i64,
}

/// A live token's account, and the address a verification token confirms.
#[derive(Debug, Clone)]
pub struct MailTokenRecord {
    pub user_id: Uuid,
    pub email: Option<String>,
}

#[derive(sqlx::FromRow)]
struct TokenRow {
    user_id: Uuid,
    email: Option<String>,
}

/// Voids the live tokens of `$purpose` for `$user` (newer voids older) and stores `$token`.
macro_rules! put_token {
    ($tx:ident, $token:expr) => {{
        let token: &NewMailToken = $token;
        sqlx::query(
            "UPDATE mail_tokens SET used_at = $3 \
             WHERE user_id = $1 AND purpose = $2 AND used_at IS NULL",
        )
        .bind(token.user_id)
        .bind(token.purpose)
        .bind(token.created_at)
        .execute(&mut *$tx)
        .await?;
        sqlx::query(
            "INSERT INTO mail_tokens (token_hash, user_id, purpose, email, created_at, expires_at) \
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(&token.hash[..])
        .bind(token.user_id)
        .bind(token.purpose)
        .bind(token.email)
        .bind(token.created_at)
        .bind(token.expires_at)
        .execute(&mut *$tx)
        .await?;
    }};
}

/// Consumes a live token of `$purpose` in `$tx`; evaluates to its `TokenRow`, if it was live.
macro_rules! consume_token {
    ($tx:ident, $hash:expr, $purpose:expr, $now:expr) => {
        sqlx::query_as::<_, TokenRow>(
            "UPDATE mail_tokens SET used_at = $3 \
             WHERE token_hash = $1 AND purpose = $2 AND used_at IS NULL AND expires_at > $3 \
             RETURNING user_id, email",
        )
        .bind(&$hash[..])
        .bind($purpose)
        .bind($now)
        .fetch_optional(&mut *$tx)
        .await?
    };
}

/// What posting a verification token did.
#[derive(Debug, Clone)]
pub enum Verified {
    /// The account's own address is verified.
    Address(Uuid, AddressProof),
    /// The account moved to the token's address.
    Changed(Uuid, AddressProof),
}

/// The mails a change that proves an address writes with it, composed once the transaction knows
/// what the proof removed and what remains (`AddressProof`).
pub type ProofMails<'a> = Box<dyn FnOnce(&AddressProof) -> Result<Vec<OutboxMail>> + Send + 'a>;

impl Store {
    /// The account of a live token of `purpose` (unused, unexpired, not voided); reads only.
    pub async fn mail_token(
        &self,
        hash: &[u8; 32],
        purpose: &str,
        now: i64,
    ) -> Result<Option<MailTokenRecord>> {
        let sql = "SELECT user_id, email FROM mail_tokens \
                   WHERE token_hash = $1 AND purpose = $2 AND used_at IS NULL AND expires_at > $3";
        let row: Option<TokenRow> = on_pool!(self, |pool| sqlx::query_as(sql)
            .bind(&hash[..])
            .bind(purpose)
            .bind(now)
            .fetch_optional(pool)
            .await)?;
        Ok(row.map(|r| MailTokenRecord {
            user_id: r.user_id,
            email: r.email,
        }))
    }

    /// Stores a token with its mail, voiding the account's older ones of its purpose, unless
    /// `limit` tokens of that purpose were made for the account since `since`: false then, and
    /// nothing is written. The user row is locked first, so racing requests count in turn.
    pub async fn issue_mail_token(
        &self,
        token: &NewMailToken<'_>,
        mail: &OutboxMail,
        since: i64,
        limit: i64,
    ) -> Result<bool> {
        let count = "SELECT COUNT(*) FROM mail_tokens \
                     WHERE user_id = $1 AND purpose = $2 AND created_at > $3";
        on_write_pool!(self, |pool| {
            let mut tx = pool.begin().await?;
            sqlx::query("UPDATE users SET updated_at = updated_at WHERE id = $1")
                .bind(token.user_id)
                .execute(&mut *tx)
                .await?;
            let recent: i64 = sqlx::query_scalar(count)
                .bind(token.user_id)
                .bind(token.purpose)
                .bind(since)
                .fetch_one(&mut *tx)
                .await?;
            if recent >= limit {
                tx.rollback().await?;
                return Ok(false);
            }
            put_token!(tx, token);
            queue_mail!(tx, mail);
            tx.commit().await?;
            Ok(true)
        })
    }

    /// Creates an account whose address is not verified yet, with the token mailed to it
    /// (registration, invitation); false if the address is in use.
    pub async fn insert_user_with_token(
        &self,
        user: &NewUser<'_>,
        token: &NewMailToken<'_>,
        mail: &OutboxMail,
    ) -> Result<bool> {
        let insert = "INSERT INTO users (id, email, email_normalized, full_name, password_hash, \
                      email_verified, created_at, updated_at) \
                      VALUES ($1, $2, $3, $4, $5, FALSE, $6, $6)";
        on_write_pool!(self, |pool| {
            let mut tx = pool.begin().await?;
            let inserted = sqlx::query(insert)
                .bind(user.id)
                .bind(user.email)
                .bind(user.email_normalized)
                .bind(user.full_name)
                .bind(user.password_hash)
                .bind(user.created_at)
                .execute(&mut *tx)
                .await;
            match inserted {
                Ok(_) => {}
                Err(e) if is_unique_violation(&e) => return Ok(false),
                Err(e) => return Err(e),
            }
            put_token!(tx, token);
            queue_mail!(tx, mail);
            tx.commit().await?;
            Ok(true)
        })
    }

    /// A reset: consumes the token and sets the new password (hashed), the address counting as
    /// verified (the link reached it, which removes what was added before a first proof:
    /// `credentials`), `auth_epoch` moving and every session and 2FA challenge of the account
    /// ending, with the mails `notices` composes. Returns the account, the ended sessions and
    /// the proof, or `None` if the token was not live.
    pub async fn reset_password(
        &self,
        token_hash: &[u8; 32],
        password_hash: &str,
        reason: &str,
        notices: ProofMails<'_>,
        now: i64,
    ) -> Result<Option<(Uuid, Vec<Uuid>, AddressProof, Vec<OutboxMail>)>> {
        let update = "UPDATE users SET password_hash = $2, auth_epoch = auth_epoch + 1, \
                      email_verified = TRUE, email_verified_by = NULL, updated_at = $3 WHERE id = $1";
        let lock = self.row_lock();
        on_write_pool!(self, |pool| {
            let mut tx = pool.begin().await?;
            let Some(token) = consume_token!(tx, token_hash, "reset", now) else {
                tx.rollback().await?;
                return Ok(Ok(None));
            };
            let user_id = token.user_id;
            let proof = prove_address!(tx, user_id, lock);
            let mails = match notices(&proof) {
                Ok(mails) => mails,
                Err(error) => {
                    tx.rollback().await?;
                    return Ok(Err(error));
                }
            };
            sqlx::query(update)
                .bind(user_id)
                .bind(password_hash)
                .bind(now)
                .execute(&mut *tx)
                .await?;
            let ended = end_logins!(tx, user_id, None::<Uuid>, reason, now);
            for mail in &mails {
                queue_mail!(tx, mail);
            }
            tx.commit().await?;
            Ok(Ok(Some((user_id, ended, proof, mails))))
        })?
    }

    /// Consumes a verification token: the account's address is verified, or, for an address
    /// change, the account moves to the new address (verified) and its other live links (sent to
    /// the old address) are voided. Either way a first proof of an address removes what was added
    /// before it (`credentials`), and the mails `notices` composes go with the change. `None` if
    /// the token was not live; `EMAIL_TAKEN` if the new address was taken meanwhile (the token
    /// stays unused).
    pub async fn verify_email(
        &self,
        token_hash: &[u8; 32],
        notices: ProofMails<'_>,
        now: i64,
    ) -> Result<Option<(Verified, Vec<OutboxMail>)>> {
        let verify = "UPDATE users SET email_verified = TRUE, email_verified_by = NULL, updated_at = $2 WHERE id = $1";
        let change = "UPDATE users SET email = $2, email_normalized = $3, email_verified = TRUE, \
                      email_verified_by = NULL, updated_at = $4 WHERE id = $1";
        let void = "UPDATE mail_tokens SET used_at = $2 WHERE user_id = $1 AND used_at IS NULL";
        let lock = self.row_lock();
        on_write_pool!(self, |pool| {
            let mut tx = pool.begin().await?;
            let Some(token) = consume_token!(tx, token_hash, "verify", now) else {
                tx.rollback().await?;
                return Ok(Ok(None));
            };
            let proof = prove_address!(tx, token.user_id, lock);
            let mails = match notices(&proof) {
                Ok(mails) => mails,
                Err(error) => {
                    tx.rollback().await?;
                    return Ok(Err(error));
                }
            };
            let Some(new) = token.email else {
                sqlx::query(verify)
                    .bind(token.user_id)
                    .bind(now)
                    .execute(&mut *tx)
                    .await?;
                for mail in &mails {
                    queue_mail!(tx, mail);
                }
                tx.commit().await?;
                let verified = Verified::Address(token.user_id, proof);
                return Ok(Ok(Some((verified, mails))));
            };
            let changed = sqlx::query(change)
                .bind(token.user_id)
                .bind(&new)
                .bind(new.to_lowercase())
                .bind(now)
                .execute(&mut *tx)
                .await;
            match changed {
                Ok(_) => {}
                Err(e) if is_unique_violation(&e) => {
                    tx.rollback().await?;
                    return Ok(Err(Error::EmailTaken));
                }
                Err(e) => return Err(e),
            }
            sqlx::query(void)
                .bind(token.user_id)
                .bind(now)
                .execute(&mut *tx)
                .await?;
            for mail in &mails {
                queue_mail!(tx, mail);
            }
            tx.commit().await?;
            Ok(Ok(Some((Verified::Changed(token.user_id, proof), mails))))
        })?
    }

    /// Accepts an invitation: consumes the token and sets the account's first password; the
    /// address counts as verified. Returns the account, or `None` if the token was not live.
    pub async fn accept_invitation(
        &self,
        token_hash: &[u8; 32],
        password_hash: &str,
        now: i64,
    ) -> Result<Option<Uuid>> {
        let update = "UPDATE users SET password_hash = $2, auth_epoch = auth_epoch + 1, \
                      email_verified = TRUE, email_verified_by = NULL, updated_at = $3 WHERE id = $1";
        on_write_pool!(self, |pool| {
            let mut tx = pool.begin().await?;
            let Some(token) = consume_token!(tx, token_hash, "invite", now) else {
                tx.rollback().await?;
                return Ok(None);
            };
            sqlx::query(update)
                .bind(token.user_id)
                .bind(password_hash)
                .bind(now)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok(Some(token.user_id))
        })
    }
}

impl Store {
    /// Deletes an account at its owner's request, in one transaction: its sessions are revoked
    /// (and its 2FA challenges deleted), its contacts, recovery codes, mailed tokens, passkeys,
    /// passkey ceremonies, linked identities and federation flows deleted, and the row keeps nothing personal (see the migration
    /// `0007_mail`). A deleted account's passkey then signs in as any unknown one does. Returns
    /// the revoked sessions.
    pub async fn delete_account(&self, user_id: Uuid, reason: &str, now: i64) -> Result<Vec<Uuid>> {
        let scrub = "UPDATE users SET email = $2, email_normalized = $2, full_name = '', \
                     password_hash = '', disabled = TRUE, totp_secret = NULL, roles = '', \
                     totp_pending = NULL, auth_epoch = auth_epoch + 1, deleted_at = $3, \
                     updated_at = $3 WHERE id = $1";
        let placeholder = format!("deleted:{user_id}");
        on_write_pool!(self, |pool| {
            let mut tx = pool.begin().await?;
            sqlx::query(scrub)
                .bind(user_id)
                .bind(&placeholder)
                .bind(now)
                .execute(&mut *tx)
                .await?;
            let ended = end_logins!(tx, user_id, None::<Uuid>, reason, now);
            let tables = [
                "contacts",
                "recovery_codes",
                "mail_tokens",
                "passkeys",
                "passkey_ceremonies",
                // Its identities at other providers are free again (a new sign-up, another
                // account's link), and no link under way finishes (docs/api.md §14).
                "federated_identities",
                "federation_flows",
            ];
            for table in tables {
                let column = if table == "contacts" {
                    "owner_id"
                } else {
                    "user_id"
                };
                sqlx::query(&format!("DELETE FROM {table} WHERE {column} = $1"))
                    .bind(user_id)
                    .execute(&mut *tx)
                    .await?;
            }
            tx.commit().await?;
            Ok(ended)
        })
    }
}
