//! Re-authentication (docs/api.md §3): the holder of a live session proves again who they are (the
//! password, or with 2FA on a code from the authenticator app, or a passkey: `passkeys::reauth`)
//! and for `WINDOW` afterwards the calls that re-check the password (address change, password
//! change, 2FA set-up and turning it off, adding a passkey, making an API key, deleting the
//! account) take the session's word instead of a password field. What those re-checks guard
//! against is someone at a computer left signed in: they hold a live session but not the
//! password. So the window belongs to the session it was opened in (the same person's other
//! sessions are not in it; a refreshed token of the session is), and a fresh sign-in does not open
//! it: a sign-in may be days old by the time the tab is left unattended, and "signed in a minute
//! ago" is not something the session can prove later without this same record.

use std::time::Duration;

use secrecy::SecretString;

use super::account::Accounts;
use super::audit::{AuditEvent, Subject};
use super::core::Core;
use super::totp;
use crate::error::{Error, Result};
use crate::model::{ClientInfo, Principal, User};

/// How long a re-authentication vouches for its session. Long enough for one sitting at the
/// account page (change the address, then the password, then turn 2FA on) without a second
/// prompt; short enough that a session left open after it is soon back to asking. GitHub's sudo
/// mode keeps two hours, but slides and covers fewer, less final actions than deleting the account.
pub const WINDOW: Duration = Duration::from_secs(5 * 60);

/// What a caller offers to re-authenticate.
pub enum Proof {
    Password(SecretString),
    /// A 6-digit TOTP code; recovery codes are not taken here (each is single use and kept for
    /// signing in when the authenticator is lost).
    Code(String),
}

/// Why a call that needs the password went without one, for the field's reason (its "5 minutes"
/// is `WINDOW`, checked by a test).
pub const PASSWORD_OR_REAUTHENTICATE: &str = "is required, unless this session re-authenticated \
     in the last 5 minutes (POST /api/v1/auth/reauthenticate)";

impl Accounts {
    /// Checks `proof` and marks the caller's session re-authenticated now; returns until when (ms).
    /// A wrong password or code costs what a wrong one at sign-in costs (the account's allowance
    /// of failures, the client address's attempts, the code's own budget) and is audited.
    pub async fn reauthenticate(
        &self,
        who: &Principal,
        proof: Proof,
        client: &ClientInfo,
    ) -> Result<i64> {
        self.core.throttle.attempt_from(client.ip)?;
        let user = self.core.user(who).await?;
        let subject = Subject::user(user.id)
            .in_session(who.session_id)
            .from(client);
        let (checked, method) = match proof {
            Proof::Password(password) => (
                self.core.recheck_password(&user, password).await,
                Method::Password,
            ),
            Proof::Code(code) => {
                let sealed = user
                    .totp_secret
                    .as_deref()
                    .ok_or(Error::TwoFactorNotEnabled)?;
                if !is_totp_code(&code) {
                    return Err(Error::field(
                        "code",
                        "must be the 6-digit code of the authenticator app",
                    ));
                }
                let checked = self.core.recheck_code(&user, sealed, &code, client).await;
                (checked.map(|_| ()), Method::Totp)
            }
        };
        if let Err(e) = checked {
            if matches!(e, Error::PasswordRecheckFailed | Error::CodeRecheckFailed) {
                let event = AuditEvent::ReauthenticationFailed {
                    wrong: method.wrong(),
                };
                self.core.audit(event, subject).await;
            }
            return Err(e);
        }
        self.core
            .open_reauth_window(who, user.id, method.amr(), subject)
            .await
    }

    /// Until when (ms) the caller's session is re-authenticated; `None` if it is not now.
    pub async fn reauthenticated_until(&self, who: &Principal) -> Result<Option<i64>> {
        self.core.reauthenticated_until(who).await
    }
}

impl Core {
    /// Marks the caller's session re-authenticated now (by `amr`), audited; until when (ms).
    pub(crate) async fn open_reauth_window(
        &self,
        who: &Principal,
        user_id: uuid::Uuid,
        amr: &'static str,
        subject: Subject<'_>,
    ) -> Result<i64> {
        self.open_reauth_window_for(who.session_id, user_id, amr, subject)
            .await
    }

    /// `open_reauth_window` for `session` (a re-authentication through a provider, whose
    /// callback holds no token: docs/api.md §14).
    pub(crate) async fn open_reauth_window_for(
        &self,
        session: uuid::Uuid,
        user_id: uuid::Uuid,
        amr: &'static str,
        subject: Subject<'_>,
    ) -> Result<i64> {
        let now = self.clock.now_ms();
        if !self
            .store
            .mark_reauthenticated(session, user_id, now)
            .await?
        {
            // Revoked between the token's check and here.
            return Err(Error::TokenInvalid);
        }
        let event = AuditEvent::Reauthenticated { method: amr };
        self.audit(event, subject).await;
        Ok(now + WINDOW.as_millis() as i64)
    }

    async fn reauthenticated_until(&self, who: &Principal) -> Result<Option<i64>> {
        let at = self.store.reauthenticated_at(who.session_id).await?;
        let now = self.clock.now_ms();
        Ok(at
            .map(|at| at + WINDOW.as_millis() as i64)
            .filter(|until| *until > now))
    }

    /// The owner's consent to a sensitive call: the password sent with it (checked as always), or
    /// else the caller's session within its re-authentication window. Without either, the call's
    /// password `field` is missing, and its reason names the way to re-authenticate.
    pub(crate) async fn confirm_owner(
        &self,
        user: &User,
        who: &Principal,
        password: Option<SecretString>,
        field: &str,
    ) -> Result<()> {
        match password {
            Some(password) => self.recheck_password(user, password).await,
            None if self.reauthenticated_until(who).await?.is_some() => Ok(()),
            None => Err(Error::field(field, PASSWORD_OR_REAUTHENTICATE)),
        }
    }
}

#[derive(Clone, Copy)]
enum Method {
    Password,
    Totp,
}

impl Method {
    fn amr(self) -> &'static str {
        match self {
            Method::Password => "pwd",
            Method::Totp => "otp",
        }
    }

    fn wrong(self) -> &'static str {
        match self {
            Method::Password => "wrong_password",
            Method::Totp => "wrong_code",
        }
    }
}

fn is_totp_code(code: &str) -> bool {
    code.len() == totp::DIGITS && code.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_missing_password_reason_states_the_window() {
        let minutes = format!("{} minutes", WINDOW.as_secs() / 60);
        assert!(PASSWORD_OR_REAUTHENTICATE.contains(&minutes));
    }

    #[test]
    fn only_six_digits_are_a_totp_code() {
        assert!(is_totp_code("012345"));
        assert!(!is_totp_code("12345"));
        assert!(!is_totp_code("k7d2m-9xq4t"));
        assert!(!is_totp_code("１２３４５６"));
    }
}
