//! Password hashing (Argon2id, OWASP parameters) on a bounded pool, and the password policy.
//! Hashes other systems made (`gatehouse import`) are verified in their own algorithm: `foreign`.

mod decoys;
mod foreign;

pub use decoys::{Decoys, ImportedKind};
pub use foreign::{Digest as Pbkdf2Digest, firebase_form, pbkdf2_form, seal_signer_key};

use std::collections::HashSet;
use std::sync::{Arc, LazyLock};

use argon2::password_hash::{PasswordHash, PasswordHasher as _, SaltString};
use argon2::{Algorithm, Argon2, Block, Params, Version};
use secrecy::{ExposeSecret, SecretString};
use subtle::ConstantTimeEq as _;
use tokio::sync::Semaphore;
use tracing::Instrument as _;

use crate::crypto::Secrets;
use crate::error::{Error, PasswordProblem, Result};
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

pub use crate::error::{PASSWORD_MAX as MAX_LENGTH, PASSWORD_MIN as MIN_LENGTH};

static COMMON: LazyLock<HashSet<&'static str>> = LazyLock::new(|| {
    include_str!("../../../assets/common-passwords.txt")
        .lines()
        .collect()
});

/// The password policy of docs/api.md §5: 8–256 characters, not a commonly breached password.
pub fn check_policy(password: &str) -> Result<()> {
    let length = password.chars().count();
    if length < MIN_LENGTH {
        return Err(Error::WeakPassword(PasswordProblem::TooShort));
    }
    if length > MAX_LENGTH {
        return Err(Error::WeakPassword(PasswordProblem::TooLong));
    }
    if COMMON.contains(password.to_lowercase().as_str()) {
        return Err(Error::WeakPassword(PasswordProblem::Common));
    }
    Ok(())
}

#[expect(
    clippy::expect_used,
    reason = "the OWASP parameters are constants Argon2 accepts"
)]
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

/// A hash job, run on one of the hashing threads with that thread's Argon2 work memory.
type Job = Box<dyn FnOnce(&mut Vec<Block>) + Send>;

/// How long a hashing thread keeps its work memory without a hash to do. Long enough that steady
/// sign-ins never pay for fresh pages; the first hash after a quiet spell pays ~19 MiB of page
/// faults (a few milliseconds).
const IDLE_RELEASE: std::time::Duration = std::time::Duration::from_secs(30);

/// Runs hashes on threads of their own, one per core, each keeping its 19 MiB of Argon2 work
/// memory from one hash to the next. Hand-written rather than `spawn_blocking`: there, each hash
/// allocated its memory afresh on whichever of the blocking pool's threads it landed, and the
/// allocator kept an arena per thread, so a login flood grew the process past 500 MiB (measured
/// with `bench/suite.sh`); here the hashing memory is fixed at cores × 19 MiB, and no hash pays
/// for mapping and zeroing fresh pages. A thread without work for `IDLE_RELEASE` gives its
/// memory back to the system (the process returns to its idle size after a burst of logins).
/// Callers wait for a thread without holding one, up to a bound past which they are shed.
#[derive(Clone)]
pub struct PasswordHasher {
    jobs: flume::Sender<Job>,
    /// Hashes running or waiting, bounded.
    admitted: Arc<Semaphore>,
    /// Registrations' hashes running or waiting, bounded well below `admitted`: a registration
    /// flood is refused while logins keep the rest of the queue.
    registrations: Arc<Semaphore>,
    metrics: Arc<Metrics>,
    /// What unknown addresses are verified against while imported hashes remain.
    decoys: Arc<Decoys>,
    /// Opens what an import sealed in a hash (Firebase's signer key).
    secrets: Option<Arc<Secrets>>,
}

impl PasswordHasher {
    pub fn new(metrics: Arc<Metrics>) -> Self {
        Self::start(metrics, IDLE_RELEASE)
    }

