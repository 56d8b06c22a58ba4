//! Outbound mail (docs/api.md §7): what the flows send (`Letter`), rendered from templates
//! (`templates`) into a sealed message that the flow writes to the outbox in the transaction of
//! the change that causes it, and delivered from there by a worker on every instance (`delivery`)
//! over SMTP or into `.eml` files (`transport`).

use std::sync::Arc;
use std::time::Duration;

use lettre::message::header::ContentType;
use lettre::message::{Mailbox, MultiPart};
use tokio::sync::Notify;
use uuid::Uuid;

use crate::crypto::Secrets;
use crate::error::{Error, Result};
use crate::metrics::Metrics;
use crate::model::AddressProof;
use crate::model::mail::{OutboxMail, PendingMail};

pub mod delivery;
mod eml_file;
pub mod templates;
pub mod transport;
pub mod wording;

use templates::Templates;

/// The pages of docs/api.md §10 that mailed links open (the token in the query).
pub const RESET_PAGE: &str = "/reset-password";
pub const VERIFY_PAGE: &str = "/verify-email";
pub const INVITATION_PAGE: &str = "/accept-invitation";

/// A security notice: something changed on the account, and its owner should know.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Notice {
    PasswordChanged,
    PasswordReset,
    TwoFactorEnabled,
    TwoFactorDisabled,
    RecoveryCodesRegenerated,
    /// Wrong second-factor codes in a row made the account wait (`two_factor.locked`).
    TwoFactorLocked,
    /// To the old address, after the account moved to another one.
    AddressChanged,
    PasskeyAdded,
    PasskeyRemoved,
    /// A personal API key was made (docs/api.md §12).
    ApiKeyCreated,
    /// A personal API key was deleted, by the owner or an admin.
    ApiKeyDeleted,
    /// A verification link came back to an address never verified before (sent only when that
    /// removed something: the notice lists it).
    AddressVerified,
    /// To an address another account asked to move to: it is this account's already.
    AddressInUse,
    /// A sign-in through another identity provider was linked (docs/api.md §14).
    IdentityLinked,
    /// A sign-in through another identity provider was unlinked.
    IdentityUnlinked,
}

