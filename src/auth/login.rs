//! Logging in: the password, then, for an account with 2FA, the challenge completed with a code.

use super::core::Core;
use std::sync::Arc;

use secrecy::{ExposeSecret, SecretString};

use super::audit::{AuditEvent, LoginFailure, Subject};
use super::core::{AMR_FEDERATED, AMR_OTP, AMR_PASSWORD};
use super::password::{Verdict, recognise};
use crate::crypto::{random_token, sha256};
use crate::error::{Error, Result};
use crate::metrics::{LoginOutcome as LoginMetric, TwoFactorOutcome};
use crate::model::{ClientInfo, Factor, LoginOutcome, TokenSet, User};

/// Wrong codes a two-factor challenge tolerates (docs/api.md §2).
pub const MAX_CHALLENGE_ATTEMPTS: i64 = 5;

/// Password sign-in, and the second factor that completes it (docs/api.md §3).
#[derive(Clone)]
pub struct Login {
    pub(crate) core: Arc<Core>,
}

impl Login {
    /// Password login. Unknown e-mail and wrong password are one answer, and cost one hash each.
    /// A disabled account is told so only after its password was right.
    pub async fn login(
        &self,
        email: &crate::domain::Email,
        password: SecretString,
        client: &ClientInfo,
    ) -> Result<LoginOutcome> {
        let result = self.login_attempt(email, password, client).await;
        let outcome = match &result {
            Ok(LoginOutcome::Tokens(_)) => Some(LoginMetric::Success),
            Ok(LoginOutcome::Challenge { .. }) => Some(LoginMetric::Challenge),
            Err(Error::InvalidCredentials) => Some(LoginMetric::BadCredentials),
            Err(Error::RateLimited { .. }) => Some(LoginMetric::Throttled),
            Err(Error::AccountDisabled) => Some(LoginMetric::Disabled),
            Err(Error::Overloaded { .. }) => Some(LoginMetric::Shed),
            Err(_) => None,
        };
        if let Some(outcome) = outcome {
            self.core.metrics.login(outcome);
        }
        result
    }

    async fn login_attempt(
        &self,
        email: &crate::domain::Email,
        password: SecretString,
        client: &ClientInfo,
    ) -> Result<LoginOutcome> {
        self.core.throttle.attempt_from(client.ip)?;
        let normalized = email.normalized();
        let candidate = SecretString::from(password.expose_secret());
        // An address under a provider's `domains` signs in there (docs/api.md §14). It costs what
        // a wrong password for an unknown address costs, so the answer's time tells nothing of
        // whether the account exists; the domain's rule is no secret.
        let sso = self
            .core
            .providers
            .for_address(&normalized)
            .map(|p| p.id.clone());
        // Unknown e-mails are throttled like known ones: a 429 must not tell them apart. The user
        // is read inside the check, so the session opened below is judged against this read.
        let checked = self
            .core
            .throttle
            .within_allowance(&normalized, async {
                if sso.is_some() {
                    self.core.hasher.verify(password, None).await?;
                    return Ok(None);
                }
                let user = self.core.store.user_by_email(&normalized).await?;
                let stored = user.as_ref().map(|u| u.password_hash.clone());
                let draw = self.core.secrets.sign_in_draw(&normalized);
                let verdict = self
                    .core
                    .hasher
                    .verify_sign_in(password, stored, draw)
                    .await?;
                match (user, verdict) {
                    (Some(user), Verdict::Match { needs_rehash }) => Ok(Some((user, needs_rehash))),
                    (user, _) => {
                        let (id, failure) = match &user {
                            Some(user) => (Some(user.id), LoginFailure::WrongPassword),
                            None => (None, LoginFailure::UnknownAccount),
                        };
                        self.core
                            .audit(
                                AuditEvent::LoginFailed(failure),
                                Subject::maybe_user(id).from(client),
                            )
                            .await;
                        Ok(None)
                    }
                }
            })
            .await?;
        if let Some(provider) = sso {
            return Err(Error::SsoRequired { provider });
        }
        let (user, needs_rehash) = checked.ok_or(Error::InvalidCredentials)?;
        if user.disabled {
            let event = AuditEvent::LoginFailed(LoginFailure::AccountDisabled);
            self.core
                .audit(event, Subject::user(user.id).from(client))
                .await;
            return Err(Error::AccountDisabled);
        }
        // After the password: only the account's owner learns that the address is unverified.
        self.core.require_verified(&user)?;
        if needs_rehash {
            self.upgrade_hash_later(&user, candidate);
        }
        if user.two_factor_enabled() {
            return self.challenge(&user, AMR_PASSWORD, client).await;
        }
        let tokens = self
            .open_login_session(&user, vec![AMR_PASSWORD.into()], client)
            .await?;
        self.core
            .audit(
                AuditEvent::LoginSucceeded,
                Subject::user(user.id)
                    .in_session(tokens.session_id)
                    .from(client),
            )
            .await;
        Ok(LoginOutcome::Tokens(tokens))
    }

