//! A forgotten password: the request that mails a reset link, and the reset with it.
//!
//! The request answers the same, at once, whatever the address: the lookup, the token and the
//! mail are made off the request's path (`ResetDesk`), so neither the answer nor its timing says
//! whether an account exists, is disabled, or was throttled. Mail storms are bounded twice, both
//! silently: per client address (in memory: a burst of `CLIENT_BURST`, then one a minute) and per
//! account (in the database, so across instances: `MAILS_PER_HOUR` reset mails an hour).

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use secrecy::{ExposeSecret, SecretString};
use tokio::sync::Semaphore;

use super::audit::{Actor, AuditEvent, Auditor, Subject};
use super::core::Core;
use super::notices::{link_token_hash, new_link_token};
use super::password::check_policy;
use super::throttle::{Gcra, address_key};
use crate::clock::Clock;
use crate::domain::Email;
use crate::error::{Error, Result};
use crate::mail::{Letter, Mailer, Notice};
use crate::model::{ClientInfo, EndReason, User};
use crate::store::Store;
use crate::store::mail_tokens::{NewMailToken, ProofMails};

/// Reset mails one account gets in any hour at most.
pub const MAILS_PER_HOUR: i64 = 3;
const HOUR_MS: i64 = 3_600_000;
/// The longest an account past its allowance waits for its next reset mail.
pub const HOUR_SECONDS: u64 = 3_600;
/// Requests one client address may make at once, then one per `CLIENT_INTERVAL`.
const CLIENT_BURST: u32 = 5;
const CLIENT_INTERVAL: Duration = Duration::from_secs(60);
/// Requests handled at once off their request's path; more are dropped (a flood).
const IN_FLIGHT: usize = 64;

struct ResetDesk {
    enabled: bool,
    clients: Gcra<IpAddr>,
    in_flight: Arc<Semaphore>,
}

impl ResetDesk {
    fn new(rate_limit: bool) -> ResetDesk {
        ResetDesk {
            enabled: rate_limit,
            clients: Gcra::new(CLIENT_BURST, CLIENT_INTERVAL, 100_000),
            in_flight: Arc::new(Semaphore::new(IN_FLIGHT)),
        }
    }

    /// Requests answered and still being handled off their path.
    fn in_flight(&self) -> usize {
        IN_FLIGHT - self.in_flight.available_permits()
    }
}

/// A forgotten password: the mailed link and the reset with it.
#[derive(Clone)]
pub struct Recovery {
    pub(crate) core: Arc<Core>,
    /// Requests being handled off their request's path.
    desk: Arc<ResetDesk>,
}

impl Recovery {
    pub(crate) fn new(core: Arc<Core>, rate_limit: bool) -> Recovery {
        Recovery {
            core,
            desk: Arc::new(ResetDesk::new(rate_limit)),
        }
    }
}

/// What a request handled off its path needs, owned.
struct ResetWork {
    store: Store,
    clock: Clock,
    mailer: Arc<Mailer>,
    auditor: Auditor,
    ttl: Duration,
}

impl Recovery {
    /// `POST /auth/password/forgot`: returns at once; a reset link is mailed to the account with
    /// this address if there is one, it is enabled, and neither limit is reached.
    pub fn forgot_password(&self, email: &Email, client: &ClientInfo) {
        let now = self.core.clock.now_ms();
        if let Some(ip) = client.ip.filter(|_| self.desk.enabled) {
            if self.desk.clients.take(address_key(ip), now).is_err() {
                tracing::debug!(client = %ip, "forgotten-password requests throttled");
                return;
            }
        }
        let Ok(permit) = self.desk.in_flight.clone().try_acquire_owned() else {
            tracing::warn!("too many forgotten-password requests at once: one dropped");
            return;
        };
        let work = self.reset_work();
        let (email, client) = (email.normalized(), client.clone());
        tokio::spawn(async move {
            let _permit = permit;
            if let Err(error) = work.run(&email, &client).await {
                tracing::warn!(error = %error, "cannot handle a forgotten-password request");
            }
        });
    }

    /// `POST /auth/password/reset/check`: the address of the account a live reset link is for,
    /// so that the page names the account and says a dead link is dead before a password is
    /// typed. Reads only; only the holder of the link learns the address it was mailed to.
    pub async fn reset_link_address(&self, token: &str) -> Result<String> {
        let hash = link_token_hash(token)?;
        let (_, user) = self.core.live_link(&hash, "reset").await?;
        Ok(user.email)
    }