impl Notice {
    /// The name templates see (`notice`) and the outbox records.
    pub fn key(self) -> &'static str {
        match self {
            Notice::PasswordChanged => "password_changed",
            Notice::PasswordReset => "password_reset",
            Notice::TwoFactorEnabled => "two_factor_enabled",
            Notice::TwoFactorDisabled => "two_factor_disabled",
            Notice::RecoveryCodesRegenerated => "recovery_codes_regenerated",
            Notice::TwoFactorLocked => "two_factor_locked",
            Notice::AddressChanged => "address_changed",
            Notice::PasskeyAdded => "passkey_added",
            Notice::PasskeyRemoved => "passkey_removed",
            Notice::ApiKeyCreated => "api_key_created",
            Notice::ApiKeyDeleted => "api_key_deleted",
            Notice::AddressVerified => "address_verified",
            Notice::AddressInUse => "address_in_use",
            Notice::IdentityLinked => "identity_linked",
            Notice::IdentityUnlinked => "identity_unlinked",
        }
    }

    fn title(self) -> &'static str {
        match self {
            Notice::PasswordChanged => "your password was changed",
            Notice::PasswordReset => "your password was reset",
            Notice::TwoFactorEnabled => "two-factor authentication is on",
            Notice::TwoFactorDisabled => "two-factor authentication is off",
            Notice::RecoveryCodesRegenerated => "new recovery codes",
            Notice::TwoFactorLocked => "wrong second-factor codes",
            Notice::AddressChanged => "your e-mail address was changed",
            Notice::PasskeyAdded => "a passkey was added",
            Notice::PasskeyRemoved => "a passkey was removed",
            Notice::ApiKeyCreated => "an API key was created",
            Notice::ApiKeyDeleted => "an API key was deleted",
            Notice::AddressVerified => "your address is confirmed",
            Notice::AddressInUse => "someone tried to use this address",
            Notice::IdentityLinked => "a sign-in provider was linked",
            Notice::IdentityUnlinked => "a sign-in provider was unlinked",
        }
    }

    fn message(self) -> &'static str {
        match self {
            Notice::PasswordChanged => {
                "The password of your account was changed. Your other sessions were signed out."
            }
            Notice::PasswordReset => {
                "The password of your account was reset with a link sent to this address. Every \
                 session was signed out."
            }
            Notice::TwoFactorEnabled => {
                "Two-factor authentication was turned on for your account: signing in now also \
                 asks for a code from your authenticator app."
            }
            Notice::TwoFactorDisabled => {
                "Two-factor authentication was turned off for your account: signing in now asks \
                 only for the password."
            }
            Notice::RecoveryCodesRegenerated => {
                "A new set of recovery codes was made for your account; the old codes no longer \
                 work."
            }
            Notice::TwoFactorLocked => {
                "Several wrong second-factor codes in a row were entered for your account, after \
                 its password was right. Further codes must wait. Someone may know your password."
            }
            Notice::AddressChanged => {
                "The e-mail address of your account was changed, and this address no longer \
                 signs in to it."
            }
            Notice::PasskeyAdded => "A passkey was added to your account.",
            Notice::PasskeyRemoved => "A passkey was removed from your account.",
            Notice::ApiKeyCreated => {
                "An API key was created for your account: it works for scripts and integrations \
                 until it expires or is deleted. If this was not you, delete it on your account \
                 page and change your password."
            }
            Notice::ApiKeyDeleted => "An API key of your account was deleted: it no longer works.",
            Notice::AddressVerified => {
                "The e-mail address of your account was confirmed with the link sent to it."
            }
            Notice::AddressInUse => {
                "Someone signed in to another account asked to move that account to this address, \
                 which already belongs to your account. Nothing was changed, and no link was sent."
            }
            Notice::IdentityLinked => {
                "An account at another identity provider was linked to your account: signing in \
                 there now signs you in here. If this was not you, unlink it on your account page \
                 and change your password."
            }
            Notice::IdentityUnlinked => {
                "An account at another identity provider was unlinked from your account: it no \
                 longer signs you in here."
            }
        }
    }
}

/// A mail a flow sends. Links carry their token; it exists nowhere else in clear.
#[derive(Debug, Clone, Copy)]
pub enum Letter<'a> {
    Reset {
        token: &'a str,
    },
    Verify {
        token: &'a str,
    },
    /// The verification of a new address, sent to that address.
    EmailChange {
        token: &'a str,
    },
    Invitation {
        token: &'a str,
    },
    /// An invitation to join an organisation (docs/api.md §13), valid 7 days.
    OrgInvitation {
        token: &'a str,
        org: &'a str,
    },
    Notice(Notice),
    /// A notice of a change that proved the address (a reset, a verification), naming the
    /// sign-in methods it removed, or the passkeys that remain.
    Proof {
        notice: Notice,
        proof: &'a AddressProof,
    },
}

impl Letter<'_> {
    /// The outbox's `kind`, and the metrics' label.
    pub fn kind(&self) -> &'static str {
        match self {
            Letter::Reset { .. } => "reset",
            Letter::Verify { .. } => "verify",
            Letter::EmailChange { .. } => "email_change",
            Letter::Invitation { .. } => "invitation",
            Letter::OrgInvitation { .. } => "org_invitation",
            Letter::Notice(_) | Letter::Proof { .. } => "notice",
        }
    }
}

/// A passkey as a notice names it: quoted (its name is the user's text), with the day it was
/// added, so that one the owner did not add stands out.
fn passkey_label((name, created_at): &(String, i64)) -> String {
    let at = std::time::UNIX_EPOCH + Duration::from_millis((*created_at).max(0) as u64);
    let day: String = humantime::format_rfc3339_seconds(at)
        .to_string()
        .chars()
        .take(10)
        .collect();
    format!("passkey \"{name}\" (added {day})")
}

/// Token lifetimes, for the links' wording.
#[derive(Debug, Clone, Copy)]
pub struct LinkLifetimes {
    pub reset: Duration,
    pub verify: Duration,
    pub invite: Duration,
}

