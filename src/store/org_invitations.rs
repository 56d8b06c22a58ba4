//! Invitations to organisations (docs/api.md §13): inserted with their mail in one transaction,
//! accepted by deleting them in the transaction that makes the membership (so a token joins at
//! most once: of two racing accepts, one deletes the row), deleted to withdraw them.

use uuid::Uuid;

use super::orgs::{split_roles, touch_user};
use super::outbox::queue_mail;
use super::users::NewUser;
use super::{Store, is_unique_violation, on_pool, on_write_pool};
use crate::error::{Error, Result};
use crate::model::mail::OutboxMail;
use crate::model::orgs::OrgInvitation;

/// An invitation about to be mailed: only its token's hash is kept.
pub struct NewOrgInvitation<'a> {
    pub invitation: &'a OrgInvitation,
    pub token_hash: [u8; 32],
    pub invited_by: Uuid,
}

#[derive(sqlx::FromRow)]
struct InvitationRow {
    id: Uuid,
    org_id: Uuid,
    email: String,
    email_normalized: String,
    roles: String,
    created_at: i64,
    expires_at: i64,
}

impl From<InvitationRow> for OrgInvitation {
    fn from(r: InvitationRow) -> Self {
        OrgInvitation {
            id: r.id,
            org_id: r.org_id,
            email: r.email,
            email_normalized: r.email_normalized,
            roles: split_roles(&r.roles),
            created_at: r.created_at,
            expires_at: r.expires_at,
        }
    }
}

macro_rules! invitation_columns {
    () => {
        "id, org_id, email, email_normalized, roles, created_at, expires_at"
    };
}

/// In `$tx`: the live invitation with this token hash, deleted (used up); `None` if there is none.
macro_rules! take_invitation {
    ($tx:ident, $hash:expr, $now:expr) => {{
        let row: Option<InvitationRow> = sqlx::query_as(concat!(
            "DELETE FROM org_invitations WHERE token_hash = $1 AND expires_at > $2 RETURNING ",
            invitation_columns!()
        ))
        .bind(&$hash[..])
        .bind($now)
        .fetch_optional(&mut *$tx)
        .await?;
        row.map(OrgInvitation::from)
    }};
}

/// In `$tx`: makes `$user` a member with the invitation's roles, or adds them to those they hold.
macro_rules! join {
    ($tx:ident, $inv:expr, $user:expr, $now:expr) => {{
        let inv: &OrgInvitation = $inv;
        let held: Option<String> =
            sqlx::query_scalar("SELECT roles FROM org_members WHERE org_id = $1 AND user_id = $2")
                .bind(inv.org_id)
                .bind($user)
                .fetch_optional(&mut *$tx)
                .await?;
        let mut roles = held.as_deref().map(split_roles).unwrap_or_default();
        roles.extend(inv.roles.iter().cloned());
        roles.sort();
        roles.dedup();
        let sql = if held.is_some() {
            "UPDATE org_members SET roles = $3 WHERE org_id = $1 AND user_id = $2"
        } else {
            "INSERT INTO org_members (org_id, user_id, roles, joined_at) VALUES ($1, $2, $3, $4)"
        };
        sqlx::query(sql)
            .bind(inv.org_id)
            .bind($user)
            .bind(roles.join(" "))
            .bind($now)
            .execute(&mut *$tx)
            .await?;
        touch_user!($tx, $user, $now);
    }};
}

impl Store {
    pub async fn insert_org_invitation(
        &self,
        new: &NewOrgInvitation<'_>,
        mail: &OutboxMail,
    ) -> Result<()> {
        let inv = new.invitation;
        on_write_pool!(self, |pool| {
            let mut tx = pool.begin().await?;
            sqlx::query(
                "INSERT INTO org_invitations (id, org_id, email, email_normalized, roles, \
                 token_hash, invited_by, created_at, expires_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
            )
            .bind(inv.id)
            .bind(inv.org_id)
            .bind(&inv.email)
            .bind(&inv.email_normalized)
            .bind(inv.roles.join(" "))
            .bind(&new.token_hash[..])
            .bind(new.invited_by)
            .bind(inv.created_at)
            .bind(inv.expires_at)
            .execute(&mut *tx)
            .await?;
            queue_mail!(tx, mail);
            tx.commit().await
        })
    }

