//! Two-factor enrolment and its upkeep: setup (password re-checked), enable with a code, disable,
//! and new recovery codes.

use super::core::Core;
use std::sync::Arc;

use secrecy::SecretString;

use super::audit::{Actor, AuditEvent, Subject};
use super::totp;
use crate::error::{Error, Result};
use crate::mail::Notice;
use crate::model::{ClientInfo, Principal, TwoFactorSetup, User};

/// Enrolment of an authenticator app: set-up, enable, disable, new recovery codes.
#[derive(Clone)]
pub struct TwoFactor {
    pub(crate) core: Arc<Core>,
}

impl TwoFactor {
    /// Makes a new TOTP secret, pending until `enable_two_factor` confirms a code from it. A
    /// second setup replaces the pending secret. The password is asked again: with a stolen access
    /// token alone, nobody can enrol their own authenticator and lock the owner out.
    pub async fn setup_two_factor(
        &self,
        who: &Principal,
        password: Option<SecretString>,
    ) -> Result<TwoFactorSetup> {
        let user = self.core.user(who).await?;
        if user.two_factor_enabled() {
            return Err(Error::TwoFactorAlreadyEnabled);
        }
        self.core
            .confirm_owner(&user, who, password, "password")
            .await?;
        let secret = totp::generate_secret();
        let sealed = self.core.secrets.seal(user.id.as_bytes(), &secret);
        self.core
            .store
            .set_totp_pending(user.id, &sealed, self.core.clock.now_ms())
            .await?;
        let secret_base32 = totp::base32(&secret);
        let otpauth_uri = totp::otpauth_uri(&secret_base32, &user.email);
        let qr_code_svg = totp::qr_svg(&otpauth_uri)
            .map_err(|e| Error::internal(anyhow::anyhow!("QR code: {e}")))?;
        Ok(TwoFactorSetup {
            secret_base32,
            otpauth_uri,
            qr_code_svg,
        })
    }

    /// Confirms the pending secret with a code from it and turns 2FA on; returns the recovery
    /// codes, shown this once (only their keyed hashes are kept).
    pub async fn enable_two_factor(
        &self,
        who: &Principal,
        code: &str,
        client: &ClientInfo,
    ) -> Result<Vec<String>> {
        let user = self.core.user(who).await?;
        if user.two_factor_enabled() {
            return Err(Error::TwoFactorAlreadyEnabled);
        }
        let pending = user
            .totp_pending
            .as_deref()
            .ok_or(Error::TwoFactorNotSetUp)?;
        let secret = self.core.open_secret(user.id, pending)?;
        let now = self.core.clock.now_seconds() as u64;
        let step =
            totp::matching_step(&secret, code.trim(), now).ok_or(Error::CodeRecheckFailed)?;
        let (codes, hashes) = self.recovery_codes(&user);
        // The accepted code's step is recorded as used, so it cannot also complete a login.
        let enabled = self
            .core
            .store
            .enable_totp(
                user.id,
                pending,
                step as i64,
                &hashes,
                self.core.clock.now_ms(),
            )
            .await?;
        if !enabled {
            // Enabled or set up again by a concurrent request.
            return Err(Error::TwoFactorAlreadyEnabled);
        }
        self.core
            .audit(
                AuditEvent::TwoFactorEnabled,
                Subject::user(user.id)
                    .in_session(who.session_id)
                    .from(client),
            )
            .await;
        self.core.notify(&user, Notice::TwoFactorEnabled).await;
        Ok(codes)
    }

    /// Turns the caller's 2FA off, after checking their password and a code (TOTP or recovery).
    pub async fn disable_two_factor(
        &self,
        who: &Principal,
        password: Option<SecretString>,
        code: &str,
        client: &ClientInfo,
    ) -> Result<()> {
        let user = self.core.user(who).await?;
        let sealed = user
            .totp_secret
            .as_deref()
            .ok_or(Error::TwoFactorNotEnabled)?;
        // The password first: a wrong one must not use up the recovery code sent with it.
        self.core
            .confirm_owner(&user, who, password, "password")
            .await?;
        self.core.recheck_code(&user, sealed, code, client).await?;
        self.core
            .store
            .disable_totp(user.id, self.core.clock.now_ms())
            .await?;
        let event = AuditEvent::TwoFactorDisabled { by: Actor::Owner };
        self.core
            .audit(
                event,
                Subject::user(user.id)
                    .in_session(who.session_id)
                    .from(client),
            )
            .await;
        self.core.notify(&user, Notice::TwoFactorDisabled).await;
        Ok(())
    }

    /// A new set of recovery codes for the caller, after checking a code (TOTP or recovery); the
    /// old set is void.
    pub async fn new_recovery_codes(
        &self,
        who: &Principal,
        code: &str,
        client: &ClientInfo,
    ) -> Result<Vec<String>> {
        let user = self.core.user(who).await?;
        let sealed = user
            .totp_secret
            .as_deref()
            .ok_or(Error::TwoFactorNotEnabled)?;
        self.core.recheck_code(&user, sealed, code, client).await?;
        let (codes, hashes) = self.recovery_codes(&user);
        let replaced = self
            .core
            .store
            .replace_recovery_codes(user.id, &hashes, self.core.clock.now_ms())
            .await?;
        if !replaced {
            return Err(Error::TwoFactorNotEnabled);
        }
        self.core
            .audit(
                AuditEvent::RecoveryCodesRegenerated,
                Subject::user(user.id)
                    .in_session(who.session_id)
                    .from(client),
            )
            .await;
        self.core
            .notify(&user, Notice::RecoveryCodesRegenerated)
            .await;
        Ok(codes)
    }

    /// Ten new codes, and the keyed hashes that are all that is stored of them.
    fn recovery_codes(&self, user: &User) -> (Vec<String>, Vec<[u8; 32]>) {
        let codes = totp::generate_recovery_codes();
        let hashes = codes
            .iter()
            .filter_map(|c| totp::normalize_recovery_code(c))
            .map(|c| self.core.secrets.recovery_code_hash(user.id.as_bytes(), &c))
            .collect();
        (codes, hashes)
    }
}
