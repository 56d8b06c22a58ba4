//! Password hashing (Argon2id, OWASP parameters) on a bounded pool, and the password policy.

use std::collections::HashSet;
use std::sync::{Arc, LazyLock};

use argon2::password_hash::{PasswordHash, PasswordHasher as _, PasswordVerifier as _, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};
use secrecy::{ExposeSecret, SecretString};
use tokio::sync::Semaphore;
use tracing::Instrument as _;

use crate::error::{Error, Result};
use crate::metrics::Metrics;

/// OWASP's minimum for Argon2id (m = 19 MiB, t = 2, p = 1).
const MEMORY_KIB: u32 = 19 * 1024;
const ITERATIONS: u32 = 2;
const LANES: u32 = 1;

/// A PHC string with the current parameters and a random hash value that no known password
/// produces. Verifying a login for an unknown
/// e-mail against it costs exactly what a wrong password costs, so timing does not reveal which
/// e-mails have accounts. A constant, so start-up does not pay for a hash.
const DUMMY_HASH: &str = "$argon2id$v=19$m=19456,t=2,p=1$\
                          c2lsdmVyLWRvb3ItMTkwNDU$6yhQQpQ2uz3VqKMx7m0xDmlFVJXe7R7lJmQ3p1dX3ro";

pub const MIN_LENGTH: usize = 8;
pub const MAX_LENGTH: usize = 256;

static COMMON: LazyLock<HashSet<&'static str>> = LazyLock::new(|| {
    include_str!("../../assets/common-passwords.txt")
        .lines()
        .collect()
});

/// The password policy of API.md §5: 8–256 characters, not a commonly breached password.
pub fn check_policy(password: &str) -> Result<()> {
    let length = password.chars().count();
    if length < MIN_LENGTH {
        return Err(Error::WeakPassword(format!(
            "the password must be at least {MIN_LENGTH} characters long"
        )));
    }
    if length > MAX_LENGTH {
        return Err(Error::WeakPassword(format!(
            "the password must be at most {MAX_LENGTH} characters long"
        )));
    }
    if COMMON.contains(password.to_lowercase().as_str()) {
        return Err(Error::WeakPassword(
            "this password is among the most common breached passwords: choose another".into(),
        ));
    }
    Ok(())
}

fn argon2() -> Argon2<'static> {
    let params =
        Params::new(MEMORY_KIB, ITERATIONS, LANES, None).expect("OWASP parameters are valid");
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
}

/// The outcome of verifying a password.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Match { needs_rehash: bool },
    Mismatch,
}

/// Hashes that may wait for a core, per core. Beyond that a login flood is shed at once (503 with
/// `Retry-After`) instead of queueing without bound: at ~20 ms a hash, a full queue is ~0.3 s of
/// work, and a client waiting longer would rather retry.
const QUEUE_PER_CORE: usize = 16;

/// Runs hashes on the blocking pool, never more at once than there are cores: each hash holds
/// 19 MiB and a core for ~20 ms, and unbounded `spawn_blocking` would let a login flood hold
/// hundreds of them. Callers beyond that wait their turn without holding a thread, up to a bound.
#[derive(Clone)]
pub struct PasswordHasher {
    permits: Arc<Semaphore>,
    /// Hashes running or waiting, bounded.
    admitted: Arc<Semaphore>,
    metrics: Arc<Metrics>,
}

