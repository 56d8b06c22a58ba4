//! Personal API keys (docs/api.md §12): a person makes a key for a script or an integration (the
//! password re-checked, as for every new way into the account), lists and deletes their keys; an
//! admin lists and deletes anyone's. A key is `ghk_` and 32 base62 characters from the operating
//! system's generator (190 bits); only its keyed hash is kept (`crypto::Secrets::api_key_hash`),
//! and the key is found by that hash, so no comparison of secret bytes happens in this code.
//! Using a key (`live`) is the bearer calls' and the guard's business.

use std::sync::Arc;

use rand::Rng as _;
use secrecy::SecretString;
use uuid::Uuid;

use super::audit::Operator;
use super::audit::{Actor, AuditEvent, Subject};
use crate::auth::core::Core;
use crate::error::{Conflict, Error, Result};
use crate::mail::Notice;
use crate::model::resources::Catalog;
use crate::model::sessions::ApiScopes;
use crate::model::{ApiKey, ClientInfo, NewApiKey, Principal};
use crate::store::api_keys::NewKeyRecord;

pub mod live;

pub use live::is_api_key;

/// Keys a person may have: each is a standing way into their data, to be accounted for.
pub const MAX_KEYS: i64 = 50;

/// The characters of a key's random part.
const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// Characters of the random part shown in lists (`prefix`).
const PREFIX_SHOWN: usize = 8;

/// A key's label: trimmed, 1–100 characters, no control characters.
#[derive(Debug, Clone)]
pub struct KeyName(String);

impl KeyName {
    pub const MAX_LENGTH: usize = 100;

    pub fn parse(raw: &str) -> Result<KeyName, String> {
        crate::domain::label(raw, Self::MAX_LENGTH, "is required").map(KeyName)
    }
}

/// How long a key lives unless asked otherwise: what the account page offers first, so that a key
/// made by a script is not a standing credential by accident (docs/api.md §12).
pub const DEFAULT_LIFETIME_MS: i64 = 90 * 24 * 3_600_000;

/// When a new key stops working.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expiry {
    /// In `DEFAULT_LIFETIME_MS`.
    Default,
    /// Never: asked for in so many words (`expiresAt: null`).
    Never,
    /// At this time (ms), which must be in the future (checked against the clock here).
    At(i64),
}

/// What a new key is asked to be, its fields checked for form.
pub struct KeyRequest {
    pub name: KeyName,
    /// Empty or absent: the password is not given (the session's re-authentication counts).
    pub password: Option<SecretString>,
    /// The scopes asked for, checked against the business APIs declared now; `None`: all of them.
    pub scopes: Option<Vec<String>>,
    pub expires_at: Expiry,
    pub org_id: Option<Uuid>,
}

/// The scopes a key is asked for: each one of a business API's (the OpenID scopes say things of
/// a person, which a key never asks); absent, every API's.
pub fn parse_scopes(catalog: &Catalog, raw: Option<&[String]>) -> Result<ApiScopes, String> {
    let all: Vec<&str> = catalog.api_scopes().collect();
    let Some(raw) = raw else {
        if all.is_empty() {
            return Err("no business API is declared: there is nothing a key could do".into());
        }
        return Ok(ApiScopes::parse(&all.join(" ")));
    };
    if raw.is_empty() {
        return Err("must name at least one scope".into());
    }
    if let Some(unknown) = raw.iter().find(|s| !all.contains(&s.as_str())) {
        return Err(format!(
            "{unknown:?} is not a scope of a business API ({})",
            all.join(", ")
        ));
    }
    // Known, so only duplicates go.
    let kept = (catalog.parse_names(raw.iter().map(String::as_str))).map_err(|e| e.to_string())?;
    Ok(ApiScopes::parse(&kept.join(" ")))
}

/// A new key: `ghk_` and 32 characters drawn uniformly from base62 by the OS generator.
fn new_key() -> String {
    let mut rng = rand::rngs::OsRng;
    let random: String = (0..live::RANDOM_LENGTH)
        .map(|_| char::from(BASE62[rng.gen_range(0..BASE62.len())]))
        .collect();
    format!("{}{random}", live::PREFIX)
}

/// Personal API keys: made, listed and deleted by their owner (and by admins).
#[derive(Clone)]
pub struct ApiKeys {
    pub(crate) core: Arc<Core>,
}

