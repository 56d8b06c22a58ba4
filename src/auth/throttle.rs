//! Throttling of password and second-factor attempts (API.md §3), as GCRA: a key may spend a burst
//! of attempts at once and then one per emission interval. With burst B and interval T, no window
//! of length W ever sees more than B + W/T attempts, so B = N/2 and T = 2W/N keep any 15 minutes
//! at N or fewer, and a throttled client waits at most one interval, never 15 minutes.
//!
//! - Per account (N = 100 failures): in the database, so every instance shares it. Keyed by the
//!   normalised e-mail whether or not an account has it, so a 429 says nothing about existence. A
//!   slot is taken *before* the password or code is checked and given back if it was right: racing
//!   requests cannot exceed the allowance. An account's existing sessions are never affected.
//! - Per client IP (N = 300 attempts): in memory, per instance (`governor`'s keyed GCRA). IPv6
//!   clients count per /64, the smallest block one host commonly holds. The table of addresses is
//!   bounded: idle entries are dropped, and past `MAX_ADDRESSES` it starts afresh.

use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::RwLock;
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

use crate::error::{Error, Result};
use crate::store::{Store, now_ms};

/// The window the limits are stated over.
pub const WINDOW: Duration = Duration::from_secs(15 * 60);
/// Failed password or code checks an account may have in any `WINDOW`.
pub const ACCOUNT_FAILURES: u32 = 100;
/// Login and 2FA attempts one client address may make in any `WINDOW`.
pub const ADDRESS_ATTEMPTS: u32 = 300;
/// Addresses remembered at most; an attacker spraying from more gains a fresh allowance per
/// address, which the per-account limit still caps.
const MAX_ADDRESSES: usize = 100_000;

type AddressLimiter = DefaultKeyedRateLimiter<IpAddr>;

pub struct Throttle {
    store: Store,
    enabled: bool,
    addresses: RwLock<AddressLimiter>,
}

/// A slot of an account's allowance, taken before a check; give it back when the check passed.
#[must_use]
pub struct AccountSlot(Option<String>);

fn interval(limit: u32) -> Duration {
    WINDOW * 2 / limit
}

fn address_limiter() -> AddressLimiter {
    let burst = NonZeroU32::new(ADDRESS_ATTEMPTS / 2).unwrap_or(NonZeroU32::MIN);
    let quota = Quota::with_period(interval(ADDRESS_ATTEMPTS))
        .unwrap_or_else(|| Quota::per_second(NonZeroU32::MIN))
        .allow_burst(burst);
    RateLimiter::keyed(quota)
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

fn retry_after(wait: Duration) -> u64 {
    // Rounded up, and never 0: "retry after 0 s" would invite a tight loop.
    (wait.as_millis().div_ceil(1000) as u64).max(1)
}

impl Throttle {
    pub fn new(store: Store, enabled: bool) -> Throttle {
        Throttle {
            store,
            enabled,
            addresses: RwLock::new(address_limiter()),
        }
    }

    /// Counts an attempt from `ip`; `RATE_LIMITED` once the address has spent its allowance.
    pub fn attempt_from(&self, ip: Option<IpAddr>) -> Result<()> {
        let Some(ip) = ip.filter(|_| self.enabled) else {
            return Ok(());
        };
        let key = address_key(ip);
        {
            let limiter = self.addresses.read().unwrap_or_else(|e| e.into_inner());
            if limiter.len() < MAX_ADDRESSES {
                return check(&limiter, &key);
            }
        }
        let mut limiter = self.addresses.write().unwrap_or_else(|e| e.into_inner());
        limiter.retain_recent();
        if limiter.len() >= MAX_ADDRESSES {
            tracing::warn!(
                addresses = limiter.len(),
                "too many client addresses to throttle separately: starting afresh"
            );
            *limiter = address_limiter();
        }
        check(&limiter, &key)
    }

    /// Takes a slot of the account's allowance of failures before its password or code is
    /// checked; `RATE_LIMITED` if none is left.
    pub async fn take_account_slot(&self, email_normalized: &str) -> Result<AccountSlot> {
        if !self.enabled {
            return Ok(AccountSlot(None));
        }
        let interval = interval(ACCOUNT_FAILURES).as_millis() as i64;
        let tolerance = interval * i64::from(ACCOUNT_FAILURES / 2 - 1);
        let now = now_ms();
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
        let wait = (tat - now - tolerance).max(0) as u64;
        Err(Error::RateLimited {
            retry_after: retry_after(Duration::from_millis(wait)),
        })
    }

    /// The check the slot was taken for passed: it was no failure.
    pub async fn give_back(&self, slot: AccountSlot) -> Result<()> {
        if let Some(key) = slot.0 {
            let interval = interval(ACCOUNT_FAILURES).as_millis() as i64;
            self.store.return_throttle_slot(&key, interval).await?;
        }
        Ok(())
    }

    /// Forgets what no longer limits anyone.
    pub async fn housekeep(&self, now: i64) -> Result<u64> {
        {
            let limiter = self.addresses.read().unwrap_or_else(|e| e.into_inner());
            limiter.retain_recent();
            limiter.shrink_to_fit();
        }
        Ok(self.store.purge_throttles(now).await?)
    }
}

fn check(limiter: &AddressLimiter, key: &IpAddr) -> Result<()> {
    limiter
        .check_key(key)
        .map_err(|not_until| Error::RateLimited {
            retry_after: retry_after(not_until.wait_time_from(DefaultClock::default().now())),
        })
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
    fn an_address_gets_its_burst_then_waits_one_interval() {
        let limiter = address_limiter();
        let ip: IpAddr = "192.0.2.1".parse().unwrap();
        for _ in 0..ADDRESS_ATTEMPTS / 2 {
            check(&limiter, &ip).unwrap();
        }
        match check(&limiter, &ip) {
            Err(Error::RateLimited { retry_after }) => {
                assert!((1..=interval(ADDRESS_ATTEMPTS).as_secs()).contains(&retry_after))
            }
            other => panic!("{other:?}"),
        }
        check(&limiter, &"192.0.2.2".parse().unwrap()).unwrap();
    }
}
