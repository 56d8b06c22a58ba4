//! The token endpoint's grants (docs/api.md §11, RFC 6749 §4.1.3, §6, §4.4): which grant a request
//! asks for, the refresh of a client's session by §2's rotation, a client's token for itself, and
//! the tokens every grant answers with. The code exchange is `code_exchange`, the device code's
//! collection `device`, the token exchange `exchange`.

use super::{OAuthError, OAuthFailure, Provider, scopes};
use crate::error::Error;
use crate::model::orgs::Membership;
use crate::model::{Client, ClientGrant, ClientInfo, GrantType, RefreshRecord, Session, User};

pub(super) type Outcome<T> = std::result::Result<T, OAuthFailure>;

/// A token request's parameters (the client is authenticated already).
#[derive(Debug, Clone, Default)]
pub struct TokenRequest {
    pub grant_type: Option<String>,
    pub code: Option<String>,
    pub redirect_uri: Option<String>,
    pub code_verifier: Option<String>,
    pub refresh_token: Option<String>,
    pub scope: Option<String>,
    pub resource: Option<String>,
    /// RFC 8628 §3.4.
    pub device_code: Option<String>,
    /// The request's `DPoP` header (RFC 9449 §4): a proof of the key its tokens are to be bound
    /// to.
    pub dpop: Option<String>,
    /// RFC 8693 §2.1.
    pub subject_token: Option<String>,
    pub subject_token_type: Option<String>,
    pub actor_token: Option<String>,
    pub requested_token_type: Option<String>,
}

/// RFC 6749 §5.1.
#[derive(Debug, Clone)]
pub struct TokenAnswer {
    pub access_token: String,
    /// `Bearer`, or `DPoP` for tokens bound to the proof's key.
    pub token_type: &'static str,
    pub expires_in: i64,
    pub scope: String,
    pub id_token: Option<String>,
    pub refresh_token: Option<String>,
    /// RFC 8693 §2.2.1: with a token exchange.
    pub issued_token_type: Option<&'static str>,
}

/// RFC 9449 §5: `DPoP` for tokens bound to a key.
pub(super) fn token_type(jkt: Option<&str>) -> &'static str {
    if jkt.is_some() { "DPoP" } else { "Bearer" }
}

pub(super) fn invalid_grant(description: &str) -> OAuthFailure {
    OAuthFailure::refused(OAuthError::InvalidGrant, description)
}

fn invalid_target(description: &str) -> OAuthFailure {
    OAuthFailure::refused(OAuthError::InvalidTarget, description)
}

/// RFC 8707 §2.2: a token request's `resource` may only name the audience its authorization was
/// given for (`granted`; `None`: `GATEHOUSE_AUDIENCE`), never switch a grant to another server.
pub(super) fn same_target(
    request: &TokenRequest,
    granted: Option<&str>,
    audience: &str,
) -> Outcome<()> {
    match request.resource.as_deref() {
        Some(asked) if asked != granted.unwrap_or(audience) => Err(invalid_target(
            "resource is not the one this authorization was given for",
        )),
        _ => Ok(()),
    }
}

/// The scopes of `scope` the client is still registered for; none left is `invalid_grant`.
pub(super) fn still_allowed(client: &Client, scope: Vec<String>) -> Outcome<Vec<String>> {
    let kept: Vec<String> = scope
        .into_iter()
        .filter(|s| client.allows_scope(s))
        .collect();
    if kept.is_empty() {
        return Err(invalid_grant(
            "the client is no longer registered for any of the authorization's scopes",
        ));
    }
    Ok(kept)
}

pub(super) fn required<'a>(value: &'a Option<String>, name: &str) -> Outcome<&'a str> {
    value.as_deref().ok_or_else(|| {
        OAuthFailure::refused(OAuthError::InvalidRequest, format!("{name} is required"))
    })
}

