//! Delegation by token exchange (RFC 8693, docs/api.md §11): a confidential client the operator
//! registered with the grant exchanges a person's access token (the subject) for a narrower one
//! that says whom it acts for: `act: {sub: <client>}`, nested when the subject token named an
//! actor already (a chain of agents). The new token is for one API, holds the scopes the subject
//! token and the client's registration both allow (or fewer, as asked), lives no longer than the
//! subject token, and belongs to the subject's session, so that ending the session ends it. There
//! is no impersonation: every exchanged token names its actor.

use super::grants::{Outcome, TokenAnswer, TokenRequest, invalid_grant, required};
use super::{OAuthError, OAuthFailure, Provider, scopes};
use crate::auth::audit::{AuditEvent, Subject};
use crate::auth::tokens::{AccessClaims, Act};
use crate::model::{Client, ClientInfo};

/// The one token type taken and issued (RFC 8693 §3).
pub const ACCESS_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:access_token";
/// Actors a token may name, nested: a longer chain is a loop or an abuse.
const CHAIN_MAX: usize = 4;

fn invalid_request(description: &str) -> OAuthFailure {
    OAuthFailure::refused(OAuthError::InvalidRequest, description)
}

fn invalid_scope(description: String) -> OAuthFailure {
    OAuthFailure::refused(OAuthError::InvalidScope, description)
}

impl Provider {
    pub(super) async fn exchange_token(
        &self,
        client: &Client,
        request: &TokenRequest,
        from: &ClientInfo,
        jkt: Option<&str>,
    ) -> Outcome<TokenAnswer> {
        let subject = required(&request.subject_token, "subject_token")?;
        if required(&request.subject_token_type, "subject_token_type")? != ACCESS_TOKEN_TYPE {
            return Err(invalid_request(
                "subject_token_type must be urn:ietf:params:oauth:token-type:access_token: a \
                 refresh token or an ID token is never exchanged",
            ));
        }
        if request
            .requested_token_type
            .as_deref()
            .is_some_and(|t| t != ACCESS_TOKEN_TYPE)
        {
            return Err(invalid_request(
                "requested_token_type: only access tokens are issued",
            ));
        }
        if request.actor_token.is_some() {
            return Err(invalid_request(
                "actor_token is not taken: the client acts as itself, by its credentials",
            ));
        }
        let claims = self.live_subject(subject).await?;
        // A subject token bound to a DPoP key is exchanged only by the holder of that key: else
        // whoever copied it would trade it for one that works without the key.
        if claims
            .cnf
            .as_ref()
            .is_some_and(|c| Some(c.jkt.as_str()) != jkt)
        {
            return Err(invalid_grant(
                "the subject token is bound to a DPoP key: the request must prove that key",
            ));
        }
        // A client bound to an organisation acts only in it (docs/api.md §13).
        if client.org_id.is_some() && client.org_id != claims.org_id {
            return Err(invalid_grant(
                "the client belongs to an organisation the subject token does not act in",
            ));
        }
        if (request.resource.as_deref()).is_some_and(|r| !self.core.tokens.issues_for(r)) {
            return Err(OAuthFailure::refused(
                OAuthError::InvalidTarget,
                "resource is not a resource server this service issues tokens for",
            ));
        }
        let scope = self.exchanged_scope(client, request, &claims)?;
        // One API's token (RFC 8707): the one asked for, or the one API its scopes are of.
        let catalog = self.core.catalog.current();
        let audience = super::authorize::target(&catalog, &scope, request.resource.as_deref())?
            .unwrap_or_else(|| self.core.tokens.audience().to_owned());
        let depth = std::iter::successors(claims.act.as_ref(), |a| a.act.as_deref()).count();
        if depth >= CHAIN_MAX {
            return Err(invalid_request(
                "the subject token's chain of actors is too long",
            ));
        }
        let act = Act {
            sub: client.client_id(),
            act: claims.act.clone().map(Box::new),
        };
        let tokens = &self.core.tokens;
        let iat = self.core.clock.now_seconds();
        // Never longer than the subject token.
        let exp = (iat + tokens.access_ttl_seconds()).min(claims.exp);
        let roles = if scope.iter().any(|s| s == scopes::ROLES) {
            claims.roles.clone()
        } else {
            Vec::new()
        };
        let exchanged = AccessClaims {
            iss: tokens.issuer().to_owned(),
            aud: audience.clone(),
            sub: claims.sub,
            sid: claims.sid,
            jti: uuid::Uuid::now_v7(),
            iat,
            exp,
            amr: claims.amr.clone(),
            roles,
            org_id: claims.org_id,
            org_roles: claims.org_roles.clone(),
            client_id: Some(client.client_id()),
            scope: Some(scopes::join(&scope)),
            act: Some(act),
            cnf: super::claims::bound(jkt),
        };
        let access_token = tokens.access_with(&exchanged)?;
        let event = AuditEvent::TokenExchanged {
            client: client.id,
            audience,
            depth: depth + 1,
        };
        let subject = Subject::user(claims.sub).in_session(claims.sid).from(from);
        self.core.audit_in_background(event, subject);
        Ok(TokenAnswer {
            access_token,
            token_type: super::grants::token_type(jkt),
            expires_in: exp - iat,
            scope: scopes::join(&scope),
            id_token: None,
            refresh_token: None,
            issued_token_type: Some(ACCESS_TOKEN_TYPE),
        })
    }

