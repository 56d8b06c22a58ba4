//! Signing in with other identity providers (docs/api.md §14): the flows through an upstream
//! OpenID provider (`crate::upstream::Providers` speaks to it), bound to the browser that began
//! them, and the identities they link to accounts.
//!
//! A flow begins at `start_sign_in` (the sign-in page's button) or `start_link` (the account page,
//! the owner confirmed); either keeps a row keyed by the hash of a new binding cookie and sends the
//! browser to the provider. The callback (`callback`) takes that row, so a flow is finished once,
//! by the browser that began it, with the `state` it was given. A finished sign-in is kept sealed
//! for the pages to collect (`finish`), under a new value of the same cookie. Nothing here knows
//! HTTP: the page routes turn `Started` and `Landing` into redirects and cookies.
//!
//! It stands on `auth` (Core, Login, browser sessions) and `upstream`; only `flows`, `http` and the
//! CLI call it. Per-organisation connections (OpenID Connect or SAML) belong here.

use std::sync::Arc;

use secrecy::SecretString;

use crate::auth::audit::{AuditEvent, Subject};
use crate::auth::{BrowserSessions, Core, Login};
use crate::crypto::sha256;
use crate::error::{Conflict, Error, Result};
use crate::mail::Notice;
use crate::model::{
    ClientInfo, FederatedIdentity, FederationFlow, FlowPurpose, LoginOutcome, Principal, Unlinked,
};
use crate::upstream::{ProviderSummary, UpstreamError};

mod callback;
mod handoff;
mod signin;

pub use callback::{CallbackAnswer, Landing};

/// How long a browser has at the provider before its flow is void.
const FLOW_TTL_MS: i64 = 10 * 60 * 1000;
/// How long a finished sign-in waits for the pages to collect it.
const HANDOFF_TTL_MS: i64 = 60 * 1000;
/// The tags of the cookie's two values: a flow's binding never passes as a handoff, nor the
/// reverse, nor any other tagged value of the service (`Secrets::tagged_token`).
const BINDING_SCOPE: &[u8] = b"federation-binding/v1";
const HANDOFF_SCOPE: &[u8] = b"federation-handoff/v1";

/// Why a flow ended without signing in or linking: the code the sign-in page (or the account
/// page) is sent, which it turns into a sentence. Never upstream text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    ProviderUnknown,
    ProviderUnavailable,
    ProviderDenied,
    ProviderError,
    ProviderInvalid,
    Expired,
    AccountExists,
    NoAccount,
    EmailMissing,
    EmailNotVerified,
    AccountDisabled,
    IdentityTaken,
    AlreadyLinked,
    /// A re-authentication signed in another identity than the one linked to the account.
    NotLinked,
    /// A re-authentication the provider did not ask for again (no `auth_time`, or an older one
    /// than the flow): its own session is no proof of who sits at the browser now.
    NotFresh,
    /// The provider does not speak for the address (docs/guide/providers.md): it lies under
    /// another provider's `domains`, or outside this provider's own.
    WrongProvider,
}

impl Refusal {
    pub fn code(self) -> &'static str {
        match self {
            Refusal::ProviderUnknown => "provider_unknown",
            Refusal::ProviderUnavailable => "provider_unavailable",
            Refusal::ProviderDenied => "provider_denied",
            Refusal::ProviderError => "provider_error",
            Refusal::ProviderInvalid => "provider_invalid",
            Refusal::Expired => "expired",
            Refusal::AccountExists => "account_exists",
            Refusal::NoAccount => "no_account",
            Refusal::EmailMissing => "email_missing",
            Refusal::EmailNotVerified => "email_not_verified",
            Refusal::AccountDisabled => "account_disabled",
            Refusal::IdentityTaken => "identity_taken",
            Refusal::AlreadyLinked => "already_linked",
            Refusal::NotLinked => "not_linked",
            Refusal::NotFresh => "not_fresh",
            Refusal::WrongProvider => "wrong_provider",
        }
    }

    fn upstream(error: &UpstreamError) -> Refusal {
        match error {
            UpstreamError::UnknownProvider => Refusal::ProviderUnknown,
            UpstreamError::Unavailable(_) => Refusal::ProviderUnavailable,
            UpstreamError::Refused(_) => Refusal::ProviderError,
            UpstreamError::InvalidToken(_) => Refusal::ProviderInvalid,
        }
    }
}

/// A flow begun: where to send the browser, and the cookie value that binds the flow to it.
#[derive(Debug)]
pub struct Started {
    pub location: String,
    pub binding: String,
}

/// Where a link or a re-authentication ends.
const ACCOUNT_PAGE: &str = "/account";

