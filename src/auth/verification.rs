//! Verified addresses: the link mailed at registration, its resend, the check of it, and the
//! change of an account's address, which happens only when a link sent to the new address comes
//! back (the old address is told).

use super::core::Core;
use std::sync::Arc;

use secrecy::SecretString;
use uuid::Uuid;

use super::audit::{AuditEvent, Origin, Subject};
use super::notices::{link_token_hash, new_link_token};
use crate::domain::{Email, FullName};
use crate::error::{Error, Result};
use crate::mail::{Letter, Notice};
use crate::model::{ClientInfo, Principal, User};
use crate::store::mail_tokens::{NewMailToken, ProofMails, Verified};
use crate::store::users::NewUser;

/// Verification mails one account gets in any hour at most (resends and address changes).
const MAILS_PER_HOUR: i64 = 5;
const HOUR_MS: i64 = 3_600_000;

/// Whether an address reaches its owner: verification, and changing the address (docs/api.md §7).
#[derive(Clone)]
pub struct Addresses {
    pub(crate) core: Arc<Core>,
}

impl Addresses {
    /// Creates a self-registered account, unverified, with its verification link mailed in the
    /// same transaction.
    pub(crate) async fn insert_registered(
        &self,
        email: &Email,
        name: &FullName,
        password_hash: &str,
        client: &ClientInfo,
    ) -> Result<User> {
        let now = self.core.clock.now_ms();
        let user = unverified_user(email, name, password_hash, now);
        let (token, hash) = new_link_token();
        let mail = self.core.compose(&user, Letter::Verify { token: &token })?;
        let inserted = self
            .core
            .store
            .insert_user_with_token(
                &new_user_row(&user),
                &self.verify_token(user.id, None, hash, now),
                &mail,
            )
            .await?;
        // One audit event either way (`user.created` says the link was mailed): the answer's
        // time should not differ by more than the answer itself tells.
        if !inserted {
            let refused = AuditEvent::RegistrationRefused;
            self.core
                .audit(refused, Subject::anyone().from(client))
                .await;
            return Err(Error::EmailTaken);
        }
        self.core.mailer.queued(&[&mail]);
        let created = AuditEvent::UserCreated(Origin::Registration);
        self.core
            .audit(created, Subject::user(user.id).from(client))
            .await;
        Ok(user)
    }

    /// `POST /auth/email/verify/check`: the address a live verification link confirms (the new one
    /// of an address change), for the page to show before the click that consumes the link.
    pub async fn verify_link_address(&self, token: &str) -> Result<String> {
        let hash = link_token_hash(token)?;
        let (record, user) = self.core.live_link(&hash, "verify").await?;
        Ok(record.email.unwrap_or(user.email))
    }

    /// `POST /auth/email/verify`: the account's address is verified, or the account moves to the
    /// address the link was sent to (`EMAIL_TAKEN` if another account took it meanwhile). An
    /// account whose address was never verified loses the passkeys and the authenticator added
    /// before (`store::credentials`), and the address it now has is told which.
    pub async fn verify_email(&self, token: &str, client: &ClientInfo) -> Result<()> {
        let hash = link_token_hash(token)?;
        let (record, user) = self.core.live_link(&hash, "verify").await?;
        let core = &self.core;
        let new_address = record.email.clone();
        let notices: ProofMails = Box::new(move |proof| {
            let mut mails = Vec::new();
            // For a change, the notice to the old address, written with the change.
            if new_address.is_some() {
                mails.push(core.compose(&user, Letter::Notice(Notice::AddressChanged))?);
            }
            if !proof.removed.is_empty() {
                let to = new_address.as_deref().unwrap_or(&user.email);
                let letter = Letter::Proof {
                    notice: Notice::AddressVerified,
                    proof,
                };
                mails.push(core.compose_to(to, &user, letter)?);
            }
            Ok(mails)
        });
        let (verified, mails) = self
            .core
            .store
            .verify_email(&hash, notices, self.core.clock.now_ms())
            .await?
            .ok_or(Error::LinkInvalid)?;
        self.core.mailer.queued(&mails.iter().collect::<Vec<_>>());
        let (user_id, proof, event) = match verified {
            Verified::Address(id, proof) => (id, proof, AuditEvent::EmailVerified),
            Verified::Changed(id, proof) => (id, proof, AuditEvent::EmailChanged),
        };
        self.core.directory.forget(user_id);
        self.core.credentials_removed(user_id, &proof, client).await;
        self.core
            .audit(event, Subject::user(user_id).from(client))
            .await;
        Ok(())
    }

