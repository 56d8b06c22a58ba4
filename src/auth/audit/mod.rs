//! The audit trail: what happened (`events`), about whom (`Subject`), written by the `Auditor`.

use uuid::Uuid;

use crate::clock::Clock;
use crate::model::ClientInfo;
use crate::store::Store;
use crate::store::audit::NewEvent;

mod events;
mod operator;
mod org_events;

pub use events::{Actor, AdminRead, AuditEvent, LoginFailure, OrgEvent, Origin};
pub use operator::Operator;

/// Whom an audit event is about: the account, its session, the admin who acted on it and where
/// the call came from; built by naming each (`Subject::user(id).in_session(sid).from(client)`),
/// so that no call site passes four adjacent `Option`s in the wrong order.
#[derive(Clone, Copy, Default)]
pub struct Subject<'a> {
    user_id: Option<Uuid>,
    session_id: Option<Uuid>,
    actor_id: Option<Uuid>,
    client: Option<&'a ClientInfo>,
}

impl<'a> Subject<'a> {
    /// An event of the service itself or of its operator at the CLI (key rotation, clients).
    pub fn service() -> Self {
        Subject::default()
    }

    /// A caller not (yet) known as an account.
    pub fn anyone() -> Self {
        Subject::default()
    }

    pub fn user(id: Uuid) -> Self {
        Subject::maybe_user(Some(id))
    }

    pub fn maybe_user(id: Option<Uuid>) -> Self {
        Subject {
            user_id: id,
            ..Subject::default()
        }
    }

    pub fn in_session(self, id: Uuid) -> Self {
        Subject {
            session_id: Some(id),
            ..self
        }
    }

    /// The admin whose call made the event (`actor_id`).
    pub fn by(self, admin: Uuid) -> Self {
        Subject {
            actor_id: Some(admin),
            ..self
        }
    }

    pub fn from(self, client: &'a ClientInfo) -> Self {
        self.maybe_from(Some(client))
    }

    pub fn maybe_from(self, client: Option<&'a ClientInfo>) -> Self {
        Subject { client, ..self }
    }
}

/// Writes audit events. A failure to record is logged, not answered: the event itself (a login,
/// a logout) has happened.
#[derive(Clone)]
pub struct Auditor {
    store: Store,
    clock: Clock,
}

impl Auditor {
    pub fn new(store: Store, clock: Clock) -> Self {
        Auditor { store, clock }
    }

    pub async fn record(&self, event: AuditEvent, subject: Subject<'_>) {
        let Subject {
            user_id,
            session_id,
            actor_id,
            client,
        } = subject;
        let ip = client.and_then(|c| c.ip).map(|ip| ip.to_string());
        let detail = event.detail();
        let recorded = self
            .store
            .insert_event(&NewEvent {
                at: self.clock.now_ms(),
                event: event.name(),
                user_id,
                session_id,
                ip: ip.as_deref(),
                user_agent: client.and_then(|c| c.user_agent.as_deref()),
                detail: detail.as_deref(),
                actor_id,
                org_id: match &event {
                    AuditEvent::Org { org, .. } => Some(*org),
                    _ => None,
                },
            })
            .await;
        if let Err(error) = recorded {
            tracing::warn!(event = event.name(), error = %error, "cannot record an audit event");
        }
    }

    /// `record`, without the caller waiting for the row: for an event of a path served thousands
    /// of times a second (a token exchange), whose answer needs nothing of the write. Recording
    /// is best-effort either way (a failure is logged, never answered); the row lands within the
    /// time of one write.
    pub fn record_in_background(&self, event: AuditEvent, subject: Subject<'_>) {
        let auditor = self.clone();
        let client = subject.client.cloned();
        let (user_id, session_id, actor_id) =
            (subject.user_id, subject.session_id, subject.actor_id);
        tokio::spawn(async move {
            let subject = Subject {
                user_id,
                session_id,
                actor_id,
                client: client.as_ref(),
            };
            auditor.record(event, subject).await;
        });
    }
}
