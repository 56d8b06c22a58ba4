//! Signing in with a passkey: with an e-mail (the account's passkeys are offered), without one
//! (a discoverable passkey names its account), or as the second factor of a password login's 2FA
//! challenge (`tempToken`).
//!
//! An e-mail must not tell whether it has an account. Every e-mail gets the same answer: a
//! ceremony whose `allowCredentials` lists credential ids. An account with passkeys gets theirs;
//! an unknown e-mail, like an account without passkeys, gets one made-up id, derived from the
//! e-mail under a key of the master key, so asking twice gives the same id. What still differs is
//! the number and length of the ids an account with passkeys has (docs/api.md §9).
//!
//! Failed assertions are not charged to the account's allowance of failures: a signature cannot
//! be guessed, and charging them would let anyone who saw a credential id lock its owner out.
//! Attempts are counted per client address, as logins are.

use serde_json::json;
use uuid::Uuid;
use webauthn_rs::prelude::{
    AuthenticationResult, DiscoverableAuthentication, DiscoverableKey, PasskeyAuthentication,
    Webauthn, WebauthnError,
};

use super::{AssertionResponse, CeremonyStarted, Passkeys, passkey_of, state_of};
use crate::auth::audit::{AuditEvent, LoginFailure, Subject};
use crate::auth::login::{MAX_CHALLENGE_ATTEMPTS, first_factor_amr};
use crate::crypto::{b64url, sha256};
use crate::domain::Email;
use crate::error::{Error, Result};
use crate::model::passkeys::{Ceremony, CeremonyKind, PasskeyUse, StoredPasskey};
use crate::model::{ClientInfo, TokenSet, User};

/// RFC 8176: proof of possession of a hardware-secured key, and a user test (the passkey's user
/// verification).
pub(super) const AMR_HWK: &str = "hwk";
const AMR_USER: &str = "user";

/// How a sign-in names its account.
#[derive(Debug)]
pub enum SignInWith {
    Email(Email),
    /// No e-mail: the authenticator offers the passkeys it holds for this site.
    Discoverable,
    /// The temp token of a password login's 2FA challenge.
    Challenge(String),
}

impl Passkeys {
    /// Starts a sign-in ceremony.
    pub async fn start_passkey_login(
        &self,
        with: SignInWith,
        client: &ClientInfo,
    ) -> Result<CeremonyStarted> {
        let webauthn = self.relying_party()?;
        self.core.throttle.attempt_from(client.ip)?;
        let internal = |e: WebauthnError| Error::internal(anyhow::anyhow!("passkey sign-in: {e}"));
        let (kind, user_id, hash, options, state) = match with {
            SignInWith::Email(email) => {
                let normalized = email.normalized();
                let user = self.core.store.user_by_email(&normalized).await?;
                // The same two queries whether the account exists or not.
                let owner = user.as_ref().map_or(Uuid::nil(), |u| u.id);
                let keys = self
                    .core
                    .store
                    .passkeys_of(owner)
                    .await?
                    .iter()
                    .map(passkey_of)
                    .collect::<Result<Vec<_>>>()?;
                let (challenge, state) = webauthn
                    .start_passkey_authentication(&keys)
                    .map_err(internal)?;
                let mut options =
                    serde_json::to_value(&challenge.public_key).map_err(Error::internal)?;
                if keys.is_empty() {
                    let decoy = self.core.secrets.passkey_decoy(&normalized);
                    options["allowCredentials"] =
                        json!([{ "type": "public-key", "id": b64url(&decoy) }]);
                }
                let state = serde_json::to_value(&state).map_err(Error::internal)?;
                (CeremonyKind::Login, None, None, options, state)
            }
            SignInWith::Discoverable => {
                let (challenge, state) = webauthn
                    .start_discoverable_authentication()
                    .map_err(internal)?;
                let options =
                    serde_json::to_value(&challenge.public_key).map_err(Error::internal)?;
                let state = serde_json::to_value(&state).map_err(Error::internal)?;
                (CeremonyKind::Discoverable, None, None, options, state)
            }
            SignInWith::Challenge(temp_token) => {
                let hash = sha256(temp_token.as_bytes());
                let (user, _) = self
                    .login
                    .challenged_user(&hash, self.core.clock.now_ms())
                    .await?;
                let keys = self
                    .core
                    .store
                    .passkeys_of(user.id)
                    .await?
                    .iter()
                    .map(passkey_of)
                    .collect::<Result<Vec<_>>>()?;
                if keys.is_empty() {
                    // Whoever holds the temp token knows the password: no secret is told here.
                    return Err(self
                        .passkey_failed(Some(user.id), client, "no_passkey")
                        .await);
                }
                let (challenge, state) = webauthn
                    .start_passkey_authentication(&keys)
                    .map_err(internal)?;
                let options =
                    serde_json::to_value(&challenge.public_key).map_err(Error::internal)?;
                let state = serde_json::to_value(&state).map_err(Error::internal)?;
                let hash = Some(hash.to_vec());
                (
                    CeremonyKind::SecondFactor,
                    Some(user.id),
                    hash,
                    options,
                    state,
                )
            }
        };
        let ceremony_id = self.begin_ceremony(kind, user_id, hash, &state).await?;
        Ok(CeremonyStarted {
            ceremony_id,
            options,
        })
    }