    /// `POST /auth/email/verify/resend`: a new link for the caller's unverified address (the
    /// older one void); nothing for a verified one, nor past the hourly share.
    pub async fn resend_verification(&self, who: &Principal, client: &ClientInfo) -> Result<()> {
        let user = self.core.user(who).await?;
        if user.email_verified {
            return Ok(());
        }
        let now = self.core.clock.now_ms();
        let (token, hash) = new_link_token();
        let mail = self.core.compose(&user, Letter::Verify { token: &token })?;
        let token = self.verify_token(user.id, None, hash, now);
        if self
            .core
            .store
            .issue_mail_token(&token, &mail, now - HOUR_MS, MAILS_PER_HOUR)
            .await?
        {
            self.core.mailer.queued(&[&mail]);
            let event = AuditEvent::EmailVerificationSent;
            self.core
                .audit(
                    event,
                    Subject::user(user.id)
                        .in_session(who.session_id)
                        .from(client),
                )
                .await;
        }
        Ok(())
    }

    /// `POST /auth/email`: after the password, a link to `new_email`; the account keeps its
    /// address until the link comes back. An address another account has gets, instead of the
    /// link (which could never be used), a word that someone tried; the caller is answered the
    /// same either way, after the same work (a token stored, older links voided, one mail
    /// queued), so this call tells no one which addresses have accounts. At most
    /// `MAILS_PER_HOUR` an hour per account, with the resends (then 429).
    pub async fn change_email(
        &self,
        who: &Principal,
        new_email: &Email,
        password: Option<SecretString>,
        client: &ClientInfo,
    ) -> Result<()> {
        let user = self.core.user(who).await?;
        self.core
            .confirm_owner(&user, who, password, "password")
            .await?;
        if new_email.normalized() == user.email_normalized {
            return Err(Error::field("newEmail", "is the account's address already"));
        }
        let owner = self
            .core
            .store
            .user_by_email(&new_email.normalized())
            .await?;
        let now = self.core.clock.now_ms();
        let (token, hash) = new_link_token();
        let mail = match &owner {
            // To the address's owner, by their own name: nothing of who asked.
            Some(owner) => self
                .core
                .compose(owner, Letter::Notice(Notice::AddressInUse)),
            None => self.core.compose_to(
                new_email.as_str(),
                &user,
                Letter::EmailChange { token: &token },
            ),
        }
        .map_err(|e| match e {
            Error::Validation(_) => {
                Error::field("newEmail", "is not an address mail can be sent to")
            }
            other => other,
        })?;
        let token = self.verify_token(user.id, Some(new_email.as_str()), hash, now);
        if !self
            .core
            .store
            .issue_mail_token(&token, &mail, now - HOUR_MS, MAILS_PER_HOUR)
            .await?
        {
            return Err(Error::RateLimited {
                retry_after: HOUR_MS as u64 / 1000,
            });
        }
        self.core.mailer.queued(&[&mail]);
        let event = AuditEvent::EmailChangeRequested;
        self.core
            .audit(
                event,
                Subject::user(user.id)
                    .in_session(who.session_id)
                    .from(client),
            )
            .await;
        Ok(())
    }

    fn verify_token<'a>(
        &self,
        user_id: Uuid,
        email: Option<&'a str>,
        hash: [u8; 32],
        now: i64,
    ) -> NewMailToken<'a> {
        NewMailToken {
            hash,
            user_id,
            purpose: "verify",
            email,
            created_at: now,
            expires_at: now + self.core.settings.links.verify_ttl.as_millis() as i64,
        }
    }
}

/// A new account whose address is not verified yet (registration, invitation).
pub(crate) fn unverified_user(
    email: &Email,
    name: &FullName,
    password_hash: &str,
    now: i64,
) -> User {
    User {
        id: Uuid::now_v7(),
        email: email.as_str().to_owned(),
        email_normalized: email.normalized(),
        full_name: name.as_str().to_owned(),
        password_hash: password_hash.to_owned(),
        disabled: false,
        totp_secret: None,
        totp_pending: None,
        auth_epoch: 0,
        second_factor_blocked_until: None,
        roles: Vec::new(),
        created_at: now,
        email_verified: false,
        last_login_at: None,
        email_verified_by: None,
    }
}

/// The row that stores `user`.
pub(crate) fn new_user_row(user: &User) -> NewUser<'_> {
    NewUser {
        id: user.id,
        email: &user.email,
        email_normalized: &user.email_normalized,
        full_name: &user.full_name,
        password_hash: &user.password_hash,
        created_at: user.created_at,
    }
}
