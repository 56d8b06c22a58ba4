//! The provider's answer (`/auth/providers/{id}/callback`): the flow of the browser's cookie taken,
//! its `state` checked, the code exchanged and the ID token validated (`Providers::complete`), then
//! a sign-in (`signin`: an identity found, or an account made) or a link. Whatever fails lands the browser
//! on a page with one of `Refusal`'s codes; nothing is made unless the whole of it succeeds.

use subtle::ConstantTimeEq as _;
use uuid::Uuid;

use super::{Federation, Refusal, handoff};
use crate::auth::AMR_FEDERATED;
use crate::auth::audit::{AuditEvent, OrgEvent, Subject};
use crate::auth::browser::IssuedCookie;
use crate::crypto::sha256;
use crate::error::Result;
use crate::mail::Notice;
use crate::model::{
    ClientInfo, FederatedIdentity, FederationFlow, FlowPurpose, Linked, LoginOutcome, User,
};
use crate::upstream::{ProviderConfig, UpstreamIdentity};

/// What the provider sent back to the callback.
#[derive(Debug)]
pub enum CallbackAnswer {
    Code {
        code: String,
        state: String,
    },
    /// The provider's `error` (`access_denied`, …) and the `state` it came with.
    Error {
        error: String,
        state: Option<String>,
    },
    /// Neither a code nor an error: not an answer of the provider's.
    Malformed,
}

/// Where the callback sends the browser.
#[derive(Debug)]
pub enum Landing {
    /// Signed in (or asked for the second factor): the pages collect the outcome with the new
    /// cookie value `handoff`; a token set's session has its §6b cookie already.
    SignedIn {
        return_to: String,
        handoff: String,
        session_cookie: Option<IssuedCookie>,
    },
    Linked {
        provider: String,
    },
    /// The session that began the flow is re-authenticated (docs/api.md §3).
    Reauthenticated {
        provider: String,
    },
    Refused {
        refusal: Refusal,
        provider: String,
        /// Where the flow would have ended, when the flow was found.
        return_to: Option<String>,
        /// What the flow was for (a sign-in when it was not found): a link or a
        /// re-authentication shows its refusal on the account page.
        purpose: FlowPurpose,
    },
}

/// What the browser's cookie found.
enum Taken {
    Flow(Box<FederationFlow>),
    /// A binding of ours whose flow is gone (used, expired).
    Gone,
    /// No value with our tag.
    NoBinding,
}

/// A refusal, and the account it concerns when one was found.
pub(super) type Refused = (Refusal, Option<Uuid>);

impl Federation {
    /// Finishes the flow bound to the browser's cookie (`bindings`: every value of it sent), and
    /// counts how it ended (`gatehouse_federation_callbacks_total`).
    pub async fn callback(
        &self,
        provider: &str,
        bindings: &[&str],
        answer: CallbackAnswer,
        client: &ClientInfo,
    ) -> Landing {
        let landing = self.land(provider, bindings, answer, client).await;
        let (purpose, outcome) = match &landing {
            Landing::SignedIn { .. } => (FlowPurpose::SignIn, "signed_in"),
            Landing::Linked { .. } => (FlowPurpose::Link, "linked"),
            Landing::Reauthenticated { .. } => (FlowPurpose::Reauthenticate, "reauthenticated"),
            Landing::Refused {
                refusal, purpose, ..
            } => (*purpose, refusal.code()),
        };
        // Only configured ids become label values: a made-up URL must not add a time series.
        let provider = match self.core.providers.get(provider) {
            Some(_) => provider,
            None => "unknown",
        };
        (self.core.metrics).federation_callback(provider, purpose.as_str(), outcome);
        landing
    }

