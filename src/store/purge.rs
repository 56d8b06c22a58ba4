//! Housekeeping's deletes, a batch at a time. One statement deletes at most `limit` rows chosen by
//! an indexed, LIMITed subquery, in its own short transaction: SQLite has one writer, and a single
//! `DELETE` of a million rows would hold it (and every login and refresh behind it) for seconds.
//! The caller (`auth::housekeeping`) repeats a batch until one comes back short, sizing the batches
//! by how long they take and pausing between them so that waiting writers get their turn.

use std::time::{Duration, Instant};

use super::{Backend, Store, on_write_pool};
use crate::error::Result;

/// Rows deleted by one housekeeping pass.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Purged {
    pub sessions: u64,
    pub refresh_tokens: u64,
    pub challenges: u64,
    pub throttles: u64,
    pub audit_events: u64,
    pub mail_tokens: u64,
    /// Expired invitations: to an organisation, and to register a client (initial access tokens).
    pub invitations: u64,
    /// Sign-ins through other providers never finished, and finished ones never collected.
    pub federation: u64,
    /// The longest single batch: the longest the pass held the database's writer (SQLite).
    pub longest_batch: Duration,
}

/// A kind of row that housekeeping deletes once it is older than a cut-off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purge {
    /// Sessions whose refresh token lapsed (their refresh tokens go with them: ON DELETE CASCADE).
    LapsedSessions,
    /// Sessions revoked before the cut-off.
    RevokedSessions,
    /// Refresh-token records consumed before the cut-off.
    ConsumedRefreshTokens,
    /// 2FA challenges expired before the cut-off.
    ExpiredChallenges,
    /// Throttle keys whose arrival time has passed: they hold no state.
    IdleThrottles,
    /// Audit events past retention.
    OldAuditEvents,
    /// Passkey ceremonies begun and never finished, expired before the cut-off.
    ExpiredCeremonies,
    /// Mailed tokens expired before the cut-off.
    ExpiredMailTokens,
    /// Authorization codes expired before the cut-off (a used one is kept until then, so that its
    /// replay is recognised).
    ExpiredCodes,
    /// Device authorizations (RFC 8628) expired before the cut-off, collected or not (a collected
    /// one is kept until then, so that a second collection is recognised).
    ExpiredDeviceCodes,
    /// DPoP proofs whose window has passed: their jti can no longer be replayed.
    ExpiredDpopProofs,
    /// Organisation invitations expired before the cut-off.
    ExpiredOrgInvitations,
    /// Client registration tokens (RFC 7591 initial access tokens) expired before the cut-off,
    /// used or not.
    ExpiredRegistrationTokens,
    /// Sign-ins and links through another provider begun and never finished (docs/api.md §14).
    ExpiredFederationFlows,
    /// Finished sign-ins through another provider the pages never collected.
    ExpiredFederationHandoffs,
    /// Revocations of single access tokens (a client's token for itself) whose token expired
    /// before the cut-off.
    ExpiredTokenRevocations,
}

impl Purge {
    /// The batch statement, for SQLite and for PostgreSQL: `$1` the cut-off, `$2` the most rows to
    /// delete. Each subquery filters on an indexed column (migrations 0001, 0003, 0005, 0022, 0023, 0024, 0027 and 0028), so a
    /// batch starts at the oldest rows instead of scanning past the ones it keeps.
    pub(super) const fn sql(self) -> (&'static str, &'static str) {
        match self {
            Purge::LapsedSessions => PURGE_LAPSED_SESSIONS,
            Purge::RevokedSessions => PURGE_REVOKED_SESSIONS,
            Purge::ConsumedRefreshTokens => PURGE_CONSUMED_REFRESH_TOKENS,
            Purge::ExpiredChallenges => PURGE_EXPIRED_CHALLENGES,
            Purge::IdleThrottles => PURGE_IDLE_THROTTLES,
            Purge::OldAuditEvents => PURGE_OLD_AUDIT_EVENTS,
            Purge::ExpiredCeremonies => PURGE_EXPIRED_CEREMONIES,
            Purge::ExpiredMailTokens => PURGE_EXPIRED_MAIL_TOKENS,
            Purge::ExpiredCodes => PURGE_EXPIRED_CODES,
            Purge::ExpiredDeviceCodes => PURGE_EXPIRED_DEVICE_CODES,
            Purge::ExpiredDpopProofs => PURGE_EXPIRED_DPOP_PROOFS,
            Purge::ExpiredOrgInvitations => PURGE_EXPIRED_ORG_INVITATIONS,
            Purge::ExpiredRegistrationTokens => PURGE_EXPIRED_REGISTRATION_TOKENS,
            Purge::ExpiredFederationFlows => PURGE_EXPIRED_FEDERATION_FLOWS,
            Purge::ExpiredFederationHandoffs => PURGE_EXPIRED_FEDERATION_HANDOFFS,
            Purge::ExpiredTokenRevocations => PURGE_EXPIRED_TOKEN_REVOCATIONS,
        }
    }
}