    /// `POST /auth/password/reset`: a new password with a reset link's token. Every session of
    /// the account ends (here at once, elsewhere within the revocation delay), and so do pending
    /// 2FA challenges and logins in flight. The link proved the address: if it was never verified,
    /// the passkeys and the authenticator added before go (`store::credentials`); else 2FA and
    /// passkeys stay. The notice names what went, or the passkeys that remain.
    pub async fn reset_password(
        &self,
        token: &str,
        password: SecretString,
        client: &ClientInfo,
    ) -> Result<()> {
        let hash = link_token_hash(token)?;
        // Read first, so a bad token costs no password hash.
        let (_, user) = self.core.live_link(&hash, "reset").await?;
        check_policy(password.expose_secret())?;
        let password_hash = self.core.hasher.hash(password).await?;
        let core = &self.core;
        let notice: ProofMails = Box::new(|proof| {
            let letter = Letter::Proof {
                notice: Notice::PasswordReset,
                proof,
            };
            Ok(vec![core.compose(&user, letter)?])
        });
        let reason = EndReason::PasswordReset;
        let now = self.core.clock.now_ms();
        let (user_id, ended, proof, mails) = self
            .core
            .store
            .reset_password(&hash, &password_hash, reason.as_str(), notice, now)
            .await?
            .ok_or(Error::LinkInvalid)?;
        self.core.ended(&ended, now, reason);
        self.core.directory.forget(user_id);
        self.core.mailer.queued(&mails.iter().collect::<Vec<_>>());
        self.core.credentials_removed(user_id, &proof, client).await;
        let event = AuditEvent::PasswordReset {
            sessions_ended: ended.len() as u64,
        };
        self.core
            .audit(event, Subject::user(user_id).from(client))
            .await;
        Ok(())
    }
}

impl Recovery {
    /// Mails `user` a reset link now, within the account's allowance; false if it had its share
    /// this hour (no mail). For an admin's `POST /admin/users/{id}/password-reset`, who is no
    /// anonymous caller: it is done on the request's path, and its answer says what happened.
    pub(crate) async fn mail_reset_link(&self, user: &User) -> Result<bool> {
        self.reset_work().issue(user).await
    }

    /// Forgotten-password requests answered and still being handled: each may yet queue a mail.
    pub fn resets_in_flight(&self) -> usize {
        self.desk.in_flight()
    }

    fn reset_work(&self) -> ResetWork {
        ResetWork {
            store: self.core.store.clone(),
            clock: self.core.clock.clone(),
            mailer: self.core.mailer.clone(),
            auditor: self.core.auditor.clone(),
            ttl: self.core.settings.links.reset_ttl,
        }
    }
}

impl ResetWork {
    async fn run(self, email_normalized: &str, client: &ClientInfo) -> Result<()> {
        let Some(user) = self.store.user_by_email(email_normalized).await? else {
            return Ok(());
        };
        if user.disabled {
            return Ok(());
        }
        let event = if self.issue(&user).await? {
            AuditEvent::PasswordResetRequested { by: Actor::Owner }
        } else {
            AuditEvent::PasswordResetThrottled
        };
        self.auditor
            .record(event, Subject::user(user.id).from(client))
            .await;
        Ok(())
    }

    /// A reset token for `user`, its mail in the outbox in the same transaction, unless the
    /// account had `MAILS_PER_HOUR` this hour: false then.
    async fn issue(&self, user: &User) -> Result<bool> {
        let now = self.clock.now_ms();
        let (token, hash) = new_link_token();
        let mail = self.mailer.compose(
            &user.email,
            &user.full_name,
            Letter::Reset { token: &token },
            now,
        )?;
        let issued = self
            .store
            .issue_mail_token(
                &NewMailToken {
                    hash,
                    user_id: user.id,
                    purpose: "reset",
                    email: None,
                    created_at: now,
                    expires_at: now + self.ttl.as_millis() as i64,
                },
                &mail,
                now - HOUR_MS,
                MAILS_PER_HOUR,
            )
            .await?;
        if issued {
            self.mailer.queued(&[&mail]);
        }
        Ok(issued)
    }
}
