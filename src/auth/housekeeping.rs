//! Deleting what no request can need any more, every `HOUSEKEEPING_INTERVAL` on each instance
//! (and on demand with `gatehouse housekeep`), in batches that never hold the database long.

use super::core::Core;
use std::sync::Arc;

use std::time::Duration;

use super::password::{ImportedKind, recognise};
use crate::error::Result;
use crate::store::purge::{Purge, Purged};

/// A consumed refresh-token record is kept this long past the grace window, so that a racing
/// refresh still finds it however slowly it arrives.
const CONSUMED_RECORD_MARGIN_MS: i64 = 60_000;

/// What one batch should take. SQLite has one writer: a login or refresh arriving during a batch
/// waits for it, so a batch is kept far below the 50 ms that such a call may be delayed by.
const BATCH_TARGET: Duration = Duration::from_millis(10);
/// Rows in the first batch, and the bounds of later ones (sized by how long the last one took).
const FIRST_BATCH: i64 = 500;
const MIN_BATCH: i64 = 50;
const MAX_BATCH: i64 = 20_000;
/// Pause between batches, so that writers waiting for the database get it in between: in this
/// process they queue for the write connection; in another (SQLite, a server beside the CLI) they
/// poll in SQLite's busy handler, whose first retries come within 33 ms.
const BATCH_PAUSE: Duration = Duration::from_millis(20);

/// Purging what has lapsed, a batch at a time.
#[derive(Clone)]
pub struct Housekeeping {
    pub(crate) core: Arc<Core>,
}

/// How many imported hashes are sampled to know their algorithms' shares.
const DECOY_SAMPLES: i64 = 1000;

impl Housekeeping {
    /// Counts the accounts that still hold an imported hash, by algorithm, for the decoys unknown
    /// addresses are verified against (`password::Decoys`): at start, then every few minutes on
    /// each instance (an import while serving is covered within that).
    pub async fn count_imported_hashes(&self) -> Result<()> {
        let (total, imported, samples) = self.core.store.imported_hashes(DECOY_SAMPLES).await?;
        let mut kinds: Vec<(&'static str, u64, String)> = Vec::new();
        for hash in &samples {
            let Some(label) = recognise(hash) else {
                continue;
            };
            match kinds.iter_mut().find(|(l, _, _)| *l == label) {
                Some((_, seen, _)) => *seen += 1,
                None => kinds.push((label, 1, hash.clone())),
            }
        }
        let sampled: u64 = kinds.iter().map(|(_, seen, _)| seen).sum();
        let kinds = kinds
            .into_iter()
            .map(|(_, seen, sample)| ImportedKind {
                accounts: imported.saturating_mul(seen) / sampled.max(1),
                sample,
            })
            .collect();
        self.core.hasher.decoys().replace(total, kinds);
        Ok(())
    }

    /// Sessions lapsed or revoked longer ago than any access token lives, refresh-token records
    /// consumed before the grace window (reuse of such a token is still detected: see
    /// `already_rotated`), expired challenges and passkey ceremonies, idle throttle state, audit
    /// events past retention, expired mailed tokens and invitations, and the sign-ins through other
    /// providers begun or finished and never collected.
    pub async fn housekeep(&self) -> Result<Purged> {
        let now = self.core.clock.now_ms();
        let ended_before = now - self.core.live.horizon_ms();
        let grace = self.core.settings.reuse_grace.as_millis() as i64;
        let consumed_before = now - grace - CONSUMED_RECORD_MARGIN_MS;
        let retention = self.core.settings.audit_retention.as_millis() as i64;
        self.core.throttle.forget_idle(now);
        let mut p = Purged::default();
        let longest = &mut p.longest_batch;
        p.sessions = self
            .purge(Purge::LapsedSessions, ended_before, longest)
            .await?
            + self
                .purge(Purge::RevokedSessions, ended_before, longest)
                .await?
            + self
                .purge(Purge::ExpiredTokenRevocations, ended_before, longest)
                .await?;
        p.refresh_tokens =
            (self.purge(Purge::ConsumedRefreshTokens, consumed_before, longest)).await?;
        // 2FA challenges and passkey ceremonies: both are challenges a client did not answer.
        p.challenges = self.purge(Purge::ExpiredChallenges, now, longest).await?
            + self.purge(Purge::ExpiredCeremonies, now, longest).await?
            + self.purge(Purge::ExpiredCodes, now, longest).await?
            + self.purge(Purge::ExpiredDeviceCodes, now, longest).await?
            + self.purge(Purge::ExpiredDpopProofs, now, longest).await?;
        p.throttles = self.purge(Purge::IdleThrottles, now, longest).await?;
        p.audit_events = (self.purge(Purge::OldAuditEvents, now - retention, longest)).await?;
        // Kept an hour past expiry: the per-account limits of mails count the last hour's tokens.
        let tokens_before = now - 3_600_000;
        p.mail_tokens = (self.purge(Purge::ExpiredMailTokens, tokens_before, longest)).await?;
        p.invitations = self
            .purge(Purge::ExpiredOrgInvitations, now, longest)
            .await?
            + self
                .purge(Purge::ExpiredRegistrationTokens, now, longest)
                .await?;
        p.federation = self
            .purge(Purge::ExpiredFederationFlows, now, longest)
            .await?
            + self
                .purge(Purge::ExpiredFederationHandoffs, now, longest)
                .await?;
        Ok(p)
    }

    /// Deletes every row of `kind` older than `before`, a batch at a time, until a batch comes
    /// back short. Each batch is sized from how long the previous one took (rows differ in width
    /// and indexes, machines in speed), and a pause follows each full batch.
    /// `longest` keeps the longest batch seen.
    async fn purge(&self, kind: Purge, before: i64, longest: &mut Duration) -> Result<u64> {
        let mut limit = FIRST_BATCH;
        let mut total = 0;
        loop {
            let (deleted, took) = self.core.store.purge_batch(kind, before, limit).await?;
            *longest = (*longest).max(took);
            // The batch's pages copied back now, by the purge, not by whoever writes next.
            self.core.store.checkpoint().await?;
            total += deleted;
            if deleted < limit as u64 {
                return Ok(total);
            }
            limit = next_batch(limit, took);
            tokio::time::sleep(BATCH_PAUSE).await;
        }
    }
}

/// The next batch's size: doubled while batches take under half the target, halved when one
/// takes over twice the target.
fn next_batch(limit: i64, took: Duration) -> i64 {
    if took < BATCH_TARGET / 2 {
        (limit * 2).min(MAX_BATCH)
    } else if took > BATCH_TARGET * 2 {
        (limit / 2).max(MIN_BATCH)
    } else {
        limit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_follow_their_duration_within_bounds() {
        assert_eq!(next_batch(500, Duration::from_millis(1)), 1000);
        assert_eq!(next_batch(500, Duration::from_millis(10)), 500);
        assert_eq!(next_batch(500, Duration::from_millis(40)), 250);
        assert_eq!(next_batch(MAX_BATCH, Duration::ZERO), MAX_BATCH);
        assert_eq!(next_batch(MIN_BATCH, Duration::from_secs(1)), MIN_BATCH);
    }
}
