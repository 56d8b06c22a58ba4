//! The authorization code grant (RFC 6749 §4.1.3, docs/api.md §11) as the sequence of checks it
//! is: the code redeemed once (a replay ends what its first use gave), the request matching what
//! the code was issued for, the sign-in behind it still live, its organisation still the
//! person's, its scopes still the client's; then a session of the client's own, and its tokens.

use uuid::Uuid;

use super::grants::{
    Outcome, TokenAnswer, TokenRequest, invalid_grant, required, same_target, still_allowed,
};
use super::pkce::pkce_matches;
use super::{Provider, scopes};
use crate::crypto::sha256;
use crate::error::Error;
use crate::model::oauth::{AuthorizationCode, Redemption};
use crate::model::orgs::Membership;
use crate::model::{
    Client, ClientGrant, ClientInfo, EndReason, RefreshRecord, Session, User, is_multi_factor,
};
use crate::store::sessions::NewSession;

/// A client's session as the exchange opens it.
struct Opened {
    session: Session,
    grant: ClientGrant,
    /// Its refresh token's record, with `offline_access`.
    refresh: Option<RefreshRecord>,
}

impl Provider {
    pub(super) async fn exchange_code(
        &self,
        client: &Client,
        request: &TokenRequest,
        from: &ClientInfo,
        jkt: Option<&str>,
    ) -> Outcome<TokenAnswer> {
        let code = required(&request.code, "code")?;
        let redirect_uri = required(&request.redirect_uri, "redirect_uri")?;
        let session_id = Uuid::now_v7();
        let code = self.redeem(client, code, session_id).await?;
        self.issued_for(client, request, redirect_uri, &code)?;
        let parent = Some(code.parent_id);
        self.collect(client, &code, from, (session_id, parent), jkt)
            .await
    }

    /// The tokens of a redeemed authorization (a code, or a device's approval), once the checks
    /// that follow every redemption pass: the sign-in behind it still live, its organisation
    /// still the person's, its scopes still the client's. Then the client's session
    /// `session_id`, a child of `parent`; its tokens bound to the DPoP key `jkt`, if any.
    pub(super) async fn collect(
        &self,
        client: &Client,
        code: &AuthorizationCode,
        from: &ClientInfo,
        (session_id, parent): (Uuid, Option<Uuid>),
        jkt: Option<&str>,
    ) -> Outcome<TokenAnswer> {
        let user = self.sign_in_still_live(code).await?;
        let org = self.organisation_still_held(code, &user).await?;
        // As at refresh: what the operator took from the client since the authorization is not
        // issued.
        let scope = still_allowed(client, code.scope.clone())?;
        let opened = self
            .open_client_session(client, &user, code, &scope, from, session_id, parent)
            .await?;
        self.answer(
            client,
            &user,
            &opened.session,
            &opened.grant,
            &scope,
            code.nonce.as_deref(),
            opened.refresh.as_ref(),
            org.as_ref(),
            jkt,
        )
        .await
    }

    /// The code, redeemed for the session `session_id` will be: once. RFC 6749 §4.1.2: a code
    /// used twice may be in the wrong hands; what its first use gave is taken back.
    async fn redeem(
        &self,
        client: &Client,
        code: &str,
        session_id: Uuid,
    ) -> Outcome<AuthorizationCode> {
        let now = self.core.clock.now_ms();
        let redeemed = self
            .core
            .store
            .redeem_code(&sha256(code.as_bytes()), now, session_id)
            .await?;
        match redeemed {
            Redemption::First(code) => Ok(code),
            Redemption::Unknown => Err(invalid_grant("the code is unknown or expired")),
            Redemption::Replayed {
                session_id,
                user_id,
            } => Err(self.replayed(client, session_id, user_id).await?),
        }
    }

    /// A code (or device code) used twice: the session its first use began is ended, and the
    /// refusal to answer.
    pub(super) async fn replayed(
        &self,
        client: &Client,
        session_id: Option<Uuid>,
        user_id: Uuid,
    ) -> std::result::Result<super::OAuthFailure, Error> {
        if let Some(session) = session_id {
            self.core
                .end_session(user_id, session, EndReason::CodeReplayed)
                .await?;
        }
        tracing::warn!(client = %client.id, "a code was used twice: its session ended");
        Ok(invalid_grant("the code was used already"))
    }

    /// The request asks for what the code was issued for: the same client, resource (RFC 8707)
    /// and redirect URI, with the PKCE verifier of its challenge.
    fn issued_for(
        &self,
        client: &Client,
        request: &TokenRequest,
        redirect_uri: &str,
        code: &AuthorizationCode,
    ) -> Outcome<()> {
        if code.client_id != client.id {
            return Err(invalid_grant("the code was issued to another client"));
        }
        same_target(
            request,
            code.audience.as_deref(),
            self.core.tokens.audience(),
        )?;
        if code.redirect_uri != redirect_uri {
            return Err(invalid_grant(
                "redirect_uri is not the one the code was issued for",
            ));
        }
        pkce_proved(request, &code.code_challenge)
    }