    /// The 2FA challenge of a login whose first factor (`pwd`, `fed`) passed: the session that
    /// completes it carries that factor in its `amr` with the second.
    pub(crate) async fn challenge(
        &self,
        user: &User,
        first_factor: &str,
        client: &ClientInfo,
    ) -> Result<LoginOutcome> {
        let temp_token = random_token();
        let expires_at = self.core.clock.now_ms() + self.core.settings.temp_ttl.as_millis() as i64;
        self.core
            .store
            .insert_challenge(
                &sha256(temp_token.as_bytes()),
                user.id,
                first_factor,
                expires_at,
            )
            .await?;
        self.core
            .audit(
                AuditEvent::LoginChallenged,
                Subject::user(user.id).from(client),
            )
            .await;
        Ok(LoginOutcome::Challenge { temp_token })
    }

    /// A session for a login whose checks passed against `user`. If the account was disabled or
    /// its password changed while they ran, no session: the answer is what a login started now
    /// would get.
    async fn open_login_session(
        &self,
        user: &User,
        amr: Vec<String>,
        client: &ClientInfo,
    ) -> Result<TokenSet> {
        if let Some(tokens) = self.core.open_session(user, amr, client).await? {
            return Ok(tokens);
        }
        let now = self.core.store.user_by_id(user.id).await?;
        Err(match now {
            Some(now) if now.disabled => Error::AccountDisabled,
            _ => Error::InvalidCredentials,
        })
    }

    /// Re-hashes a password whose hash has weaker parameters than today's, off the request path.
    /// Replaces a hash of weaker parameters, or one another system made (`gatehouse import`), with
    /// the current Argon2id, after the answer (the caller does not wait for a second hash); audited.
    fn upgrade_hash_later(&self, user: &User, password: SecretString) {
        let core = self.core.clone();
        let (id, old) = (user.id, user.password_hash.clone());
        tokio::spawn(async move {
            let result = async {
                let new = core.hasher.hash(password).await?;
                core.store.upgrade_password_hash(id, &old, &new).await
            };
            match result.await {
                Ok(true) => {
                    let from = recognise(&old).unwrap_or("unknown");
                    let event = AuditEvent::PasswordRehashed { from };
                    core.audit(event, Subject::user(id)).await;
                }
                Ok(false) => {}
                Err(error) => {
                    tracing::warn!(user = %id, error = %error, "password hash upgrade failed");
                }
            }
        });
    }

    /// Completes a login that was answered with a challenge, with a TOTP code or a recovery code.
    pub async fn verify_second_factor(
        &self,
        temp_token: &str,
        code: &str,
        client: &ClientInfo,
    ) -> Result<TokenSet> {
        let result = self.second_factor_attempt(temp_token, code, client).await;
        let outcome = match &result {
            Ok(_) => Some(TwoFactorOutcome::Success),
            Err(Error::Invalid2faCode { .. }) => Some(TwoFactorOutcome::BadCode),
            Err(Error::TempTokenInvalid) => Some(TwoFactorOutcome::InvalidChallenge),
            Err(Error::RateLimited { .. }) => Some(TwoFactorOutcome::Throttled),
            Err(_) => None,
        };
        if let Some(outcome) = outcome {
            self.core.metrics.two_factor(outcome);
        }
        result
    }

