//! Prometheus metrics, served in the text format on the separate listener
//! `GATEHOUSE_METRICS_LISTEN` (never on the API's port). One registry per running service, not a
//! process-wide one, so tests can run several services in one process and read each one's own.
//! Every name starts with `gatehouse_`; HTTP series are labelled by route template, never by the
//! raw path, so ids and search terms cannot explode the series count.

use std::time::Duration;

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    pub method: String,
    pub route: String,
    pub status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RouteLabels {
    pub method: String,
    pub route: String,
}

/// An enum of label values, each written as the given snake_case text.
macro_rules! label_values {
    ($name:ident { $($variant:ident => $text:literal),+ $(,)? }) => {
        #[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
        pub enum $name {
            $($variant),+
        }

        impl EncodeLabelValue for $name {
            fn encode(&self, encoder: &mut LabelValueEncoder<'_>) -> Result<(), std::fmt::Error> {
                let text = match self {
                    $(Self::$variant => $text),+
                };
                EncodeLabelValue::encode(&text, encoder)
            }
        }
    };
}

label_values!(LoginOutcome {
    Success => "success",
    Challenge => "challenge",
    BadCredentials => "bad_credentials",
    Throttled => "throttled",
    Disabled => "disabled",
    Shed => "shed",
});

label_values!(TwoFactorOutcome {
    Success => "success",
    BadCode => "bad_code",
    InvalidChallenge => "invalid_challenge",
    Throttled => "throttled",
});

