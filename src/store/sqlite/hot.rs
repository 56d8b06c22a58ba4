//! The queries of the hot paths on SQLite, in-process: the same SQL texts as sqlx runs on
//! PostgreSQL (and as the plan tests EXPLAIN), the same rows, turned into the same model types by
//! the same conversions (`store::contacts::ContactRow`…).

use rusqlite::{Connection, Row, TransactionBehavior};
use uuid::Uuid;

use super::{Lite, bind, uuid, uuid_opt};
use crate::error::Result;
use crate::model::contacts::Contact;
use crate::model::{RefreshRecord, Session, User};
use crate::store::audit::{INSERT_EVENT, NewEvent};
use crate::store::contacts::ContactRow;
use crate::store::sessions::{
    INSERT_REFRESH, INSERT_SESSION_SQLITE, NewSession, RECORD_LOGIN, RefreshRow, SessionRow,
};
use crate::store::users::UserRow;

impl Lite {
    /// One page of contacts: `sql` is the list query of the page's shape, `$1` the owner, then the
    /// cursor and the pattern where the shape has them, and the limit last.
    pub(crate) async fn list_contacts(
        &self,
        sql: &'static str,
        owner: Uuid,
        before: Option<Uuid>,
        pattern: Option<String>,
        limit: i64,
    ) -> Result<Vec<Contact>> {
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(sql)?;
            let owner = owner.as_bytes();
            let before = before.as_ref().map(Uuid::as_bytes);
            let mut args: Vec<&dyn rusqlite::ToSql> = vec![&owner];
            if let Some(before) = &before {
                args.push(before);
            }
            if let Some(pattern) = &pattern {
                args.push(pattern);
            }
            args.push(&limit);
            bind(&mut stmt, &args)?;
            let mut rows = stmt.raw_query();
            let mut page = Vec::new();
            while let Some(row) = rows.next()? {
                page.push(Contact::from(contact(row)?));
            }
            Ok(page)
        })
        .await
    }

    /// A row of `sql` (the user by id or by e-mail), `$1` being `key`.
    pub(crate) async fn user(
        &self,
        sql: &'static str,
        key: impl rusqlite::ToSql,
    ) -> Result<Option<User>> {
        self.read(move |conn| one(conn, sql, &[&key], user).map(|row| row.map(User::from)))
            .await
    }

    pub(crate) async fn session(&self, sql: &'static str, id: Uuid) -> Result<Option<Session>> {
        self.read(move |conn| {
            one(conn, sql, &[id.as_bytes()], session).map(|row| row.map(Session::from))
        })
        .await
    }

    /// A refresh token's record by `sql` (by its jti, or the session's current one).
    pub(crate) async fn refresh_record(
        &self,
        sql: &'static str,
        key: Uuid,
    ) -> Result<Option<RefreshRecord>> {
        self.read(move |conn| {
            one(conn, sql, &[key.as_bytes()], refresh).map(|row| row.map(RefreshRecord::from))
        })
        .await
    }

    /// A person's roles in an organisation, as stored.
    pub(crate) async fn member_roles(
        &self,
        sql: &'static str,
        org: Uuid,
        user: Uuid,
    ) -> Result<Option<(String, bool)>> {
        self.read(move |conn| {
            one(conn, sql, &[org.as_bytes(), user.as_bytes()], |row| {
                Ok((row.get(0)?, row.get(1)?))
            })
        })
        .await
    }

    /// `Store::insert_session` (see there for what the conditions guard).
    pub(crate) async fn insert_session(
        &self,
        s: &NewSession<'_>,
        amr: &str,
        scope: Option<&str>,
    ) -> Result<bool> {
        let grant = s.grant;
        self.write(move |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let created = execute(
                &tx,
                INSERT_SESSION_SQLITE,
                &[
                    s.id.as_bytes(),
                    s.user_id.as_bytes(),
                    &amr,
                    &s.ip,
                    &s.user_agent,
                    &s.refresh.issued_at,
                    &s.refresh.expires_at,
                    &s.auth_epoch,
                    &grant.map(|g| *g.client_id.as_bytes()),
                    &scope,
                    &grant.and_then(|g| g.parent_id).map(|id| *id.as_bytes()),
                    &grant.map(|g| g.auth_time),
                    &grant.and_then(|g| g.audience.as_deref()),
                    &s.org_id.map(|id| *id.as_bytes()),
                ],
            )?;
            if created != 1 {
                return Ok(false);
            }
            execute(
                &tx,
                INSERT_REFRESH,
                &[
                    s.refresh.jti.as_bytes(),
                    s.id.as_bytes(),
                    &s.refresh.issued_at,
                    &s.refresh.expires_at,
                ],
            )?;
            tx.commit()?;
            execute(
                conn,
                RECORD_LOGIN,
                &[s.user_id.as_bytes(), &s.refresh.issued_at],
            )?;
            Ok(true)
        })
        .await
    }
}