    /// An organisation's pending invitations, oldest first.
    pub async fn org_invitations(&self, org: Uuid, now: i64) -> Result<Vec<OrgInvitation>> {
        let sql = concat!(
            "SELECT ",
            invitation_columns!(),
            " FROM org_invitations WHERE org_id = $1 AND expires_at > $2 ORDER BY created_at, id"
        );
        let rows: Vec<InvitationRow> = on_pool!(self, |pool| sqlx::query_as(sql)
            .bind(org)
            .bind(now)
            .fetch_all(pool)
            .await)?;
        Ok(rows.into_iter().map(OrgInvitation::from).collect())
    }

    /// Withdraws an invitation; false if the organisation has no such pending one.
    pub async fn delete_org_invitation(&self, org: Uuid, id: Uuid) -> Result<bool> {
        let sql = "DELETE FROM org_invitations WHERE org_id = $1 AND id = $2";
        on_write_pool!(self, |pool| sqlx::query(sql)
            .bind(org)
            .bind(id)
            .execute(pool)
            .await
            .map(|r| r.rows_affected() == 1))
    }

    /// The live invitation with this token hash (reads only: accepting deletes it).
    pub async fn org_invitation_by_token(
        &self,
        hash: &[u8; 32],
        now: i64,
    ) -> Result<Option<OrgInvitation>> {
        let sql = concat!(
            "SELECT ",
            invitation_columns!(),
            " FROM org_invitations WHERE token_hash = $1 AND expires_at > $2"
        );
        let row: Option<InvitationRow> = on_pool!(self, |pool| sqlx::query_as(sql)
            .bind(&hash[..])
            .bind(now)
            .fetch_optional(pool)
            .await)?;
        Ok(row.map(OrgInvitation::from))
    }

    /// Uses up the invitation and makes `user` a member, if the invitation is live and addressed
    /// to `email_normalized` (checked again here: the caller read it before). `None` else.
    pub async fn accept_org_invitation(
        &self,
        hash: &[u8; 32],
        user: Uuid,
        email_normalized: &str,
        now: i64,
    ) -> Result<Option<OrgInvitation>> {
        on_write_pool!(self, |pool| {
            let mut tx = pool.begin().await?;
            let Some(inv) = take_invitation!(tx, hash, now) else {
                return Ok(None);
            };
            if inv.email_normalized != email_normalized {
                // Rolled back: the invitation stays usable for its addressee.
                return Ok(None);
            }
            join!(tx, &inv, user, now);
            tx.commit().await?;
            Ok(Some(inv))
        })
    }

    /// Uses up the invitation, makes the account for its address (verified: the link reached it)
    /// and the membership. `Ok(None)`: the invitation is not live; `EmailTaken`: the address has
    /// an account already.
    pub async fn accept_org_invitation_new_account(
        &self,
        hash: &[u8; 32],
        user: &NewUser<'_>,
        now: i64,
    ) -> Result<Option<OrgInvitation>> {
        let insert = "INSERT INTO users (id, email, email_normalized, full_name, password_hash, \
                      email_verified, created_at, updated_at) \
                      VALUES ($1, $2, $3, $4, $5, TRUE, $6, $6)";
        let taken = std::sync::atomic::AtomicBool::new(false);
        let accepted = on_write_pool!(self, |pool| {
            let mut tx = pool.begin().await?;
            let Some(inv) = take_invitation!(tx, hash, now) else {
                return Ok(None);
            };
            if inv.email_normalized != user.email_normalized {
                return Ok(None);
            }
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
                Err(e) if is_unique_violation(&e) => {
                    taken.store(true, std::sync::atomic::Ordering::Relaxed);
                    return Ok(None);
                }
                Err(e) => return Err(e),
            }
            join!(tx, &inv, user.id, now);
            tx.commit().await?;
            Ok(Some(inv))
        })?;
        if taken.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(Error::EmailTaken);
        }
        Ok(accepted)
    }
}