/// A linked identity as its owner sees it.
#[derive(Debug, Clone)]
pub struct IdentityView {
    pub identity: FederatedIdentity,
    /// The provider's button label; its id when it is no longer in the providers file.
    pub provider_name: String,
}

/// The flows through other identity providers, and the identities they link.
#[derive(Clone)]
pub struct Federation {
    pub(crate) core: Arc<Core>,
    pub(crate) login: Login,
    pub(crate) browser: BrowserSessions,
}

impl Federation {
    /// Starts each provider's discovery (the server's start; the CLI's commands have no use for it).
    pub fn discover_in_background(&self) {
        self.core.providers.discover_in_background();
    }

    /// The configured providers, for the sign-in page; never waits on a provider.
    pub fn providers(&self) -> Vec<ProviderSummary> {
        self.core.providers.list()
    }

    /// Begins a sign-in through `provider`, ending at `return_to` (checked by the caller).
    pub async fn start_sign_in(
        &self,
        provider: &str,
        return_to: String,
        login_hint: Option<&str>,
        client: &ClientInfo,
    ) -> std::result::Result<Started, Refusal> {
        if self.core.throttle.federation_start_from(client.ip).is_err() {
            // A flood of starts must not fill the table; the page says to try again.
            return Err(Refusal::ProviderUnavailable);
        }
        (self.begin(provider, return_to, login_hint, FlowPurpose::SignIn, None))
            .await
            .map_err(|e| match e {
                Error::NotFound => Refusal::ProviderUnknown,
                _ => Refusal::ProviderUnavailable,
            })
    }

    /// Begins linking an identity at `provider` to the caller's account: the owner confirms (the
    /// password, or the session's re-authentication), as for every new way into the account.
    pub async fn start_link(
        &self,
        who: &Principal,
        provider: &str,
        password: Option<SecretString>,
        client: &ClientInfo,
    ) -> Result<Started> {
        self.core.throttle.federation_start_from(client.ip)?;
        let user = self.core.user(who).await?;
        self.core.providers.get(provider).ok_or(Error::NotFound)?;
        // An account of a domain's provider links no other one: it signs in through its own
        // (docs/guide/providers.md); said before the owner is asked to confirm anything.
        if let Some(owner) = self.core.providers.for_address(&user.email_normalized) {
            if owner.id != provider {
                return Err(Error::SsoRequired {
                    provider: owner.id.clone(),
                });
            }
        }
        self.core
            .confirm_owner(&user, who, password, "password")
            .await?;
        let linked = self.core.store.federated_identities_of(user.id).await?;
        if linked.iter().any(|i| i.provider_id == provider) {
            return Err(Error::Conflict(Conflict::AlreadyLinked));
        }
        let account = Some((user.id, who.session_id));
        let purpose = FlowPurpose::Link;
        (self.begin(provider, ACCOUNT_PAGE.into(), None, purpose, account)).await
    }

    /// Begins re-authenticating the caller's session through the identity linked to its account
    /// at `provider` (docs/api.md §3, §14): the way an account without a password proves its
    /// holder again. No identity of the account there: `NOT_FOUND`.
    pub async fn start_reauthentication(
        &self,
        who: &Principal,
        provider: &str,
        client: &ClientInfo,
    ) -> Result<Started> {
        self.core.throttle.federation_start_from(client.ip)?;
        let user = self.core.user(who).await?;
        let linked = self.core.store.federated_identities_of(user.id).await?;
        if !linked.iter().any(|i| i.provider_id == provider) {
            return Err(Error::NotFound);
        }
        let account = Some((user.id, who.session_id));
        let purpose = FlowPurpose::Reauthenticate;
        (self.begin(provider, ACCOUNT_PAGE.into(), None, purpose, account)).await
    }

    /// The flow's row and the provider's authorization URL.
    async fn begin(
        &self,
        provider: &str,
        return_to: String,
        login_hint: Option<&str>,
        purpose: FlowPurpose,
        account: Option<(uuid::Uuid, uuid::Uuid)>,
    ) -> Result<Started> {
        let redirect_uri = self.redirect_uri(provider);
        let providers = &self.core.providers;
        let authorization = match purpose {
            FlowPurpose::Reauthenticate => providers.fresh_authorization(provider, &redirect_uri),
            _ => providers.authorization(provider, &redirect_uri, login_hint),
        };
        let authorization = authorization.map_err(|e| match e {
            UpstreamError::UnknownProvider => Error::NotFound,
            _ => Error::ProviderUnavailable,
        })?;
        let binding = self.core.secrets.tagged_token(BINDING_SCOPE);
        let binding_hash = sha256(binding.as_bytes());
        let flow = FederationFlow {
            binding_hash,
            provider_id: provider.to_owned(),
            state_hash: sha256(authorization.state.as_bytes()),
            nonce: authorization.nonce,
            sealed_verifier: self
                .core
                .secrets
                .seal(&binding_hash, authorization.pkce_verifier.as_bytes()),
            return_to,
            purpose,
            account,
            expires_at: self.core.clock.now_ms() + FLOW_TTL_MS,
        };
        self.core.store.insert_federation_flow(&flow).await?;
        Ok(Started {
            location: authorization.url,
            binding,
        })
    }