label_values!(RefreshOutcome {
    Rotated => "rotated",
    GraceReuse => "grace_reuse",
    ReuseDetected => "reuse_detected",
    Invalid => "invalid",
});

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct LoginLabels {
    pub outcome: LoginOutcome,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TwoFactorLabels {
    pub outcome: TwoFactorOutcome,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RefreshLabels {
    pub outcome: RefreshOutcome,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct Reason {
    pub reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PoolState {
    pub state: &'static str,
}

/// Latency buckets from 0.5 ms to 10 s: an authenticated call takes ~1 ms, a login ~20 ms, a
/// request stalled on an unreachable database 3 s.
fn latency_buckets() -> impl Iterator<Item = f64> {
    [
        0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
    ]
    .into_iter()
}

pub struct Metrics {
    registry: Registry,
    pub requests: Family<RequestLabels, Counter>,
    pub request_duration: Family<RouteLabels, Histogram>,
    pub logins: Family<LoginLabels, Counter>,
    pub two_factor: Family<TwoFactorLabels, Counter>,
    pub refreshes: Family<RefreshLabels, Counter>,
    pub revocations: Family<Reason, Counter>,
    pub hash_queue: Gauge,
    pub hash_wait: Histogram,
    pub hash_memory: Gauge,
    pub db_connections: Family<PoolState, Gauge>,
    pub federation_callbacks: Family<FederationLabels, Counter>,
    pub mail_queued: Family<MailLabels, Counter>,
    pub mail_sent: Family<MailLabels, Counter>,
    pub mail_failed: Family<MailLabels, Counter>,
    pub mail_outbox_age: Gauge<f64, std::sync::atomic::AtomicU64>,
    pub backchannel_logouts_sent: Counter,
    pub backchannel_logouts_failed: Counter,
    pub backchannel_logouts_dropped: Counter,
    pub backchannel_outbox_age: Gauge<f64, std::sync::atomic::AtomicU64>,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct FederationLabels {
    /// A configured provider's id (a callback URL naming none is counted as `unknown`).
    pub provider: String,
    pub purpose: String,
    pub outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct MailLabels {
    pub kind: String,
}

/// Registers `metric` under `name` and hands it back, to be kept where it is updated.
fn add<M: prometheus_client::registry::Metric + Clone>(
    registry: &mut Registry,
    name: &str,
    help: &str,
    metric: M,
) -> M {
    registry.register(name, help, metric.clone());
    metric
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("gatehouse");
        Metrics {
            requests: add(
                &mut registry,
                "http_requests",
                "HTTP requests answered, by method, route template and status",
                Family::<RequestLabels, Counter>::default(),
            ),
            request_duration: add(
                &mut registry,
                "http_request_duration_seconds",
                "Time from request to answer, by method and route template",
                Family::new_with_constructor(|| Histogram::new(latency_buckets())),
            ),
            logins: add(
                &mut registry,
                "logins",
                "Password logins by outcome: success, challenge (2FA asked), bad_credentials, \
             throttled, disabled, shed (hash pool full)",
                Family::default(),
            ),
            two_factor: add(
                &mut registry,
                "two_factor_verifications",
                "Second-factor checks at login by outcome",
                Family::default(),
            ),
            refreshes: add(
                &mut registry,
                "refreshes",
                "Refresh-token presentations by outcome: rotated, grace_reuse (a racing client), \
             reuse_detected (session revoked), invalid",
                Family::default(),
            ),
            revocations: add(
                &mut registry,
                "session_revocations",
                "Sessions ended, by reason",
                Family::default(),
            ),
            hash_queue: add(
                &mut registry,
                "password_hash_queue",
                "Password hashes running or waiting for a core",
                Gauge::default(),
            ),
            hash_wait: add(
                &mut registry,
                "password_hash_wait_seconds",
                "Time a password hash waited for a core",
                Histogram::new(latency_buckets()),
            ),
            hash_memory: add(
                &mut registry,
                "password_hash_memory_bytes",
                "Argon2 work memory held by the password-hashing threads",
                Gauge::default(),
            ),
            db_connections: add(
                &mut registry,
                "db_connections",
                "Database pool connections by state (idle, in_use), read at scrape time",
                Family::default(),
            ),
            federation_callbacks: add(
                &mut registry,
                "federation_callbacks",
                "Returns from identity providers, by provider, purpose (sign_in, link, reauthenticate) and outcome (signed_in, linked, reauthenticated, or the refusal's code)",
                Family::default(),
            ),
            mail_queued: add(
                &mut registry,
                "mail_queued",
                "Mails written to the outbox, by kind (reset, verify, email_change, invitation, notice)",
                Family::default(),
            ),
            mail_sent: add(
                &mut registry,
                "mail_sent",
                "Mails delivered by this instance (to the SMTP server, or to a file), by kind",
                Family::default(),
            ),
            mail_failed: add(
                &mut registry,
                "mail_failed",
                "Delivery attempts that failed and will be retried, by kind",
                Family::default(),
            ),
            mail_outbox_age: add(
                &mut registry,
                "mail_outbox_age_seconds",
                "Age of the oldest mail waiting in the outbox (0 when empty), read by each delivery pass",
                Gauge::<f64, std::sync::atomic::AtomicU64>::default(),
            ),
            backchannel_logouts_sent: add(
                &mut registry,
                "backchannel_logouts_sent",
                "Logout tokens a client took (200 or 204) from this instance (docs/api.md §11)",
                Counter::default(),
            ),
            backchannel_logouts_failed: add(
                &mut registry,
                "backchannel_logouts_failed",
                "Back-channel logout attempts that failed and will be retried",
                Counter::default(),
            ),
            backchannel_logouts_dropped: add(
                &mut registry,
                "backchannel_logouts_dropped",
                "Logout tokens given up: refused URI, or still undelivered after a day",
                Counter::default(),
            ),
            backchannel_outbox_age: add(
                &mut registry,
                "backchannel_outbox_age_seconds",
                "Age of the oldest logout token waiting in the outbox (0 when empty), read by each delivery pass",
                Gauge::<f64, std::sync::atomic::AtomicU64>::default(),
            ),
            registry,
        }
    }

    pub fn login(&self, outcome: LoginOutcome) {
        self.logins.get_or_create(&LoginLabels { outcome }).inc();
    }

    pub fn two_factor(&self, outcome: TwoFactorOutcome) {
        self.two_factor
            .get_or_create(&TwoFactorLabels { outcome })
            .inc();
    }

    pub fn refresh(&self, outcome: RefreshOutcome) {
        self.refreshes
            .get_or_create(&RefreshLabels { outcome })
            .inc();
    }

    pub fn revoked(&self, reason: &'static str, sessions: u64) {
        if sessions > 0 {
            self.revocations
                .get_or_create(&Reason { reason })
                .inc_by(sessions);
        }
    }

    pub fn request(&self, method: &str, route: &str, status: u16, elapsed: Duration) {
        let (method, route) = (method.to_owned(), route.to_owned());
        self.request_duration
            .get_or_create(&RouteLabels {
                method: method.clone(),
                route: route.clone(),
            })
            .observe(elapsed.as_secs_f64());
        self.requests
            .get_or_create(&RequestLabels {
                method,
                route,
                status,
            })
            .inc();
    }

    pub fn federation_callback(&self, provider: &str, purpose: &str, outcome: &str) {
        let labels = FederationLabels {
            provider: provider.to_owned(),
            purpose: purpose.to_owned(),
            outcome: outcome.to_owned(),
        };
        self.federation_callbacks.get_or_create(&labels).inc();
    }

    pub fn mail_queued(&self, kind: &str) {
        let kind = kind.to_owned();
        self.mail_queued.get_or_create(&MailLabels { kind }).inc();
    }

    pub fn mail_sent(&self, kind: &str) {
        let kind = kind.to_owned();
        self.mail_sent.get_or_create(&MailLabels { kind }).inc();
    }

    pub fn mail_failed(&self, kind: &str) {
        let kind = kind.to_owned();
        self.mail_failed.get_or_create(&MailLabels { kind }).inc();
    }

    /// `age_ms`: of the oldest waiting mail, none when the outbox is empty.
    pub fn mail_outbox_age(&self, age_ms: Option<i64>) {
        self.mail_outbox_age
            .set(age_ms.unwrap_or(0).max(0) as f64 / 1000.0);
    }

    /// `age_ms`: of the oldest waiting logout token, none when the outbox is empty.
    pub fn backchannel_outbox_age(&self, age_ms: Option<i64>) {
        self.backchannel_outbox_age
            .set(age_ms.unwrap_or(0).max(0) as f64 / 1000.0);
    }

    /// The text exposition of every metric.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut text, &self.registry);
        text
    }
}
