//! The sign-in rules of a callback whose identity passed (docs/api.md §14): a linked identity
//! signs its account in; else an account is made when the provider may make one and vouches for
//! the address; an account that has the address is never linked by the match, except by the
//! provider its domain must sign in with (`adopts`). Then the session, or the account's 2FA
//! challenge.

use uuid::Uuid;

use super::callback::Refused;
use super::{Federation, Refusal};
use crate::auth::AMR_FEDERATED;
use crate::auth::audit::{AuditEvent, OrgEvent, Subject};
use crate::domain::{Email, FullName};
use crate::model::{ClientInfo, FederatedIdentity, LoginOutcome, User};
use crate::store::federation::NewAccount;
use crate::store::users::NewUser;
use crate::upstream::{ProviderConfig, UpstreamIdentity};

/// RFC 8176 methods that are a second factor or stronger than a password (a provider's `amr`,
/// trusted with `trust_second_factor`). Not `pwd`, `pin`, `kba`, `user`, `geo`, `rba`, `wia`.
const STRONG_METHODS: &[&str] = &[
    "mfa", "otp", "hwk", "swk", "sms", "tel", "fpt", "face", "iris", "retina", "vbm", "sc",
];

impl Federation {
    /// The sign-in rules (docs/api.md §14): a linked identity signs its account in; else an
    /// account is made when the provider may make one and vouches for the address; an account
    /// that has the address is never linked here (pre-account takeover).
    pub(super) async fn sign_in(
        &self,
        config: &ProviderConfig,
        upstream: &UpstreamIdentity,
        client: &ClientInfo,
    ) -> std::result::Result<LoginOutcome, Refused> {
        let db = |e: crate::error::Error| {
            tracing::warn!(error = %e, "a federated sign-in could not be completed");
            (Refusal::Expired, None)
        };
        let now = self.core.clock.now_ms();
        let linked = (self.core.store)
            .federated_identity(&config.id, &upstream.subject)
            .await
            .map_err(db)?;
        let providers = &self.core.providers;
        if let Some(identity) = linked {
            let user = self.enabled_user(identity.user_id).await?;
            // An identity of another provider linked to an account of a domain's provider
            // (linked before the domain was configured, or by that provider's lie before the
            // rule): the domain signs in through its own provider only.
            if !providers.signs_in_through(config, &user.email_normalized) {
                return Err((Refusal::WrongProvider, Some(user.id)));
            }
            if self.core.require_verified(&user).is_err() {
                return Err((Refusal::EmailNotVerified, Some(user.id)));
            }
            (self.core.store)
                .federated_identity_used(
                    &config.id,
                    &upstream.subject,
                    upstream.email.as_deref(),
                    now,
                )
                .await
                .map_err(db)?;
            return self.signed_in(config, upstream, &user, client).await;
        }
        let email = upstream
            .email
            .as_deref()
            .and_then(|e| Email::parse(e).ok())
            .ok_or((Refusal::EmailMissing, None))?;
        let normalized = email.normalized();
        if !providers.speaks_for(config, &normalized) {
            return Err((Refusal::WrongProvider, None));
        }
        if let Some(existing) = self
            .core
            .store
            .user_by_email(&normalized)
            .await
            .map_err(db)?
        {
            if !self.adopts(config, upstream, &existing, &normalized) {
                return Err((Refusal::AccountExists, Some(existing.id)));
            }
            if existing.disabled {
                return Err((Refusal::AccountDisabled, Some(existing.id)));
            }
            self.attach(config, upstream, &existing, None, client)
                .await?;
            return self.signed_in(config, upstream, &existing, client).await;
        }
        if !config.signup {
            return Err((Refusal::NoAccount, None));
        }
        // An unverified upstream address never makes an account: whoever registered someone
        // else's address at the provider would own that person's account here.
        if !upstream.email_verified {
            return Err((Refusal::EmailNotVerified, None));
        }
        let user = self.make_account(config, upstream, &email).await?;
        self.signed_in(config, upstream, &user, client).await
    }

    /// Whether the identity may be linked to the account that has its address, at its sign-in:
    /// only where no one can have made either side with another person's address. The provider
    /// is the one the operator named for the address's domain (`domains`: its password sign-in
    /// is refused, so the account has no other way to reach its link on `/account`), it vouches
    /// for the address (`email_verified`), and the account proved the address itself (a mailed
    /// link; an account whose address was never proved may be someone else's squat, and its
    /// first proof would end any identity linked before it) or this very provider proved it. An
    /// account another provider vouched for is that provider's word, which is no proof here: it
    /// could have been any provider's lie. Anything less is `account_exists`.
    fn adopts(
        &self,
        config: &ProviderConfig,
        upstream: &UpstreamIdentity,
        existing: &User,
        normalized: &str,
    ) -> bool {
        let authority = self.core.providers.for_address(normalized);
        authority.is_some_and(|p| p.id == config.id)
            && upstream.email_verified
            && existing.email_verified
            && existing
                .email_verified_by
                .as_deref()
                .is_none_or(|by| by == config.id)
    }