impl PasswordHasher {
    pub fn new(metrics: Arc<Metrics>) -> Self {
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2);
        PasswordHasher {
            permits: Arc::new(Semaphore::new(cores)),
            admitted: Arc::new(Semaphore::new(cores * (1 + QUEUE_PER_CORE))),
            metrics,
        }
    }

    async fn run<T: Send + 'static>(&self, work: impl FnOnce() -> T + Send + 'static) -> Result<T> {
        let _admitted = self
            .admitted
            .try_acquire()
            .map_err(|_| Error::Overloaded { retry_after: 1 })?;
        let queued = QueueSlot::enter(&self.metrics);
        let waiting = std::time::Instant::now();
        let _permit = self.permits.acquire().await.map_err(Error::internal)?;
        self.metrics
            .hash_wait
            .observe(waiting.elapsed().as_secs_f64());
        let _queued = queued;
        let span = tracing::Span::current();
        tokio::task::spawn_blocking(move || span.in_scope(work))
            .instrument(tracing::Span::current())
            .await
            .map_err(Error::internal)
    }

    pub async fn hash(&self, password: SecretString) -> Result<String> {
        self.run(move || {
            let salt = SaltString::generate(&mut rand::rngs::OsRng);
            argon2()
                .hash_password(password.expose_secret().as_bytes(), &salt)
                .map(|h| h.to_string())
                .map_err(|e| Error::internal(anyhow::anyhow!("hashing failed: {e}")))
        })
        .await?
    }

    /// Verifies `password` against `stored`, or against a dummy hash when there is no account, so
    /// both cost the same.
    pub async fn verify(&self, password: SecretString, stored: Option<String>) -> Result<Verdict> {
        self.run(move || {
            let known = stored.is_some();
            let phc = stored.unwrap_or_else(|| DUMMY_HASH.to_owned());
            let Ok(parsed) = PasswordHash::new(&phc) else {
                return Verdict::Mismatch;
            };
            let ok = argon2()
                .verify_password(password.expose_secret().as_bytes(), &parsed)
                .is_ok();
            if ok && known {
                Verdict::Match {
                    needs_rehash: is_weaker_than_current(&parsed),
                }
            } else {
                Verdict::Mismatch
            }
        })
        .await
    }
}

/// Counts a hash in the queue gauge while it waits or runs, also when its request is dropped.
struct QueueSlot<'a>(&'a Metrics);

impl<'a> QueueSlot<'a> {
    fn enter(metrics: &'a Metrics) -> Self {
        metrics.hash_queue.inc();
        QueueSlot(metrics)
    }
}

impl Drop for QueueSlot<'_> {
    fn drop(&mut self) {
        self.0.hash_queue.dec();
    }
}

fn is_weaker_than_current(hash: &PasswordHash<'_>) -> bool {
    if hash.algorithm != argon2::ARGON2ID_IDENT {
        return true;
    }
    match Params::try_from(hash) {
        Ok(p) => p.m_cost() < MEMORY_KIB || p.t_cost() < ITERATIONS || p.p_cost() < LANES,
        Err(_) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_bounds_and_common_passwords() {
        assert!(check_policy("short").is_err());
        assert!(check_policy(&"x".repeat(257)).is_err());
        assert!(
            check_policy(&"é".repeat(256)).is_ok(),
            "counted in characters, not bytes"
        );
        assert!(check_policy("password").is_err());
        assert!(
            check_policy("PassWord1").is_err(),
            "{:?}",
            check_policy("PassWord1")
        );
        assert!(check_policy("correct horse battery staple").is_ok());
    }

    #[test]
    fn the_dummy_hash_uses_the_current_parameters() {
        let parsed = PasswordHash::new(DUMMY_HASH).unwrap();
        assert!(!is_weaker_than_current(&parsed));
        assert_eq!(Params::try_from(&parsed).unwrap().m_cost(), MEMORY_KIB);
    }

    #[tokio::test]
    async fn hashes_verify_and_weak_parameters_ask_for_a_rehash() {
        let hasher = PasswordHasher::new(Arc::new(Metrics::new()));
        let hash = hasher
            .hash(SecretString::from("correct horse"))
            .await
            .unwrap();
        assert!(hash.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"));
        let verdict = hasher
            .verify(SecretString::from("correct horse"), Some(hash.clone()))
            .await;
        assert_eq!(
            verdict.unwrap(),
            Verdict::Match {
                needs_rehash: false
            }
        );
        let wrong = hasher
            .verify(SecretString::from("wrong horse"), Some(hash))
            .await;
        assert_eq!(wrong.unwrap(), Verdict::Mismatch);
        let unknown = hasher.verify(SecretString::from("anything"), None).await;
        assert_eq!(unknown.unwrap(), Verdict::Mismatch);

        let weak = Argon2::new(
            Algorithm::Argon2id,
            Version::V0x13,
            Params::new(4096, 1, 1, None).unwrap(),
        )
        .hash_password(
            b"correct horse",
            &SaltString::generate(&mut rand::rngs::OsRng),
        )
        .unwrap()
        .to_string();
        let verdict = hasher
            .verify(SecretString::from("correct horse"), Some(weak))
            .await;
        assert_eq!(verdict.unwrap(), Verdict::Match { needs_rehash: true });
    }
}