    /// `<public URL>/auth/providers/{id}/callback`: what is registered at the provider.
    fn redirect_uri(&self, provider: &str) -> String {
        let base = self.core.settings.public_url.trim_end_matches('/');
        format!("{base}/auth/providers/{provider}/callback")
    }

    /// The finished sign-in a cookie's handoff value holds (single use); `TOKEN_INVALID` else.
    pub async fn finish(&self, values: &[&str]) -> Result<LoginOutcome> {
        let value = values
            .iter()
            .find(|v| self.core.secrets.checks_token(HANDOFF_SCOPE, v))
            .ok_or(Error::TokenInvalid)?;
        let hash = sha256(value.as_bytes());
        let now = self.core.clock.now_ms();
        let sealed = self
            .core
            .store
            .take_federation_handoff(&hash, now)
            .await?
            .ok_or(Error::TokenInvalid)?;
        handoff::open(&self.core.secrets, &hash, &sealed)
    }

    /// The caller's linked identities.
    pub async fn identities(&self, who: &Principal) -> Result<Vec<IdentityView>> {
        let user = self.core.user(who).await?;
        self.views(user.id).await
    }

    async fn views(&self, user: uuid::Uuid) -> Result<Vec<IdentityView>> {
        let identities = self.core.store.federated_identities_of(user).await?;
        Ok(identities
            .into_iter()
            .map(|identity| IdentityView {
                provider_name: self
                    .core
                    .providers
                    .get(&identity.provider_id)
                    .map_or_else(|| identity.provider_id.clone(), |p| p.name.clone()),
                identity,
            })
            .collect())
    }

    /// Unlinks the caller's identity at `provider`, unless it is the account's last way in.
    pub async fn unlink(&self, who: &Principal, provider: &str, client: &ClientInfo) -> Result<()> {
        let user = self.core.user(who).await?;
        let now = self.core.clock.now_ms();
        match self
            .core
            .store
            .unlink_federated_identity(user.id, provider, now)
            .await?
        {
            Unlinked::Done => {}
            Unlinked::NotFound => return Err(Error::NotFound),
            Unlinked::LastWayIn => return Err(Error::Conflict(Conflict::LastWayIn)),
        }
        let event = AuditEvent::IdentityUnlinked {
            provider: provider.to_owned(),
        };
        let subject = Subject::user(user.id)
            .in_session(who.session_id)
            .from(client);
        self.core.audit(event, subject).await;
        self.core.notify(&user, Notice::IdentityUnlinked).await;
        Ok(())
    }

    /// A new random value for a handoff cookie, and its hash.
    fn handoff_binding(&self) -> (String, [u8; 32]) {
        let value = self.core.secrets.tagged_token(HANDOFF_SCOPE);
        let hash = sha256(value.as_bytes());
        (value, hash)
    }
}

impl Core {
    /// `SSO_REQUIRED` for an address under a provider's `domains` (docs/api.md §14).
    pub(super) fn sso_required(&self, email_normalized: &str) -> Result<()> {
        match self.providers.for_address(email_normalized) {
            Some(provider) => Err(Error::SsoRequired {
                provider: provider.id.clone(),
            }),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusal_codes_are_the_pages_words() {
        let all = [
            Refusal::ProviderUnknown,
            Refusal::ProviderUnavailable,
            Refusal::ProviderDenied,
            Refusal::ProviderError,
            Refusal::ProviderInvalid,
            Refusal::Expired,
            Refusal::AccountExists,
            Refusal::NoAccount,
            Refusal::EmailMissing,
            Refusal::EmailNotVerified,
            Refusal::AccountDisabled,
            Refusal::IdentityTaken,
            Refusal::AlreadyLinked,
            Refusal::NotLinked,
            Refusal::NotFresh,
            Refusal::WrongProvider,
        ];
        let mut codes: Vec<&str> = all.iter().map(|r| r.code()).collect();
        // Safe in a URL as they are, and each its own.
        assert!(
            codes
                .iter()
                .all(|c| c.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'))
        );
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), all.len());
        assert_eq!(
            Refusal::upstream(&UpstreamError::InvalidToken("x".into())),
            Refusal::ProviderInvalid
        );
        assert_eq!(
            Refusal::upstream(&UpstreamError::Unavailable("x".into())),
            Refusal::ProviderUnavailable
        );
    }
}