    async fn land(
        &self,
        provider: &str,
        bindings: &[&str],
        answer: CallbackAnswer,
        client: &ClientInfo,
    ) -> Landing {
        let refused = |refusal, flow: Option<&FederationFlow>| Landing::Refused {
            refusal,
            provider: provider.to_owned(),
            return_to: flow.map(|f| f.return_to.clone()),
            purpose: flow.map_or(FlowPurpose::SignIn, |f| f.purpose),
        };
        // An id that names no provider (a made-up URL) is refused before anything is read or
        // audited: it is not a word the audit trail should carry.
        if self.core.providers.get(provider).is_none() {
            return refused(Refusal::ProviderUnknown, None);
        }
        let flow = match self.take_flow(bindings).await {
            Taken::Flow(flow) => *flow,
            // A flow this browser did begin, used or expired since: the trail shows it.
            Taken::Gone => {
                self.audit_refusal(provider, Refusal::Expired, None, client)
                    .await;
                return refused(Refusal::Expired, None);
            }
            // No binding of ours: anyone can send that, any number of times, so it writes
            // nothing (an audit row per request would be a way to fill the database).
            Taken::NoBinding => return refused(Refusal::Expired, None),
        };
        let account = flow.account.map(|(user, _)| user);
        let result = match self.upstream_identity(provider, &flow, answer).await {
            Ok((config, upstream)) => match (flow.purpose, flow.account) {
                (FlowPurpose::SignIn, _) => self.sign_in(&config, &upstream, client).await,
                (FlowPurpose::Link, Some((user, session))) => {
                    match self.link(&config, &upstream, user, session, client).await {
                        Ok(()) => {
                            return Landing::Linked {
                                provider: provider.to_owned(),
                            };
                        }
                        Err(refused) => Err(refused),
                    }
                }
                (FlowPurpose::Reauthenticate, Some((user, session))) => {
                    let started = flow.expires_at - super::FLOW_TTL_MS;
                    let done = (self
                        .reauthenticate(&config, &upstream, user, session, started, client))
                    .await;
                    match done {
                        Ok(()) => {
                            return Landing::Reauthenticated {
                                provider: provider.to_owned(),
                            };
                        }
                        Err(refused) => Err(refused),
                    }
                }
                // A link or re-authentication row without its account: not one we wrote.
                (_, None) => Err((Refusal::Expired, None)),
            },
            Err(refusal) => Err((refusal, account)),
        };
        match result {
            Ok(outcome) => match self.hand_off(&outcome).await {
                Ok((handoff, session_cookie)) => Landing::SignedIn {
                    return_to: flow.return_to,
                    handoff,
                    session_cookie,
                },
                Err(error) => {
                    tracing::warn!(provider, error = %error, "a federated sign-in could not be handed off");
                    refused(Refusal::Expired, Some(&flow))
                }
            },
            Err((refusal, user)) => {
                self.audit_refusal(provider, refusal, user, client).await;
                refused(refusal, Some(&flow))
            }
        }
    }

    /// The live flow of the first of `bindings` that is one of ours, taken (deleted). A value
    /// without our tag costs no database read.
    async fn take_flow(&self, bindings: &[&str]) -> Taken {
        let Some(value) = bindings
            .iter()
            .find(|v| self.core.secrets.checks_token(super::BINDING_SCOPE, v))
        else {
            return Taken::NoBinding;
        };
        let now = self.core.clock.now_ms();
        match (self.core.store)
            .take_federation_flow(&sha256(value.as_bytes()), now)
            .await
        {
            Ok(Some(flow)) => Taken::Flow(Box::new(flow)),
            Ok(None) => Taken::Gone,
            Err(error) => {
                tracing::warn!(error = %error, "a federation flow could not be read");
                Taken::Gone
            }
        }
    }

    /// The provider's answer checked against the flow, then the code exchanged and the ID token
    /// validated.
    async fn upstream_identity(
        &self,
        provider: &str,
        flow: &FederationFlow,
        answer: CallbackAnswer,
    ) -> std::result::Result<(ProviderConfig, UpstreamIdentity), Refusal> {
        // A flow of another provider: a browser sent through one provider's callback with
        // another's cookie is not finishing what it began.
        if flow.provider_id != provider {
            return Err(Refusal::Expired);
        }
        let state_matches =
            |state: &str| bool::from(sha256(state.as_bytes()).ct_eq(&flow.state_hash));
        let code = match answer {
            CallbackAnswer::Code { code, state } if state_matches(&state) => code,
            CallbackAnswer::Error {
                error,
                state: Some(state),
            } if state_matches(&state) => {
                return Err(match error.as_str() {
                    "access_denied" => Refusal::ProviderDenied,
                    _ => Refusal::ProviderError,
                });
            }
            _ => return Err(Refusal::Expired),
        };
        let config = self
            .core
            .providers
            .get(provider)
            .cloned()
            .ok_or(Refusal::ProviderUnknown)?;
        let verifier = self
            .core
            .secrets
            .open(&flow.binding_hash, &flow.sealed_verifier)
            .ok()
            .and_then(|v| String::from_utf8(v).ok())
            .ok_or(Refusal::Expired)?;
        let upstream = self
            .core
            .providers
            .complete(
                provider,
                &self.redirect_uri(provider),
                &code,
                &verifier,
                &flow.nonce,
            )
            .await
            .map_err(|e| {
                // The upstream's words go to the log only, never into the URL.
                tracing::info!(provider, error = %e, "a federated sign-in failed at the provider");
                Refusal::upstream(&e)
            })?;
        Ok((config, upstream))
    }