pub struct Mailer {
    templates: Templates,
    from: Mailbox,
    public_url: String,
    product_name: String,
    lifetimes: LinkLifetimes,
    secrets: Arc<Secrets>,
    metrics: Arc<Metrics>,
    wake: Arc<Notify>,
}

pub struct MailerParts {
    pub templates: Templates,
    pub from: Mailbox,
    pub public_url: String,
    pub product_name: String,
    pub lifetimes: LinkLifetimes,
    pub secrets: Arc<Secrets>,
    pub metrics: Arc<Metrics>,
}

impl Mailer {
    pub fn new(parts: MailerParts) -> Mailer {
        Mailer {
            templates: parts.templates,
            from: parts.from,
            public_url: parts.public_url,
            product_name: parts.product_name,
            lifetimes: parts.lifetimes,
            secrets: parts.secrets,
            metrics: parts.metrics,
            wake: Arc::new(Notify::new()),
        }
    }

    /// Renders `letter` for `to` (an address the service accepted, and the account's name) and
    /// seals it for the outbox. The headers are lettre's typed ones: a name or address cannot add
    /// a header, whatever it holds.
    pub fn compose(
        &self,
        to: &str,
        name: &str,
        letter: Letter<'_>,
        now: i64,
    ) -> Result<OutboxMail> {
        // The service's address rules (RFC 5322) admit a few forms SMTP cannot carry (lettre's
        // stricter parse): those are the client's mistake, not an internal error.
        let address: lettre::Address = to
            .parse()
            .map_err(|_| Error::field("email", "is not an address mail can be sent to"))?;
        let mailbox = Mailbox::new(Some(name.to_owned()), address.clone());
        let (link, ttl) = match letter {
            Letter::Reset { token } => (Some(self.link(RESET_PAGE, token)), self.lifetimes.reset),
            Letter::Verify { token } | Letter::EmailChange { token } => {
                (Some(self.link(VERIFY_PAGE, token)), self.lifetimes.verify)
            }
            // An invitation to the service or to an organisation: the one lifetime of an
            // invitation link (GATEHOUSE_INVITE_TOKEN_TTL).
            Letter::Invitation { token } | Letter::OrgInvitation { token, .. } => (
                Some(self.link(INVITATION_PAGE, token)),
                self.lifetimes.invite,
            ),
            Letter::Notice(_) | Letter::Proof { .. } => (None, Duration::ZERO),
        };
        let (notice, proof) = match letter {
            Letter::Notice(n) => (Some(n), None),
            Letter::Proof { notice, proof } => (Some(notice), Some(proof)),
            _ => (None, None),
        };
        let mut removed: Vec<String> = Vec::new();
        let mut remaining: Vec<String> = Vec::new();
        if let Some(proof) = proof {
            removed.extend(proof.removed.passkeys.iter().map(passkey_label));
            if proof.removed.authenticator {
                removed.push(
                    "two-factor authentication (the authenticator app and its recovery codes)"
                        .into(),
                );
            }
            removed
                .extend((proof.removed.identities.iter()).map(|provider| {
                    format!("signing in through the identity provider {provider}")
                }));
            remaining.extend(proof.remaining.passkeys.iter().map(passkey_label));
        }
        let context = minijinja::context! {
            product_name => &self.product_name,
            public_url => &self.public_url,
            full_name => name,
            email => to,
            link => link,
            expires_in => wording::duration(ttl),
            notice => notice.map(Notice::key),
            title => notice.map(Notice::title),
            message => notice.map(Notice::message),
            removed => removed,
            remaining_passkeys => remaining,
            org_name => match letter {
                Letter::OrgInvitation { org, .. } => Some(org),
                _ => None,
            },
        };
        let template = match letter {
            Letter::Reset { .. } => "reset",
            Letter::Verify { .. } => "verify",
            Letter::EmailChange { .. } => "email_change",
            Letter::Invitation { .. } => "invite",
            Letter::OrgInvitation { .. } => "org_invite",
            Letter::Notice(_) | Letter::Proof { .. } => "notice",
        };
        let rendered = self.templates.render(template, &context)?;
        let id = Uuid::now_v7();
        let message = lettre::Message::builder()
            .from(self.from.clone())
            .to(mailbox)
            .subject(rendered.subject)
            .message_id(Some(format!("<{id}@gatehouse>")))
            .multipart(
                MultiPart::alternative()
                    .singlepart(wording::readable(ContentType::TEXT_PLAIN, rendered.text))
                    .singlepart(wording::readable(ContentType::TEXT_HTML, rendered.html)),
            )
            // The sender and the parts are the service's own: what lettre can refuse here is the
            // recipient (e.g. an IP-literal domain, which its envelope does not take).
            .map_err(|_| Error::field("email", "is not an address mail can be sent to"))?;
        Ok(OutboxMail {
            id,
            recipient: address.to_string(),
            message: self.secrets.seal(&seal_context(id), &message.formatted()),
            kind: letter.kind(),
            created_at: now,
        })
    }

