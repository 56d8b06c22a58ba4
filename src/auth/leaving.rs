//! Leaving: the owner deletes their account, after their password (and a code, with 2FA).

use secrecy::SecretString;

use super::AuthService;
use super::audit::AuditEvent;
use super::model::{ClientInfo, EndReason, Principal};
use crate::error::{Error, Result};

impl AuthService {
    /// `DELETE /auth/me`: the account, its sessions (on every instance within the revocation
    /// delay), contacts, codes and pending links go; the audit trail keeps the event.
    pub async fn delete_account(
        &self,
        who: &Principal,
        password: SecretString,
        code: Option<&str>,
        client: &ClientInfo,
    ) -> Result<u64> {
        let user = self.user(who).await?;
        self.recheck_password(&user, password).await?;
        if let Some(sealed) = user.totp_secret.as_deref() {
            let code = code.ok_or_else(|| {
                Error::field("code", "is required: two-factor authentication is on")
            })?;
            self.recheck_code(&user, sealed, code, client).await?;
        }
        let now = self.clock.now_ms();
        let reason = EndReason::AccountDeleted;
        let ended = self
            .store
            .delete_account(user.id, reason.as_str(), now)
            .await?;
        self.ended(&ended, now, reason);
        let sessions_ended = ended.len() as u64;
        let event = AuditEvent::AccountDeleted { sessions_ended };
        self.audit(event, Some(user.id), Some(who.session_id), Some(client))
            .await;
        Ok(sessions_ended)
    }
}
