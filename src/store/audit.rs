//! The audit trail.

use uuid::Uuid;

use super::{Backend, Store, on_pool, on_write_pool};
use crate::error::Result;

pub struct NewEvent<'a> {
    pub at: i64,
    pub event: &'a str,
    pub user_id: Option<Uuid>,
    pub session_id: Option<Uuid>,
    pub ip: Option<&'a str>,
    pub user_agent: Option<&'a str>,
    pub detail: Option<&'a str>,
    /// The admin whose call it was, when that is not the user.
    pub actor_id: Option<Uuid>,
    /// The organisation the event concerns (docs/api.md §13).
    pub org_id: Option<Uuid>,
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct EventRow {
    pub id: Uuid,
    pub at: i64,
    pub event: String,
    pub user_id: Option<Uuid>,
    pub email: Option<String>,
    pub session_id: Option<Uuid>,
    pub ip: Option<String>,
    pub user_agent: Option<String>,
    pub detail: Option<String>,
    pub actor_id: Option<Uuid>,
    pub org_id: Option<Uuid>,
}

/// Which events to read: `gatehouse audit` and `GET /admin/audit` both ask with this.
#[derive(Debug, Clone, Default)]
pub struct EventQuery {
    /// At or after (ms).
    pub since: Option<i64>,
    /// Of this user (the event's `user_id`: the target of an admin's act).
    pub user_id: Option<Uuid>,
    /// Of this name (`login.failed`).
    pub event: Option<String>,
    /// Concerning this organisation.
    pub org_id: Option<Uuid>,
    /// Newest first, strictly before this (at, id): the keyset cursor of the previous page.
    /// Without it (and without `newest_first`), oldest first.
    pub before: Option<(i64, Uuid)>,
    pub newest_first: bool,
    pub limit: Option<i64>,
}

pub(super) const INSERT_EVENT: &str = "INSERT INTO audit_events (id, at, event, user_id, \
    session_id, ip, user_agent, detail, actor_id, org_id) \
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)";

impl Store {
    /// Written by most requests that change something (every login, refresh excepted): on SQLite
    /// in-process, with the hot paths (`store::sqlite`).
    pub async fn insert_event(&self, e: &NewEvent<'_>) -> Result<()> {
        let id = Uuid::now_v7();
        if let Backend::Sqlite { lite, .. } = &self.backend {
            return lite.insert_event(id, e).await;
        }
        on_write_pool!(self, |pool| sqlx::query(INSERT_EVENT)
            .bind(id)
            .bind(e.at)
            .bind(e.event)
            .bind(e.user_id)
            .bind(e.session_id)
            .bind(e.ip)
            .bind(e.user_agent)
            .bind(e.detail)
            .bind(e.actor_id)
            .bind(e.org_id)
            .execute(pool)
            .await
            .map(|_| ()))
    }

    /// The events `q` asks for. Each filter is one indexed condition (`audit_events_at`,
    /// `audit_events_user`, `audit_events_event`), and the order (at, id) is the cursor's, so a
    /// page never repeats or skips an event however many are written meanwhile.
    pub async fn events(&self, q: &EventQuery) -> Result<Vec<EventRow>> {
        let mut sql = "SELECT a.id, a.at, a.event, a.user_id, u.email, a.session_id, a.ip, \
                       a.user_agent, a.detail, a.actor_id, a.org_id \
                       FROM audit_events a LEFT JOIN users u ON u.id = a.user_id WHERE TRUE"
            .to_owned();
        let mut n = 0;
        let mut param = || {
            n += 1;
            format!("${n}")
        };
        if q.since.is_some() {
            sql.push_str(&format!(" AND a.at >= {}", param()));
        }
        if q.user_id.is_some() {
            sql.push_str(&format!(" AND a.user_id = {}", param()));
        }
        if q.event.is_some() {
            sql.push_str(&format!(" AND a.event = {}", param()));
        }
        if q.org_id.is_some() {
            sql.push_str(&format!(" AND a.org_id = {}", param()));
        }
        if q.before.is_some() {
            let (at, same_at, id) = (param(), param(), param());
            sql.push_str(&format!(
                " AND (a.at < {at} OR (a.at = {same_at} AND a.id < {id}))"
            ));
        }
        if q.newest_first {
            sql.push_str(" ORDER BY a.at DESC, a.id DESC");
        } else {
            sql.push_str(" ORDER BY a.at, a.id");
        }
        if q.limit.is_some() {
            sql.push_str(&format!(" LIMIT {}", param()));
        }
        on_pool!(self, |pool| {
            let mut query = sqlx::query_as(&sql);
            if let Some(since) = q.since {
                query = query.bind(since);
            }
            if let Some(user_id) = q.user_id {
                query = query.bind(user_id);
            }
            if let Some(event) = &q.event {
                query = query.bind(event);
            }
            if let Some(org_id) = q.org_id {
                query = query.bind(org_id);
            }
            if let Some((at, id)) = q.before {
                query = query.bind(at).bind(at).bind(id);
            }
            if let Some(limit) = q.limit {
                query = query.bind(limit);
            }
            query.fetch_all(pool).await
        })
    }
}
