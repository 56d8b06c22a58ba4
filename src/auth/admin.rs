//! What an operator does to accounts and keys (the `gatehouse` command today). Each action is
//! here once, whoever calls it.

use secrecy::{ExposeSecret, SecretString};

use super::AuthService;
use super::audit::{Actor, AuditEvent, Origin};
use super::model::{EndReason, User};
use super::password::check_policy;
use super::tokens::new_key;
use crate::domain::{Email, FullName, Role};
use crate::error::{Error, Result};
use crate::mail::Notice;

impl AuthService {
    /// `gatehouse user add`.
    pub async fn add_user(
        &self,
        email: &Email,
        name: &FullName,
        password: SecretString,
    ) -> Result<User> {
        self.create_user(email, name, password, Origin::Cli, None)
            .await
    }

    pub async fn find_user(&self, email: &Email) -> Result<User> {
        self.store
            .user_by_email(&email.normalized())
            .await?
            .ok_or(Error::NotFound)
    }

    /// Disables an account and ends all its sessions, in one transaction: a login in flight gets
    /// no session.
    pub async fn disable_user(&self, email: &Email) -> Result<u64> {
        let user = self.find_user(email).await?;
        let now = self.clock.now_ms();
        let reason = EndReason::AccountDisabled;
        let ended = self
            .store
            .disable_user(user.id, reason.as_str(), now)
            .await?;
        self.ended(&ended, now, reason);
        let sessions_ended = ended.len() as u64;
        self.audit(
            AuditEvent::UserDisabled { sessions_ended },
            Some(user.id),
            None,
            None,
        )
        .await;
        Ok(sessions_ended)
    }

    pub async fn enable_user(&self, email: &Email) -> Result<()> {
        let user = self.find_user(email).await?;
        self.store
            .set_disabled(user.id, false, self.clock.now_ms())
            .await?;
        self.audit(AuditEvent::UserEnabled, Some(user.id), None, None)
            .await;
        Ok(())
    }

    /// Sets a new password and ends every session of the account.
    pub async fn set_password(&self, email: &Email, password: SecretString) -> Result<u64> {
        check_policy(password.expose_secret())?;
        let user = self.find_user(email).await?;
        let sessions_ended = self
            .replace_password(&user, password, None, EndReason::PasswordSetByAdmin)
            .await?;
        let event = AuditEvent::PasswordChanged {
            by: Actor::Cli,
            sessions_ended,
        };
        self.audit(event, Some(user.id), None, None).await;
        self.notify(&user, Notice::PasswordChanged).await;
        Ok(sessions_ended)
    }

    /// Adds and removes roles (an added role that is also removed stays off); returns the roles
    /// the account has now. Every instance's forward-auth and introspection answer with them
    /// within `live::SYNC_INTERVAL`; access tokens carry them from the next refresh.
    pub async fn change_roles(
        &self,
        email: &Email,
        add: &[Role],
        remove: &[Role],
    ) -> Result<Vec<String>> {
        loop {
            let user = self.find_user(email).await?;
            let mut roles: Vec<String> = user.roles.clone();
            roles.extend(add.iter().map(|r| r.as_str().to_owned()));
            roles.retain(|r| !remove.iter().any(|x| x.as_str() == r));
            roles.sort();
            roles.dedup();
            if roles == user.roles {
                return Ok(roles);
            }
            let now = self.clock.now_ms();
            if !self
                .store
                .set_roles(user.id, &user.roles, &roles, now)
                .await?
            {
                // Changed by someone else since it was read: apply the change to theirs.
                continue;
            }
            self.directory.forget(user.id);
            let event = AuditEvent::RolesChanged {
                added: roles
                    .iter()
                    .filter(|r| !user.roles.contains(r))
                    .cloned()
                    .collect(),
                removed: user
                    .roles
                    .iter()
                    .filter(|r| !roles.contains(r))
                    .cloned()
                    .collect(),
            };
            self.audit(event, Some(user.id), None, None).await;
            return Ok(roles);
        }
    }

    /// Turns 2FA off for an account that lost its authenticator.
    pub async fn reset_two_factor(&self, email: &Email) -> Result<()> {
        let user = self.find_user(email).await?;
        self.store
            .disable_totp(user.id, self.clock.now_ms())
            .await?;
        let event = AuditEvent::TwoFactorDisabled { by: Actor::Cli };
        self.audit(event, Some(user.id), None, None).await;
        self.notify(&user, Notice::TwoFactorDisabled).await;
        Ok(())
    }

    /// Makes a new signing key the active one; returns its kid. Running instances sign with it
    /// after their next key reload.
    pub async fn rotate_signing_key(&self) -> Result<String> {
        let now = self.clock.now_ms();
        let key = new_key(&self.secrets, now);
        self.store.rotate_key(&key, now).await?;
        let kid = key.kid.clone();
        self.audit(AuditEvent::KeyRotated { kid: key.kid }, None, None, None)
            .await;
        Ok(kid)
    }

    /// Revokes a retired signing key: tokens it signed stop verifying, and it leaves the JWK
    /// Set, on every instance at its next key reload. The active key is rotated out first.
    pub async fn revoke_signing_key(&self, kid: &str) -> Result<()> {
        if !self.store.revoke_key(kid, self.clock.now_ms()).await? {
            return Err(Error::NotFound);
        }
        let event = AuditEvent::KeyRevoked {
            kid: kid.to_owned(),
        };
        self.audit(event, None, None, None).await;
        Ok(())
    }
}
