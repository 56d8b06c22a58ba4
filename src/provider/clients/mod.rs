//! The client registry of the OpenID provider (docs/api.md §11), whose confidential clients are
//! also the services registered to introspect tokens (§6). An operator adds one with `gatehouse
//! clients add` or the admin API and is shown its secret once; the database keeps only a keyed
//! hash of it. Every instance reads a client again within `CLIENT_CACHE_MS` of a change.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use subtle::ConstantTimeEq as _;
use uuid::Uuid;

use crate::auth::Core;
use crate::auth::audit::Operator;
use crate::auth::audit::{AdminRead, AuditEvent};
use crate::crypto::random_token;
use crate::error::{Error, Result};
use crate::fetch::Fetcher;
use crate::model::{Client, ClientOrigin, ClientType};

mod documents;
mod metadata;
mod names;
mod registration;
mod spec;

pub use metadata::ClientMetadata;
pub use spec::{ClientChanges, NewClient};

/// How long a rotated secret keeps working beside the new one unless the operator says: a day,
/// for the relying party's operators to put the new one in place.
pub const SECRET_OVERLAP_DEFAULT_MS: i64 = 24 * 3_600_000;
/// The longest overlap: a leaked secret must not be good for long after its rotation.
pub const SECRET_OVERLAP_MAX_MS: i64 = 30 * 24 * 3_600_000;

/// A new secret, shown once, and until when (ms) the previous one still works.
#[derive(Debug)]
pub struct RotatedSecret {
    pub secret: String,
    pub previous_until: i64,
}

/// Why a self-registered client may not have the name it asked for.
const COPIED_NAME: &str = "client_name is the name of an application this service's operator \
                           registered: a client that registers itself must be named as itself";

/// How long a client read from the database is believed without reading it again: a guarded
/// service introspects on every request, and a database read per call cost about half of an
/// introspection's time (BENCHMARKS.md). A removed or changed client is seen so everywhere within
/// this.
pub const CLIENT_CACHE_MS: i64 = 1_000;

/// Clients remembered at most; past that the table starts over.
const CLIENT_CACHE_CAPACITY: usize = 10_000;

/// Registered clients recently read, by id, with the time they were read (ms). Unknown ids are
/// never remembered, so guessing cannot fill the table.
#[derive(Default)]
struct KnownClients(Mutex<HashMap<Uuid, (Client, i64)>>);

impl KnownClients {
    fn get(&self, id: Uuid, now: i64) -> Option<Client> {
        let known = self.0.lock().unwrap_or_else(|e| e.into_inner());
        known
            .get(&id)
            .filter(|(_, read_at)| now - read_at < CLIENT_CACHE_MS)
            .map(|(client, _)| client.clone())
    }

    fn put(&self, client: &Client, now: i64) {
        let mut known = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if known.len() >= CLIENT_CACHE_CAPACITY {
            known.clear();
        }
        known.insert(client.id, (client.clone(), now));
    }

    fn forget(&self, id: Uuid) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
    }
}

/// The registered clients, and those recently read.
#[derive(Clone)]
pub struct Clients {
    pub(super) core: Arc<Core>,
    known: Arc<KnownClients>,
    /// Fetches client metadata documents (`crate::fetch`: the SSRF rules).
    fetcher: Arc<Fetcher>,
}

impl Clients {
    pub(crate) fn new(core: Arc<Core>) -> Clients {
        let fetcher = Arc::new(Fetcher::new(
            core.settings.client_registration.insecure_loopback,
        ));
        Clients {
            core,
            known: Arc::default(),
            fetcher,
        }
    }

    /// Registers a client; returns it and, for a confidential client, its secret, which is not
    /// kept and cannot be shown again.
    pub async fn create(
        &self,
        op: Operator<'_>,
        new: NewClient,
    ) -> Result<(Client, Option<String>)> {
        let asked_grants = new.grant_types.is_some();
        let org_id = new.org_id;
        let checked = new.check(asked_grants, &self.core.catalog.current())?;
        if let Some(org) = org_id {
            if self.core.store.org(org).await?.is_none() {
                return Err(Error::field("orgId", "is not an organisation"));
            }
        }
        let now = self.core.clock.now_ms();
        let (client, secret) = self
            .insert_checked(Uuid::now_v7(), checked, org_id, ClientOrigin::Operator, now)
            .await?;
        let id = client.id;
        let event = AuditEvent::ClientAdded {
            client: id,
            by: op.actor(),
        };
        self.core.audit_by(op, event, None).await;
        Ok((client, secret))
    }

