//! The operator's actions on accounts and keys, each written once: the `gatehouse` command finds
//! the account by its e-mail (`find_user`) and the administration API takes its id, and both call
//! the same function here with their `Operator`, which decides how the act is audited and whether
//! it would lock an admin out.

use secrecy::{ExposeSecret, SecretString};
use uuid::Uuid;

use super::ADMIN_ROLE;
use crate::admin::Admin;
use crate::auth::audit::Operator;
use crate::auth::audit::{AuditEvent, Origin, Subject};
use crate::auth::keys::new_keys;
use crate::auth::password::check_policy;
use crate::crypto::SigningAlg;
use crate::domain::{Email, FullName, Role};
use crate::error::{Conflict, Error, OwnAction, Result};
use crate::mail::Notice;
use crate::model::{EndReason, ManagedUser, SessionInfo, User};

/// What `PATCH /admin/users/{id}` changes; `None`: left as it is.
#[derive(Debug, Default)]
pub struct UserChanges {
    pub full_name: Option<FullName>,
    /// The whole set of roles the account is to have.
    pub roles: Option<Vec<Role>>,
    pub disabled: Option<bool>,
}

impl Admin {
    /// The account with this e-mail (the `gatehouse` command names accounts by address).
    pub async fn find_user(&self, email: &Email) -> Result<User> {
        self.core
            .store
            .user_by_email(&email.normalized())
            .await?
            .ok_or(Error::NotFound)
    }

    /// An account that exists and was not deleted, with its passkey count.
    pub(super) async fn target(&self, id: Uuid) -> Result<ManagedUser> {
        self.core
            .store
            .managed_user(id)
            .await?
            .ok_or(Error::NotFound)
    }

    /// A new account (`gatehouse user add` / `invite`, `POST /admin/users`): with a password, ready
    /// to sign in; without one, invited (a link to choose it is mailed in the same transaction).
    /// Then the roles, if any (checked before, as `Role`s, so none can fail here).
    pub async fn add_user(
        &self,
        op: Operator<'_>,
        email: &Email,
        name: &FullName,
        roles: &[Role],
        password: Option<SecretString>,
    ) -> Result<User> {
        let user = match password {
            Some(password) => {
                let origin = match op {
                    Operator::Cli => Origin::Cli,
                    Operator::Admin { .. } => Origin::Admin,
                };
                let user = self
                    .accounts
                    .create_user(email, name, password, origin, None)
                    .await?;
                if origin == Origin::Admin {
                    self.core
                        .audit_by(op, AuditEvent::UserCreated(origin), Some(user.id))
                        .await;
                }
                user
            }
            None => self.invitations.invite_user(op, email, name).await?,
        };
        if roles.is_empty() {
            return Ok(user);
        }
        self.change_roles(op, user.id, roles, &[]).await?;
        self.core
            .store
            .user_by_id(user.id)
            .await?
            .ok_or_else(|| Error::internal(anyhow::anyhow!("user {} vanished", user.id)))
    }

    /// `PATCH /admin/users/{id}`: every change is checked before any is made, so a refused one
    /// (an admin disabling or demoting themselves) leaves the account as it was.
    pub async fn update_user(
        &self,
        op: Operator<'_>,
        id: Uuid,
        changes: UserChanges,
    ) -> Result<ManagedUser> {
        let current = self.target(id).await?;
        if changes.disabled == Some(true) {
            op.not_on_self(id, OwnAction::Disable)?;
        }
        let (mut add, mut remove) = (Vec::new(), Vec::new());
        if let Some(roles) = &changes.roles {
            add = roles
                .iter()
                .filter(|r| !current.user.roles.iter().any(|c| c == r.as_str()))
                .cloned()
                .collect();
            remove = current
                .user
                .roles
                .iter()
                .filter(|c| !roles.iter().any(|r| r.as_str() == c.as_str()))
                .filter_map(|c| Role::parse(c).ok())
                .collect();
            if remove.iter().any(|r| r.as_str() == ADMIN_ROLE) {
                op.not_on_self(id, OwnAction::RemoveAdmin)?;
            }
        }
        if let Some(name) = &changes.full_name {
            if name.as_str() != current.user.full_name {
                let now = self.core.clock.now_ms();
                if !self
                    .core
                    .store
                    .set_full_name(id, name.as_str(), now)
                    .await?
                {
                    return Err(Error::NotFound);
                }
                self.core.directory.forget(id);
                self.core
                    .audit_by(op, AuditEvent::UserRenamed, Some(id))
                    .await;
            }
        }
        if !add.is_empty() || !remove.is_empty() {
            self.change_roles(op, id, &add, &remove).await?;
        }
        match changes.disabled {
            Some(true) if !current.user.disabled => {
                self.disable_user(op, id).await?;
            }
            Some(false) if current.user.disabled => self.enable_user(op, id).await?,
            _ => {}
        }
        self.target(id).await
    }