    /// Links the upstream identity to the account that began the flow, from a session still live.
    async fn link(
        &self,
        config: &ProviderConfig,
        upstream: &UpstreamIdentity,
        user_id: Uuid,
        session: Uuid,
        client: &ClientInfo,
    ) -> std::result::Result<(), Refused> {
        let db = |e: crate::error::Error| {
            tracing::warn!(error = %e, "a federated identity could not be linked");
            (Refusal::Expired, Some(user_id))
        };
        let live = self.core.store.session(session).await.map_err(db)?;
        if live.is_none_or(|s| s.revoked_at.is_some()) || self.core.live.is_revoked(session) {
            // Signed out since the link began: whoever is at the browser now did not ask for it.
            return Err((Refusal::Expired, Some(user_id)));
        }
        let user = self.enabled_user(user_id).await?;
        // The provider must speak for the address it names, and an account of a domain's
        // provider links no other (docs/guide/providers.md).
        let providers = &self.core.providers;
        let named = upstream
            .email
            .as_deref()
            .and_then(|e| crate::domain::Email::parse(e).ok())
            .map(|e| e.normalized());
        let speaks = match &named {
            Some(address) => providers.speaks_for(config, address),
            // A domain's provider vouches for an address of its domains, or for nothing.
            None => config.domains.is_empty(),
        };
        if !speaks || !providers.signs_in_through(config, &user.email_normalized) {
            return Err((Refusal::WrongProvider, Some(user_id)));
        }
        self.attach(config, upstream, &user, Some(session), client)
            .await
    }

    /// Links the upstream identity to `user` (audited, mailed, the provider's organisation
    /// joined): from `/account` (`session`, the one that asked), or at a sign-in through the
    /// provider of the account's own domain (`signin::adopts`).
    pub(super) async fn attach(
        &self,
        config: &ProviderConfig,
        upstream: &UpstreamIdentity,
        user: &User,
        session: Option<Uuid>,
        client: &ClientInfo,
    ) -> std::result::Result<(), Refused> {
        let user_id = user.id;
        let db = |e: crate::error::Error| {
            tracing::warn!(error = %e, "a federated identity could not be linked");
            (Refusal::Expired, Some(user_id))
        };
        let now = self.core.clock.now_ms();
        let org = self.provider_org(config).await;
        let identity = FederatedIdentity {
            provider_id: config.id.clone(),
            subject: upstream.subject.clone(),
            user_id,
            email: upstream.email.clone(),
            linked_at: now,
            last_used_at: None,
        };
        let (linked, joined) = (self.core.store)
            .link_federated_identity(&identity, org)
            .await
            .map_err(db)?;
        match linked {
            Linked::Done => {}
            Linked::TakenByOther => return Err((Refusal::IdentityTaken, Some(user_id))),
            Linked::ProviderTaken => return Err((Refusal::AlreadyLinked, Some(user_id))),
        }
        let subject = || {
            let subject = Subject::user(user_id).from(client);
            match session {
                Some(session) => subject.in_session(session),
                None => subject,
            }
        };
        let event = AuditEvent::IdentityLinked {
            provider: config.id.clone(),
        };
        self.core.audit(event, subject()).await;
        if let (Some(org), true) = (org, joined) {
            let what = OrgEvent::Joined { new_account: false };
            self.core
                .audit(AuditEvent::Org { org, what }, subject())
                .await;
        }
        self.core.notify(user, Notice::IdentityLinked).await;
        Ok(())
    }

