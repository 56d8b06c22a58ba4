//! Throttling (docs/api.md §3, §5), as GCRA: a key may spend a burst of attempts at once and then
//! one per emission interval. With burst B and interval T, no window of length W ever sees more
//! than B + W/T attempts, so B = N/2 and T = 2W/N keep any 15 minutes at N or fewer, and a
//! throttled client waits at most one interval, never 15 minutes.
//!
//! - Per account (N = 100 failures of passwords and codes): in the database, so every instance
//!   shares it. Keyed by the normalised e-mail whether or not an account has it, so a 429 says
//!   nothing about existence. A slot is taken *before* the check and given back if the check
//!   passed or could not run (`within_allowance`): racing requests cannot exceed the allowance,
//!   and a shed check costs the account nothing. An account's existing sessions are never
//!   affected.
//! - Per client IP (N = 300 login and 2FA attempts): in memory, per instance. IPv6 clients count
//!   per /64, the smallest block one host commonly holds.
//! - API clients' wrong secrets at introspection (N = 300 failures per client IP), in memory. Only
//!   failures count, and only per address: a guarded service introspects on every request, and an
//!   attacker guessing a client's 256-bit secret from elsewhere must not be able to lock it out.
//! - Device authorizations (RFC 8628): starts per client IP (a burst of 30, then one every 2 s)
//!   and for the instance, in memory; wrong user codes on the device page per client IP (ten,
//!   then one every 30 s), in memory, and per account in the database as wrong passwords are.
//! - Registration: per client IP (a burst of 10, then one a minute) and for the whole instance (a
//!   burst of 50, then 5 a second), in memory.
//!
//! The in-memory tables are hand-written rather than `governor`'s keyed limiter: that one can only
//! be emptied whole when its table is full, which hands every throttled address a fresh allowance;
//! this one evicts the idlest entries, and reads the service's clock.

use std::collections::HashMap;
use std::future::Future;
use std::hash::Hash;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::Duration;

use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::store::Store;

/// The window the limits are stated over.
pub const WINDOW: Duration = Duration::from_secs(15 * 60);
/// Failed password or code checks an account may have in any `WINDOW`.
pub const ACCOUNT_FAILURES: u32 = 100;
/// Login and 2FA attempts one client address may make in any `WINDOW`.
pub const ADDRESS_ATTEMPTS: u32 = 300;
/// Addresses remembered at most per table; an attacker spraying from more gains a fresh allowance
/// per address, which the per-account limit still caps.
const MAX_ADDRESSES: usize = 100_000;

pub struct Throttle {
    store: Store,
    clock: Clock,
    enabled: bool,
    addresses: Gcra<IpAddr>,
    registrations_by_address: Gcra<IpAddr>,
    registrations: Gcra<()>,
    client_failures: Gcra<IpAddr>,
    client_registrations_by_address: Gcra<IpAddr>,
    client_registrations: Gcra<()>,
    document_fetches: Gcra<()>,
    federation_starts_by_address: Gcra<IpAddr>,
    federation_starts: Gcra<()>,
    device_starts_by_address: Gcra<IpAddr>,
    device_starts: Gcra<()>,
    device_guesses: Gcra<IpAddr>,
}

/// A slot of an account's allowance, taken before a check; given back when the check passed.
#[must_use]
struct AccountSlot(Option<String>);

fn interval(limit: u32) -> Duration {
    WINDOW * 2 / limit
}

/// IPv6 addresses count per /64; IPv4 (and IPv4-mapped IPv6) per address.
pub(crate) fn address_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let s = v6.segments();
                IpAddr::V6(std::net::Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
        },
    }
}

fn retry_after(wait_ms: i64) -> u64 {
    // Rounded up, and never 0: "retry after 0 s" would invite a tight loop.
    (wait_ms.max(0) as u64).div_ceil(1000).max(1)
}