    /// Disables an account and ends all its sessions, in one transaction: a login in flight gets
    /// no session, and every instance refuses its access tokens within `live::SYNC_INTERVAL`.
    pub async fn disable_user(&self, op: Operator<'_>, id: Uuid) -> Result<u64> {
        op.not_on_self(id, OwnAction::Disable)?;
        self.target(id).await?;
        let now = self.core.clock.now_ms();
        let reason = EndReason::AccountDisabled;
        let ended = self
            .core
            .store
            .disable_user(id, reason.as_str(), now)
            .await?;
        self.core.ended(&ended, now, reason);
        self.core.directory.forget(id);
        let sessions_ended = ended.len() as u64;
        let event = AuditEvent::UserDisabled {
            by: op.actor(),
            sessions_ended,
        };
        self.core.audit_by(op, event, Some(id)).await;
        Ok(sessions_ended)
    }

    pub async fn enable_user(&self, op: Operator<'_>, id: Uuid) -> Result<()> {
        self.target(id).await?;
        self.core
            .store
            .set_disabled(id, false, self.core.clock.now_ms())
            .await?;
        self.core.directory.forget(id);
        let event = AuditEvent::UserEnabled { by: op.actor() };
        self.core.audit_by(op, event, Some(id)).await;
        Ok(())
    }

    /// Sets a new password and ends every session of the account (`gatehouse user set-password`).
    pub async fn set_password(
        &self,
        op: Operator<'_>,
        id: Uuid,
        password: SecretString,
    ) -> Result<u64> {
        check_policy(password.expose_secret())?;
        let user = self.target(id).await?.user;
        let sessions_ended = self
            .accounts
            .replace_password(&user, password, None, EndReason::PasswordSetByAdmin)
            .await?;
        let event = AuditEvent::PasswordChanged {
            by: op.actor(),
            sessions_ended,
        };
        self.core.audit_by(op, event, Some(id)).await;
        self.core.notify(&user, Notice::PasswordChanged).await;
        Ok(sessions_ended)
    }