    /// Writes a checked client, with a secret when it is confidential.
    pub(super) async fn insert_checked(
        &self,
        id: Uuid,
        checked: spec::Checked,
        org_id: Option<Uuid>,
        origin: ClientOrigin,
        now: i64,
    ) -> Result<(Client, Option<String>)> {
        let secret = (checked.client_type == ClientType::Confidential).then(random_token);
        let secret_hash = secret.as_deref().map_or_else(Vec::new, |s| {
            self.core
                .secrets
                .client_secret_hash(id.as_bytes(), s)
                .to_vec()
        });
        let client = Client {
            id,
            name: checked.name,
            client_type: checked.client_type,
            first_party: checked.first_party,
            secret_hash,
            redirect_uris: checked.redirect_uris,
            post_logout_redirect_uris: checked.post_logout_redirect_uris,
            grant_types: checked.grant_types,
            scopes: checked.scopes,
            backchannel_logout_uri: checked.backchannel_logout_uri,
            id_token_alg: checked.id_token_alg,
            created_at: now,
            org_id,
            updated_at: now,
            // Only an operator designates a resource server that reads others' tokens, and lets
            // a client off PKCE.
            introspection: checked.introspection && origin == ClientOrigin::Operator,
            pkce_required: checked.pkce_required || origin != ClientOrigin::Operator,
            dpop_required: checked.dpop_required,
            previous_secret: None,
            origin,
        };
        self.core.store.insert_client(&client).await?;
        Ok((client, secret))
    }

    /// Every client, oldest first.
    pub async fn list(&self, op: Operator<'_>) -> Result<Vec<Client>> {
        let clients = self.core.store.clients().await?;
        self.admin_read(op).await;
        Ok(clients)
    }

    /// One client, read now (`NotFound` without it).
    pub async fn get(&self, op: Operator<'_>, id: Uuid) -> Result<Client> {
        let client = self.core.store.client(id).await?.ok_or(Error::NotFound)?;
        self.admin_read(op).await;
        Ok(client)
    }

    /// Changes a client; the whole client is checked again. `NotFound` without it.
    pub async fn update(
        &self,
        op: Operator<'_>,
        id: Uuid,
        changes: ClientChanges,
    ) -> Result<Client> {
        let current = self.core.store.client(id).await?.ok_or(Error::NotFound)?;
        let asked_grants = changes.grant_types.is_some() || changes.redirect_uris.is_some();
        let catalog = self.core.catalog.current();
        let checked = changes.over(&current)?.check(asked_grants, &catalog)?;
        let client = Client {
            name: checked.name,
            first_party: checked.first_party,
            redirect_uris: checked.redirect_uris,
            post_logout_redirect_uris: checked.post_logout_redirect_uris,
            grant_types: checked.grant_types,
            scopes: checked.scopes,
            backchannel_logout_uri: checked.backchannel_logout_uri,
            id_token_alg: checked.id_token_alg,
            introspection: checked.introspection && current.origin == ClientOrigin::Operator,
            pkce_required: checked.pkce_required || current.origin != ClientOrigin::Operator,
            dpop_required: checked.dpop_required,
            // Never later than now, and always after the last change (clocks of two instances).
            updated_at: self.core.clock.now_ms().max(current.updated_at + 1),
            ..current
        };
        if !self.core.store.update_client(&client).await? {
            return Err(Error::NotFound);
        }
        self.known.forget(id);
        let event = AuditEvent::ClientChanged {
            client: id,
            by: op.actor(),
        };
        self.core.audit_by(op, event, None).await;
        Ok(client)
    }

    /// Replaces a confidential client's secret; returns the new one (shown once) and until when
    /// the old one keeps working (`overlap_ms` from now, `SECRET_OVERLAP_DEFAULT_MS` unless given;
    /// 0 ends it at once). Every instance knows both within `CLIENT_CACHE_MS`. `NotFound` without
    /// the client; a public client has no secret (`VALIDATION_ERROR`).
    pub async fn rotate_secret(
        &self,
        op: Operator<'_>,
        id: Uuid,
        overlap_ms: Option<i64>,
    ) -> Result<RotatedSecret> {
        let overlap = overlap_ms.unwrap_or(SECRET_OVERLAP_DEFAULT_MS);
        if !(0..=SECRET_OVERLAP_MAX_MS).contains(&overlap) {
            return Err(Error::field("overlap", "must be from 0 to 30 days"));
        }
        let current = self.core.store.client(id).await?.ok_or(Error::NotFound)?;
        if current.client_type != ClientType::Confidential {
            return Err(Error::field(
                "clientId",
                "is a public client: it has no secret to rotate",
            ));
        }
        let secret = random_token();
        let hash = self.core.secrets.client_secret_hash(id.as_bytes(), &secret);
        let now = self.core.clock.now_ms();
        let previous_until = now + overlap;
        let changed_at = now.max(current.updated_at + 1);
        if !(self.core.store)
            .rotate_client_secret(id, &hash, previous_until, changed_at)
            .await?
        {
            return Err(Error::NotFound);
        }
        self.known.forget(id);
        let event = AuditEvent::ClientSecretRotated {
            client: id,
            by: op.actor(),
            previous_until,
        };
        self.core.audit_by(op, event, None).await;
        Ok(RotatedSecret {
            secret,
            previous_until,
        })
    }

