//! The one place the service reads the time. Every flow asks its `Clock`, so that tests can move
//! time forward (an access token's expiry, a grace window, a challenge's lifetime) instead of
//! sleeping through it. A production clock is the system clock and is never moved.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

/// The system clock, plus an offset that only tests change (`advance`, `freeze`). Cloning shares
/// both, so every part of one running service sees the same time.
#[derive(Clone, Debug, Default)]
pub struct Clock {
    offset_ms: Arc<AtomicI64>,
    /// The system time the clock stopped at, or 0 while it runs.
    frozen_ms: Arc<AtomicI64>,
}

impl Clock {
    pub fn system() -> Clock {
        Clock::default()
    }

    /// Milliseconds since the Unix epoch, the unit of every time column.
    pub fn now_ms(&self) -> i64 {
        let frozen = self.frozen_ms.load(Ordering::Relaxed);
        let base = if frozen == 0 { system_ms() } else { frozen };
        base + self.offset_ms.load(Ordering::Relaxed)
    }

    /// Whole seconds since the Unix epoch, the unit of JWT claims and TOTP.
    pub fn now_seconds(&self) -> i64 {
        self.now_ms().div_euclid(1000)
    }

    /// Moves this clock (and every clone of it) forward.
    pub fn advance(&self, by: Duration) {
        self.offset_ms
            .fetch_add(by.as_millis() as i64, Ordering::Relaxed);
    }

    /// Stops this clock (and every clone of it) where it is; only `advance` moves it from then on.
    /// For tests that count against an allowance refilled with time: a slow machine must not
    /// refill it half-way through.
    pub fn freeze(&self) {
        self.frozen_ms.store(system_ms(), Ordering::Relaxed);
    }
}

fn system_ms() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp_nanos() as i64 / 1_000_000
}

/// A time in milliseconds as RFC 3339 in UTC, for answers and the CLI.
pub fn rfc3339(ms: i64) -> String {
    let t = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    t.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_the_advance() {
        let clock = Clock::system();
        let other = clock.clone();
        let before = other.now_ms();
        clock.advance(Duration::from_secs(3600));
        assert!(other.now_ms() - before >= 3_600_000);
    }

    #[test]
    fn a_frozen_clock_moves_only_when_advanced() {
        let clock = Clock::system();
        clock.freeze();
        let stopped = clock.clone().now_ms();
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(clock.now_ms(), stopped);
        clock.advance(Duration::from_secs(6));
        assert_eq!(clock.now_ms(), stopped + 6_000);
    }

    #[test]
    fn rfc3339_is_utc_with_milliseconds() {
        assert_eq!(rfc3339(1_700_000_000_417), "2023-11-14T22:13:20.417Z");
    }
}
