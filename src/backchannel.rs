//! OpenID Connect Back-Channel Logout 1.0 (docs/api.md §11): the worker that tells clients their
//! sessions ended, one per instance, modelled on the mail delivery worker (`mail::delivery`).
//!
//! Each pass first sweeps the client sessions ended since (`Store::sweep_logouts`: every cause of
//! an end writes `sessions.revoked_at`, and the sweep marks what it queued, so nothing is queued
//! twice nor missed, whoever ended the session: this instance, another one, or the CLI), then
//! claims due notices under a lease and POSTs each client a signed logout token. A client that
//! answers anything but 200/204 (or does not answer) is tried again after 1 s, then doubling up to
//! `RETRY_MAX`; after `GIVE_UP_AFTER` the notice is dropped. Nothing here runs in a request: the
//! call that ended a session never waits for a client.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde::Serialize;
use uuid::Uuid;

use crate::auth::keys::Keyring;
use crate::clock::Clock;
use crate::crypto::SigningAlg;
use crate::error::Result;
use crate::metrics::Metrics;
use crate::model::logouts::PendingLogout;
use crate::outbox;
use crate::store::Store;

/// How often ended sessions are swept and the outbox read: with a client that answers at once, a
/// logout token leaves within about this of the session's end (docs/api.md §11 allows 5 s).
pub const POLL_INTERVAL: Duration = Duration::from_secs(1);
/// Notices claimed (and sent at once) per pass.
const BATCH: i64 = 20;
/// Ended sessions swept per pass.
const SWEEP: i64 = 500;
const FIRST_RETRY: Duration = Duration::from_secs(1);
const RETRY_MAX: Duration = Duration::from_secs(60);
/// A client that has not taken a logout token for this long has long since ended the session by
/// its own timeouts, or is gone.
const GIVE_UP_AFTER_MS: i64 = 24 * 3600 * 1000;
/// Both bounds of one POST: a client that hangs holds a worker's slot no longer than this.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// Past every batch's sends (each bounded by `REQUEST_TIMEOUT`), so a live worker's notices are
/// never taken over, and a dead one's are after this.
const LEASE: Duration = Duration::from_secs(30);
/// A logout token is for now: the client checks it as it arrives (Back-Channel Logout §2.6).
const TOKEN_TTL_SECONDS: i64 = 120;
const MAX_ERROR: usize = 300;
const EVENT: &str = "http://schemas.openid.net/event/backchannel-logout";

/// Back-Channel Logout 1.0 §2.4: no `nonce`; `sid` is the client session's, as in its ID tokens.
#[derive(Serialize)]
struct LogoutClaims<'a> {
    iss: &'a str,
    aud: String,
    iat: i64,
    exp: i64,
    jti: Uuid,
    sub: Uuid,
    sid: Uuid,
    events: serde_json::Value,
}

/// Why a notice did not go.
enum Failure {
    /// Worth trying again (the client is down, answered an error, the token could not be made).
    Retry(String),
    /// Never going to work (a URI this service may not call): dropped.
    Refused(String),
}

pub struct Backchannel {
    store: Store,
    clock: Clock,
    keyring: Arc<Keyring>,
    metrics: Arc<Metrics>,
    issuer: String,
    /// Built at the first notice: a client loads the system's root certificates into OpenSSL
    /// (about 1 MiB), which an instance without back-channel clients never needs.
    http: OnceLock<reqwest::Client>,
}

impl Backchannel {
    pub fn new(
        store: Store,
        clock: Clock,
        keyring: Arc<Keyring>,
        metrics: Arc<Metrics>,
        issuer: String,
    ) -> Backchannel {
        Backchannel {
            store,
            clock,
            keyring,
            metrics,
            issuer,
            http: OnceLock::new(),
        }
    }

    fn http(&self) -> Result<&reqwest::Client, Failure> {
        if let Some(http) = self.http.get() {
            return Ok(http);
        }
        let http = reqwest::Client::builder()
            // A redirect could take the token (and the worker) anywhere: the registered URI only.
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(REQUEST_TIMEOUT)
            .user_agent("Gatehouse back-channel logout")
            .build()
            .map_err(|e| Failure::Retry(format!("cannot make the HTTP client: {e}")))?;
        Ok(self.http.get_or_init(|| http))
    }

    /// Delivers until the task is aborted.
    pub async fn run(self) {
        let this = Arc::new(self);
        loop {
            let full = match this.pass().await {
                Ok(claimed) => claimed >= BATCH as usize,
                Err(error) => {
                    tracing::debug!(error = %error, "cannot read the back-channel logout outbox yet");
                    false
                }
            };
            if !full {
                tokio::time::sleep(POLL_INTERVAL).await;
            }
        }
    }