    /// The account of a live 2FA challenge (live, unused, attempts left), unless it was disabled
    /// since the challenge was made, and the `amr` value of the login's first factor.
    pub(crate) async fn challenged_user(
        &self,
        token_hash: &[u8; 32],
        now: i64,
    ) -> Result<(User, &'static str)> {
        let (user_id, first_factor) = self
            .core
            .store
            .challenge_user(token_hash, MAX_CHALLENGE_ATTEMPTS, now)
            .await?
            .ok_or(Error::TempTokenInvalid)?;
        let user = self
            .core
            .store
            .user_by_id(user_id)
            .await?
            .ok_or(Error::TempTokenInvalid)?;
        if user.disabled {
            return Err(Error::AccountDisabled);
        }
        Ok((user, first_factor_amr(&first_factor)))
    }

    async fn second_factor_attempt(
        &self,
        temp_token: &str,
        code: &str,
        client: &ClientInfo,
    ) -> Result<TokenSet> {
        self.core.throttle.attempt_from(client.ip)?;
        let hash = sha256(temp_token.as_bytes());
        let now = self.core.clock.now_ms();
        let (user, first_factor) = self.challenged_user(&hash, now).await?;
        // 2FA may have been reset by an administrator since the challenge was made.
        let sealed = user.totp_secret.as_deref().ok_or(Error::TempTokenInvalid)?;
        // A wait is answered before an attempt of the challenge is taken: a 429 uses none of them.
        self.core.second_factor_open(&user)?;
        // Taken before the code is checked, so racing requests cannot check more than the
        // challenge allows.
        let (_, attempts) = self
            .core
            .store
            .take_challenge_attempt(&hash, MAX_CHALLENGE_ATTEMPTS, now)
            .await?
            .ok_or(Error::TempTokenInvalid)?;
        let Some(factor) = self
            .core
            .second_factor(&user, sealed, code, Some(client))
            .await?
        else {
            self.core
                .audit(
                    AuditEvent::TwoFactorFailed,
                    Subject::user(user.id).from(client),
                )
                .await;
            let remaining = (MAX_CHALLENGE_ATTEMPTS - attempts).max(0) as u32;
            return Err(Error::Invalid2faCode {
                attempts_remaining: remaining,
            });
        };
        // False when a racing request used the challenge first, or a password change ended it.
        if !self.core.store.complete_challenge(&hash, now).await? {
            return Err(Error::TempTokenInvalid);
        }
        let amr = vec![first_factor.into(), AMR_OTP.into()];
        let tokens = self
            .core
            .open_session(&user, amr, client)
            .await?
            .ok_or(Error::TempTokenInvalid)?;
        if factor == Factor::RecoveryCode {
            self.core
                .audit(
                    AuditEvent::RecoveryCodeUsed,
                    Subject::user(user.id).from(client),
                )
                .await;
        }
        self.core
            .audit(
                AuditEvent::TwoFactorSucceeded(factor),
                Subject::user(user.id)
                    .in_session(tokens.session_id)
                    .from(client),
            )
            .await;
        Ok(tokens)
    }
}

/// The `amr` value of a challenge's first factor as stored: only the two this service writes.
pub(crate) fn first_factor_amr(stored: &str) -> &'static str {
    match stored {
        AMR_FEDERATED => AMR_FEDERATED,
        _ => AMR_PASSWORD,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_challenges_first_factor_is_one_of_ours() {
        assert_eq!(first_factor_amr("fed"), AMR_FEDERATED);
        assert_eq!(first_factor_amr("pwd"), AMR_PASSWORD);
        assert_eq!(first_factor_amr("anything else"), AMR_PASSWORD);
    }
}