    /// The hashing threads, each giving its memory back after `idle` without work.
    fn start(metrics: Arc<Metrics>, idle: std::time::Duration) -> Self {
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2);
        let (jobs, queue) = flume::unbounded::<Job>();
        for i in 0..cores {
            let queue = queue.clone();
            let held = metrics.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("gatehouse-hash-{i}"))
                .spawn(move || {
                    let mut memory = Vec::new();
                    // Whether a hash ran since the memory was last given back (a new hash's
                    // own memory, `hash`, is freed to the allocator, not to the system).
                    let mut worked = false;
                    loop {
                        match queue.recv_timeout(idle) {
                            // A panicking job loses its answer (the caller gets an internal
                            // error), not the thread.
                            Ok(job) => {
                                let run = std::panic::AssertUnwindSafe(|| job(&mut memory));
                                let _ = std::panic::catch_unwind(run);
                                worked = true;
                            }
                            Err(flume::RecvTimeoutError::Timeout) if worked => {
                                held.hash_memory.dec_by(block_bytes(memory.len()));
                                memory = Vec::new();
                                crate::memory::release_free_memory();
                                worked = false;
                            }
                            Err(flume::RecvTimeoutError::Timeout) => {}
                            // The senders all gone, the thread ends.
                            Err(flume::RecvTimeoutError::Disconnected) => break,
                        }
                    }
                });
            if let Err(error) = spawned {
                tracing::error!(error = %error, "cannot start a password hashing thread");
            }
        }
        PasswordHasher {
            jobs,
            admitted: Arc::new(Semaphore::new(cores * (1 + QUEUE_PER_CORE))),
            registrations: Arc::new(Semaphore::new(cores)),
            metrics,
            decoys: Arc::new(Decoys::default()),
            secrets: None,
        }
    }

    /// A hasher that sheds every request, as a full queue would (tests of what shedding costs).
    #[cfg(test)]
    pub fn shedding_everything(metrics: Arc<Metrics>) -> Self {
        let mut hasher = Self::new(metrics);
        hasher.admitted = Arc::new(Semaphore::new(0));
        hasher
    }

    async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut Vec<Block>) -> T + Send + 'static,
    ) -> Result<T> {
        let _admitted = self
            .admitted
            .try_acquire()
            .map_err(|_| Error::Overloaded { retry_after: 1 })?;
        let _queued = QueueSlot::enter(&self.metrics);
        let (done, answer) = tokio::sync::oneshot::channel();
        let span = tracing::Span::current();
        let metrics = self.metrics.clone();
        let queued_at = std::time::Instant::now();
        let job: Job = Box::new(move |memory| {
            metrics.hash_wait.observe(queued_at.elapsed().as_secs_f64());
            let before = memory.len();
            let answer = span.in_scope(|| work(memory));
            metrics
                .hash_memory
                .inc_by(block_bytes(memory.len()) - block_bytes(before));
            let _ = done.send(answer);
        });
        self.jobs
            .send(job)
            .map_err(|_| Error::internal(anyhow::anyhow!("the hashing threads are gone")))?;
        answer
            .instrument(tracing::Span::current())
            .await
            .map_err(|_| Error::internal(anyhow::anyhow!("a hashing thread failed")))
    }

    pub async fn hash(&self, password: SecretString) -> Result<String> {
        self.run(move |_| {
            let salt = SaltString::generate(&mut rand::rngs::OsRng);
            argon2()
                .hash_password(password.expose_secret().as_bytes(), &salt)
                .map(|h| h.to_string())
                .map_err(|e| Error::internal(anyhow::anyhow!("hashing failed: {e}")))
        })
        .await?
    }

    /// `hash` for a self-registration, within the registrations' share of the queue.
    pub async fn hash_for_registration(&self, password: SecretString) -> Result<String> {
        let _share = self
            .registrations
            .try_acquire()
            .map_err(|_| Error::Overloaded { retry_after: 1 })?;
        self.hash(password).await
    }

    /// The hasher, able to open what an import sealed under the master key.
    pub fn with_secrets(mut self, secrets: Arc<Secrets>) -> Self {
        self.secrets = Some(secrets);
        self
    }

    pub fn decoys(&self) -> &Decoys {
        &self.decoys
    }

    /// Verifies `password` against `stored`, or against a dummy hash when there is no account, so
    /// both cost the same.
    pub async fn verify(&self, password: SecretString, stored: Option<String>) -> Result<Verdict> {
        self.verify_drawn(password, stored, None).await
    }

    /// `verify` for a sign-in, where the address is the attacker's to choose: without an account
    /// (`stored` None), the address's `draw` picks the hash verified against (`Decoys`), so that
    /// it costs what an account's sign-in would.
    pub async fn verify_sign_in(
        &self,
        password: SecretString,
        stored: Option<String>,
        draw: u64,
    ) -> Result<Verdict> {
        let decoy = self.decoys.pick(draw);
        self.verify_drawn(password, stored, decoy).await
    }

    async fn verify_drawn(
        &self,
        password: SecretString,
        stored: Option<String>,
        decoy: Option<String>,
    ) -> Result<Verdict> {
        // An empty hash is an account without a password: the same work as an unknown account,
        // and never a match (whatever is typed, an empty string included).
        let stored = stored.filter(|hash| !hash.is_empty());
        let secrets = self.secrets.clone();
        self.run(move |memory| {
            let known = stored.is_some();
            let phc = stored.or(decoy).unwrap_or_else(|| DUMMY_HASH.to_owned());
            if let Some(foreign) = foreign::Foreign::parse(&phc) {
                // An imported hash: always replaced by Argon2id once it has matched.
                return match foreign.verify(password.expose_secret(), secrets.as_deref()) {
                    true if known => Verdict::Match { needs_rehash: true },
                    _ => Verdict::Mismatch,
                };
            }
            let Ok(parsed) = PasswordHash::new(&phc) else {
                return Verdict::Mismatch;
            };
            let ok = verify_with_memory(password.expose_secret().as_bytes(), &parsed, memory);
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

/// The algorithm of a hash `gatehouse import` may keep (`None`: one it cannot verify, which the
/// import refuses): Argon2 in PHC form, or one of `foreign`'s forms.
pub fn recognise(hash: &str) -> Option<&'static str> {
    if let Some(foreign) = foreign::Foreign::parse(hash) {
        return Some(foreign.label());
    }
    let parsed = PasswordHash::new(hash).ok()?;
    let label = match Algorithm::try_from(parsed.algorithm).ok()? {
        Algorithm::Argon2id => "argon2id",
        Algorithm::Argon2i => "argon2i",
        Algorithm::Argon2d => "argon2d",
    };
    // Bounds as `foreign`'s: an imported hash of 4 GiB would hold that much at each attempt.
    let sane = Params::try_from(&parsed)
        .is_ok_and(|p| p.m_cost() <= 1 << 20 && p.t_cost() <= 64 && p.p_cost() <= 64)
        && parsed.salt.is_some()
        && parsed.hash.is_some();
    sane.then_some(label)
}

/// Argon2 verification of `password` against a PHC hash, in the caller's work memory (grown if
/// the hash's parameters need more), with a constant-time comparison of the outputs.
fn verify_with_memory(password: &[u8], hash: &PasswordHash<'_>, memory: &mut Vec<Block>) -> bool {
    let (Ok(algorithm), Ok(params)) = (Algorithm::try_from(hash.algorithm), Params::try_from(hash))
    else {
        return false;
    };
    let version = hash
        .version
        .and_then(|v| Version::try_from(v).ok())
        .unwrap_or(Version::V0x13);
    let (Some(salt), Some(expected)) = (hash.salt, hash.hash) else {
        return false;
    };
    let mut salt_bytes = [0u8; 64];
    let Ok(salt) = salt.decode_b64(&mut salt_bytes) else {
        return false;
    };
    let expected = expected.as_bytes();
    let mut output = [0u8; 64];
    let Some(output) = output.get_mut(..expected.len()) else {
        return false;
    };
    let blocks = params.block_count();
    if memory.len() < blocks {
        memory.resize(blocks, Block::default());
    }
    let computed = Argon2::new(algorithm, version, params).hash_password_into_with_memory(
        password,
        salt,
        output,
        &mut memory[..blocks],
    );
    computed.is_ok() && bool::from(output.ct_eq(expected))
}

/// The bytes of `blocks` Argon2 blocks, for the memory gauge.
fn block_bytes(blocks: usize) -> i64 {
    i64::try_from(blocks * argon2::Block::SIZE).unwrap_or(i64::MAX)
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
    async fn idle_hashing_threads_give_their_memory_back() {
        let metrics = Arc::new(Metrics::new());
        // Idle long enough that a loaded machine reads the gauge before the release.
        let hasher = PasswordHasher::start(metrics.clone(), std::time::Duration::from_secs(3));
        let one_hash = i64::from(MEMORY_KIB) * 1024;
        let verify = || hasher.verify(SecretString::from("anything"), None);
        assert_eq!(verify().await.unwrap(), Verdict::Mismatch);
        assert_eq!(metrics.hash_memory.get(), one_hash);
        let released = async {
            while metrics.hash_memory.get() != 0 {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        };
        tokio::time::timeout(std::time::Duration::from_secs(10), released)
            .await
            .expect("the memory is given back once the thread is idle");
        // The next hash takes its memory again, and still verifies.
        assert_eq!(verify().await.unwrap(), Verdict::Mismatch);
        assert_eq!(metrics.hash_memory.get(), one_hash);
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
        // An account without a password (docs/api.md §14): nothing matches, the empty string
        // neither.
        for typed in ["", "anything"] {
            let none = hasher
                .verify(SecretString::from(typed), Some(String::new()))
                .await;
            assert_eq!(none.unwrap(), Verdict::Mismatch);
        }

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
