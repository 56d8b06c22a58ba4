//! API clients: the services registered to introspect tokens (docs/api.md §6). The operator adds
//! one with `gatehouse clients add NAME` and is shown its secret once; the database keeps only a
//! keyed hash of it.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use subtle::ConstantTimeEq as _;
use uuid::Uuid;

use super::Core;
use super::audit::{AuditEvent, Subject};
use crate::crypto::random_token;
use crate::error::{Error, Result};
use crate::model::ApiClient;

/// Longest client name kept (it is only shown in `clients list`).
const NAME_MAX: usize = 200;

/// How long a client read from the database is believed without reading it again: a guarded
/// service introspects on every request, and a database read per call cost about half of an
/// introspection's time (BENCHMARKS.md). A removed client is refused everywhere within this.
pub const CLIENT_CACHE_MS: i64 = 1_000;

/// Clients remembered at most; past that the table starts over.
const CLIENT_CACHE_CAPACITY: usize = 10_000;

/// Registered clients recently read, by id, with the time they were read (ms). Unknown ids are
/// never remembered, so guessing cannot fill the table.
#[derive(Default)]
struct KnownClients(Mutex<HashMap<Uuid, (ApiClient, i64)>>);

impl KnownClients {
    fn get(&self, id: Uuid, now: i64) -> Option<ApiClient> {
        let known = self.0.lock().unwrap_or_else(|e| e.into_inner());
        known
            .get(&id)
            .filter(|(_, read_at)| now - read_at < CLIENT_CACHE_MS)
            .map(|(client, _)| client.clone())
    }

    fn put(&self, client: &ApiClient, now: i64) {
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
}

impl Clients {
    pub(super) fn new(core: Arc<Core>) -> Clients {
        Clients {
            core,
            known: Arc::default(),
        }
    }

    /// Registers a client; returns it and its secret, which is not kept and cannot be shown again.
    pub async fn add_client(&self, name: &str) -> Result<(ApiClient, String)> {
        let name = name.trim();
        if name.is_empty() || name.chars().count() > NAME_MAX || name.chars().any(char::is_control)
        {
            return Err(Error::field(
                "name",
                format!("must be 1 to {NAME_MAX} characters, without control characters"),
            ));
        }
        let id = Uuid::now_v7();
        let secret = random_token();
        let client = ApiClient {
            id,
            name: name.to_owned(),
            secret_hash: self
                .core
                .secrets
                .client_secret_hash(id.as_bytes(), &secret)
                .to_vec(),
            created_at: self.core.clock.now_ms(),
        };
        self.core.store.insert_client(&client).await?;
        self.core
            .audit(AuditEvent::ClientAdded { client: id }, Subject::service())
            .await;
        Ok((client, secret))
    }

    pub async fn list(&self) -> Result<Vec<ApiClient>> {
        self.core.store.clients().await
    }

    /// `NotFound` if there is no such client. Its introspection calls are refused from now on here,
    /// and within `CLIENT_CACHE_MS` on other instances.
    pub async fn remove_client(&self, id: Uuid) -> Result<()> {
        if !self.core.store.delete_client(id).await? {
            return Err(Error::NotFound);
        }
        self.known.forget(id);
        self.core
            .audit(AuditEvent::ClientRemoved { client: id }, Subject::service())
            .await;
        Ok(())
    }

    /// The client these credentials name, or `None` when they are wrong in any way (unknown id,
    /// not an id, wrong secret): the caller cannot tell which. Wrong credentials count against
    /// the caller's address (`RATE_LIMITED` once it has none left).
    pub async fn authenticate_client(
        &self,
        id: &str,
        secret: &str,
        ip: Option<IpAddr>,
    ) -> Result<Option<ApiClient>> {
        self.core.throttle.client_check_from(ip)?;
        let now = self.core.clock.now_ms();
        let client = match Uuid::parse_str(id) {
            Ok(id) => match self.known.get(id, now) {
                Some(client) => Some(client),
                None => {
                    let read = self.core.store.client(id).await?;
                    if let Some(client) = &read {
                        self.known.put(client, now);
                    }
                    read
                }
            },
            Err(_) => None,
        };
        // The hash is computed whether or not the client exists, so timing tells nothing either.
        let id_bytes = client.as_ref().map_or([0; 16], |c| *c.id.as_bytes());
        let presented = self.core.secrets.client_secret_hash(&id_bytes, secret);
        let matched = client.filter(|c| bool::from(c.secret_hash.ct_eq(&presented[..])));
        if matched.is_none() {
            self.core.throttle.client_failed_from(ip);
        }
        Ok(matched)
    }
}