    /// Finishes a sign-in ceremony: the token set of a new session.
    pub async fn finish_passkey_login(
        &self,
        ceremony_id: Uuid,
        response: AssertionResponse,
        client: &ClientInfo,
    ) -> Result<TokenSet> {
        let webauthn = self.relying_party()?;
        self.core.throttle.attempt_from(client.ip)?;
        let now = self.core.clock.now_ms();
        let Some(ceremony) = self.core.store.take_sign_in(ceremony_id, now).await? else {
            return Err(self.passkey_failed(None, client, "unknown_ceremony").await);
        };
        // A re-authentication's ceremony (taken here by its id) signs no one in.
        if ceremony.kind == CeremonyKind::Reauthenticate {
            return Err(self.passkey_failed(None, client, "unknown_ceremony").await);
        }
        let Some(stored) = self
            .core
            .store
            .passkey_by_credential_id(response.0.raw_id.as_slice())
            .await?
        else {
            return Err(self
                .passkey_failed(None, client, "unknown_credential")
                .await);
        };
        let result = self
            .verify(webauthn, &ceremony, &stored, &response, client)
            .await?;
        self.record_use(&stored, &result, now, client).await?;
        let user = self.owner_may_sign_in(stored.user_id, client).await?;
        let (tokens, event) = match ceremony.kind {
            CeremonyKind::SecondFactor => {
                let tokens = self
                    .complete_challenge(&ceremony, &user, now, client)
                    .await?;
                (
                    tokens,
                    AuditEvent::PasskeySecondFactor { passkey: stored.id },
                )
            }
            _ => {
                let tokens = self.open_passkey_session(&user, client).await?;
                (tokens, AuditEvent::PasskeyLogin { passkey: stored.id })
            }
        };
        let subject = Subject::user(user.id)
            .in_session(tokens.session_id)
            .from(client);
        self.core.audit(event, subject).await;
        Ok(tokens)
    }

    /// Checks the assertion against the ceremony it answers and the passkey it names; a refusal
    /// is audited against the passkey's owner.
    async fn verify(
        &self,
        webauthn: &Webauthn,
        ceremony: &Ceremony,
        stored: &StoredPasskey,
        response: &AssertionResponse,
        client: &ClientInfo,
    ) -> Result<AuthenticationResult> {
        let assertion = &response.0;
        let owner = Some(stored.user_id);
        if response.cross_origin() {
            return Err(self.passkey_failed(owner, client, "cross_origin").await);
        }
        let verified = match ceremony.kind {
            CeremonyKind::Login | CeremonyKind::SecondFactor => {
                if ceremony.kind == CeremonyKind::SecondFactor && ceremony.user_id != owner {
                    return Err(self.passkey_failed(owner, client, "other_account").await);
                }
                // A user handle, when the authenticator sends one, must be the owner's too
                // (WebAuthn §7.2 step 6); webauthn-rs checks it only for discoverable sign-ins.
                let handle = assertion.response.user_handle.as_ref();
                if handle.is_some_and(|h| h.as_slice() != stored.user_id.as_bytes()) {
                    return Err(self.passkey_failed(owner, client, "user_handle").await);
                }
                let state: PasskeyAuthentication = state_of(ceremony)?;
                webauthn.finish_passkey_authentication(assertion, &state)
            }
            CeremonyKind::Discoverable => {
                // The user handle the authenticator gives must be the passkey's owner's.
                match webauthn.identify_discoverable_authentication(assertion) {
                    Ok((handle, _)) if Some(handle) == owner => {}
                    _ => return Err(self.passkey_failed(owner, client, "user_handle").await),
                }
                let state: DiscoverableAuthentication = state_of(ceremony)?;
                let key = DiscoverableKey::from(&passkey_of(stored)?);
                webauthn.finish_discoverable_authentication(assertion, state, &[key])
            }
            CeremonyKind::Register | CeremonyKind::Reauthenticate => {
                return Err(Error::internal(anyhow::anyhow!(
                    "a registration or re-authentication ceremony taken as a sign-in"
                )));
            }
        };
        match verified {
            Ok(result) => Ok(result),
            Err(WebauthnError::CredentialPossibleCompromise) => {
                Err(self.clone_detected(stored, None, client).await)
            }
            Err(e) => {
                tracing::info!(error = %e, "passkey assertion refused");
                Err(self.passkey_failed(owner, client, "verification").await)
            }
        }
    }

