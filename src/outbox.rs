//! What the durable outbox workers share (mail delivery, `mail::delivery`; back-channel logout,
//! `backchannel`): each pass tries every claimed item at once, and a failed item waits a doubling
//! time before its next attempt.

use std::future::Future;
use std::time::Duration;

use crate::error::{Error, Result};

/// Tries each of `items` at once with `send` (each waits mostly on a remote server); returns how
/// many there were, or the last error one of them met.
pub async fn try_each<T, F, Fut>(items: Vec<T>, send: F) -> Result<usize>
where
    F: Fn(T) -> Fut,
    Fut: Future<Output = Result<()>> + Send + 'static,
{
    let claimed = items.len();
    let mut sends = tokio::task::JoinSet::new();
    for item in items {
        sends.spawn(send(item));
    }
    let mut outcome = Ok(claimed);
    while let Some(done) = sends.join_next().await {
        match done {
            Ok(Ok(())) => {}
            Ok(Err(error)) => outcome = Err(error),
            Err(panicked) => outcome = Err(Error::internal(panicked)),
        }
    }
    outcome
}

/// The wait after the `attempts`-th failure: `first`, doubling, at most `max`.
pub fn backoff(first: Duration, max: Duration, attempts: i64) -> Duration {
    let doublings = attempts.clamp(1, 30) as u32 - 1;
    first
        .saturating_mul(2_u32.saturating_pow(doublings))
        .min(max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wait_doubles_up_to_its_bound() {
        let s = Duration::from_secs;
        let waits: Vec<_> = (0..9).map(|a| backoff(s(1), s(60), a)).collect();
        assert_eq!(
            waits,
            [s(1), s(1), s(2), s(4), s(8), s(16), s(32), s(60), s(60)]
        );
        assert_eq!(backoff(s(1), s(60), i64::MAX), s(60));
    }
}
