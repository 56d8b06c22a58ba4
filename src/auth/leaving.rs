//! Leaving: the owner deletes their account, after their password (and a code, with 2FA).

use secrecy::SecretString;
use uuid::Uuid;

use super::account::Accounts;
use super::audit::{Actor, AuditEvent, Subject};
use crate::error::{Error, Result};
use crate::model::{ClientInfo, EndReason, Principal};

impl Accounts {
    /// `DELETE /auth/me`: the account, its sessions (on every instance within the revocation
    /// delay), contacts, codes and pending links go; the audit trail keeps the event.
    pub async fn delete_account(
        &self,
        who: &Principal,
        password: Option<SecretString>,
        code: Option<&str>,
        client: &ClientInfo,
    ) -> Result<u64> {
        let user = self.core.user(who).await?;
        self.core
            .confirm_owner(&user, who, password, "password")
            .await?;
        if let Some(sealed) = user.totp_secret.as_deref() {
            let code = code.ok_or_else(|| {
                Error::field("code", "is required: two-factor authentication is on")
            })?;
            self.core.recheck_code(&user, sealed, code, client).await?;
        }
        let sessions_ended = self.remove_account(user.id).await?;
        let event = AuditEvent::AccountDeleted {
            by: Actor::Owner,
            sessions_ended,
        };
        self.core
            .audit(
                event,
                Subject::user(user.id)
                    .in_session(who.session_id)
                    .from(client),
            )
            .await;
        Ok(sessions_ended)
    }

    /// Scrubs and soft-deletes the account, ending its sessions (the owner leaving, or an admin's
    /// `DELETE /admin/users/{id}`); returns how many sessions ended.
    pub(crate) async fn remove_account(&self, user_id: Uuid) -> Result<u64> {
        let now = self.core.clock.now_ms();
        let reason = EndReason::AccountDeleted;
        let ended = self
            .core
            .store
            .delete_account(user_id, reason.as_str(), now)
            .await?;
        self.core.ended(&ended, now, reason);
        self.core.directory.forget(user_id);
        Ok(ended.len() as u64)
    }
}