    /// The subject token's claims, while it is good: signed here, unexpired, of a person (not a
    /// client's token for itself), whose session is live and account enabled, judged as every use
    /// of a token is (by the revocations and accounts every instance keeps in memory, current
    /// within 2 s of a change anywhere), so that an exchange waits on no read.
    async fn live_subject(&self, token: &str) -> Outcome<AccessClaims> {
        let refused = || invalid_grant("the subject token is invalid, expired or revoked");
        let tokens = &self.core.tokens;
        let claims = tokens.access_claims_cached(token).map_err(|_| refused())?;
        if claims.client_id.as_deref() == Some(claims.sub.to_string().as_str()) {
            return Err(invalid_grant(
                "the subject token is a client's own: it acts for no person",
            ));
        }
        let profile = self.core.directory.profile(claims.sub).await?;
        if self.core.live.is_revoked(claims.sid) || profile.is_none_or(|p| p.disabled) {
            return Err(refused());
        }
        Ok(claims)
    }

    /// The scopes of the exchanged token: those asked (or, without `scope`, all it may have),
    /// each one the subject token holds (a person's own token holds them all) and the client is
    /// registered for. Never `offline_access`: an exchange issues no refresh token.
    fn exchanged_scope(
        &self,
        client: &Client,
        request: &TokenRequest,
        claims: &AccessClaims,
    ) -> Outcome<Vec<String>> {
        let held: Option<Vec<&str>> = claims.scope.as_deref().map(|s| s.split(' ').collect());
        let may = |s: &str| {
            s != scopes::OFFLINE_ACCESS
                && client.allows_scope(s)
                && held.as_ref().is_none_or(|h| h.contains(&s))
        };
        let catalog = self.core.catalog.current();
        let scope: Vec<String> = match request.scope.as_deref() {
            Some(asked) => {
                let asked = catalog
                    .parse(asked)
                    .map_err(|e| invalid_scope(e.to_string()))?;
                if let Some(wider) = asked.iter().find(|s| !may(s)) {
                    return Err(invalid_scope(format!(
                        "the scope {wider:?} is wider than the subject token's or the client's"
                    )));
                }
                asked
            }
            None => (client.scopes.iter())
                .filter(|s| may(s) && catalog.is_known(s))
                .cloned()
                .collect(),
        };
        if scope.is_empty() {
            return Err(invalid_scope(
                "no scope is both the subject token's and the client's".into(),
            ));
        }
        Ok(scope)
    }
}
