//! Dynamic client registration (RFC 7591, docs/api.md §12): `POST /oauth2/register` under
//! `GATEHOUSE_OAUTH_REGISTRATION` (`off`, `token`, `open`), and the initial access tokens of
//! `token` mode.
//!
//! An initial access token registers one client. A token is a credential handed to one developer
//! for one client; were it reusable until it expires, one leaked token would let anyone fill the
//! registry for its whole lifetime. Single use bounds a leak to one third-party client (which
//! still needs each person's consent), and the operator can see which client each token made.

use std::net::IpAddr;

use uuid::Uuid;

use super::Clients;
use super::metadata::{self, ClientMetadata, MetadataRefused, metadata_error};
use crate::auth::audit::Operator;
use crate::auth::audit::{AuditEvent, Subject};
use crate::config::RegistrationMode;
use crate::crypto::random_token;
use crate::error::{Error, Result};
use crate::model::{Client, ClientOrigin};
use crate::provider::{OAuthError, OAuthFailure};
use crate::store::registration_tokens::NewRegistrationToken;

/// An initial access token's lifetime without `--ttl`.
pub const TOKEN_TTL_DEFAULT_MS: i64 = 24 * 3_600_000;
/// The longest lifetime one may be given.
pub const TOKEN_TTL_MAX_MS: i64 = 30 * 24 * 3_600_000;

/// Context of the keyed hash of initial access tokens (distinct from every client id's).
const TOKEN_HASH_CONTEXT: &[u8] = b"gatehouse initial access token";

/// An initial access token, shown once.
#[derive(Debug)]
pub struct RegistrationToken {
    pub token: String,
    pub expires_at: i64,
}

/// A client that registered itself.
#[derive(Debug)]
pub struct Registered {
    pub client: Client,
    /// A confidential client's secret, shown once.
    pub secret: Option<String>,
    pub auth_method: &'static str,
}

impl From<MetadataRefused> for OAuthFailure {
    fn from(r: MetadataRefused) -> Self {
        OAuthFailure::refused(r.error, r.description)
    }
}

impl Clients {
    /// Makes an initial access token that lives `ttl_ms` (`None`: a day).
    pub async fn registration_token(
        &self,
        op: Operator<'_>,
        ttl_ms: Option<i64>,
    ) -> Result<RegistrationToken> {
        let ttl = ttl_ms.unwrap_or(TOKEN_TTL_DEFAULT_MS);
        if !(1_000..=TOKEN_TTL_MAX_MS).contains(&ttl) {
            return Err(Error::field("ttl", "must be from 1 second to 30 days"));
        }
        let token = random_token();
        let now = self.core.clock.now_ms();
        let hash = self.token_hash(&token);
        let created_by = match op {
            Operator::Admin { who, .. } => Some(who.user_id),
            Operator::Cli => None,
        };
        self.core
            .store
            .insert_registration_token(&NewRegistrationToken {
                id: Uuid::now_v7(),
                token_hash: &hash,
                created_at: now,
                expires_at: now + ttl,
                created_by,
            })
            .await?;
        self.core
            .audit_by(
                op,
                AuditEvent::RegistrationTokenIssued { by: op.actor() },
                None,
            )
            .await;
        Ok(RegistrationToken {
            token,
            expires_at: now + ttl,
        })
    }

    /// Whether dynamic registration is on, and how.
    pub fn registration_mode(&self) -> RegistrationMode {
        self.core.settings.client_registration.mode
    }

    /// Registers the client `meta` describes. `bearer`: the request's initial access token, if
    /// any. `NotFound` with registration off; `invalid_token` without a usable token in `token`
    /// mode; `invalid_redirect_uri` / `invalid_client_metadata` for metadata refused;
    /// `RATE_LIMITED` past the address's allowance.
    pub async fn register(
        &self,
        meta: ClientMetadata,
        bearer: Option<&str>,
        ip: Option<IpAddr>,
    ) -> std::result::Result<Registered, OAuthFailure> {
        let mode = self.registration_mode();
        if mode == RegistrationMode::Off {
            return Err(Error::NotFound.into());
        }
        if mode == RegistrationMode::Token && bearer.is_none() {
            return Err(OAuthFailure::refused(
                OAuthError::InvalidToken,
                "an initial access token is required (Authorization: Bearer …)",
            ));
        }
        self.core.throttle.client_registration_from(ip)?;
        let auth_method = metadata::auth_method(&meta)?;
        let fallback = meta
            .redirect_uris
            .as_ref()
            .and_then(|uris| uris.first())
            .and_then(|u| url::Url::parse(u).ok())
            .and_then(|u| u.host_str().map(str::to_owned))
            .unwrap_or_else(|| "Unnamed client".to_owned());
        let catalog = self.core.catalog.current();
        let new = metadata::new_client(&meta, auth_method, &fallback, &catalog)?;
        let checked = new.check(true, &catalog).map_err(refusal)?;
        if self.copies_operator_name(&checked.name).await? {
            return Err(metadata_error(super::COPIED_NAME).into());
        }
        let id = Uuid::now_v7();
        let now = self.core.clock.now_ms();
        if let (RegistrationMode::Token, Some(token)) = (mode, bearer) {
            // Checked and spent in one statement, and only once the metadata is good: a
            // developer's typo does not cost their token.
            let hash = self.token_hash(token);
            if !self
                .core
                .store
                .use_registration_token(&hash, id, now)
                .await?
            {
                return Err(OAuthFailure::refused(
                    OAuthError::InvalidToken,
                    "the initial access token is unknown, expired or already used",
                ));
            }
        }
        let (client, secret) = self
            .insert_checked(id, checked, None, ClientOrigin::Registered, now)
            .await?;
        let event = AuditEvent::ClientRegistered {
            client: client.id,
            origin: ClientOrigin::Registered.as_str(),
        };
        self.core.audit(event, Subject::anyone()).await;
        Ok(Registered {
            client,
            secret,
            auth_method,
        })
    }

    fn token_hash(&self, token: &str) -> [u8; 32] {
        self.core
            .secrets
            .client_secret_hash(TOKEN_HASH_CONTEXT, token)
    }
}

/// A `VALIDATION_ERROR` of the registry's own checks as RFC 7591 names it.
pub(super) fn refusal(error: Error) -> OAuthFailure {
    match error {
        Error::Validation(fields) => {
            let description = fields
                .iter()
                .map(|(field, why)| format!("{field}: {why}"))
                .collect::<Vec<_>>()
                .join("; ");
            let redirect = fields
                .keys()
                .any(|f| f.to_ascii_lowercase().contains("redirecturis"));
            if redirect {
                OAuthFailure::refused(OAuthError::InvalidRedirectUri, description)
            } else {
                metadata_error(description).into()
            }
        }
        other => other.into(),
    }
}