impl Lite {
    /// `Store::insert_event`, `id` its new id.
    pub(crate) async fn insert_event(&self, id: Uuid, e: &NewEvent<'_>) -> Result<()> {
        let opt = |id: Option<Uuid>| id.map(|id| *id.as_bytes());
        let (user, session, actor, org) = (
            opt(e.user_id),
            opt(e.session_id),
            opt(e.actor_id),
            opt(e.org_id),
        );
        self.write(move |conn| {
            execute(
                conn,
                INSERT_EVENT,
                &[
                    id.as_bytes(),
                    &e.at,
                    &e.event,
                    &user,
                    &session,
                    &e.ip,
                    &e.user_agent,
                    &e.detail,
                    &actor,
                    &org,
                ],
            )
            .map(|_| ())
        })
        .await
    }
}

/// The first row of `sql` with `args`, read by `read`.
pub(super) fn one<T>(
    conn: &Connection,
    sql: &str,
    args: &[&dyn rusqlite::ToSql],
    read: impl FnOnce(&Row<'_>) -> rusqlite::Result<T>,
) -> rusqlite::Result<Option<T>> {
    let mut stmt = conn.prepare_cached(sql)?;
    bind(&mut stmt, args)?;
    let mut rows = stmt.raw_query();
    rows.next()?.map(read).transpose()
}

/// Runs a statement that returns no rows; the number of rows it changed.
pub(super) fn execute(
    conn: &Connection,
    sql: &str,
    args: &[&dyn rusqlite::ToSql],
) -> rusqlite::Result<usize> {
    let mut stmt = conn.prepare_cached(sql)?;
    bind(&mut stmt, args)?;
    stmt.raw_execute()
}

// The rows, column by column in the order of the column lists (`contact_columns!`…).

fn contact(row: &Row<'_>) -> rusqlite::Result<ContactRow> {
    Ok(ContactRow {
        id: uuid(row, 0)?,
        full_name: row.get(1)?,
        email: row.get(2)?,
        phone: row.get(3)?,
        company: row.get(4)?,
        notes: row.get(5)?,
        created_at: row.get(6)?,
        updated_at: row.get(7)?,
        version: row.get(8)?,
    })
}

pub(super) fn session(row: &Row<'_>) -> rusqlite::Result<SessionRow> {
    Ok(SessionRow {
        id: uuid(row, 0)?,
        user_id: uuid(row, 1)?,
        amr: row.get(2)?,
        ip: row.get(3)?,
        user_agent: row.get(4)?,
        created_at: row.get(5)?,
        last_used_at: row.get(6)?,
        revoked_at: row.get(7)?,
        org_id: uuid_opt(row, 8)?,
        client_id: uuid_opt(row, 9)?,
        scope: row.get(10)?,
        parent_id: uuid_opt(row, 11)?,
        auth_time: row.get(12)?,
        audience: row.get(13)?,
    })
}

fn refresh(row: &Row<'_>) -> rusqlite::Result<RefreshRow> {
    Ok(RefreshRow {
        jti: uuid(row, 0)?,
        session_id: uuid(row, 1)?,
        issued_at: row.get(2)?,
        expires_at: row.get(3)?,
        consumed_at: row.get(4)?,
    })
}

fn user(row: &Row<'_>) -> rusqlite::Result<UserRow> {
    Ok(UserRow {
        id: uuid(row, 0)?,
        email: row.get(1)?,
        email_normalized: row.get(2)?,
        full_name: row.get(3)?,
        password_hash: row.get(4)?,
        disabled: row.get(5)?,
        totp_secret: row.get(6)?,
        totp_pending: row.get(7)?,
        auth_epoch: row.get(8)?,
        second_factor_blocked_until: row.get(9)?,
        roles: row.get(10)?,
        created_at: row.get(11)?,
        email_verified: row.get(12)?,
        last_login_at: row.get(13)?,
        email_verified_by: row.get(14)?,
    })
}
