//! Passkeys (WebAuthn, docs/api.md §9): adding and managing them here, signing in with them in
//! `login`. The cryptography and the checks of each ceremony (challenge, origin, relying-party
//! id, user verification, signature, counter) are webauthn-rs's; this module keeps each ceremony's
//! state in the database between its start and its finish, so any instance can finish it, and
//! keeps each passkey's counter and backup flags up to date after every use.

use crate::auth::core::Core;
use crate::auth::login::Login;
use std::sync::Arc;

use std::time::Duration;

use secrecy::SecretString;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use uuid::Uuid;
use webauthn_rs::prelude::{CredentialID, Passkey, PasskeyRegistration, Webauthn};

use super::audit::{AuditEvent, Subject};
use crate::error::{Error, Result};
use crate::mail::Notice;
use crate::model::{ClientInfo, Principal};

mod credential;
mod login;
mod reauth;

use crate::model::passkeys::{Ceremony, CeremonyKind, StoredPasskey};
pub use credential::{AssertionResponse, RegistrationResponse};
pub use login::SignInWith;

/// How long a ceremony may take from start to finish; also the `timeout` the browser is given.
pub const CEREMONY_TTL: Duration = Duration::from_secs(300);
/// Passkeys an account may have: each is offered at every sign-in with its e-mail, and kept in
/// that ceremony's state.
pub const MAX_PASSKEYS: usize = 20;

/// A passkey's label: trimmed, 1–64 characters, no control characters.
#[derive(Debug, Clone)]
pub struct PasskeyName(String);

impl PasskeyName {
    pub const MAX_LENGTH: usize = 64;
    /// The label of a passkey registered without one.
    pub const DEFAULT: &'static str = "Passkey";

    pub fn parse(raw: &str) -> Result<PasskeyName, String> {
        crate::domain::label(raw, Self::MAX_LENGTH, "must not be blank").map(PasskeyName)
    }
}

/// A passkey as its owner sees it.
#[derive(Debug, Clone)]
pub struct PasskeyInfo {
    pub id: Uuid,
    pub name: String,
    pub created_at: i64,
    pub last_used_at: Option<i64>,
}

impl From<StoredPasskey> for PasskeyInfo {
    fn from(p: StoredPasskey) -> Self {
        PasskeyInfo {
            id: p.id,
            name: p.name,
            created_at: p.created_at,
            last_used_at: p.last_used_at,
        }
    }
}

/// A ceremony begun: its id, and the options for `navigator.credentials.create()` / `.get()`
/// (the `publicKey` member, in WebAuthn's JSON form).
#[derive(Debug, Clone)]
pub struct CeremonyStarted {
    pub ceremony_id: Uuid,
    pub options: Value,
}

/// Passkeys: registering them, signing in with them, managing them (docs/api.md §9).
#[derive(Clone)]
pub struct Passkeys {
    pub(crate) core: Arc<Core>,
    /// A passkey can finish a password login's 2FA challenge.
    pub(crate) login: Login,
}

impl Passkeys {
    fn relying_party(&self) -> Result<&Webauthn> {
        self.core.webauthn.as_deref().ok_or(Error::PasskeysOff)
    }

    /// Stores a ceremony's state and answers its id.
    async fn begin_ceremony<S: Serialize>(
        &self,
        kind: CeremonyKind,
        user_id: Option<Uuid>,
        temp_token_hash: Option<Vec<u8>>,
        state: &S,
    ) -> Result<Uuid> {
        let id = Uuid::new_v4();
        let ceremony = Ceremony {
            id,
            kind,
            user_id,
            temp_token_hash,
            state: serde_json::to_string(state).map_err(Error::internal)?,
            expires_at: self.core.clock.now_ms() + CEREMONY_TTL.as_millis() as i64,
        };
        self.core.store.insert_ceremony(&ceremony).await?;
        Ok(id)
    }

    /// Starts adding a passkey to the caller's account. The password is asked again, as for 2FA
    /// setup: a stolen access token alone must not plant the thief's passkey.
    pub async fn start_passkey_registration(
        &self,
        who: &Principal,
        password: Option<SecretString>,
    ) -> Result<CeremonyStarted> {
        let webauthn = self.relying_party()?;
        let user = self.core.user(who).await?;
        self.core
            .confirm_owner(&user, who, password, "password")
            .await?;
        let existing = self.core.store.passkeys_of(user.id).await?;
        if existing.len() >= MAX_PASSKEYS {
            return Err(Error::field(
                "passkeys",
                format!("an account has at most {MAX_PASSKEYS} passkeys: remove one first"),
            ));
        }
        // The authenticator refuses to make a second credential for this account.
        let exclude: Vec<CredentialID> = existing
            .iter()
            .map(|p| CredentialID::from(p.credential_id.clone()))
            .collect();
        let (challenge, state) = webauthn
            .start_passkey_registration(user.id, &user.email, &user.full_name, Some(exclude))
            .map_err(|e| Error::internal(anyhow::anyhow!("passkey registration: {e}")))?;
        let mut options = serde_json::to_value(&challenge.public_key).map_err(Error::internal)?;
        // webauthn-rs asks for a non-discoverable credential; a discoverable one is what lets its
        // owner sign in without typing an e-mail. "preferred": an authenticator that cannot store
        // one still registers.
        options["authenticatorSelection"]["residentKey"] = "preferred".into();
        let id = self
            .begin_ceremony(CeremonyKind::Register, Some(user.id), None, &state)
            .await?;
        Ok(CeremonyStarted {
            ceremony_id: id,
            options,
        })
    }

