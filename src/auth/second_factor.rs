//! Checking a second-factor code (TOTP or recovery code), for a login's challenge and for the
//! bearer calls that re-check one, within two budgets: the account's allowance of failures (shared
//! with passwords, see `throttle`) and a budget of its own for codes. An attacker who has the
//! password could otherwise try ~9 600 codes a day; here, after `FREE_FAILURES` wrong codes in a
//! row, each further one makes the next wait, from 30 s doubling up to an hour: at most ~750 tries
//! in 30 days, each right with probability 3 in a million (the three accepted time steps), so
//! under 0.3 % in a month. A right code ends the run.

use std::time::Duration;

use uuid::Uuid;

use super::audit::{AuditEvent, Subject};
use super::core::Core;
use super::totp;
use crate::error::{Error, Result};
use crate::mail::Notice;
use crate::model::{ClientInfo, Factor, User};

/// Wrong codes in a row that cost nothing but the attempt.
const FREE_FAILURES: i64 = 4;
/// The first wait, doubled by each further wrong code.
const FIRST_WAIT: Duration = Duration::from_secs(30);
const LONGEST_WAIT: Duration = Duration::from_secs(3600);

/// How long the next code must wait after `failures` wrong codes in a row (ms; 0: no wait).
pub fn wait_after(failures: i64) -> i64 {
    if failures <= FREE_FAILURES {
        return 0;
    }
    let doublings = (failures - FREE_FAILURES - 1).min(20) as u32;
    let wait = FIRST_WAIT.as_millis() as i64 * 2_i64.pow(doublings);
    wait.min(LONGEST_WAIT.as_millis() as i64)
}

impl Core {
    /// `RATE_LIMITED` while the account must wait before its next code.
    pub(crate) fn second_factor_open(&self, user: &User) -> Result<()> {
        let now = self.clock.now_ms();
        match user.second_factor_blocked_until {
            Some(until) if until > now => Err(Error::RateLimited {
                retry_after: ((until - now) as u64).div_ceil(1000).max(1),
            }),
            _ => Ok(()),
        }
    }

    /// Checks `code` for `user`, within both budgets; `None` for a wrong (or replayed) code. The
    /// caller has checked `second_factor_open`.
    pub(crate) async fn second_factor(
        &self,
        user: &User,
        sealed_secret: &[u8],
        code: &str,
        client: Option<&ClientInfo>,
    ) -> Result<Option<Factor>> {
        let factor = self
            .throttle
            .within_allowance(
                &user.email_normalized,
                self.code_matches(user.id, sealed_secret, code),
            )
            .await?;
        let now = self.clock.now_ms();
        match factor {
            Some(_) => self.store.second_factor_succeeded(user.id).await?,
            None => {
                let failures = self
                    .store
                    .second_factor_failed(user.id, now, wait_after)
                    .await?;
                let wait = wait_after(failures);
                if wait > 0 {
                    let event = AuditEvent::TwoFactorLocked {
                        failures,
                        wait_seconds: wait / 1000,
                    };
                    self.audit(event, Subject::user(user.id).maybe_from(client))
                        .await;
                    // Told once per run of wrong codes, not at every further code of an attack.
                    if failures == FREE_FAILURES + 1 {
                        self.notify(user, Notice::TwoFactorLocked).await;
                    }
                }
            }
        }
        Ok(factor)
    }

    /// A TOTP code of a step newer than any used before, or an unused recovery code. Either is
    /// used up by being accepted.
    async fn code_matches(
        &self,
        user: Uuid,
        sealed_secret: &[u8],
        code: &str,
    ) -> Result<Option<Factor>> {
        let code = code.trim();
        if code.len() == totp::DIGITS && code.bytes().all(|b| b.is_ascii_digit()) {
            let secret = self.open_secret(user, sealed_secret)?;
            let now = self.clock.now_seconds() as u64;
            let accepted = match totp::matching_step(&secret, code, now) {
                Some(step) => self.store.claim_totp_step(user, step as i64).await?,
                None => false,
            };
            return Ok(accepted.then_some(Factor::Totp));
        }
        match totp::normalize_recovery_code(code) {
            Some(normalized) => {
                let hash = self
                    .secrets
                    .recovery_code_hash(user.as_bytes(), &normalized);
                let used = self
                    .store
                    .use_recovery_code(user, &hash, self.clock.now_ms())
                    .await?;
                Ok(used.then_some(Factor::RecoveryCode))
            }
            None => Ok(None),
        }
    }

    pub(crate) fn open_secret(&self, user: Uuid, sealed: &[u8]) -> Result<Vec<u8>> {
        self.secrets
            .open(user.as_bytes(), sealed)
            .map_err(Error::internal)
    }

    /// A bearer call's re-check of a TOTP or recovery code (403 when wrong: the token is fine).
    pub(crate) async fn recheck_code(
        &self,
        user: &User,
        sealed_secret: &[u8],
        code: &str,
        client: &ClientInfo,
    ) -> Result<Factor> {
        self.second_factor_open(user)?;
        self.second_factor(user, sealed_secret, code, Some(client))
            .await?
            .ok_or(Error::CodeRecheckFailed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_start_after_the_free_failures_and_double_up_to_an_hour() {
        assert_eq!(wait_after(0), 0);
        assert_eq!(wait_after(FREE_FAILURES), 0);
        assert_eq!(wait_after(FREE_FAILURES + 1), 30_000);
        assert_eq!(wait_after(FREE_FAILURES + 2), 60_000);
        assert_eq!(wait_after(FREE_FAILURES + 8), 3_600_000);
        assert_eq!(wait_after(10_000), 3_600_000);
    }

    #[test]
    fn an_attacker_with_the_password_stays_under_one_percent_in_thirty_days() {
        // Tries possible in 30 days when every wrong code makes the next wait as above, and each
        // try is right with probability 3 / 10^6.
        let horizon = 30 * 86_400_000_i64;
        let (mut t, mut tries) = (0_i64, 0_i64);
        while t <= horizon {
            tries += 1;
            t += wait_after(tries);
        }
        let success = tries as f64 * 3e-6;
        assert!(success < 0.01, "{tries} tries: {success}");
    }
}
