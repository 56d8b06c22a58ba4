//! Two-factor enrolment and its upkeep: setup (password re-checked), enable with a code, disable,
//! and new recovery codes.

use secrecy::SecretString;

use super::AuthService;
use super::audit::{Actor, AuditEvent};
use super::totp;
use crate::error::{Error, Result};
use crate::mail::Notice;
use crate::model::{ClientInfo, Principal, TwoFactorSetup, User};

impl AuthService {
    /// Makes a new TOTP secret, pending until `enable_two_factor` confirms a code from it. A
    /// second setup replaces the pending secret. The password is asked again: with a stolen access
    /// token alone, nobody can enrol their own authenticator and lock the owner out.
    pub async fn setup_two_factor(
        &self,
        who: &Principal,
        password: SecretString,
    ) -> Result<TwoFactorSetup> {
        let user = self.user(who).await?;
        if user.two_factor_enabled() {
            return Err(Error::TwoFactorAlreadyEnabled);
        }
        self.recheck_password(&user, password).await?;
        let secret = totp::generate_secret();
        let sealed = self.secrets.seal(user.id.as_bytes(), &secret);
        self.store
            .set_totp_pending(user.id, &sealed, self.clock.now_ms())
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
        let user = self.user(who).await?;
        if user.two_factor_enabled() {
            return Err(Error::TwoFactorAlreadyEnabled);
        }
        let pending = user
            .totp_pending
            .as_deref()
            .ok_or(Error::TwoFactorNotSetUp)?;
        let secret = self.open_secret(user.id, pending)?;
        let now = self.clock.now_seconds() as u64;
        let step =
            totp::matching_step(&secret, code.trim(), now).ok_or(Error::CodeRecheckFailed)?;
        let (codes, hashes) = self.recovery_codes(&user);
        // The accepted code's step is recorded as used, so it cannot also complete a login.
        let enabled = self
            .store
            .enable_totp(user.id, pending, step as i64, &hashes, self.clock.now_ms())
            .await?;
        if !enabled {
            // Enabled or set up again by a concurrent request.
            return Err(Error::TwoFactorAlreadyEnabled);
        }
        self.audit(
            AuditEvent::TwoFactorEnabled,
            Some(user.id),
            Some(who.session_id),
            Some(client),
        )
        .await;
        self.notify(&user, Notice::TwoFactorEnabled).await;
        Ok(codes)
    }

    /// Turns the caller's 2FA off, after checking their password and a code (TOTP or recovery).
    pub async fn disable_two_factor(
        &self,
        who: &Principal,
        password: SecretString,
        code: &str,
        client: &ClientInfo,
    ) -> Result<()> {
        let user = self.user(who).await?;
        let sealed = user
            .totp_secret
            .as_deref()
            .ok_or(Error::TwoFactorNotEnabled)?;
        // The password first: a wrong one must not use up the recovery code sent with it.
        self.recheck_password(&user, password).await?;
        self.recheck_code(&user, sealed, code, client).await?;
        self.store
            .disable_totp(user.id, self.clock.now_ms())
            .await?;
        let event = AuditEvent::TwoFactorDisabled { by: Actor::Owner };
        self.audit(event, Some(user.id), Some(who.session_id), Some(client))
            .await;
        self.notify(&user, Notice::TwoFactorDisabled).await;
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
        let user = self.user(who).await?;
        let sealed = user
            .totp_secret
            .as_deref()
            .ok_or(Error::TwoFactorNotEnabled)?;
        self.recheck_code(&user, sealed, code, client).await?;
        let (codes, hashes) = self.recovery_codes(&user);
        let replaced = self
            .store
            .replace_recovery_codes(user.id, &hashes, self.clock.now_ms())
            .await?;
        if !replaced {
            return Err(Error::TwoFactorNotEnabled);
        }
        self.audit(
            AuditEvent::RecoveryCodesRegenerated,
            Some(user.id),
            Some(who.session_id),
            Some(client),
        )
        .await;
        self.notify(&user, Notice::RecoveryCodesRegenerated).await;
        Ok(codes)
    }

    /// Ten new codes, and the keyed hashes that are all that is stored of them.
    fn recovery_codes(&self, user: &User) -> (Vec<String>, Vec<[u8; 32]>) {
        let codes = totp::generate_recovery_codes();
        let hashes = codes
            .iter()
            .filter_map(|c| totp::normalize_recovery_code(c))
            .map(|c| self.secrets.recovery_code_hash(user.id.as_bytes(), &c))
            .collect();
        (codes, hashes)
    }
}
