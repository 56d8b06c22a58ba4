//! The API keys an instance has read lately (`LiveKeys`), held by `Core` so that every flow judging
//! a key shares them. The judging is `api_keys::live`'s; this file is only the memory, so that
//! `Core` can hold it without importing the steps that read it.

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::sync::{Mutex, RwLock};
use std::time::Instant;

use uuid::Uuid;

use super::live::{lock, write};
use crate::model::ApiKey;

pub(crate) struct Known {
    pub(crate) read_at: Instant,
    pub(crate) key: Option<ApiKey>,
}

#[derive(Default)]
pub struct LiveKeys {
    /// Keyed hash → the key, as read at `read_at`; `None`: no such key.
    pub(crate) known: RwLock<HashMap<[u8; 32], Known>>,
    /// Key id → when this instance last wrote its `last_used_at`.
    pub(crate) touched: Mutex<HashMap<Uuid, i64>>,
    /// Uses from these addresses are recorded in the database already.
    pub(crate) seen: Mutex<HashSet<(Uuid, IpAddr)>>,
}

impl LiveKeys {
    /// Forgets a key deleted here, at once (other instances within `FRESH_FOR`).
    pub fn forget(&self, id: Uuid) {
        write(&self.known).retain(|_, k| k.key.as_ref().is_none_or(|k| k.id != id));
        lock(&self.touched).remove(&id);
    }
}