    /// Counts mails a flow has committed to the outbox and wakes this instance's worker.
    pub fn queued(&self, mails: &[&OutboxMail]) {
        for mail in mails {
            self.metrics.mail_queued(mail.kind);
        }
        if !mails.is_empty() {
            self.wake.notify_one();
        }
    }

    /// The message of a pending mail, unsealed.
    pub fn open(&self, mail: &PendingMail) -> Result<Vec<u8>> {
        self.secrets
            .open(&seal_context(mail.id), &mail.message)
            .map_err(Error::internal)
    }

    /// The envelope's sender.
    pub fn sender(&self) -> &lettre::Address {
        &self.from.email
    }

    pub(crate) fn wake(&self) -> Arc<Notify> {
        self.wake.clone()
    }

    #[cfg(test)]
    pub fn for_tests(secrets: Arc<Secrets>, metrics: Arc<Metrics>) -> Mailer {
        Mailer::new(MailerParts {
            templates: Templates::load(None).expect("the embedded templates"),
            from: "Gatehouse <gatehouse@localhost>"
                .parse()
                .expect("a mailbox"),
            public_url: "http://localhost".into(),
            product_name: "Gatehouse".into(),
            lifetimes: LinkLifetimes {
                reset: Duration::from_secs(3600),
                verify: Duration::from_secs(3600),
                invite: Duration::from_secs(3600),
            },
            secrets,
            metrics,
        })
    }

    fn link(&self, page: &str, token: &str) -> String {
        format!("{}{page}?token={token}", self.public_url)
    }
}

/// Seals each mail to its own id, and apart from the other sealed secrets.
fn seal_context(id: Uuid) -> Vec<u8> {
    [b"mail:".as_slice(), id.as_bytes()].concat()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_the_service_accepts_gets_a_mail_or_a_clear_refusal() {
        let mailer = Mailer::for_tests(
            Arc::new(Secrets::new(&crate::config::MasterKey::new([1; 32]))),
            Arc::new(Metrics::new()),
        );
        for raw in [
            "ann@example.com",
            "Zoë@example.com",
            "ann@[192.0.2.1]",
            "\"john..doe\"@example.com",
            "ann+tag@sub.example.co",
        ] {
            let Ok(email) = crate::domain::Email::parse(raw) else {
                continue;
            };
            match mailer.compose(
                email.as_str(),
                "Ann",
                Letter::Notice(Notice::PasswordChanged),
                0,
            ) {
                Ok(mail) => {
                    let message = mailer
                        .open(&PendingMail {
                            id: mail.id,
                            recipient: mail.recipient.clone(),
                            message: mail.message.clone(),
                            kind: mail.kind.into(),
                            attempts: 1,
                        })
                        .unwrap();
                    let text = String::from_utf8(message).unwrap();
                    assert!(text.contains("Subject: Gatehouse: your password was changed"));
                }
                Err(Error::Validation(fields)) => assert!(fields.contains_key("email"), "{raw}"),
                Err(other) => panic!("{raw}: {other:?}"),
            }
        }
    }
}