/// The two texts of a batch delete, which differ in one place. SQLite runs `key IN (SELECT …
/// LIMIT $2)` as the list it is, then one primary-key search per row. PostgreSQL plans it as a
/// semi-join, and its generic plan (used once a prepared statement has run five times) cannot
/// know `$2` and estimates a tenth of the table: a hash join over a scan of the whole table, every
/// batch. `= ANY (ARRAY(…))` makes it compute the list first and then search the primary key for
/// it, whatever the estimates (`store::plans` checks both plans).
macro_rules! purge_sql {
    ($table:literal, $key:literal, $column:literal) => {
        (
            concat!(
                "DELETE FROM ",
                $table,
                " WHERE ",
                $key,
                " IN (SELECT ",
                $key,
                " FROM ",
                $table,
                " WHERE ",
                $column,
                " < $1 LIMIT $2)"
            ),
            concat!(
                "DELETE FROM ",
                $table,
                " WHERE ",
                $key,
                " = ANY (ARRAY(SELECT ",
                $key,
                " FROM ",
                $table,
                " WHERE ",
                $column,
                " < $1 LIMIT $2))"
            ),
        )
    };
}

type Texts = (&'static str, &'static str);
pub(super) const PURGE_LAPSED_SESSIONS: Texts = purge_sql!("sessions", "id", "expires_at");
pub(super) const PURGE_REVOKED_SESSIONS: Texts = purge_sql!("sessions", "id", "revoked_at");
pub(super) const PURGE_CONSUMED_REFRESH_TOKENS: Texts =
    purge_sql!("refresh_tokens", "jti", "consumed_at");
pub(super) const PURGE_EXPIRED_CHALLENGES: Texts =
    purge_sql!("temp_tokens", "token_hash", "expires_at");
pub(super) const PURGE_IDLE_THROTTLES: Texts = purge_sql!("throttles", "key", "tat");
pub(super) const PURGE_OLD_AUDIT_EVENTS: Texts = purge_sql!("audit_events", "id", "at");
pub(super) const PURGE_EXPIRED_CEREMONIES: Texts =
    purge_sql!("passkey_ceremonies", "id", "expires_at");
pub(super) const PURGE_EXPIRED_MAIL_TOKENS: Texts =
    purge_sql!("mail_tokens", "token_hash", "expires_at");
pub(super) const PURGE_EXPIRED_CODES: Texts = purge_sql!("oauth_codes", "code_hash", "expires_at");
pub(super) const PURGE_EXPIRED_DEVICE_CODES: Texts =
    purge_sql!("device_authorizations", "device_hash", "expires_at");
pub(super) const PURGE_EXPIRED_DPOP_PROOFS: Texts =
    purge_sql!("dpop_proofs", "proof_hash", "expires_at");
pub(super) const PURGE_EXPIRED_ORG_INVITATIONS: Texts =
    purge_sql!("org_invitations", "id", "expires_at");
pub(super) const PURGE_EXPIRED_REGISTRATION_TOKENS: Texts =
    purge_sql!("client_registration_tokens", "id", "expires_at");
pub(super) const PURGE_EXPIRED_FEDERATION_FLOWS: Texts =
    purge_sql!("federation_flows", "binding_hash", "expires_at");
pub(super) const PURGE_EXPIRED_FEDERATION_HANDOFFS: Texts =
    purge_sql!("federation_handoffs", "binding_hash", "expires_at");
pub(super) const PURGE_EXPIRED_TOKEN_REVOCATIONS: Texts =
    purge_sql!("token_revocations", "sid", "expires_at");

impl Store {
    /// Deletes at most `limit` rows of `kind` older than `before`, in a transaction of its own;
    /// returns how many it deleted and how long it held the database. On SQLite the transaction
    /// takes the write lock first (`BEGIN IMMEDIATE`), so the time spent waiting for another
    /// process's writer (the CLI beside a server) is not counted as holding it.
    pub async fn purge_batch(
        &self,
        kind: Purge,
        before: i64,
        limit: i64,
    ) -> Result<(u64, Duration)> {
        let (sql, begin) = match self.backend {
            Backend::Sqlite { .. } => (kind.sql().0, "BEGIN IMMEDIATE"),
            Backend::Postgres(_) => (kind.sql().1, "BEGIN"),
        };
        on_write_pool!(self, |pool| {
            let mut tx = pool.begin_with(begin).await?;
            let started = Instant::now();
            let deleted = sqlx::query(sql)
                .bind(before)
                .bind(limit)
                .execute(&mut *tx)
                .await?
                .rows_affected();
            tx.commit().await?;
            Ok((deleted, started.elapsed()))
        })
    }
}
