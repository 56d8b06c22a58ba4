//! What acts for a person (docs/api.md §11, "Connected applications"): every client that holds a
//! grant of theirs, whether a consent they gave or a live session (a first-party app asks no
//! consent; a device or an agent has a session of its own), with what it may do, where it was
//! last used from, and the means to end it everywhere at once.

use std::collections::BTreeMap;

use uuid::Uuid;

use super::Provider;
use crate::auth::audit::{Actor, AdminRead, AuditEvent, Operator, Subject};
use crate::error::{Error, Result};
use crate::model::{Client, ClientOrigin, EndReason, GrantType, Session};

/// How a connected application came to be registered, as the person is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppKind {
    /// The team's own application: it asks no consent.
    FirstParty,
    /// Registered by an operator.
    Operator,
    /// A command-line tool or an agent, signed in by the device grant (an operator registered it).
    Device,
    /// Registered by itself (RFC 7591): its name is its own word.
    SelfRegistered,
    /// Known by the client ID metadata document at its URL.
    MetadataDocument,
}

impl AppKind {
    pub fn of(client: &Client) -> AppKind {
        match client.origin {
            ClientOrigin::Registered => AppKind::SelfRegistered,
            ClientOrigin::MetadataDocument { .. } => AppKind::MetadataDocument,
            ClientOrigin::Operator if client.first_party => AppKind::FirstParty,
            ClientOrigin::Operator if client.has_grant(GrantType::DeviceCode) => AppKind::Device,
            ClientOrigin::Operator => AppKind::Operator,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            AppKind::FirstParty => "first_party",
            AppKind::Operator => "operator",
            AppKind::Device => "device",
            AppKind::SelfRegistered => "self_registered",
            AppKind::MetadataDocument => "metadata_document",
        }
    }
}

/// A client that acts for the person.
#[derive(Debug, Clone)]
pub struct ConnectedApp {
    pub client: Client,
    pub kind: AppKind,
    /// What it may do: its live sessions' scopes, else the consent's.
    pub scopes: Vec<String>,
    /// The organisation its latest session acts in (docs/api.md §13).
    pub org_id: Option<Uuid>,
    /// When the person allowed it, if it asked.
    pub allowed_at: Option<i64>,
    /// Its live sessions (a device, a browser, an agent each).
    pub sessions: usize,
    /// Its latest session's last use, and where that session began (address, user agent).
    pub last_used_at: Option<i64>,
    pub ip: Option<String>,
    pub user_agent: Option<String>,
}

/// What one client holds of the person: its live sessions (latest used first), and the consent's
/// time and scopes.
type Holding<'a> = (Vec<&'a Session>, Option<(i64, Vec<String>)>);

impl Provider {
    /// Every client that acts for `user`: a live session, or a consent, or both; the most
    /// recently used first.
    pub async fn connected_apps(&self, user: Uuid) -> Result<Vec<ConnectedApp>> {
        let now = self.core.clock.now_ms();
        let sessions = self.core.store.active_sessions(user, now).await?;
        let consents = self.core.store.consents_of(user).await?;
        let mut by_client: BTreeMap<Uuid, Holding> = BTreeMap::new();
        for session in sessions.iter().filter(|s| !self.core.live.is_revoked(s.id)) {
            if let Some(grant) = &session.grant {
                by_client
                    .entry(grant.client_id)
                    .or_default()
                    .0
                    .push(session);
            }
        }
        for consent in consents {
            by_client.entry(consent.client_id).or_default().1 =
                Some((consent.granted_at, consent.scopes));
        }
        let mut apps = Vec::with_capacity(by_client.len());
        for (client_id, (sessions, consent)) in by_client {
            // Removed meanwhile: nothing of it is left to show or end.
            let Some(client) = self.clients.find_id(client_id).await? else {
                continue;
            };
            // The store lists sessions by their last use, latest first.
            let latest = sessions.first();
            let mut scopes: Vec<String> = Vec::new();
            for grant in sessions.iter().filter_map(|s| s.grant.as_ref()) {
                for scope in &grant.scope {
                    if !scopes.contains(scope) {
                        scopes.push(scope.clone());
                    }
                }
            }
            if scopes.is_empty() {
                scopes = consent.as_ref().map(|c| c.1.clone()).unwrap_or_default();
            }
            apps.push(ConnectedApp {
                kind: AppKind::of(&client),
                client,
                scopes,
                org_id: latest.and_then(|s| s.org_id),
                allowed_at: consent.map(|c| c.0),
                sessions: sessions.len(),
                last_used_at: latest.map(|s| s.last_used_at),
                ip: latest.and_then(|s| s.ip.clone()),
                user_agent: latest.and_then(|s| s.user_agent.clone()),
            });
        }
        apps.sort_by_key(|a| std::cmp::Reverse(a.last_used_at.or(a.allowed_at)));
        Ok(apps)
    }

    /// `connected_apps` of an account, read by an operator (audited as an admin read).
    pub async fn connected_apps_of(
        &self,
        op: Operator<'_>,
        user: Uuid,
    ) -> Result<Vec<ConnectedApp>> {
        if self.core.store.user_by_id(user).await?.is_none() {
            return Err(Error::NotFound);
        }
        let apps = self.connected_apps(user).await?;
        let event = AuditEvent::AdminRead(AdminRead::ConnectedApps);
        self.core.audit_by(op, event, Some(user)).await;
        Ok(apps)
    }

    /// Ends everything `client` holds of `user`: its consent and every session (so every access
    /// and refresh token), refused here at once and on every instance within 2 s. `by`: the
    /// person, or an operator (`op`). `NotFound` when it holds nothing.
    pub async fn disconnect(
        &self,
        user: Uuid,
        client: Uuid,
        op: Option<Operator<'_>>,
    ) -> Result<u64> {
        let now = self.core.clock.now_ms();
        let reason = match op {
            None => EndReason::ConsentWithdrawn,
            Some(_) => EndReason::EndedByAdmin,
        };
        let store = &self.core.store;
        let mut ended = (store
            .withdraw_consent(user, client, reason.as_str(), now)
            .await?)
            .map(|sessions| (true, sessions))
            .unwrap_or_default();
        let rest = store
            .revoke_client_sessions(client, Some(user), reason.as_str(), now)
            .await?;
        ended.1.extend(rest.into_iter().map(|(session, _)| session));
        if !ended.0 && ended.1.is_empty() {
            return Err(Error::NotFound);
        }
        self.core.ended(&ended.1, now, reason);
        let sessions_ended = ended.1.len() as u64;
        let event = |by| AuditEvent::AppDisconnected {
            client,
            by,
            sessions_ended,
        };
        match op {
            Some(op) => {
                let event = event(op.actor());
                self.core.audit_by(op, event, Some(user)).await;
            }
            None => {
                let event = event(Actor::Owner);
                self.core.audit(event, Subject::user(user)).await;
            }
        }
        Ok(sessions_ended)
    }
}
