//! The device authorization grant (RFC 8628, docs/api.md §11): a command-line tool or an agent on
//! a machine without a browser asks for a device code and a user code (`start_device`); the person
//! types the user code on `/device` in a browser of theirs, sees which application asks for what,
//! and allows or denies it (`device_consent`, `decide_device`); meanwhile the client polls the
//! token endpoint (`device_grant`), paced by an interval every instance keeps, and collects its
//! tokens once.
//!
//! Only clients an operator registered may use the grant (self-registered ones cannot ask for
//! it): "allow <name> on your account?" for a code someone sent you is how device-code phishing
//! works, and a self-registered client's name is its own word.

use std::net::IpAddr;

use rand::Rng as _;
use uuid::Uuid;

use super::grants::{Outcome, TokenAnswer, TokenRequest, invalid_grant, required};
use super::org_choice::{OrgChoice, OrgOffer};
use super::{OAuthError, OAuthFailure, Person, Provider};
use crate::auth::audit::{AuditEvent, Subject};
use crate::crypto::{random_token, sha256};
use crate::error::{Error, Result};
use crate::model::oauth::{DeviceDecision, DeviceRequest, DeviceStatus, Redemption};
use crate::model::{Client, ClientInfo, GrantType, Session, is_multi_factor};

/// How long a device code waits for the person (RFC 8628 §3.2 `expires_in`).
pub const DEVICE_CODE_TTL_MS: i64 = 10 * 60_000;
/// The least time between two polls at first (RFC 8628 §3.2 `interval`; each early poll adds 5 s).
pub const POLL_INTERVAL_MS: i64 = 5_000;
/// User codes: consonants only (RFC 8628 §6.1: no vowels, so no words; no digits, so no 0/O or
/// 1/I to confuse), eight of them (20⁸ ≈ 2.6 × 10¹⁰, against guesses limited per account and
/// address), shown as two groups of four.
const ALPHABET: &[u8; 20] = b"BCDFGHJKLMNPQRSTVWXZ";
const USER_CODE_LEN: usize = 8;

/// What `POST /oauth2/device_authorization` answers (RFC 8628 §3.2).
#[derive(Debug, Clone)]
pub struct DeviceStart {
    pub device_code: String,
    /// As the person reads it: `BCDF-GHJK`.
    pub user_code: String,
    /// Seconds.
    pub expires_in: i64,
    /// Seconds.
    pub interval: i64,
}

/// What the device page shows the person before they answer.
#[derive(Debug, Clone)]
pub struct DeviceConsent {
    pub client: Client,
    pub scopes: Vec<String>,
    pub orgs: OrgOffer,
}

/// The person's answer, as recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceAnswer {
    Approved,
    Denied,
}

fn new_user_code() -> String {
    let mut rng = rand::thread_rng();
    (0..USER_CODE_LEN)
        .map(|_| char::from(ALPHABET[rng.gen_range(0..ALPHABET.len())]))
        .collect()
}

/// A user code as shown: `BCDF-GHJK`.
fn shown(code: &str) -> String {
    format!("{}-{}", &code[..4], &code[4..])
}

/// A typed user code as stored: its letters in upper case, dashes and spaces ignored (RFC 8628
/// §6.1); `None` when it cannot be one (another letter, a digit, too short or long), which is
/// answered without counting as a guess: no code could match it.
fn typed_user_code(typed: &str) -> Option<String> {
    let code: String = typed
        .chars()
        .filter(|c| !matches!(c, '-' | ' ' | '\u{2010}'..='\u{2015}'))
        .map(|c| c.to_ascii_uppercase())
        .collect();
    (code.len() == USER_CODE_LEN && code.bytes().all(|b| ALPHABET.contains(&b))).then_some(code)
}

fn unknown_code() -> Error {
    Error::field(
        "userCode",
        "is not a code waiting here: it may have expired or been used; start again on the device",
    )
}

