//! What the provider's tokens say: a client's access token, the ID token (OpenID Connect Core
//! §2), and the claims of the granted scopes that the ID token and userinfo share.

use serde::Serialize;
use uuid::Uuid;

use super::{Provider, scopes};
use crate::auth::tokens::AccessClaims;
use crate::error::{Error, Result};
use crate::model::orgs::Membership;
use crate::model::{Client, ClientGrant, Session, User};

/// An ID token lives at most this long (docs/api.md §11: ≤ 1 h).
const ID_TOKEN_TTL_S: i64 = 3600;
/// The ID token's `typ` (OpenID Connect does not register one; `JWT` is what libraries expect).
const ID_TOKEN_TYP: &str = "JWT";

/// The claims of the granted scopes (OpenID Connect Core §5.4), each present only with its scope.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ScopeClaims {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Seconds since the epoch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub email_verified: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub roles: Option<Vec<String>>,
}

#[derive(Serialize)]
struct IdClaims<'a> {
    iss: &'a str,
    sub: String,
    aud: String,
    azp: String,
    exp: i64,
    iat: i64,
    auth_time: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    nonce: Option<&'a str>,
    amr: &'a [String],
    sid: String,
    at_hash: String,
    #[serde(flatten)]
    scoped: ScopeClaims,
}

/// The answer of userinfo: `sub` and the claims of the token's scopes.
#[derive(Debug, Clone, Serialize)]
pub struct UserInfo {
    pub sub: String,
    #[serde(flatten)]
    pub claims: ScopeClaims,
}

/// Why userinfo refused (RFC 6750 §3.1).
#[derive(Debug)]
pub enum UserInfoError {
    /// 401 `invalid_token`: expired, revoked, malformed, not ours, the account gone.
    InvalidToken,
    /// 403 `insufficient_scope`: the token was not granted `openid`.
    InsufficientScope,
    Failed(Error),
}

/// The confirmation of a token bound to the DPoP key `jkt` (RFC 9449 §6); `None`: a bearer token.
pub(super) fn bound(jkt: Option<&str>) -> Option<crate::auth::tokens::Cnf> {
    jkt.map(|jkt| crate::auth::tokens::Cnf {
        jkt: jkt.to_owned(),
    })
}

impl Provider {
    /// The claims of `scope` for `user`.
    pub(super) async fn scope_claims(&self, user: &User, scope: &[String]) -> Result<ScopeClaims> {
        let has = |s: &str| scope.iter().any(|g| g == s);
        let mut claims = ScopeClaims::default();
        if has(scopes::PROFILE) {
            claims.name = Some(user.full_name.clone());
            let updated = self.core.store.user_updated_at(user.id).await?;
            claims.updated_at = Some(updated.unwrap_or(user.created_at) / 1000);
        }
        if has(scopes::EMAIL) {
            claims.email = Some(user.email.clone());
            claims.email_verified = Some(user.email_verified);
        }
        if has(scopes::ROLES) {
            claims.roles = Some(user.roles.clone());
        }
        Ok(claims)
    }