impl ApiKeys {
    /// Makes a key for the caller. The password is re-checked (within the account's allowance of
    /// failures), or the session's re-authentication stands in for it; a key for an organisation
    /// needs the caller to be its member (else `NOT_FOUND`, as every organisation call answers
    /// someone outside it); the 51st key is a `CONFLICT`.
    pub async fn create(
        &self,
        who: &Principal,
        request: KeyRequest,
        client: &ClientInfo,
    ) -> Result<NewApiKey> {
        let user = self.core.user(who).await?;
        let catalog = self.core.catalog.current();
        let scopes = parse_scopes(&catalog, request.scopes.as_deref())
            .map_err(|why| Error::field("scopes", why))?;
        self.core
            .confirm_owner(&user, who, request.password, "password")
            .await?;
        let now = self.core.clock.now_ms();
        let expires_at = match request.expires_at {
            Expiry::Default => Some(now + DEFAULT_LIFETIME_MS),
            Expiry::Never => None,
            Expiry::At(at) if at <= now => {
                return Err(Error::field("expiresAt", "must be in the future"));
            }
            Expiry::At(at) => Some(at),
        };
        if let Some(org) = request.org_id {
            self.core
                .store
                .membership(org, user.id)
                .await?
                .ok_or(Error::NotFound)?;
        }
        let key = new_key();
        let record = ApiKey {
            id: Uuid::now_v7(),
            user_id: user.id,
            name: request.name.0,
            prefix: key[live::PREFIX.len()..][..PREFIX_SHOWN].to_owned(),
            scopes,
            org_id: request.org_id,
            expires_at,
            created_at: now,
            last_used_at: None,
        };
        let hash = self.core.secrets.api_key_hash(&key);
        let kept = self
            .core
            .store
            .insert_api_key(&NewKeyRecord {
                record: &record,
                key_hash: &hash,
                limit: MAX_KEYS,
            })
            .await?;
        if !kept {
            return Err(Error::Conflict(Conflict::TooManyApiKeys));
        }
        let event = AuditEvent::ApiKeyCreated { key: record.id };
        self.core
            .audit(
                event,
                Subject::user(user.id)
                    .in_session(who.session_id)
                    .from(client),
            )
            .await;
        self.core.notify(&user, Notice::ApiKeyCreated).await;
        Ok(NewApiKey { key, record })
    }

    /// The caller's keys, newest first.
    pub async fn list(&self, who: &Principal) -> Result<Vec<ApiKey>> {
        self.core.store.api_keys_of(who.user_id).await
    }

    /// Deletes one of the caller's keys; another person's is `NOT_FOUND`.
    pub async fn delete(&self, who: &Principal, id: Uuid, client: &ClientInfo) -> Result<()> {
        let user = self.core.user(who).await?;
        if !self.core.store.delete_api_key(user.id, id).await? {
            return Err(Error::NotFound);
        }
        self.core.keys.forget(id);
        let event = AuditEvent::ApiKeyDeleted {
            key: id,
            by: Actor::Owner,
        };
        self.core
            .audit(
                event,
                Subject::user(user.id)
                    .in_session(who.session_id)
                    .from(client),
            )
            .await;
        self.core.notify(&user, Notice::ApiKeyDeleted).await;
        Ok(())
    }

    /// The caller of a business call with a personal API key: the owner, within the key's
    /// scopes and in its organisation (`Principal::api_key` set, so that no call of the
    /// person's own accepts it). The use is noted (`last_used_at`, a new address audited).
    pub async fn authenticate(&self, key: &str, client: &ClientInfo) -> Result<Principal> {
        let live = self.core.live_key(key).await?;
        self.core.key_used(&live.key, Some(client)).await;
        Ok(live.principal())
    }

    /// An account's keys, newest first (an admin's read, audited).
    pub async fn keys_of(&self, op: Operator<'_>, user: Uuid) -> Result<Vec<ApiKey>> {
        self.core
            .store
            .user_by_id(user)
            .await?
            .ok_or(Error::NotFound)?;
        let keys = self.core.store.api_keys_of(user).await?;
        let event = AuditEvent::AdminRead(super::audit::AdminRead::ApiKeys);
        self.core.audit_by(op, event, Some(user)).await;
        Ok(keys)
    }

    /// Deletes an account's key (an admin's action): the owner is told by mail.
    pub async fn delete_for(&self, op: Operator<'_>, user: Uuid, id: Uuid) -> Result<()> {
        let owner = self
            .core
            .store
            .user_by_id(user)
            .await?
            .ok_or(Error::NotFound)?;
        if !self.core.store.delete_api_key(user, id).await? {
            return Err(Error::NotFound);
        }
        self.core.keys.forget(id);
        let event = AuditEvent::ApiKeyDeleted {
            key: id,
            by: op.actor(),
        };
        self.core.audit_by(op, event, Some(user)).await;
        self.core.notify(&owner, Notice::ApiKeyDeleted).await;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_keys_are_ghk_and_32_base62_characters() {
        let a = new_key();
        assert_eq!(a.len(), 36);
        assert!(a.starts_with("ghk_"));
        assert!(a[4..].bytes().all(|b| b.is_ascii_alphanumeric()));
        assert_ne!(a, new_key());
    }

    #[test]
    fn scopes_are_the_business_apis_only() {
        let catalog = Catalog::new(vec![crate::model::Resource::contacts_example()]);
        let all = parse_scopes(&catalog, None).unwrap();
        assert_eq!(all.scope_string(), "contacts:read contacts:write");
        let read = parse_scopes(&catalog, Some(&["contacts:read".into()])).unwrap();
        assert_eq!(read.scope_string(), "contacts:read");
        assert!(parse_scopes(&catalog, Some(&[])).is_err());
        assert!(parse_scopes(&catalog, Some(&["openid".into()])).is_err());
        assert!(parse_scopes(&Catalog::default(), None).is_err());
    }

    #[test]
    fn names_are_trimmed_and_bounded() {
        assert_eq!(KeyName::parse("  CI  ").unwrap().0, "CI");
        assert!(KeyName::parse(" ").is_err());
        assert!(KeyName::parse(&"x".repeat(101)).is_err());
        assert!(KeyName::parse(&"x".repeat(100)).is_ok());
        assert!(KeyName::parse("a\nb").is_err());
    }
}