    /// The person, while the session that authorized is live and the account enabled: signing
    /// out in between takes the code back too.
    async fn sign_in_still_live(&self, code: &AuthorizationCode) -> Outcome<User> {
        let parent_live = !self.core.live.is_revoked(code.parent_id)
            && self
                .core
                .store
                .session(code.parent_id)
                .await?
                .is_some_and(|s| s.revoked_at.is_none());
        let user = self
            .core
            .store
            .user_by_id(code.user_id)
            .await?
            .filter(|u| !u.disabled);
        match (parent_live, user) {
            (true, Some(user)) => Ok(user),
            _ => Err(invalid_grant(
                "the sign-in that authorized the code has ended",
            )),
        }
    }

    /// The membership of the organisation the code was authorized in, if any: still the
    /// person's, and admitting the code's sign-in (an organisation may have come to ask for a
    /// second factor since).
    async fn organisation_still_held(
        &self,
        code: &AuthorizationCode,
        user: &User,
    ) -> Outcome<Option<Membership>> {
        let Some(org) = code.org_id else {
            return Ok(None);
        };
        let membership = self.core.store.membership(org, user.id).await?;
        match membership.filter(|m| m.admits(is_multi_factor(&code.amr))) {
            Some(membership) => Ok(Some(membership)),
            None => Err(invalid_grant(
                "the person is no longer a member of the organisation, or it now asks for a \
                 second factor this sign-in did not have",
            )),
        }
    }

    /// The client's own session for the code, a child of `parent` (the person's session, for a
    /// browser's code; none for a device's), living as long as its refresh token with
    /// `offline_access`, else as long as its one access token.
    #[allow(clippy::too_many_arguments)]
    async fn open_client_session(
        &self,
        client: &Client,
        user: &User,
        code: &AuthorizationCode,
        scope: &[String],
        from: &ClientInfo,
        session_id: Uuid,
        parent: Option<Uuid>,
    ) -> Outcome<Opened> {
        let now = self.core.clock.now_ms();
        let offline = scope.iter().any(|s| s == scopes::OFFLINE_ACCESS);
        let lifetime = if offline {
            self.core.settings.refresh_ttl.as_millis() as i64
        } else {
            self.core.tokens.access_ttl_seconds() * 1000
        };
        let refresh = RefreshRecord {
            jti: Uuid::new_v4(),
            session_id,
            issued_at: now,
            expires_at: now + lifetime,
            consumed_at: None,
        };
        let grant = ClientGrant {
            client_id: client.id,
            scope: scope.to_vec(),
            parent_id: parent,
            auth_time: code.auth_time,
            audience: code.audience.clone(),
        };
        let ip = from.ip.map(|ip| ip.to_string());
        let opened = self
            .core
            .store
            .insert_session(&NewSession {
                id: session_id,
                user_id: user.id,
                amr: &code.amr,
                ip: ip.as_deref(),
                user_agent: from.user_agent.as_deref(),
                refresh: &refresh,
                auth_epoch: user.auth_epoch,
                grant: Some(&grant),
                org_id: code.org_id,
            })
            .await
            .map_err(|e| match e {
                // The client or the account was removed since the code was redeemed.
                Error::NotFound => invalid_grant("the client or the account is gone"),
                other => other.into(),
            })?;
        if !opened {
            return Err(invalid_grant(
                "the account was disabled or its password changed",
            ));
        }
        let session = Session {
            id: session_id,
            user_id: user.id,
            amr: code.amr.clone(),
            ip,
            user_agent: from.user_agent.clone(),
            created_at: now,
            last_used_at: now,
            revoked_at: None,
            org_id: code.org_id,
            grant: Some(grant.clone()),
        };
        Ok(Opened {
            session,
            grant,
            refresh: offline.then_some(refresh),
        })
    }
}

/// The code's PKCE: a code with a challenge needs its verifier; a code without one (a client an
/// operator let off PKCE) takes none, since a verifier there would mean the authorization's
/// challenge was stripped on the way (a downgrade, RFC 9700 §2.1.1).
fn pkce_proved(request: &TokenRequest, challenge: &str) -> Outcome<()> {
    if challenge.is_empty() {
        return match request.code_verifier {
            None => Ok(()),
            Some(_) => Err(invalid_grant(
                "code_verifier given, but the authorization had no code_challenge",
            )),
        };
    }
    let verifier = required(&request.code_verifier, "code_verifier")?;
    if !pkce_matches(verifier, challenge) {
        return Err(invalid_grant(
            "code_verifier does not match the code_challenge",
        ));
    }
    Ok(())
}