impl Provider {
    /// A device authorization for `client` (RFC 8628 §3.1), asked from `ip`.
    pub async fn start_device(
        &self,
        client: &Client,
        scope: Option<&str>,
        resource: Option<&str>,
        ip: Option<IpAddr>,
    ) -> Outcome<DeviceStart> {
        if !client.has_grant(GrantType::DeviceCode) {
            return Err(OAuthFailure::refused(
                OAuthError::UnauthorizedClient,
                "the client may not use the device authorization grant",
            ));
        }
        // Each start writes a row that lives 10 minutes.
        self.core.throttle.device_start_from(ip)?;
        let catalog = self.core.catalog.current();
        let scopes = catalog
            .parse(scope.unwrap_or_default())
            .map_err(|e| OAuthFailure::refused(OAuthError::InvalidScope, e.to_string()))?;
        if scopes.is_empty() {
            return Err(OAuthFailure::refused(
                OAuthError::InvalidScope,
                "scope is required",
            ));
        }
        if let Some(s) = scopes.iter().find(|s| !client.allows_scope(s)) {
            return Err(OAuthFailure::refused(
                OAuthError::InvalidScope,
                format!("the client is not registered for the scope {s:?}"),
            ));
        }
        if resource.is_some_and(|r| !self.core.tokens.issues_for(r)) {
            return Err(OAuthFailure::refused(
                OAuthError::InvalidTarget,
                "resource is not a resource server this service issues tokens for",
            ));
        }
        let audience = super::authorize::target(&catalog, &scopes, resource)?;
        let now = self.core.clock.now_ms();
        let request = DeviceRequest {
            client_id: client.id,
            scope: scopes,
            audience,
            created_at: now,
            expires_at: now + DEVICE_CODE_TTL_MS,
            interval_ms: POLL_INTERVAL_MS,
        };
        let device_code = random_token();
        // A user code taken already (by one of the few waiting) is drawn again.
        for _ in 0..4 {
            let user_code = new_user_code();
            let recorded = self
                .core
                .store
                .insert_device_request(
                    &sha256(device_code.as_bytes()),
                    &sha256(user_code.as_bytes()),
                    &request,
                )
                .await;
            match recorded {
                Ok(true) => {
                    return Ok(DeviceStart {
                        device_code,
                        user_code: shown(&user_code),
                        expires_in: DEVICE_CODE_TTL_MS / 1000,
                        interval: POLL_INTERVAL_MS / 1000,
                    });
                }
                Ok(false) => continue,
                Err(Error::NotFound) => {
                    return Err(OAuthFailure::refused(
                        OAuthError::InvalidClient,
                        "the client was removed",
                    ));
                }
                Err(other) => return Err(other.into()),
            }
        }
        Err(Error::Internal(anyhow::anyhow!("four user codes in a row were taken")).into())
    }

    /// What the device page asks the person about the code they typed.
    pub async fn device_consent(
        &self,
        typed: &str,
        person: Person,
        ip: Option<IpAddr>,
    ) -> Result<DeviceConsent> {
        let (_, request, client, _) = self.waiting_device(typed, person, ip).await?;
        let orgs = self.org_offer(&client, person.user_id, None).await?;
        Ok(DeviceConsent {
            client,
            scopes: request.scope,
            orgs,
        })
    }

    /// The person's answer for the code they typed: `consent` allows the client the scopes asked,
    /// acting in `org_id` (docs/api.md §13), or denies it. Allowed, it is remembered as a consent
    /// (listed under the person's connected applications, where withdrawing it signs the device
    /// out).
    pub async fn decide_device(
        &self,
        typed: &str,
        person: Person,
        consent: bool,
        org_id: Option<Uuid>,
        from: (Option<IpAddr>, &ClientInfo),
    ) -> Result<DeviceAnswer> {
        let (ip, info) = from;
        let (session, request, client, code_hash) = self.waiting_device(typed, person, ip).await?;
        let now = self.core.clock.now_ms();
        let subject = Subject::user(person.user_id)
            .in_session(session.id)
            .from(info);
        if !consent {
            if !(self.core.store)
                .decide_device_request(&code_hash, now, &DeviceDecision::Denied)
                .await?
            {
                return Err(unknown_code());
            }
            let event = AuditEvent::DeviceDenied { client: client.id };
            self.core.audit(event, subject).await;
            return Ok(DeviceAnswer::Denied);
        }
        let choice = self
            .org_choice(
                &client,
                person.user_id,
                is_multi_factor(&session.amr),
                org_id,
                true,
                None,
            )
            .await?;
        let org_id = match choice {
            OrgChoice::Act(org) => org,
            OrgChoice::AskAgain | OrgChoice::NotMember => {
                return Err(Error::field(
                    "orgId",
                    "you are not a member of the organisation this application belongs to",
                ));
            }
        };
        let decision = DeviceDecision::Approved {
            user_id: person.user_id,
            parent_id: session.id,
            amr: session.amr.clone(),
            auth_time: session.created_at,
            org_id,
        };
        if !(self.core.store)
            .decide_device_request(&code_hash, now, &decision)
            .await?
        {
            return Err(unknown_code());
        }
        if !client.first_party {
            let before =
                (self.core.store.consent(person.user_id, client.id).await?).unwrap_or_default();
            self.remember_consent(person.user_id, &client, before, &request.scope, org_id)
                .await?;
        }
        let event = AuditEvent::DeviceApproved { client: client.id };
        self.core.audit(event, subject).await;
        Ok(DeviceAnswer::Approved)
    }

