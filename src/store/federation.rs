//! Signing in with other identity providers (docs/api.md §14; migration 0023): the identities
//! linked to accounts, the flows under way (single use: taken by deleting them), the finished
//! sign-ins waiting for the pages, and the accounts a provider makes.

use uuid::Uuid;

use super::orgs::touch_user;
use super::users::NewUser;
use super::{Store, on_pool, on_write_pool};
use crate::error::Result;
use crate::model::{FederatedIdentity, FederationFlow, FlowPurpose, Linked, Unlinked};

#[derive(sqlx::FromRow)]
struct IdentityRow {
    provider_id: String,
    subject: String,
    user_id: Uuid,
    email: Option<String>,
    linked_at: i64,
    last_used_at: Option<i64>,
}

impl From<IdentityRow> for FederatedIdentity {
    fn from(r: IdentityRow) -> Self {
        FederatedIdentity {
            provider_id: r.provider_id,
            subject: r.subject,
            user_id: r.user_id,
            email: r.email,
            linked_at: r.linked_at,
            last_used_at: r.last_used_at,
        }
    }
}

#[derive(sqlx::FromRow)]
struct FlowRow {
    provider_id: String,
    state_hash: Vec<u8>,
    nonce: String,
    verifier: Vec<u8>,
    return_to: String,
    purpose: String,
    user_id: Option<Uuid>,
    session_id: Option<Uuid>,
    expires_at: i64,
}

macro_rules! identity_columns {
    () => {
        "provider_id, subject, user_id, email, linked_at, last_used_at"
    };
}

const IDENTITY: &str = concat!(
    "SELECT ",
    identity_columns!(),
    " FROM federated_identities WHERE provider_id = $1 AND subject = $2"
);
const IDENTITIES_OF: &str = concat!(
    "SELECT ",
    identity_columns!(),
    " FROM federated_identities WHERE user_id = $1 ORDER BY provider_id"
);
const INSERT_IDENTITY: &str = "INSERT INTO federated_identities \
     (provider_id, subject, user_id, email, linked_at, last_used_at) \
     VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING";
// A member of the provider's organisation already keeps the roles they have.
const JOIN_AS_MEMBER: &str = "INSERT INTO org_members (org_id, user_id, roles, joined_at) \
     VALUES ($1, $2, $3, $4) ON CONFLICT (org_id, user_id) DO NOTHING";
// Whichever of two callbacks racing with one flow's cookie comes first takes the row; the other
// finds nothing. Expired rows are taken too (and refused by the caller): they are garbage anyway.
const TAKE_FLOW: &str = "DELETE FROM federation_flows WHERE binding_hash = $1 \
     RETURNING provider_id, state_hash, nonce, verifier, return_to, purpose, user_id, session_id, \
     expires_at";
const TAKE_HANDOFF: &str =
    "DELETE FROM federation_handoffs WHERE binding_hash = $1 RETURNING outcome, expires_at";

/// What making an account for an upstream identity found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NewAccount {
    /// Made and linked; `joined`: it became a member of the provider's organisation.
    Created { joined: bool },
    /// An account has the address (made since it was looked up).
    AddressTaken,
    /// The identity was linked meanwhile (another browser's callback).
    IdentityTaken,
}

/// Inserts the identity `$i` in the transaction `$tx` (either driver's); whether it was new.
macro_rules! insert_identity {
    ($tx:ident, $i:expr) => {
        sqlx::query(INSERT_IDENTITY)
            .bind(&$i.provider_id)
            .bind(&$i.subject)
            .bind($i.user_id)
            .bind(&$i.email)
            .bind($i.linked_at)
            .bind($i.last_used_at)
            .execute(&mut *$tx)
            .await?
            .rows_affected()
            == 1
    };
}

/// In `$tx`: makes `$user` a `member` of `$org` unless a member already; evaluates to whether
/// it joined. The account's `updated_at` moves with it, as every membership change's does.
macro_rules! join_as_member {
    ($tx:ident, $org:expr, $user:expr, $now:expr) => {{
        let joined = match $org {
            Some(org) => {
                sqlx::query(JOIN_AS_MEMBER)
                    .bind(org)
                    .bind($user)
                    .bind("member")
                    .bind($now)
                    .execute(&mut *$tx)
                    .await?
                    .rows_affected()
                    == 1
            }
            None => false,
        };
        if joined {
            touch_user!($tx, $user, $now);
        }
        joined
    }};
}