impl Provider {
    /// The grant `request` asks for, by `client` (authenticated by its secret, or a public client
    /// named by its id).
    pub async fn token(
        &self,
        client: &Client,
        request: &TokenRequest,
        from: &ClientInfo,
    ) -> Outcome<TokenAnswer> {
        let grant = required(&request.grant_type, "grant_type")?;
        let Some(grant) = GrantType::parse(grant) else {
            return Err(OAuthFailure::refused(
                OAuthError::UnsupportedGrantType,
                format!("grant_type {grant:?} is not supported"),
            ));
        };
        let needs_secret = matches!(
            grant,
            GrantType::ClientCredentials | GrantType::TokenExchange
        );
        if !client.has_grant(grant) || (needs_secret && client.is_public()) {
            return Err(OAuthFailure::refused(
                OAuthError::UnauthorizedClient,
                "the client may not use this grant",
            ));
        }
        if let Some(resource) = &request.resource {
            if !self.core.tokens.issues_for(resource) {
                return Err(invalid_target(
                    "resource is not a resource server this service issues tokens for",
                ));
            }
        }
        let jkt = self.proof_at_token_endpoint(client, request).await?;
        let jkt = jkt.as_deref();
        match grant {
            GrantType::AuthorizationCode => self.exchange_code(client, request, from, jkt).await,
            GrantType::RefreshToken => self.refresh(client, request, from, jkt).await,
            GrantType::ClientCredentials => self.client_credentials(client, request, jkt),
            GrantType::DeviceCode => self.device_grant(client, request, from, jkt).await,
            GrantType::TokenExchange => self.exchange_token(client, request, from, jkt).await,
        }
    }

    /// The key the tokens are to be bound to: the thumbprint of the `DPoP` proof's (RFC 9449 §5),
    /// checked for `POST` at the token endpoint; `None` without a proof (bearer tokens).
    async fn proof_at_token_endpoint(
        &self,
        client: &Client,
        request: &TokenRequest,
    ) -> Outcome<Option<String>> {
        let Some(proof) = request.dpop.as_deref() else {
            if client.dpop_required {
                return Err(OAuthFailure::refused(
                    OAuthError::InvalidDpopProof,
                    "this client must prove its key with a DPoP proof (RFC 9449)",
                ));
            }
            return Ok(None);
        };
        let url = format!("{}/oauth2/token", self.core.settings.public_url);
        let htu = |htu: &str| crate::auth::dpop::same_target(htu, &url);
        let checked = crate::auth::dpop::Request {
            method: "POST",
            htu: &htu,
            access_token: None,
        };
        let proof = match self.core.dpop_proof(proof, &checked).await? {
            Ok(proof) => proof,
            Err(bad) => return Err(OAuthFailure::refused(OAuthError::InvalidDpopProof, bad.0)),
        };
        let nonce_ok = |n: &String| self.core.dpop_nonce_ok(n);
        if self.core.settings.client_registration.dpop_nonce
            && !proof.nonce.as_ref().is_some_and(nonce_ok)
        {
            return Err(OAuthFailure::refused(
                OAuthError::UseDpopNonce,
                "the DPoP proof must carry the nonce of the DPoP-Nonce header",
            ));
        }
        Ok(Some(proof.jkt))
    }

    /// The nonce the token endpoint's answers give (`DPoP-Nonce`) while
    /// `GATEHOUSE_OAUTH_DPOP_NONCE=required`; `None` otherwise.
    pub fn dpop_nonce(&self) -> Option<String> {
        (self.core.settings.client_registration.dpop_nonce).then(|| self.core.dpop_nonce())
    }

    async fn refresh(
        &self,
        client: &Client,
        request: &TokenRequest,
        from: &ClientInfo,
        jkt: Option<&str>,
    ) -> Outcome<TokenAnswer> {
        let token = required(&request.refresh_token, "refresh_token")?;
        // A refresh token bound to a key (a public client's, RFC 9449 §5) is renewed only with a
        // proof by that key: checked before the rotation, so that a copied token presented
        // without the key does not use it up for its owner.
        if let Ok(claims) = self.core.tokens.verify_refresh(token) {
            if claims.cnf.is_some_and(|c| Some(c.jkt.as_str()) != jkt) {
                return Err(invalid_grant(
                    "the refresh token is bound to a DPoP key: a proof by that key is required",
                ));
            }
        }
        let renewed = match self.sessions.renew(token, from, Some(client.id)).await {
            Ok(renewed) => renewed,
            Err(
                error @ (Error::Internal(_) | Error::Unavailable(_) | Error::Overloaded { .. }),
            ) => {
                return Err(error.into());
            }
            Err(_) => {
                return Err(invalid_grant(
                    "the refresh token is invalid, expired, revoked or not this client's",
                ));
            }
        };
        let Some(grant) = renewed.session.grant.clone() else {
            return Err(invalid_grant("the refresh token is not a client's"));
        };
        same_target(
            request,
            grant.audience.as_deref(),
            self.core.tokens.audience(),
        )?;
        // RFC 6749 §6: narrower, never wider than the authorization's.
        let scope = match request.scope.as_deref() {
            None => grant.scope.clone(),
            Some(asked) => {
                let asked = (self.core.catalog.current().parse(asked))
                    .map_err(|e| OAuthFailure::refused(OAuthError::InvalidScope, e.to_string()))?;
                if asked.is_empty() || !scopes::all_within(&asked, &grant.scope) {
                    return Err(OAuthFailure::refused(
                        OAuthError::InvalidScope,
                        "the scope may be narrowed, never widened beyond the authorization's",
                    ));
                }
                asked
            }
        };
        // A scope the operator has taken from the client since is issued no more, to the end of
        // the authorization (docs/api.md §11): the client's registration is read within
        // `CLIENT_CACHE_MS`, so the change reaches every instance's next refresh.
        let scope = still_allowed(client, scope)?;
        // As a person's refresh keeps their active organisation while they are its member
        // (docs/api.md §13); a client bound to it has no use without it.
        let org = self.core.kept_org(&renewed.session).await?;
        if client.org_id.is_some() && org.is_none() {
            return Err(invalid_grant(
                "the person is no longer a member of the client's organisation",
            ));
        }
        self.answer(
            client,
            &renewed.user,
            &renewed.session,
            &grant,
            &scope,
            None,
            Some(&renewed.refresh),
            org.as_ref(),
            jkt,
        )
        .await
    }

