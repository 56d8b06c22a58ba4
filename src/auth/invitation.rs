//! Invitations: an operator makes an account without a password and mails its owner a link; the
//! owner chooses the password with it and is signed in. The address counts as verified then.

use super::core::Core;
use std::sync::Arc;

use secrecy::{ExposeSecret, SecretString};

use super::audit::Operator;
use super::audit::{AuditEvent, Subject};
use super::core::AMR_PASSWORD;
use super::notices::{link_token_hash, new_link_token};
use super::password::check_policy;
use super::verification::{new_user_row, unverified_user};
use crate::crypto::random_token;
use crate::domain::{Email, FullName};
use crate::error::{Error, Result};
use crate::mail::Letter;
use crate::model::{ClientInfo, TokenSet, User};
use crate::store::mail_tokens::NewMailToken;

/// Accounts made for someone, who sets the password from a mailed link.
#[derive(Clone)]
pub struct Invitations {
    pub(crate) core: Arc<Core>,
}

impl Invitations {
    /// An invited account (`add_user` without a password): the new account, its invitation mailed
    /// in the same transaction.
    pub(crate) async fn invite_user(
        &self,
        op: Operator<'_>,
        email: &Email,
        name: &FullName,
    ) -> Result<User> {
        // A password nobody knows, hashed like any other, so that a login to the account before
        // the invitation is accepted costs and answers what a wrong password does.
        let placeholder = self
            .core
            .hasher
            .hash(SecretString::from(random_token()))
            .await?;
        let now = self.core.clock.now_ms();
        let user = unverified_user(email, name, &placeholder, now);
        let (token, hash) = new_link_token();
        let mail = self
            .core
            .compose(&user, Letter::Invitation { token: &token })?;
        let inserted = self
            .core
            .store
            .insert_user_with_token(
                &new_user_row(&user),
                &NewMailToken {
                    hash,
                    user_id: user.id,
                    purpose: "invite",
                    email: None,
                    created_at: now,
                    expires_at: now + self.core.settings.links.invite_ttl.as_millis() as i64,
                },
                &mail,
            )
            .await?;
        if !inserted {
            return Err(Error::EmailTaken);
        }
        self.core.mailer.queued(&[&mail]);
        let event = AuditEvent::UserInvited { by: op.actor() };
        self.core.audit_by(op, event, Some(user.id)).await;
        Ok(user)
    }

    /// `POST /auth/invitations/accept` with an operator's invitation: the account's first
    /// password, and a session. (`orgs::Orgs::accept_invitation_link` tries an organisation's
    /// invitation first.)
    pub async fn accept_invitation(
        &self,
        token: &str,
        password: SecretString,
        client: &ClientInfo,
    ) -> Result<TokenSet> {
        let hash = link_token_hash(token)?;
        self.core.live_link(&hash, "invite").await?;
        check_policy(password.expose_secret())?;
        let password_hash = self.core.hasher.hash(password).await?;
        let user_id = self
            .core
            .store
            .accept_invitation(&hash, &password_hash, self.core.clock.now_ms())
            .await?
            .ok_or(Error::LinkInvalid)?;
        let user = self
            .core
            .store
            .user_by_id(user_id)
            .await?
            .ok_or(Error::LinkInvalid)?;
        if user.disabled {
            return Err(Error::AccountDisabled);
        }
        let tokens = self
            .core
            .open_session(&user, vec![AMR_PASSWORD.into()], client)
            .await?
            .ok_or(Error::LinkInvalid)?;
        self.core
            .audit(
                AuditEvent::InvitationAccepted,
                Subject::user(user.id)
                    .in_session(tokens.session_id)
                    .from(client),
            )
            .await;
        Ok(tokens)
    }
}