impl Store {
    pub async fn insert_federation_flow(&self, f: &FederationFlow) -> Result<()> {
        let sql = "INSERT INTO federation_flows (binding_hash, provider_id, state_hash, nonce, \
                   verifier, return_to, purpose, user_id, session_id, expires_at) \
                   VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)";
        on_write_pool!(self, |pool| sqlx::query(sql)
            .bind(&f.binding_hash[..])
            .bind(&f.provider_id)
            .bind(&f.state_hash[..])
            .bind(&f.nonce)
            .bind(&f.sealed_verifier)
            .bind(&f.return_to)
            .bind(f.purpose.as_str())
            .bind(f.account.map(|(user, _)| user))
            .bind(f.account.map(|(_, session)| session))
            .bind(f.expires_at)
            .execute(pool)
            .await
            .map(|_| ()))
    }

    /// Takes (deletes) the flow of a binding; `None` when there is none or it expired.
    pub async fn take_federation_flow(
        &self,
        binding_hash: &[u8; 32],
        now: i64,
    ) -> Result<Option<FederationFlow>> {
        let row: Option<FlowRow> = on_write_pool!(self, |pool| sqlx::query_as(TAKE_FLOW)
            .bind(&binding_hash[..])
            .fetch_optional(pool)
            .await)?;
        Ok(row.filter(|r| r.expires_at > now).and_then(|r| {
            Some(FederationFlow {
                binding_hash: *binding_hash,
                provider_id: r.provider_id,
                state_hash: r.state_hash.try_into().ok()?,
                nonce: r.nonce,
                sealed_verifier: r.verifier,
                return_to: r.return_to,
                purpose: FlowPurpose::parse(&r.purpose)?,
                account: r.user_id.zip(r.session_id),
                expires_at: r.expires_at,
            })
        }))
    }

    /// Keeps a finished sign-in (sealed) for the pages to collect.
    pub async fn insert_federation_handoff(
        &self,
        binding_hash: &[u8; 32],
        sealed: &[u8],
        expires_at: i64,
    ) -> Result<()> {
        let sql = "INSERT INTO federation_handoffs (binding_hash, outcome, expires_at) \
                   VALUES ($1, $2, $3)";
        on_write_pool!(self, |pool| sqlx::query(sql)
            .bind(&binding_hash[..])
            .bind(sealed)
            .bind(expires_at)
            .execute(pool)
            .await
            .map(|_| ()))
    }

    /// Takes (deletes) the finished sign-in of a binding; `None` when there is none or it expired.
    pub async fn take_federation_handoff(
        &self,
        binding_hash: &[u8; 32],
        now: i64,
    ) -> Result<Option<Vec<u8>>> {
        let row: Option<(Vec<u8>, i64)> =
            on_write_pool!(self, |pool| sqlx::query_as(TAKE_HANDOFF)
                .bind(&binding_hash[..])
                .fetch_optional(pool)
                .await)?;
        Ok(row.filter(|(_, at)| *at > now).map(|(sealed, _)| sealed))
    }

    pub async fn federated_identity(
        &self,
        provider: &str,
        subject: &str,
    ) -> Result<Option<FederatedIdentity>> {
        let row: Option<IdentityRow> = on_pool!(self, |pool| sqlx::query_as(IDENTITY)
            .bind(provider)
            .bind(subject)
            .fetch_optional(pool)
            .await)?;
        Ok(row.map(Into::into))
    }

    /// An account's identities, by provider.
    pub async fn federated_identities_of(&self, user: Uuid) -> Result<Vec<FederatedIdentity>> {
        let rows: Vec<IdentityRow> = on_pool!(self, |pool| sqlx::query_as(IDENTITIES_OF)
            .bind(user)
            .fetch_all(pool)
            .await)?;
        Ok(rows.into_iter().map(Into::into).collect())
    }

    /// Records a sign-in through an identity: when, and the address the provider gave now.
    pub async fn federated_identity_used(
        &self,
        provider: &str,
        subject: &str,
        email: Option<&str>,
        now: i64,
    ) -> Result<()> {
        let sql = "UPDATE federated_identities SET last_used_at = $3, email = $4 \
                   WHERE provider_id = $1 AND subject = $2";
        on_write_pool!(self, |pool| sqlx::query(sql)
            .bind(provider)
            .bind(subject)
            .bind(now)
            .bind(email)
            .execute(pool)
            .await
            .map(|_| ()))
    }