    fn client_credentials(
        &self,
        client: &Client,
        request: &TokenRequest,
        jkt: Option<&str>,
    ) -> Outcome<TokenAnswer> {
        // Scopes about a person mean nothing for a client's token for itself.
        let personal = scopes::PERSONAL;
        let catalog = self.core.catalog.current();
        let scope: Vec<String> = match request.scope.as_deref() {
            None => client
                .scopes
                .iter()
                .filter(|s| !personal.contains(&s.as_str()) && catalog.is_known(s))
                .cloned()
                .collect(),
            Some(asked) => {
                let asked = catalog
                    .parse(asked)
                    .map_err(|e| OAuthFailure::refused(OAuthError::InvalidScope, e.to_string()))?;
                if let Some(s) = asked
                    .iter()
                    .find(|s| personal.contains(&s.as_str()) || !client.allows_scope(s))
                {
                    return Err(OAuthFailure::refused(
                        OAuthError::InvalidScope,
                        format!("the scope {s:?} cannot be granted to this client by itself"),
                    ));
                }
                asked
            }
        };
        // One API's token (RFC 8707): its audience, or the one asked for.
        let audience = super::authorize::target(&catalog, &scope, request.resource.as_deref())
            .map_err(OAuthFailure::from)?;
        Ok(TokenAnswer {
            access_token: self.client_only_token(client, &scope, audience.as_deref(), jkt)?,
            token_type: token_type(jkt),
            expires_in: self.core.tokens.access_ttl_seconds(),
            scope: scopes::join(&scope),
            id_token: None,
            refresh_token: None,
            issued_token_type: None,
        })
    }

    /// The tokens of a client's session: the access token, the ID token with `openid`, the
    /// refresh token of `refresh` when the grant has `offline_access`.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn answer(
        &self,
        client: &Client,
        user: &User,
        session: &Session,
        grant: &ClientGrant,
        scope: &[String],
        nonce: Option<&str>,
        refresh: Option<&RefreshRecord>,
        org: Option<&Membership>,
        jkt: Option<&str>,
    ) -> Outcome<TokenAnswer> {
        let client_id = client.client_id();
        let access_token =
            self.client_access_token(&client_id, user, session, grant, scope, org, jkt)?;
        let id_token = if scope.iter().any(|s| s == scopes::OPENID) {
            Some(
                self.id_token(client, user, session, grant, scope, nonce, &access_token)
                    .await?,
            )
        } else {
            None
        };
        let refresh_token = match refresh {
            Some(r) if grant.has_scope(scopes::OFFLINE_ACCESS) => Some(self.core.tokens.refresh(
                user.id,
                r,
                Some(client.id),
                // A confidential client proves itself by its secret at every refresh; a public
                // client's refresh token is bound to its key (RFC 9449 §5).
                jkt.filter(|_| client.is_public()),
            )?),
            _ => None,
        };
        Ok(TokenAnswer {
            access_token,
            token_type: token_type(jkt),
            expires_in: self.core.tokens.access_ttl_seconds(),
            scope: scopes::join(scope),
            id_token,
            refresh_token,
            issued_token_type: None,
        })
    }
}