    /// `NotFound` if there is no such client. Its calls are refused from now on here, and within
    /// `CLIENT_CACHE_MS` on other instances.
    /// Every session it holds ends first, with its back-channel logouts queued while its URI can
    /// be read (docs/api.md §11: removing a client ends every session and token it holds).
    pub async fn remove(&self, op: Operator<'_>, id: Uuid) -> Result<()> {
        if self.core.store.client(id).await?.is_none() {
            return Err(Error::NotFound);
        }
        let logouts = super::logout::Logouts {
            core: self.core.clone(),
        };
        logouts.end_client(id).await?;
        if !self.core.store.delete_client(id).await? {
            return Err(Error::NotFound);
        }
        self.known.forget(id);
        let event = AuditEvent::ClientRemoved {
            client: id,
            by: op.actor(),
        };
        self.core.audit_by(op, event, None).await;
        Ok(())
    }

    /// The client of a `client_id` as the OAuth endpoints receive it, read at most
    /// `CLIENT_CACHE_MS` ago; `None` for an unknown id, or a refused metadata document.
    pub async fn find(&self, client_id: &str) -> Result<Option<Client>> {
        Ok(self.resolve(client_id).await?.ok())
    }

    /// The client of a `client_id`: a registered client's id, or (with metadata documents on) the
    /// URL of its document, fetched if not fresh. `Err` (inside) says why there is none.
    pub async fn resolve(&self, client_id: &str) -> Result<std::result::Result<Client, String>> {
        if self.names_document(client_id) {
            return self.document_client(client_id).await;
        }
        Ok(self
            .find_registered(client_id)
            .await?
            .ok_or_else(|| "is not a registered client".into()))
    }

    /// The client of a `client_id` as far as this service knows it already: a registered
    /// client, or a metadata document fetched before (fresh or not). Nothing is fetched: for the
    /// pages that only name a client (sign-in, end-session without a hint), where a request of
    /// anyone's must not make Gatehouse fetch a URL of theirs.
    pub async fn known(&self, client_id: &str) -> Result<Option<Client>> {
        if self.names_document(client_id) {
            return self.core.store.client_by_metadata_url(client_id).await;
        }
        self.find_registered(client_id).await
    }

    /// The client of a registry id (never a metadata document: nothing is fetched).
    async fn find_registered(&self, client_id: &str) -> Result<Option<Client>> {
        let Ok(id) = Uuid::parse_str(client_id) else {
            return Ok(None);
        };
        self.find_id(id).await
    }

    /// The client of `id`, read at most `CLIENT_CACHE_MS` ago.
    pub async fn find_id(&self, id: Uuid) -> Result<Option<Client>> {
        let now = self.core.clock.now_ms();
        if let Some(client) = self.known.get(id, now) {
            return Ok(Some(client));
        }
        let read = self.core.store.client(id).await?;
        if let Some(client) = &read {
            self.known.put(client, now);
        }
        Ok(read)
    }

    /// The confidential client these credentials name, or `None` when they are wrong in any way
    /// (unknown id, not an id, wrong secret, a public client): the caller cannot tell which. Wrong
    /// credentials count against the caller's address (`RATE_LIMITED` once it has none left).
    pub async fn authenticate(
        &self,
        id: &str,
        secret: &str,
        ip: Option<IpAddr>,
    ) -> Result<Option<Client>> {
        self.core.throttle.client_check_from(ip)?;
        // Confidential clients only: a metadata document (public) is never fetched here.
        let client = self
            .find_registered(id)
            .await?
            .filter(|c| c.client_type == ClientType::Confidential);
        // The hash is computed whether or not the client exists, so timing tells nothing either.
        let id_bytes = client.as_ref().map_or([0; 16], |c| *c.id.as_bytes());
        let presented = self.core.secrets.client_secret_hash(&id_bytes, secret);
        let now = self.core.clock.now_ms();
        let matched = client.filter(|c| {
            // Both compared whatever the first gives: the answer's time says nothing of which.
            let current = c.secret_hash.ct_eq(&presented[..]);
            let previous = c
                .previous_secret
                .as_ref()
                .map_or(0.into(), |(hash, until)| {
                    hash.ct_eq(&presented[..]) & subtle::Choice::from(u8::from(now < *until))
                });
            bool::from(current | previous)
        });
        if matched.is_none() {
            self.core.throttle.client_failed_from(ip);
        }
        Ok(matched)
    }

    /// Whether a self-registered client's `name` reads as the name of one of the operator's
    /// clients (`names::name_skeleton`): on the consent page it would pass for that application.
    pub(super) async fn copies_operator_name(&self, name: &str) -> Result<bool> {
        let skeleton = names::name_skeleton(name);
        let names = self.core.store.operator_client_names().await?;
        Ok(names.iter().any(|n| names::name_skeleton(n) == skeleton))
    }

    /// An admin's reads are audited (§8); the operator's at the CLI are not, as before.
    async fn admin_read(&self, op: Operator<'_>) {
        if let Operator::Admin { .. } = op {
            self.core
                .audit_by(op, AuditEvent::AdminRead(AdminRead::Clients), None)
                .await;
        }
    }
}