    /// Links `identity` to its account, and makes the account a member of `org` (the provider's
    /// organisation) when it is not one. The second of the pair: whether it joined.
    pub async fn link_federated_identity(
        &self,
        identity: &FederatedIdentity,
        org: Option<Uuid>,
    ) -> Result<(Linked, bool)> {
        let i = identity;
        on_write_pool!(self, |pool| {
            let mut tx = pool.begin().await?;
            let inserted = insert_identity!(tx, i);
            if !inserted {
                // Either key was taken: the identity (by this account or another), or this
                // account's place at the provider.
                let holder: Option<Uuid> = sqlx::query_scalar(
                    "SELECT user_id FROM federated_identities WHERE provider_id = $1 AND subject = $2",
                )
                .bind(&i.provider_id)
                .bind(&i.subject)
                .fetch_optional(&mut *tx)
                .await?;
                let found = match holder {
                    Some(holder) if holder != i.user_id => Linked::TakenByOther,
                    _ => Linked::ProviderTaken,
                };
                return Ok((found, false));
            }
            let joined = join_as_member!(tx, org, i.user_id, i.linked_at);
            tx.commit().await?;
            Ok((Linked::Done, joined))
        })
    }

    /// Makes an account for an upstream identity in one transaction: the account (its address
    /// verified when `verified`, no password: `password_hash` empty), the identity linked, and the
    /// membership of `org`. Nothing of it is kept unless all of it is.
    pub async fn insert_federated_account(
        &self,
        user: &NewUser<'_>,
        verified: bool,
        identity: &FederatedIdentity,
        org: Option<Uuid>,
    ) -> Result<NewAccount> {
        // The provider that vouched for the address is recorded with it (`email_verified_by`): its
        // word is good for its own sign-ins, never for another provider's adoption.
        let insert = "INSERT INTO users (id, email, email_normalized, full_name, password_hash, \
                      email_verified, email_verified_by, created_at, updated_at) \
                      VALUES ($1, $2, $3, $4, '', $5, $7, $6, $6) ON CONFLICT DO NOTHING";
        let i = identity;
        on_write_pool!(self, |pool| {
            let mut tx = pool.begin().await?;
            let made = sqlx::query(insert)
                .bind(user.id)
                .bind(user.email)
                .bind(user.email_normalized)
                .bind(user.full_name)
                .bind(verified)
                .bind(user.created_at)
                .bind(verified.then_some(i.provider_id.as_str()))
                .execute(&mut *tx)
                .await?
                .rows_affected()
                == 1;
            if !made {
                return Ok(NewAccount::AddressTaken);
            }
            debug_assert_eq!(i.user_id, user.id);
            let linked = insert_identity!(tx, i);
            if !linked {
                // Rolled back (dropped): the account goes with it.
                return Ok(NewAccount::IdentityTaken);
            }
            let joined = join_as_member!(tx, org, user.id, user.created_at);
            tx.commit().await?;
            Ok(NewAccount::Created { joined })
        })
    }

    /// Unlinks `user`'s identity at `provider`, unless it is the account's last way in (no
    /// password, no passkey, no other identity). The account's row is locked first (PostgreSQL;
    /// SQLite has one writer), so that two unlinks at once cannot each count the other's identity
    /// as the way that remains.
    pub async fn unlink_federated_identity(
        &self,
        user: Uuid,
        provider: &str,
        now: i64,
    ) -> Result<Unlinked> {
        on_write_pool!(self, |pool| {
            let mut tx = pool.begin().await?;
            sqlx::query("UPDATE users SET updated_at = $2 WHERE id = $1")
                .bind(user)
                .bind(now)
                .execute(&mut *tx)
                .await?;
            let other_ways: i64 = sqlx::query_scalar(
                "SELECT (SELECT COUNT(*) FROM users WHERE id = $1 AND password_hash <> '') \
                 + (SELECT COUNT(*) FROM passkeys WHERE user_id = $1) \
                 + (SELECT COUNT(*) FROM federated_identities WHERE user_id = $1 AND provider_id <> $2)",
            )
            .bind(user)
            .bind(provider)
            .fetch_one(&mut *tx)
            .await?;
            let exists: Option<String> = sqlx::query_scalar(
                "SELECT subject FROM federated_identities WHERE user_id = $1 AND provider_id = $2",
            )
            .bind(user)
            .bind(provider)
            .fetch_optional(&mut *tx)
            .await?;
            if exists.is_none() {
                return Ok(Unlinked::NotFound);
            }
            if other_ways == 0 {
                return Ok(Unlinked::LastWayIn);
            }
            sqlx::query("DELETE FROM federated_identities WHERE user_id = $1 AND provider_id = $2")
                .bind(user)
                .bind(provider)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok(Unlinked::Done)
        })
    }

    /// The id of the organisation with this slug.
    pub async fn org_id_by_slug(&self, slug: &str) -> Result<Option<Uuid>> {
        on_pool!(self, |pool| sqlx::query_scalar(
            "SELECT id FROM orgs WHERE slug = $1"
        )
        .bind(slug)
        .fetch_optional(pool)
        .await)
    }
}
