//! The caller's own account: what it is, its password, and self-registration.

use super::core::Core;
use super::verification::Addresses;
use std::sync::Arc;

use secrecy::{ExposeSecret, SecretString};
use uuid::Uuid;

use super::audit::{Actor, AuditEvent, Origin, Subject};
use super::password::check_policy;
use crate::domain::{Email, FullName};
use crate::error::{Error, Result};
use crate::mail::Notice;
use crate::model::{Account, ClientInfo, EndReason, Principal, User};
use crate::store::users::NewUser;

/// An account as its owner keeps it: registration, profile, password, and leaving (`leaving`).
#[derive(Clone)]
pub struct Accounts {
    pub(crate) core: Arc<Core>,
    /// Registration mails the verification link.
    pub(crate) addresses: Addresses,
}

impl Accounts {
    pub async fn account(&self, who: &Principal) -> Result<Account> {
        let user = self.core.user(who).await?;
        let remaining = self.core.store.recovery_codes_remaining(user.id).await?;
        let reauthenticated_until = self.reauthenticated_until(who).await?;
        Ok(Account {
            reauthenticated_until,
            // An empty hash: no password (docs/api.md §14).
            has_password: !user.password_hash.is_empty(),
            id: user.id,
            two_factor_enabled: user.two_factor_enabled(),
            recovery_codes_remaining: remaining,
            created_at: user.created_at,
            email_verified: user.email_verified,
            email: user.email,
            full_name: user.full_name,
            roles: user.roles,
        })
    }

    /// Changes the caller's password after checking the current one. In one transaction with the
    /// new hash, every other session and every pending 2FA challenge ends, and a login that
    /// checked the old password opens no session.
    pub async fn change_password(
        &self,
        who: &Principal,
        current: Option<SecretString>,
        new: SecretString,
        client: &ClientInfo,
    ) -> Result<u64> {
        check_policy(new.expose_secret())?;
        let user = self.core.user(who).await?;
        self.core
            .confirm_owner(&user, who, current, "currentPassword")
            .await?;
        let ended = self
            .replace_password(&user, new, Some(who.session_id), EndReason::PasswordChanged)
            .await?;
        let event = AuditEvent::PasswordChanged {
            by: Actor::Owner,
            sessions_ended: ended,
        };
        self.core
            .audit(
                event,
                Subject::user(user.id)
                    .in_session(who.session_id)
                    .from(client),
            )
            .await;
        self.core.notify(&user, Notice::PasswordChanged).await;
        Ok(ended)
    }

    /// Hashes `password` and makes it the account's, ending every session but `keep`.
    pub(crate) async fn replace_password(
        &self,
        user: &User,
        password: SecretString,
        keep: Option<Uuid>,
        reason: EndReason,
    ) -> Result<u64> {
        let hash = self.core.hasher.hash(password).await?;
        let now = self.core.clock.now_ms();
        let ended = self
            .core
            .store
            .change_password(user.id, &hash, keep, reason.as_str(), now)
            .await?;
        self.core.ended(&ended, now, reason);
        Ok(ended.len() as u64)
    }

    /// Self-registration, where the operator opened it. Throttled per client address and for the
    /// whole service, and its password hashes have a small share of the hashing threads of their
    /// own, so a registration flood is refused without ever shedding a login.
    pub async fn register(
        &self,
        email: &Email,
        name: &FullName,
        password: SecretString,
        client: &ClientInfo,
    ) -> Result<User> {
        if !self.core.settings.registration_open {
            return Err(Error::RegistrationClosed);
        }
        // Its domain's provider makes its accounts (docs/api.md §14).
        self.core.sso_required(&email.normalized())?;
        self.core.throttle.registration_from(client.ip)?;
        check_policy(password.expose_secret())?;
        let hash = self.core.hasher.hash_for_registration(password).await?;
        self.addresses
            .insert_registered(email, name, &hash, client)
            .await
    }

    /// Creates an account with a checked password (`user add`, registration).
    pub(crate) async fn create_user(
        &self,
        email: &Email,
        name: &FullName,
        password: SecretString,
        origin: Origin,
        client: Option<&ClientInfo>,
    ) -> Result<User> {
        check_policy(password.expose_secret())?;
        let hash = self.core.hasher.hash(password).await?;
        self.insert_user(email, name, &hash, origin, client).await
    }

    async fn insert_user(
        &self,
        email: &Email,
        name: &FullName,
        password_hash: &str,
        origin: Origin,
        client: Option<&ClientInfo>,
    ) -> Result<User> {
        let id = Uuid::now_v7();
        let inserted = self
            .core
            .store
            .insert_user(&NewUser {
                id,
                email: email.as_str(),
                email_normalized: &email.normalized(),
                full_name: name.as_str(),
                password_hash,
                created_at: self.core.clock.now_ms(),
            })
            .await?;
        if !inserted {
            return Err(Error::EmailTaken);
        }
        // An admin's creation is recorded by the caller, which knows the admin (`actor_id`).
        if origin != Origin::Admin {
            self.core
                .audit(
                    AuditEvent::UserCreated(origin),
                    Subject::user(id).maybe_from(client),
                )
                .await;
        }
        self.core
            .store
            .user_by_id(id)
            .await?
            .ok_or_else(|| Error::internal(anyhow::anyhow!("user {id} vanished")))
    }
}