impl Throttle {
    pub fn new(store: Store, clock: Clock, enabled: bool) -> Throttle {
        let per_address = interval(ADDRESS_ATTEMPTS);
        Throttle {
            store,
            clock,
            enabled,
            addresses: Gcra::new(ADDRESS_ATTEMPTS / 2, per_address, MAX_ADDRESSES),
            registrations_by_address: Gcra::new(10, Duration::from_secs(60), MAX_ADDRESSES),
            registrations: Gcra::new(50, Duration::from_millis(200), 1),
            client_failures: Gcra::new(ADDRESS_ATTEMPTS / 2, per_address, MAX_ADDRESSES),
            client_registrations_by_address: Gcra::new(10, Duration::from_secs(60), MAX_ADDRESSES),
            client_registrations: Gcra::new(50, Duration::from_millis(500), 1),
            document_fetches: Gcra::new(100, Duration::from_millis(200), 1),
            federation_starts_by_address: Gcra::new(30, Duration::from_secs(2), MAX_ADDRESSES),
            federation_starts: Gcra::new(500, Duration::from_millis(20), 1),
            device_starts_by_address: Gcra::new(30, Duration::from_secs(2), MAX_ADDRESSES),
            device_starts: Gcra::new(500, Duration::from_millis(20), 1),
            device_guesses: Gcra::new(10, Duration::from_secs(30), MAX_ADDRESSES),
        }
    }

    /// Counts a login or 2FA attempt from `ip`; `RATE_LIMITED` once the address has spent its
    /// allowance.
    pub fn attempt_from(&self, ip: Option<IpAddr>) -> Result<()> {
        match ip.filter(|_| self.enabled) {
            Some(ip) => self.addresses.take(address_key(ip), self.clock.now_ms()),
            None => Ok(()),
        }
    }

    /// `RATE_LIMITED` while `ip` has no allowance left for wrong client credentials.
    pub fn client_check_from(&self, ip: Option<IpAddr>) -> Result<()> {
        match ip.filter(|_| self.enabled) {
            Some(ip) => self
                .client_failures
                .check(address_key(ip), self.clock.now_ms()),
            None => Ok(()),
        }
    }

    /// Counts wrong client credentials from `ip`.
    pub fn client_failed_from(&self, ip: Option<IpAddr>) {
        if let Some(ip) = ip.filter(|_| self.enabled) {
            // Already over: the failure is refused either way.
            let _ = self
                .client_failures
                .take(address_key(ip), self.clock.now_ms());
        }
    }

    /// Counts a registration from `ip`, against its address's allowance and the instance's.
    pub fn registration_from(&self, ip: Option<IpAddr>) -> Result<()> {
        if !self.enabled {
            return Ok(());
        }
        let now = self.clock.now_ms();
        if let Some(ip) = ip {
            self.registrations_by_address.take(address_key(ip), now)?;
        }
        self.registrations.take((), now)
    }

    /// Counts a client's registration at `POST /oauth2/register` from `ip` (a burst of 10, then
    /// one a minute per address; 50, then two a second, for the instance): an open endpoint that
    /// writes a row per call is a target for filling the database.
    pub fn client_registration_from(&self, ip: Option<IpAddr>) -> Result<()> {
        if !self.enabled {
            return Ok(());
        }
        let now = self.clock.now_ms();
        if let Some(ip) = ip {
            self.client_registrations_by_address
                .take(address_key(ip), now)?;
        }
        self.client_registrations.take((), now)
    }

    /// Counts a fetch of a client metadata document (a burst of 100, then five a second for the
    /// instance): anyone can name a URL, and each costs an outbound request.
    pub fn document_fetch(&self) -> Result<()> {
        if !self.enabled {
            return Ok(());
        }
        self.document_fetches.take((), self.clock.now_ms())
    }

    /// Counts the start of a sign-in or link through another identity provider from `ip` (a burst
    /// of 30, then one every 2 s per address; 500, then fifty a second, for the instance): each
    /// start writes a row that lives 10 minutes, and a flood must not fill the table.
    pub fn federation_start_from(&self, ip: Option<IpAddr>) -> Result<()> {
        if !self.enabled {
            return Ok(());
        }
        let now = self.clock.now_ms();
        if let Some(ip) = ip {
            self.federation_starts_by_address
                .take(address_key(ip), now)?;
        }
        self.federation_starts.take((), now)
    }

    /// Counts the start of a device authorization (RFC 8628) from `ip` (a burst of 30, then one
    /// every 2 s per address; 500, then fifty a second, for the instance): each writes a row that
    /// lives 10 minutes.
    pub fn device_start_from(&self, ip: Option<IpAddr>) -> Result<()> {
        if !self.enabled {
            return Ok(());
        }
        let now = self.clock.now_ms();
        if let Some(ip) = ip {
            self.device_starts_by_address.take(address_key(ip), now)?;
        }
        self.device_starts.take((), now)
    }