    /// Re-authenticates the session that began the flow, if the provider signed in the identity
    /// linked to its account and the session is still live (docs/api.md §3: the window opens as
    /// after a password, audited `reauthentication.succeeded` with detail `fed`).
    async fn reauthenticate(
        &self,
        config: &ProviderConfig,
        upstream: &UpstreamIdentity,
        user_id: Uuid,
        session: Uuid,
        started_ms: i64,
        client: &ClientInfo,
    ) -> std::result::Result<(), Refused> {
        let db = |e: crate::error::Error| {
            tracing::warn!(error = %e, "a re-authentication through a provider failed");
            (Refusal::Expired, Some(user_id))
        };
        // The provider was asked to sign the person in again (`prompt=login`, `max_age=0`); its
        // `auth_time` must say it did, during this flow (a minute's leeway for its clock).
        let fresh = upstream
            .auth_time
            .is_some_and(|t| t.saturating_mul(1000) >= started_ms - 60_000);
        if !fresh {
            return Err((Refusal::NotFresh, Some(user_id)));
        }
        let identity = (self.core.store)
            .federated_identity(&config.id, &upstream.subject)
            .await
            .map_err(db)?;
        if identity.is_none_or(|i| i.user_id != user_id) {
            // Someone else at the provider (a shared computer): they prove nothing of this
            // session's holder.
            return Err((Refusal::NotLinked, Some(user_id)));
        }
        self.enabled_user(user_id).await?;
        let subject = Subject::user(user_id).in_session(session).from(client);
        self.core
            .open_reauth_window_for(session, user_id, AMR_FEDERATED, subject)
            .await
            // Revoked on the way: the window is the session's, and there is none.
            .map_err(|_| (Refusal::Expired, Some(user_id)))?;
        Ok(())
    }

    /// The account a flow or a linked identity names, unless it is gone (`expired`) or disabled.
    pub(super) async fn enabled_user(&self, user_id: Uuid) -> std::result::Result<User, Refused> {
        let user = (self.core.store)
            .user_by_id(user_id)
            .await
            .map_err(|e| {
                tracing::warn!(error = %e, "the account of a federated flow could not be read");
                (Refusal::Expired, Some(user_id))
            })?
            .ok_or((Refusal::Expired, None))?;
        if user.disabled {
            return Err((Refusal::AccountDisabled, Some(user_id)));
        }
        Ok(user)
    }

    /// The provider's organisation, if it names one that exists (checked at start; deleted
    /// since, it is no longer joined).
    pub(super) async fn provider_org(&self, config: &ProviderConfig) -> Option<Uuid> {
        let slug = config.org.as_deref()?;
        match self.core.store.org_id_by_slug(slug).await {
            Ok(Some(org)) => Some(org),
            Ok(None) => {
                tracing::warn!(provider = %config.id, org = slug, "the organisation of an identity provider does not exist");
                None
            }
            Err(error) => {
                tracing::warn!(provider = %config.id, error = %error, "the organisation of an identity provider could not be read");
                None
            }
        }
    }

    /// Keeps the outcome for the pages under a new cookie value; a token set's session gets its
    /// §6b cookie now, before any script runs.
    async fn hand_off(&self, outcome: &LoginOutcome) -> Result<(String, Option<IssuedCookie>)> {
        let (value, hash) = self.handoff_binding();
        let sealed = handoff::seal(&self.core.secrets, &hash, outcome)?;
        let expires_at = self.core.clock.now_ms() + super::HANDOFF_TTL_MS;
        (self.core.store)
            .insert_federation_handoff(&hash, &sealed, expires_at)
            .await?;
        let cookie = match outcome {
            LoginOutcome::Tokens(tokens) => Some(self.browser.issue_for(tokens.session_id).await?),
            LoginOutcome::Challenge { .. } => None,
        };
        Ok((value, cookie))
    }

    async fn audit_refusal(
        &self,
        provider: &str,
        refusal: Refusal,
        user: Option<Uuid>,
        client: &ClientInfo,
    ) {
        let event = AuditEvent::FederatedLoginFailed {
            provider: provider.to_owned(),
            reason: refusal.code(),
        };
        self.core
            .audit(event, Subject::maybe_user(user).from(client))
            .await;
    }
}