    /// Sweeps the ended client sessions into the outbox, claims the due notices and tries each
    /// once, all at once; returns how many it claimed.
    pub async fn pass(self: &Arc<Self>) -> Result<usize> {
        let now = self.clock.now_ms();
        self.store.sweep_logouts(now, SWEEP).await?;
        self.metrics
            .backchannel_outbox_age(self.store.logouts_oldest().await?.map(|t| now - t));
        let until = now + LEASE.as_millis() as i64;
        let notices = self.store.claim_logouts(now, until, BATCH).await?;
        outbox::try_each(notices, |notice| {
            let this = self.clone();
            async move { this.deliver(&notice).await }
        })
        .await
    }

    async fn deliver(&self, notice: &PendingLogout) -> Result<()> {
        let failure = match self.send(notice).await {
            Ok(()) => {
                self.store.logout_done(notice.id).await?;
                self.metrics.backchannel_logouts_sent.inc();
                tracing::info!(id = %notice.id, client = %notice.client_id, session = %notice.session_id, attempts = notice.attempts, "back-channel logout delivered");
                return Ok(());
            }
            Err(failure) => failure,
        };
        let now = self.clock.now_ms();
        let (error, give_up) = match failure {
            Failure::Refused(error) => (error, true),
            Failure::Retry(error) => (error, now - notice.created_at > GIVE_UP_AFTER_MS),
        };
        let error: String = error.chars().take(MAX_ERROR).collect();
        if give_up {
            self.metrics.backchannel_logouts_dropped.inc();
            tracing::warn!(id = %notice.id, client = %notice.client_id, attempts = notice.attempts, error = %error, "back-channel logout given up");
            return self.store.logout_done(notice.id).await;
        }
        let wait = backoff(notice.attempts);
        self.metrics.backchannel_logouts_failed.inc();
        tracing::warn!(id = %notice.id, client = %notice.client_id, attempts = notice.attempts, retry_in = ?wait, error = %error, "back-channel logout not delivered");
        self.store
            .logout_failed(notice.id, now + wait.as_millis() as i64, &error)
            .await
    }

    async fn send(&self, notice: &PendingLogout) -> Result<(), Failure> {
        let uri = callable(&notice.uri).map_err(Failure::Refused)?;
        let alg: SigningAlg = notice
            .alg
            .parse()
            .map_err(|_| Failure::Refused(format!("unknown algorithm {}", notice.alg)))?;
        let iat = self.clock.now_ms() / 1000;
        let claims = LogoutClaims {
            iss: &self.issuer,
            aud: notice.client_id.to_string(),
            iat,
            exp: iat + TOKEN_TTL_SECONDS,
            jti: Uuid::new_v4(),
            sub: notice.user_id,
            sid: notice.session_id,
            events: serde_json::json!({ EVENT: {} }),
        };
        let token = self
            .keyring
            .sign(alg, "logout+jwt", &claims)
            .map_err(|e| Failure::Retry(format!("cannot sign: {e}")))?;
        let body: String = form_urlencoded::Serializer::new(String::new())
            .append_pair("logout_token", &token)
            .finish();
        // The body of the answer is never read: a client's answer cannot fill this memory.
        let answer = self
            .http()?
            .post(uri)
            .header(
                reqwest::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .header(reqwest::header::CACHE_CONTROL, "no-store")
            .body(body)
            .send()
            .await
            .map_err(|e| Failure::Retry(without_url(e).to_string()))?;
        match answer.status().as_u16() {
            200 | 204 => Ok(()),
            status => Err(Failure::Retry(format!("the client answered {status}"))),
        }
    }
}

/// The wait after the `attempts`-th failure.
fn backoff(attempts: i64) -> Duration {
    outbox::backoff(FIRST_RETRY, RETRY_MAX, attempts)
}

/// The URI, if this service may POST to it: https, or http to a loopback address (docs/api.md
/// §11). The registry checks the same on registration; checked again here for the rows written
/// before a rule changed.
fn callable(uri: &str) -> Result<url::Url, String> {
    let url = url::Url::parse(uri).map_err(|_| "not a URL".to_owned())?;
    if crate::addresses::https_or_loopback(&url) {
        Ok(url)
    } else {
        Err("only https, or http on loopback, is called".to_owned())
    }
}

/// A transport error without its URL, which may hold a query the operator registered.
fn without_url(error: reqwest::Error) -> reqwest::Error {
    error.without_url()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_https_or_loopback_http_is_called() {
        assert!(callable("https://rp.example/logout").is_ok());
        assert!(callable("http://127.0.0.1:8080/logout").is_ok());
        assert!(callable("http://[::1]/logout").is_ok());
        assert!(callable("http://localhost:3000/bc").is_ok());
        assert!(callable("http://rp.example/logout").is_err());
        assert!(callable("http://10.0.0.1/logout").is_err());
        assert!(callable("ftp://127.0.0.1/logout").is_err());
        assert!(callable("not a url").is_err());
    }

    #[test]
    fn retries_back_off_to_the_cap() {
        assert_eq!(backoff(1), Duration::from_secs(1));
        assert_eq!(backoff(2), Duration::from_secs(2));
        assert_eq!(backoff(4), Duration::from_secs(8));
        assert_eq!(backoff(50), RETRY_MAX);
    }
}