    /// A new account for an upstream identity: verified, no password, linked, and a member of the
    /// provider's organisation.
    async fn make_account(
        &self,
        config: &ProviderConfig,
        upstream: &UpstreamIdentity,
        email: &Email,
    ) -> std::result::Result<User, Refused> {
        let db = |e: crate::error::Error| {
            tracing::warn!(error = %e, "an account for a federated sign-in could not be made");
            (Refusal::Expired, None)
        };
        let now = self.core.clock.now_ms();
        let id = Uuid::now_v7();
        let address = email.to_string();
        let name = upstream
            .name
            .as_deref()
            .and_then(|n| FullName::parse(n).ok())
            .or_else(|| FullName::parse(&address).ok())
            .ok_or((Refusal::EmailMissing, None))?;
        let normalized = email.normalized();
        let org = self.provider_org(config).await;
        let identity = FederatedIdentity {
            provider_id: config.id.clone(),
            subject: upstream.subject.clone(),
            user_id: id,
            email: upstream.email.clone(),
            linked_at: now,
            last_used_at: Some(now),
        };
        let made = (self.core.store)
            .insert_federated_account(
                &NewUser {
                    id,
                    email: &address,
                    email_normalized: &normalized,
                    full_name: name.as_str(),
                    password_hash: "",
                    created_at: now,
                },
                true,
                &identity,
                org,
            )
            .await
            .map_err(db)?;
        let joined = match made {
            NewAccount::Created { joined } => joined,
            NewAccount::AddressTaken => return Err((Refusal::AccountExists, None)),
            NewAccount::IdentityTaken => return Err((Refusal::Expired, None)),
        };
        let event = AuditEvent::UserCreatedByProvider {
            provider: config.id.clone(),
        };
        self.core.audit(event, Subject::user(id)).await;
        if let (Some(org), true) = (org, joined) {
            let what = OrgEvent::Joined { new_account: true };
            self.core
                .audit(AuditEvent::Org { org, what }, Subject::user(id))
                .await;
        }
        (self.core.store)
            .user_by_id(id)
            .await
            .map_err(db)?
            .ok_or((Refusal::Expired, None))
    }

    /// The session of a sign-in whose identity passed, or the account's 2FA challenge, unless the
    /// provider is trusted for second factors and its `amr` shows one.
    async fn signed_in(
        &self,
        config: &ProviderConfig,
        upstream: &UpstreamIdentity,
        user: &User,
        client: &ClientInfo,
    ) -> std::result::Result<LoginOutcome, Refused> {
        let failed = |e: crate::error::Error| {
            let refusal = match e {
                crate::error::Error::AccountDisabled => Refusal::AccountDisabled,
                _ => Refusal::Expired,
            };
            (refusal, Some(user.id))
        };
        let upstream_second_factor = config.trust_second_factor
            && upstream
                .amr
                .iter()
                .any(|m| STRONG_METHODS.contains(&m.as_str()));
        if user.two_factor_enabled() && !upstream_second_factor {
            return (self.login)
                .challenge(user, AMR_FEDERATED, client)
                .await
                .map_err(failed);
        }
        let mut amr = vec![AMR_FEDERATED.to_owned()];
        if upstream_second_factor {
            amr.push("mfa".to_owned());
        }
        let tokens = (self.core)
            .open_session(user, amr, client)
            .await
            .map_err(failed)?
            // Disabled, or its password changed, while the sign-in ran.
            .ok_or((Refusal::AccountDisabled, Some(user.id)))?;
        let event = AuditEvent::FederatedLogin {
            provider: config.id.clone(),
        };
        let subject = Subject::user(user.id)
            .in_session(tokens.session_id)
            .from(client);
        self.core.audit(event, subject).await;
        Ok(LoginOutcome::Tokens(tokens))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_methods_beyond_a_password_are_a_second_factor() {
        for weak in ["pwd", "pin", "kba", "user", "geo", "rba", "wia"] {
            assert!(!STRONG_METHODS.contains(&weak), "{weak}");
        }
        for strong in [
            "mfa", "otp", "hwk", "swk", "sms", "tel", "fpt", "face", "sc",
        ] {
            assert!(STRONG_METHODS.contains(&strong), "{strong}");
        }
    }
}