    /// Adds and removes roles (an added role that is also removed stays off); returns the roles
    /// the account has now. Every instance's forward-auth, introspection and administration gate
    /// answer with them within `live::SYNC_INTERVAL`; access tokens carry them from the next
    /// refresh. An admin cannot take the admin role from themselves.
    pub async fn change_roles(
        &self,
        op: Operator<'_>,
        id: Uuid,
        add: &[Role],
        remove: &[Role],
    ) -> Result<Vec<String>> {
        let removes_admin = remove.iter().any(|r| r.as_str() == ADMIN_ROLE)
            && !add.iter().any(|r| r.as_str() == ADMIN_ROLE);
        if removes_admin {
            op.not_on_self(id, OwnAction::RemoveAdmin)?;
        }
        loop {
            let user = self.target(id).await?.user;
            let mut roles: Vec<String> = user.roles.clone();
            roles.extend(add.iter().map(|r| r.as_str().to_owned()));
            roles.retain(|r| !remove.iter().any(|x| x.as_str() == r));
            roles.sort();
            roles.dedup();
            if roles == user.roles {
                return Ok(roles);
            }
            let now = self.core.clock.now_ms();
            if !self
                .core
                .store
                .set_roles(user.id, &user.roles, &roles, now)
                .await?
            {
                // Changed by someone else since it was read: apply the change to theirs.
                continue;
            }
            self.core.directory.forget(user.id);
            let event = AuditEvent::RolesChanged {
                by: op.actor(),
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
            self.core.audit_by(op, event, Some(user.id)).await;
            return Ok(roles);
        }
    }

    /// Turns 2FA off for an account that lost its authenticator, and ends its sessions: a session
    /// whose login that authenticator vouched for is not to outlive it (a stolen phone may hold
    /// one). An admin cannot do it to themselves: their own session, the second factor the API
    /// needs, would end with no second factor left to sign in again.
    pub async fn reset_two_factor(&self, op: Operator<'_>, id: Uuid) -> Result<u64> {
        op.not_on_self(id, OwnAction::ResetSecondFactor)?;
        let user = self.target(id).await?.user;
        self.core
            .store
            .disable_totp(id, self.core.clock.now_ms())
            .await?;
        let sessions_ended = self
            .core
            .end_sessions(id, None, EndReason::TwoFactorReset)
            .await?;
        let event = AuditEvent::TwoFactorDisabled { by: op.actor() };
        self.core.audit_by(op, event, Some(id)).await;
        self.core.notify(&user, Notice::TwoFactorDisabled).await;
        Ok(sessions_ended)
    }

    /// `DELETE /admin/users/{id}`: the same removal as an owner leaving (`leaving`), without their
    /// password. An admin cannot delete themselves here (`DELETE /auth/me` is for that).
    pub async fn delete_user(&self, op: Operator<'_>, id: Uuid) -> Result<u64> {
        op.not_on_self(id, OwnAction::Delete)?;
        self.target(id).await?;
        let sessions_ended = self.accounts.remove_account(id).await?;
        let event = AuditEvent::AccountDeleted {
            by: op.actor(),
            sessions_ended,
        };
        self.core.audit_by(op, event, Some(id)).await;
        Ok(sessions_ended)
    }

    /// Ends every session of an account (here at once, elsewhere within the revocation delay).
    pub async fn end_user_sessions(&self, op: Operator<'_>, id: Uuid) -> Result<u64> {
        self.target(id).await?;
        let sessions_ended = self
            .core
            .end_sessions(id, None, EndReason::EndedByAdmin)
            .await?;
        self.core
            .audit_by(op, AuditEvent::SessionsEnded { sessions_ended }, Some(id))
            .await;
        Ok(sessions_ended)
    }

    /// An account's live sessions, the most recently used first (`current`: the admin's own).
    pub async fn user_sessions(&self, op: Operator<'_>, id: Uuid) -> Result<Vec<SessionInfo>> {
        self.target(id).await?;
        let current = match op {
            Operator::Admin { who, .. } => Some(who.session_id),
            Operator::Cli => None,
        };
        let sessions = self.sessions.sessions_of(id, current).await?;
        let event = AuditEvent::AdminRead(crate::auth::audit::AdminRead::Sessions);
        self.core.audit_by(op, event, Some(id)).await;
        Ok(sessions)
    }

    /// Mails the account a reset link now, within its hourly allowance of reset mails (the same
    /// as a forgotten-password request's; past it `RATE_LIMITED`). A disabled account gets none:
    /// its reset could not sign it in (`CONFLICT`).
    pub async fn send_password_reset(&self, op: Operator<'_>, id: Uuid) -> Result<()> {
        let user = self.target(id).await?.user;
        if user.disabled {
            return Err(Error::Conflict(Conflict::AccountDisabled));
        }
        if !self.recovery.mail_reset_link(&user).await? {
            self.core
                .audit_by(op, AuditEvent::PasswordResetThrottled, Some(id))
                .await;
            return Err(Error::RateLimited {
                retry_after: crate::auth::recovery::HOUR_SECONDS,
            });
        }
        let event = AuditEvent::PasswordResetRequested { by: op.actor() };
        self.core.audit_by(op, event, Some(id)).await;
        Ok(())
    }

    /// Makes a new signing key of every algorithm the active one, retiring the old ones in the
    /// same transaction; returns each algorithm's new kid, in `SigningAlg::ALL`'s order. Running
    /// instances sign with them after their next key reload.
    pub async fn rotate_signing_keys(&self) -> Result<Vec<(SigningAlg, String)>> {
        let now = self.core.clock.now_ms();
        let keys = new_keys(&self.core.secrets, &SigningAlg::ALL, now)
            .await
            .map_err(Error::internal)?;
        self.core.store.rotate_keys(&keys, now).await?;
        let kids: Vec<(SigningAlg, String)> = SigningAlg::ALL
            .into_iter()
            .zip(keys.into_iter().map(|k| k.kid))
            .collect();
        let event = AuditEvent::KeyRotated {
            kids: kids
                .iter()
                .map(|(alg, kid)| (alg.as_str().to_owned(), kid.clone()))
                .collect(),
        };
        self.core.audit(event, Subject::service()).await;
        Ok(kids)
    }

    /// Revokes a retired signing key: tokens it signed stop verifying, and it leaves the JWK
    /// Set, on every instance at its next key reload. The active key is rotated out first.
    pub async fn revoke_signing_key(&self, kid: &str) -> Result<()> {
        if !self
            .core
            .store
            .revoke_key(kid, self.core.clock.now_ms())
            .await?
        {
            return Err(Error::NotFound);
        }
        let event = AuditEvent::KeyRevoked {
            kid: kid.to_owned(),
        };
        self.core.audit(event, Subject::service()).await;
        Ok(())
    }
}
