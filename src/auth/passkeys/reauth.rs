//! Re-authenticating with a passkey (docs/api.md §3): for the person who signs in with a passkey
//! and may remember no password, the passkey opens the same five-minute window a password does.
//!
//! The ceremony is the caller's: stored with their account (another account cannot take it) and
//! their session (the window it opens is that session's, so a ceremony begun in one session
//! cannot open another's), listing only their own passkeys. A failed assertion costs a slot of
//! the account's allowance of failures, as a wrong password here does: unlike at sign-in, where
//! anyone who saw a credential id could lock its owner out, only the holder of a live session
//! gets this far, and that holder could spend the allowance with wrong passwords anyway.

use serde::{Deserialize, Serialize};
use uuid::Uuid;
use webauthn_rs::prelude::{PasskeyAuthentication, WebauthnError};

use super::login::AMR_HWK;
use super::{AssertionResponse, CeremonyStarted, Passkeys, passkey_of, state_of};
use crate::auth::audit::{AuditEvent, Subject};
use crate::error::{Error, Result};
use crate::model::passkeys::CeremonyKind;
use crate::model::{ClientInfo, Principal, User};

/// What a re-authentication ceremony keeps: webauthn-rs's state and the session it was begun in.
#[derive(Serialize, Deserialize)]
struct ReauthState {
    session: Uuid,
    ceremony: PasskeyAuthentication,
}

/// Why an assertion was refused (the audit's detail).
type Refusal = &'static str;
const WRONG_PASSKEY: Refusal = "wrong_passkey";
const UNKNOWN_CEREMONY: Refusal = "unknown_ceremony";

impl Passkeys {
    /// Starts re-authenticating the caller with one of their passkeys.
    pub async fn start_passkey_reauthentication(
        &self,
        who: &Principal,
        client: &ClientInfo,
    ) -> Result<CeremonyStarted> {
        let webauthn = self.relying_party()?;
        self.core.throttle.attempt_from(client.ip)?;
        let user = self.core.user(who).await?;
        let keys = self
            .core
            .store
            .passkeys_of(user.id)
            .await?
            .iter()
            .map(passkey_of)
            .collect::<Result<Vec<_>>>()?;
        if keys.is_empty() {
            return Err(Error::field(
                "passkeys",
                "this account has no passkey: re-authenticate with the password",
            ));
        }
        let (challenge, ceremony) = webauthn
            .start_passkey_authentication(&keys)
            .map_err(|e| Error::internal(anyhow::anyhow!("passkey re-authentication: {e}")))?;
        let options = serde_json::to_value(&challenge.public_key).map_err(Error::internal)?;
        let state = ReauthState {
            session: who.session_id,
            ceremony,
        };
        let ceremony_id = self
            .begin_ceremony(CeremonyKind::Reauthenticate, Some(user.id), None, &state)
            .await?;
        Ok(CeremonyStarted {
            ceremony_id,
            options,
        })
    }

    /// Finishes it: the caller's session is re-authenticated until the answer (ms). The ceremony
    /// is used up whatever the outcome.
    pub async fn finish_passkey_reauthentication(
        &self,
        who: &Principal,
        ceremony_id: Uuid,
        response: AssertionResponse,
        client: &ClientInfo,
    ) -> Result<i64> {
        let webauthn = self.relying_party()?;
        self.core.throttle.attempt_from(client.ip)?;
        let user = self.core.user(who).await?;
        let mut refused = None;
        let checked = self
            .core
            .throttle
            .within_allowance(&user.email_normalized, async {
                match self
                    .check_assertion(webauthn, who, &user, ceremony_id, &response, client)
                    .await?
                {
                    Ok(()) => Ok(Some(())),
                    Err(refusal) => {
                        refused = Some(refusal);
                        Ok(None)
                    }
                }
            })
            .await;
        let subject = Subject::user(user.id)
            .in_session(who.session_id)
            .from(client);
        match checked {
            Ok(Some(())) => {
                self.core
                    .open_reauth_window(who, user.id, AMR_HWK, subject)
                    .await
            }
            Ok(None) => {
                let wrong = refused.unwrap_or(WRONG_PASSKEY);
                let event = AuditEvent::ReauthenticationFailed { wrong };
                self.core.audit(event, subject).await;
                Err(Error::PasskeyRecheckFailed)
            }
            Err(e) => Err(e),
        }
    }

    /// Takes the caller's ceremony and checks the assertion against it: `Ok(Err(_))` is a
    /// refusal (counted as a failure), `Err(_)` a fault (not counted).
    async fn check_assertion(
        &self,
        webauthn: &webauthn_rs::prelude::Webauthn,
        who: &Principal,
        user: &User,
        ceremony_id: Uuid,
        response: &AssertionResponse,
        client: &ClientInfo,
    ) -> Result<std::result::Result<(), Refusal>> {
        let now = self.core.clock.now_ms();
        let Some(ceremony) = self
            .core
            .store
            .take_reauthentication(ceremony_id, user.id, now)
            .await?
        else {
            return Ok(Err(UNKNOWN_CEREMONY));
        };
        let state: ReauthState = state_of(&ceremony)?;
        if state.session != who.session_id {
            return Ok(Err(UNKNOWN_CEREMONY));
        }
        let assertion = &response.0;
        let Some(stored) = self
            .core
            .store
            .passkey_by_credential_id(assertion.raw_id.as_slice())
            .await?
        else {
            return Ok(Err(WRONG_PASSKEY));
        };
        // Another account's passkey proves nothing about this session's person (webauthn-rs
        // would refuse it too: it is not in the ceremony's allowCredentials).
        if stored.user_id != user.id || response.cross_origin() {
            return Ok(Err(WRONG_PASSKEY));
        }
        let handle = assertion.response.user_handle.as_ref();
        if handle.is_some_and(|h| h.as_slice() != user.id.as_bytes()) {
            return Ok(Err(WRONG_PASSKEY));
        }
        let result = match webauthn.finish_passkey_authentication(assertion, &state.ceremony) {
            Ok(result) => result,
            Err(WebauthnError::CredentialPossibleCompromise) => {
                self.clone_detected(&stored, None, client).await;
                return Ok(Err(WRONG_PASSKEY));
            }
            Err(e) => {
                tracing::info!(error = %e, "passkey re-authentication refused");
                return Ok(Err(WRONG_PASSKEY));
            }
        };
        match self.record_use(&stored, &result, now, client).await {
            Ok(()) => Ok(Ok(())),
            // The counter went back (audited as a possible clone).
            Err(Error::PasskeyInvalid) => Ok(Err(WRONG_PASSKEY)),
            Err(e) => Err(e),
        }
    }
}