    /// Finishes adding a passkey: the ceremony must be the caller's own, live and unused.
    pub async fn finish_passkey_registration(
        &self,
        who: &Principal,
        ceremony_id: Uuid,
        response: RegistrationResponse,
        name: Option<PasskeyName>,
        client: &ClientInfo,
    ) -> Result<PasskeyInfo> {
        let webauthn = self.relying_party()?;
        let user = self.core.user(who).await?;
        let now = self.core.clock.now_ms();
        let Some(ceremony) = self
            .core
            .store
            .take_registration(ceremony_id, user.id, now)
            .await?
        else {
            return Err(self
                .passkey_failed(Some(user.id), client, "unknown_ceremony")
                .await);
        };
        let state: PasskeyRegistration = state_of(&ceremony)?;
        let passkey = match webauthn.finish_passkey_registration(&response.0, &state) {
            Ok(passkey) => passkey,
            Err(e) => {
                tracing::info!(error = %e, "passkey registration refused");
                return Err(self
                    .passkey_failed(Some(user.id), client, "verification")
                    .await);
            }
        };
        let (sign_count, backup_eligible, backup_state) = facts(&passkey)?;
        let stored = StoredPasskey {
            id: Uuid::now_v7(),
            user_id: user.id,
            credential_id: passkey.cred_id().to_vec(),
            name: name.map_or_else(|| PasskeyName::DEFAULT.to_owned(), |n| n.0),
            credential: serde_json::to_string(&passkey).map_err(Error::internal)?,
            sign_count,
            backup_eligible,
            backup_state,
            created_at: now,
            last_used_at: None,
        };
        if !self.core.store.insert_passkey(&stored).await? {
            return Err(self
                .passkey_failed(Some(user.id), client, "credential_taken")
                .await);
        }
        let event = AuditEvent::PasskeyAdded { passkey: stored.id };
        self.core
            .audit(
                event,
                Subject::user(user.id)
                    .in_session(who.session_id)
                    .from(client),
            )
            .await;
        self.core.notify(&user, Notice::PasskeyAdded).await;
        Ok(stored.into())
    }

    /// The caller's passkeys, oldest first.
    pub async fn list(&self, who: &Principal) -> Result<Vec<PasskeyInfo>> {
        let passkeys = self.core.store.passkeys_of(who.user_id).await?;
        Ok(passkeys.into_iter().map(Into::into).collect())
    }

    /// Renames one of the caller's passkeys; another user's is `NOT_FOUND`.
    pub async fn rename_passkey(
        &self,
        who: &Principal,
        id: Uuid,
        name: PasskeyName,
    ) -> Result<PasskeyInfo> {
        self.core
            .store
            .rename_passkey(who.user_id, id, &name.0)
            .await?
            .map(Into::into)
            .ok_or(Error::NotFound)
    }

    /// Removes one of the caller's passkeys; another user's is `NOT_FOUND`.
    pub async fn remove_passkey(
        &self,
        who: &Principal,
        id: Uuid,
        client: &ClientInfo,
    ) -> Result<()> {
        let user = self.core.user(who).await?;
        if !self.core.store.delete_passkey(user.id, id).await? {
            return Err(Error::NotFound);
        }
        let event = AuditEvent::PasskeyRemoved { passkey: id };
        self.core
            .audit(
                event,
                Subject::user(user.id)
                    .in_session(who.session_id)
                    .from(client),
            )
            .await;
        self.core.notify(&user, Notice::PasskeyRemoved).await;
        Ok(())
    }

    /// Audits a failed ceremony and answers the one error every failure gets: the reason is for
    /// the operator, not for the caller (who might be probing).
    async fn passkey_failed(
        &self,
        user_id: Option<Uuid>,
        client: &ClientInfo,
        reason: &'static str,
    ) -> Error {
        let event = AuditEvent::PasskeyFailed { reason };
        self.core
            .audit(event, Subject::maybe_user(user_id).from(client))
            .await;
        Error::PasskeyInvalid
    }
}

/// A ceremony's stored state, read back.
fn state_of<S: DeserializeOwned>(ceremony: &Ceremony) -> Result<S> {
    serde_json::from_str(&ceremony.state)
        .map_err(|e| Error::internal(anyhow::anyhow!("a stored passkey ceremony: {e}")))
}

/// A stored passkey, read back.
fn passkey_of(stored: &StoredPasskey) -> Result<Passkey> {
    serde_json::from_str(&stored.credential)
        .map_err(|e| Error::internal(anyhow::anyhow!("stored passkey {}: {e}", stored.id)))
}

/// The counter and backup flags (eligible, state) of a passkey, as kept beside it. webauthn-rs
/// shows them only in its serialised form (without its `danger-credential-internals` feature).
fn facts(passkey: &Passkey) -> Result<(i64, bool, bool)> {
    let value = serde_json::to_value(passkey).map_err(Error::internal)?;
    let cred = &value["cred"];
    match (
        cred["counter"].as_i64(),
        cred["backup_eligible"].as_bool(),
        cred["backup_state"].as_bool(),
    ) {
        (Some(counter), Some(eligible), Some(state)) => Ok((counter, eligible, state)),
        _ => Err(Error::internal(anyhow::anyhow!(
            "webauthn-rs's passkey lacks counter or backup flags"
        ))),
    }
}
