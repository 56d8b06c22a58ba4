//! The delivery worker, one per instance: it claims due mails from the outbox with a lease (so two
//! instances never hold one mail at once), hands each to the transport, deletes it when delivered
//! and otherwise records the error and when to try again: 1 s, then doubling, capped by
//! `GATEHOUSE_MAIL_RETRY_MAX` (30 s), so a mail goes out within that cap (plus a poll) of the
//! server's return. It wakes when a flow of this instance queues a mail, and polls for the others'.

use std::sync::Arc;
use std::time::Duration;

use super::Mailer;
use super::transport::{Delivered, Transport};
use crate::clock::Clock;
use crate::error::Result;
use crate::metrics::Metrics;
use crate::model::mail::PendingMail;
use crate::outbox;
use crate::store::Store;

/// How often the outbox is read for mails queued by other instances, or due again.
pub const POLL_INTERVAL: Duration = Duration::from_secs(1);
/// Mails claimed (and sent at once) per pass.
const BATCH: i64 = 5;
const FIRST_RETRY: Duration = Duration::from_secs(1);
/// The longest error text kept (a server's answer can be long).
const MAX_ERROR: usize = 500;

/// How long a claim holds: past the longest a batch's sends can take (each bounded by the
/// transport's timeout), so a live worker's mails are never taken over, and a dead one's are
/// after this.
pub fn lease(smtp_timeout: Duration) -> Duration {
    smtp_timeout * 3 * BATCH as u32 + Duration::from_secs(30)
}

pub struct Delivery {
    pub store: Store,
    pub clock: Clock,
    pub mailer: Arc<Mailer>,
    pub transport: Arc<Transport>,
    pub metrics: Arc<Metrics>,
    pub retry_max: Duration,
    /// See `lease`.
    pub lease: Duration,
}

impl Delivery {
    /// Delivers until the task is aborted.
    pub async fn run(self) {
        let wake = self.mailer.wake();
        let this = Arc::new(self);
        loop {
            let full = match this.pass().await {
                Ok(claimed) => claimed >= BATCH as usize,
                Err(error) => {
                    tracing::debug!(error = %error, "cannot read the mail outbox yet");
                    false
                }
            };
            if !full {
                tokio::select! {
                    () = wake.notified() => {}
                    () = tokio::time::sleep(POLL_INTERVAL) => {}
                }
            }
        }
    }

    /// Claims the due mails and tries each once, all at once (each send waits mostly on the
    /// SMTP server); returns how many it claimed.
    pub async fn pass(self: &Arc<Self>) -> Result<usize> {
        let now = self.clock.now_ms();
        self.metrics
            .mail_outbox_age(self.store.outbox_oldest().await?.map(|t| now - t));
        let lease_until = now + self.lease.as_millis() as i64;
        let mails = self.store.claim_mails(now, lease_until, BATCH).await?;
        outbox::try_each(mails, |mail| {
            let this = self.clone();
            async move { this.deliver(&mail).await }
        })
        .await
    }

    async fn deliver(&self, mail: &PendingMail) -> Result<()> {
        let sent = match self.mailer.open(mail) {
            Ok(message) => {
                self.transport
                    .send(
                        self.mailer.sender(),
                        &mail.recipient,
                        &message,
                        (&mail.kind, self.clock.now_ms()),
                    )
                    .await
            }
            Err(error) => Err(error.to_string()),
        };
        match sent {
            Ok(delivered) => {
                self.store.mail_delivered(mail.id).await?;
                self.metrics.mail_sent(&mail.kind);
                match delivered {
                    Delivered::File(path) => {
                        // The recipient's address is personal data, kept out of the log but
                        // here: the `.eml` mailbox is a development setting (production mail goes
                        // over SMTP, whose line names no one), where who got which mail is the
                        // point of the line.
                        tracing::info!(id = %mail.id, kind = %mail.kind, to = %mail.recipient, file = %path.display(), "mail written");
                    }
                    Delivered::Smtp => {
                        tracing::info!(id = %mail.id, kind = %mail.kind, attempts = mail.attempts, "mail sent");
                    }
                }
            }
            Err(error) => {
                let wait = self.backoff(mail.attempts);
                let next = self.clock.now_ms() + wait.as_millis() as i64;
                let error: String = error.chars().take(MAX_ERROR).collect();
                self.metrics.mail_failed(&mail.kind);
                tracing::warn!(id = %mail.id, kind = %mail.kind, attempts = mail.attempts, retry_in = ?wait, error = %error, "mail not delivered");
                self.store.mail_failed(mail.id, next, &error).await?;
            }
        }
        Ok(())
    }

    /// The wait after the `attempts`-th failure.
    fn backoff(&self, attempts: i64) -> Duration {
        outbox::backoff(FIRST_RETRY, self.retry_max, attempts)
    }
}