    /// `RATE_LIMITED` while `ip` has no allowance left for wrong user codes on the device page
    /// (ten in a row, then one every 30 s).
    pub fn device_guess_check(&self, ip: Option<IpAddr>) -> Result<()> {
        match ip.filter(|_| self.enabled) {
            Some(ip) => self
                .device_guesses
                .check(address_key(ip), self.clock.now_ms()),
            None => Ok(()),
        }
    }

    /// Counts a wrong user code from `ip`.
    pub fn device_guess_missed(&self, ip: Option<IpAddr>) {
        if let Some(ip) = ip.filter(|_| self.enabled) {
            // Already over: the guess is refused either way.
            let _ = self
                .device_guesses
                .take(address_key(ip), self.clock.now_ms());
        }
    }

    /// Runs `check` (a password or code check for the account `email_normalized`) within the
    /// account's allowance of failures: a slot is taken before it runs, so racing requests cannot
    /// exceed the allowance, and `RATE_LIMITED` comes back without running it when none is left.
    /// The slot is kept only when the check ran and failed (`Ok(None)`); when it passed, or could
    /// not run (hashing shed, the database away), the slot is given back: that was no failure.
    pub async fn within_allowance<T>(
        &self,
        email_normalized: &str,
        check: impl Future<Output = Result<Option<T>>>,
    ) -> Result<Option<T>> {
        let slot = self.take_account_slot(email_normalized).await?;
        let outcome = check.await;
        if !matches!(outcome, Ok(None)) {
            self.give_back(slot).await?;
        }
        outcome
    }

    async fn take_account_slot(&self, email_normalized: &str) -> Result<AccountSlot> {
        if !self.enabled {
            return Ok(AccountSlot(None));
        }
        let interval = interval(ACCOUNT_FAILURES).as_millis() as i64;
        let tolerance = interval * i64::from(ACCOUNT_FAILURES / 2 - 1);
        let now = self.clock.now_ms();
        if self
            .store
            .take_throttle_slot(email_normalized, now, interval, tolerance)
            .await?
        {
            return Ok(AccountSlot(Some(email_normalized.to_owned())));
        }
        let tat = self
            .store
            .throttle_tat(email_normalized)
            .await?
            .unwrap_or(now);
        Err(Error::RateLimited {
            retry_after: retry_after(tat - now - tolerance),
        })
    }

    async fn give_back(&self, slot: AccountSlot) -> Result<()> {
        if let Some(key) = slot.0 {
            let interval = interval(ACCOUNT_FAILURES).as_millis() as i64;
            self.store.return_throttle_slot(&key, interval).await?;
        }
        Ok(())
    }

    /// Forgets the addresses that no longer limit anyone; the accounts' state in the database is
    /// purged by housekeeping with the other tables (`auth::housekeeping`).
    pub fn forget_idle(&self, now: i64) {
        self.addresses.forget_idle(now);
        self.registrations_by_address.forget_idle(now);
        self.client_failures.forget_idle(now);
        self.device_starts_by_address.forget_idle(now);
        self.device_guesses.forget_idle(now);
    }
}

/// GCRA over keys held in memory: each key's theoretical arrival time (ms). A key whose time has
/// passed holds no state. At `capacity`, keys without state go first, then the idlest tenth.
pub(crate) struct Gcra<K> {
    interval_ms: i64,
    /// How far ahead of now a key's arrival time may be and still take a slot: the burst.
    tolerance_ms: i64,
    capacity: usize,
    tats: Mutex<HashMap<K, i64>>,
}

impl<K: Hash + Eq + Copy> Gcra<K> {
    pub(crate) fn new(burst: u32, interval: Duration, capacity: usize) -> Self {
        let interval_ms = interval.as_millis() as i64;
        Gcra {
            interval_ms,
            tolerance_ms: interval_ms * i64::from(burst.saturating_sub(1)),
            capacity,
            tats: Mutex::new(HashMap::new()),
        }
    }