    /// The passkey's owner, if they may sign in: not disabled, and (after the passkey proved
    /// itself, as after a right password) with a verified address where one is required.
    async fn owner_may_sign_in(&self, owner: Uuid, client: &ClientInfo) -> Result<User> {
        let user = self
            .core
            .store
            .user_by_id(owner)
            .await?
            .ok_or(Error::PasskeyInvalid)?;
        if user.disabled {
            let event = AuditEvent::LoginFailed(LoginFailure::AccountDisabled);
            self.core
                .audit(event, Subject::user(user.id).from(client))
                .await;
            return Err(Error::AccountDisabled);
        }
        self.core.require_verified(&user)?;
        Ok(user)
    }

    /// Completes the password sign-in's challenge that this passkey answered as a second factor.
    async fn complete_challenge(
        &self,
        ceremony: &Ceremony,
        user: &User,
        now: i64,
        client: &ClientInfo,
    ) -> Result<TokenSet> {
        let hash = ceremony.temp_token_hash.as_deref().unwrap_or_default();
        let hash: [u8; 32] = hash.try_into().map_err(|_| Error::TempTokenInvalid)?;
        // The challenge may have lapsed while the ceremony ran (each lives 5 minutes).
        let live = self
            .core
            .store
            .challenge_user(&hash, MAX_CHALLENGE_ATTEMPTS, now)
            .await?;
        let first_factor = match live {
            Some((id, first_factor)) if id == user.id => first_factor_amr(&first_factor),
            _ => return Err(Error::TempTokenInvalid),
        };
        // False when the challenge was completed meanwhile (a code, another passkey) or ended by
        // a password change.
        if !self.core.store.complete_challenge(&hash, now).await? {
            return Err(Error::TempTokenInvalid);
        }
        let amr = vec![first_factor.into(), AMR_HWK.into(), AMR_USER.into()];
        self.core
            .open_session(user, amr, client)
            .await?
            .ok_or(Error::TempTokenInvalid)
    }

    async fn open_passkey_session(&self, user: &User, client: &ClientInfo) -> Result<TokenSet> {
        let amr = vec![AMR_HWK.into(), AMR_USER.into()];
        if let Some(tokens) = self.core.open_session(user, amr, client).await? {
            return Ok(tokens);
        }
        let now = self.core.store.user_by_id(user.id).await?;
        Err(match now {
            Some(now) if now.disabled => Error::AccountDisabled,
            _ => Error::PasskeyInvalid,
        })
    }

    /// Saves the counter and backup flags an assertion reported. The counter is compared with
    /// the stored one in the same statement: of two assertions racing with one counter value (a
    /// cloned authenticator, possibly on two instances), only one is taken.
    pub(super) async fn record_use(
        &self,
        stored: &StoredPasskey,
        result: &AuthenticationResult,
        now: i64,
        client: &ClientInfo,
    ) -> Result<()> {
        let mut passkey = passkey_of(stored)?;
        passkey.update_credential(result);
        let credential = serde_json::to_string(&passkey).map_err(Error::internal)?;
        let counter = i64::from(result.counter());
        let used = self
            .core
            .store
            .passkey_used(&PasskeyUse {
                id: stored.id,
                credential: &credential,
                sign_count: counter,
                backup_eligible: result.backup_eligible(),
                backup_state: result.backup_state(),
                at: now,
            })
            .await?;
        if used {
            Ok(())
        } else {
            Err(self.clone_detected(stored, Some(counter), client).await)
        }
    }

    /// Audits a counter that did not move forward: two copies of one credential may exist.
    pub(super) async fn clone_detected(
        &self,
        stored: &StoredPasskey,
        counter: Option<i64>,
        client: &ClientInfo,
    ) -> Error {
        let event = AuditEvent::PasskeyCloneDetected {
            passkey: stored.id,
            stored: stored.sign_count,
            presented: counter,
        };
        self.core
            .audit(event, Subject::user(stored.user_id).from(client))
            .await;
        tracing::warn!(passkey = %stored.id, user = %stored.user_id, "passkey counter went back: possibly a cloned authenticator");
        Error::PasskeyInvalid
    }
}