    /// An access token of a client's session (RFC 9068): §2's claims, plus `client_id` and `scope`
    /// (`scope`: the granted scopes, or fewer when a refresh narrowed them). The account's roles
    /// travel only with the `roles` scope.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn client_access_token(
        &self,
        client_id: &str,
        user: &User,
        session: &Session,
        grant: &ClientGrant,
        scope: &[String],
        org: Option<&Membership>,
        jkt: Option<&str>,
    ) -> Result<String> {
        let iat = self.core.clock.now_seconds();
        let tokens = &self.core.tokens;
        let roles = if scope.iter().any(|s| s == scopes::ROLES) {
            user.roles.clone()
        } else {
            Vec::new()
        };
        tokens.access_with(&AccessClaims {
            iss: tokens.issuer().to_owned(),
            aud: grant
                .audience
                .clone()
                .unwrap_or_else(|| tokens.audience().to_owned()),
            sub: user.id,
            sid: session.id,
            jti: Uuid::now_v7(),
            iat,
            exp: iat + tokens.access_ttl_seconds(),
            amr: session.amr.clone(),
            roles,
            org_id: org.map(|m| m.org_id),
            org_roles: org.map(|m| m.roles.clone()).unwrap_or_default(),
            client_id: Some(client_id.to_owned()),
            scope: Some(scopes::join(scope)),
            act: None,
            cnf: bound(jkt),
        })
    }

    /// An access token for a client itself (`client_credentials`): `sub` is the client, and no
    /// session stands behind it (`sid` names only this token's issue). A client bound to an
    /// organisation names it (docs/api.md §13); it holds no roles there. `resource`: the RFC 8707
    /// resource asked for, already checked; `None`: `GATEHOUSE_AUDIENCE`.
    pub(super) fn client_only_token(
        &self,
        client: &Client,
        scope: &[String],
        resource: Option<&str>,
        jkt: Option<&str>,
    ) -> Result<String> {
        let iat = self.core.clock.now_seconds();
        let tokens = &self.core.tokens;
        tokens.access_with(&AccessClaims {
            iss: tokens.issuer().to_owned(),
            aud: resource.unwrap_or(tokens.audience()).to_owned(),
            sub: client.id,
            sid: Uuid::now_v7(),
            jti: Uuid::now_v7(),
            iat,
            exp: iat + tokens.access_ttl_seconds(),
            amr: Vec::new(),
            roles: Vec::new(),
            org_id: client.org_id,
            org_roles: Vec::new(),
            client_id: Some(client.id.to_string()),
            scope: Some(scopes::join(scope)),
            act: None,
            cnf: bound(jkt),
        })
    }

    /// The ID token of a client's session, signed with the client's algorithm, bound to its access
    /// token by `at_hash`.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn id_token(
        &self,
        client: &Client,
        user: &User,
        session: &Session,
        grant: &ClientGrant,
        scope: &[String],
        nonce: Option<&str>,
        access_token: &str,
    ) -> Result<String> {
        let tokens = &self.core.tokens;
        let iat = self.core.clock.now_seconds();
        let claims = IdClaims {
            iss: tokens.issuer(),
            sub: user.id.to_string(),
            aud: client.client_id(),
            azp: client.client_id(),
            exp: iat + ID_TOKEN_TTL_S,
            iat,
            auth_time: grant.auth_time / 1000,
            nonce,
            amr: &session.amr,
            sid: session.id.to_string(),
            at_hash: crate::auth::keys::at_hash(client.id_token_alg, access_token),
            scoped: self.scope_claims(user, scope).await?,
        };
        tokens.sign_with(client.id_token_alg, ID_TOKEN_TYP, &claims)
    }

    /// `GET|POST /oauth2/userinfo`: the claims of an access token's scopes, for a token granted
    /// `openid` whose session is live.
    pub async fn userinfo(
        &self,
        access_token: &str,
    ) -> std::result::Result<UserInfo, UserInfoError> {
        let claims = self
            .core
            .tokens
            .access_claims_cached(access_token)
            .map_err(|_| UserInfoError::InvalidToken)?;
        if self.core.live.is_revoked(claims.sid) {
            return Err(UserInfoError::InvalidToken);
        }
        let scope: Vec<String> = claims
            .scope
            .as_deref()
            .unwrap_or_default()
            .split(' ')
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect();
        let client_only = claims.client_id.as_deref() == Some(claims.sub.to_string().as_str());
        if client_only || !scope.iter().any(|s| s == scopes::OPENID) {
            return Err(UserInfoError::InsufficientScope);
        }
        let user = self
            .core
            .store
            .user_by_id(claims.sub)
            .await
            .map_err(UserInfoError::Failed)?
            .filter(|u| !u.disabled)
            .ok_or(UserInfoError::InvalidToken)?;
        self.core.live.used(claims.sid);
        Ok(UserInfo {
            sub: user.id.to_string(),
            claims: self
                .scope_claims(&user, &scope)
                .await
                .map_err(UserInfoError::Failed)?,
        })
    }
}
