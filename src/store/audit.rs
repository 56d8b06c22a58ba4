//! The audit trail.

use uuid::Uuid;

use super::{Store, on_pool, on_write_pool};
use crate::error::Result;

pub struct NewEvent<'a> {
    pub at: i64,
    pub event: &'a str,
    pub user_id: Option<Uuid>,
    pub session_id: Option<Uuid>,
    pub ip: Option<&'a str>,
    pub user_agent: Option<&'a str>,
    pub detail: Option<&'a str>,
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct EventRow {
    pub at: i64,
    pub event: String,
    pub user_id: Option<Uuid>,
    pub email: Option<String>,
    pub session_id: Option<Uuid>,
    pub ip: Option<String>,
    pub user_agent: Option<String>,
    pub detail: Option<String>,
}

impl Store {
    pub async fn insert_event(&self, e: &NewEvent<'_>) -> Result<()> {
        let sql = "INSERT INTO audit_events (id, at, event, user_id, session_id, ip, user_agent, \
                   detail) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)";
        on_write_pool!(self, |pool| sqlx::query(sql)
            .bind(Uuid::now_v7())
            .bind(e.at)
            .bind(e.event)
            .bind(e.user_id)
            .bind(e.session_id)
            .bind(e.ip)
            .bind(e.user_agent)
            .bind(e.detail)
            .execute(pool)
            .await
            .map(|_| ()))
    }

    /// Events at or after `since`, of one user if given, oldest first.
    pub async fn events(&self, since: i64, user_id: Option<Uuid>) -> Result<Vec<EventRow>> {
        let mut sql =
            "SELECT a.at, a.event, a.user_id, u.email, a.session_id, a.ip, a.user_agent, \
                       a.detail FROM audit_events a LEFT JOIN users u ON u.id = a.user_id \
                       WHERE a.at >= $1"
                .to_owned();
        if user_id.is_some() {
            sql.push_str(" AND a.user_id = $2");
        }
        sql.push_str(" ORDER BY a.at, a.id");
        on_pool!(self, |pool| {
            let mut query = sqlx::query_as(&sql).bind(since);
            if let Some(user_id) = user_id {
                query = query.bind(user_id);
            }
            query.fetch_all(pool).await
        })
    }
}