    pub(crate) fn take(&self, key: K, now: i64) -> Result<()> {
        // A panic while the lock is held cannot leave the map inconsistent (single operations).
        let mut tats = self.tats.lock().unwrap_or_else(|e| e.into_inner());
        let tat = tats.get(&key).copied().unwrap_or(now).max(now);
        if tat - now > self.tolerance_ms {
            return Err(Error::RateLimited {
                retry_after: retry_after(tat - now - self.tolerance_ms),
            });
        }
        tats.insert(key, tat + self.interval_ms);
        if tats.len() > self.capacity {
            evict(&mut tats, now, self.capacity);
        }
        Ok(())
    }

    /// Whether `key` could take a slot now, without taking it.
    fn check(&self, key: K, now: i64) -> Result<()> {
        let tats = self.tats.lock().unwrap_or_else(|e| e.into_inner());
        let tat = tats.get(&key).copied().unwrap_or(now).max(now);
        if tat - now > self.tolerance_ms {
            return Err(Error::RateLimited {
                retry_after: retry_after(tat - now - self.tolerance_ms),
            });
        }
        Ok(())
    }

    pub(crate) fn forget_idle(&self, now: i64) {
        let mut tats = self.tats.lock().unwrap_or_else(|e| e.into_inner());
        tats.retain(|_, tat| *tat > now);
        tats.shrink_to_fit();
    }
}

fn evict<K: Hash + Eq + Copy>(tats: &mut HashMap<K, i64>, now: i64, capacity: usize) {
    tats.retain(|_, tat| *tat > now);
    if tats.len() <= capacity {
        return;
    }
    let mut times: Vec<i64> = tats.values().copied().collect();
    let drop = (capacity / 10).max(tats.len() - capacity);
    let (_, cutoff, _) = times.select_nth_unstable(drop - 1);
    let cutoff = *cutoff;
    let mut dropped = 0;
    tats.retain(|_, tat| {
        let idle = *tat <= cutoff && dropped < drop;
        dropped += usize::from(idle);
        !idle
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limits_hold_over_any_window() {
        // burst + window / interval ≤ limit
        for limit in [ACCOUNT_FAILURES, ADDRESS_ATTEMPTS] {
            let per_window = limit / 2 + (WINDOW.as_millis() / interval(limit).as_millis()) as u32;
            assert!(per_window <= limit, "{limit}: {per_window}");
            assert!(interval(limit) < WINDOW);
        }
    }

    #[test]
    fn ipv6_counts_per_64_and_mapped_v4_as_v4() {
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:bbbb::2".parse().unwrap();
        let c: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(address_key(a), address_key(b));
        assert_ne!(address_key(a), address_key(c));
        let mapped: IpAddr = "::ffff:192.0.2.7".parse().unwrap();
        assert_eq!(address_key(mapped), "192.0.2.7".parse::<IpAddr>().unwrap());
    }

    #[test]
    fn a_key_gets_its_burst_then_waits_one_interval() {
        let limiter = Gcra::new(ADDRESS_ATTEMPTS / 2, interval(ADDRESS_ATTEMPTS), 10);
        let now = 1_000_000;
        for _ in 0..ADDRESS_ATTEMPTS / 2 {
            limiter.take(1, now).unwrap();
        }
        match limiter.take(1, now) {
            Err(Error::RateLimited { retry_after }) => {
                assert!((1..=interval(ADDRESS_ATTEMPTS).as_secs()).contains(&retry_after))
            }
            other => panic!("{other:?}"),
        }
        limiter.take(2, now).unwrap();
        let later = now + interval(ADDRESS_ATTEMPTS).as_millis() as i64;
        limiter.take(1, later).unwrap();
    }

    #[test]
    fn a_full_table_evicts_the_idlest_and_keeps_the_throttled() {
        let limiter = Gcra::new(2, Duration::from_secs(10), 100);
        let now = 1_000_000;
        // A throttled key first, then many one-off keys.
        limiter.take(0, now).unwrap();
        limiter.take(0, now).unwrap();
        assert!(limiter.take(0, now).is_err());
        for key in 1..1_000 {
            limiter.take(key, now + key).unwrap();
        }
        assert!(limiter.tats.lock().unwrap().len() <= 100);
        assert!(limiter.take(0, now + 1_000).is_err(), "still throttled");
    }
}