    /// The person's own live session (a client's cannot approve another client), the
    /// authorization their typed code names with its client, and the code's hash. Wrong codes
    /// are guesses: counted per account in the database (every instance) and per address, only
    /// when they miss.
    async fn waiting_device(
        &self,
        typed: &str,
        person: Person,
        ip: Option<IpAddr>,
    ) -> Result<(Session, DeviceRequest, Client, [u8; 32])> {
        let Some(code) = typed_user_code(typed) else {
            return Err(Error::field(
                "userCode",
                "is the eight letters the device shows, like BCDF-GHJK",
            ));
        };
        let session = self
            .core
            .store
            .session(person.session_id)
            .await?
            .filter(|s| s.revoked_at.is_none() && s.user_id == person.user_id)
            .ok_or(Error::TokenInvalid)?;
        if session.grant.is_some() {
            return Err(Error::Forbidden);
        }
        let throttle = &self.core.throttle;
        throttle.device_guess_check(ip)?;
        let code_hash = sha256(code.as_bytes());
        let now = self.core.clock.now_ms();
        let key = format!("device-code:{}", person.user_id);
        let found = throttle
            .within_allowance(&key, async {
                let Some(request) = (self.core.store)
                    .pending_device_request(&code_hash, now)
                    .await?
                else {
                    return Ok(None);
                };
                // The client removed, or no longer allowed the grant: nothing waits.
                let client = self.clients.find_id(request.client_id).await?;
                Ok(client
                    .filter(|c| c.has_grant(GrantType::DeviceCode))
                    .map(|c| (request, c)))
            })
            .await?;
        match found {
            Some((request, client)) => Ok((session, request, client, code_hash)),
            None => {
                throttle.device_guess_missed(ip);
                Err(unknown_code())
            }
        }
    }

    /// The device code grant (RFC 8628 §3.4, §3.5): the client's poll, counted and paced; once
    /// the person has allowed it, the approval is collected once, as a code is exchanged, and the
    /// same checks follow. The device's session stands alone: signing out of the browser that
    /// approved it does not sign the device out (it is listed, and ended, on its own).
    pub(super) async fn device_grant(
        &self,
        client: &Client,
        request: &TokenRequest,
        from: &ClientInfo,
        jkt: Option<&str>,
    ) -> Outcome<TokenAnswer> {
        let device_code = required(&request.device_code, "device_code")?;
        let hash = sha256(device_code.as_bytes());
        let now = self.core.clock.now_ms();
        let Some(poll) = self.core.store.poll_device(&hash, client.id, now).await? else {
            return Err(invalid_grant(
                "the device code is unknown, or another client's",
            ));
        };
        if let (Some((_, session)), Some(user)) = (poll.used, poll.user_id) {
            return Err(self.replayed(client, session, user).await?);
        }
        if poll.expires_at <= now {
            return Err(OAuthFailure::refused(
                OAuthError::ExpiredToken,
                "the device code expired: start again",
            ));
        }
        match poll.status {
            DeviceStatus::Denied => {
                return Err(OAuthFailure::refused(
                    OAuthError::AccessDenied,
                    "the person did not allow it",
                ));
            }
            DeviceStatus::Pending if poll.early => {
                return Err(OAuthFailure::refused(
                    OAuthError::SlowDown,
                    "polled before the interval had passed: it is 5 seconds longer now",
                ));
            }
            DeviceStatus::Pending => {
                return Err(OAuthFailure::refused(
                    OAuthError::AuthorizationPending,
                    "the person has not answered yet",
                ));
            }
            DeviceStatus::Approved => {}
        }
        let session_id = Uuid::now_v7();
        let code = match self
            .core
            .store
            .redeem_device(&hash, now, session_id)
            .await?
        {
            Redemption::First(code) => code,
            Redemption::Replayed {
                session_id,
                user_id,
            } => return Err(self.replayed(client, session_id, user_id).await?),
            Redemption::Unknown => {
                return Err(OAuthFailure::refused(
                    OAuthError::ExpiredToken,
                    "the device code expired: start again",
                ));
            }
        };
        // The device's session stands alone (no parent): see above.
        self.collect(client, &code, from, (session_id, None), jkt)
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_codes_are_eight_unambiguous_letters() {
        for _ in 0..1000 {
            let code = new_user_code();
            assert_eq!(code.len(), 8);
            assert!(
                !code.contains(['A', 'E', 'I', 'O', 'U', 'Y', '0', '1']),
                "{code}"
            );
            assert_eq!(
                typed_user_code(&shown(&code)).as_deref(),
                Some(code.as_str())
            );
        }
    }

    #[test]
    fn typed_codes_forgive_case_dashes_and_spaces_only() {
        assert_eq!(typed_user_code("bcdf-ghjk").as_deref(), Some("BCDFGHJK"));
        assert_eq!(typed_user_code(" BCDF GHJK ").as_deref(), Some("BCDFGHJK"));
        assert_eq!(
            typed_user_code("BCDF\u{2013}GHJK").as_deref(),
            Some("BCDFGHJK")
        );
        for wrong in [
            "BCDF-GHJ",
            "BCDF-GHJKL",
            "BCDF-GHJ0",
            "ABCD-EFGH",
            "BCDF_GHJK",
            "",
        ] {
            assert_eq!(typed_user_code(wrong), None, "{wrong}");
        }
    }
}
