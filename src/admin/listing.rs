//! What admins read: accounts a page at a time (searched by address or name), one account, and
//! the audit trail. Pages are keyset pages with opaque cursors carrying a keyed tag, so a row
//! written or deleted between two pages neither repeats nor hides another, and a cursor the
//! service did not issue is refused rather than read.

use uuid::Uuid;

use crate::admin::Admin;
use crate::auth::audit::Operator;
use crate::auth::audit::{AdminRead, AuditEvent};
use crate::error::{Error, Result, Validator};
use crate::model::{ManagedUser, Page};
use crate::store::audit::{EventQuery, EventRow};

/// Longest search text.
const QUERY_MAX: usize = 200;
/// Longest event name a filter may name (the longest written is far shorter).
const EVENT_MAX: usize = 64;

/// `GET /admin/users`: the query as given (checked here).
#[derive(Debug, Default)]
pub struct UserFilter {
    /// Substring of the address or the name, any case; empty or `None`: every account.
    pub q: Option<String>,
    pub cursor: Option<String>,
    pub limit: u32,
}

/// `GET /admin/audit`: the query as given (checked here, but for `since`, a time already).
#[derive(Debug, Default)]
pub struct AuditFilter {
    pub user: Option<Uuid>,
    /// Only the events of this organisation (docs/api.md §13).
    pub org: Option<Uuid>,
    pub event: Option<String>,
    /// At or after (ms).
    pub since: Option<i64>,
    pub cursor: Option<String>,
    pub limit: u32,
}

impl Admin {
    /// Accounts in address order, a page at a time.
    pub async fn list_users(
        &self,
        op: Operator<'_>,
        filter: UserFilter,
    ) -> Result<Page<ManagedUser>> {
        let mut v = Validator::new();
        let after = match filter.cursor.as_deref().filter(|c| !c.is_empty()) {
            None => Some(None),
            Some(c) => v.check("cursor", self.open_cursor(b"users", c).map(Some)),
        };
        let q = match filter.q.as_deref().filter(|q| !q.is_empty()) {
            None => Some(None),
            Some(q) if q.chars().count() > QUERY_MAX => {
                v.check("q", Err(format!("must be at most {QUERY_MAX} characters")))
            }
            Some(q) if q.chars().any(char::is_control) => {
                v.check("q", Err("must not contain control characters".into()))
            }
            Some(q) => Some(Some(q.to_owned())),
        };
        let (after, q) = v.finish(after.zip(q))?;
        let after = after
            .map(|bytes| {
                String::from_utf8(bytes).map_err(|_| Error::field("cursor", cursor_error()))
            })
            .transpose()?;
        let limit = i64::from(filter.limit);
        // One row more than asked tells whether there is a next page.
        let mut rows = self
            .core
            .store
            .users_page(after.as_deref(), q.as_deref(), limit + 1)
            .await?;
        let more = rows.len() as i64 > limit;
        rows.truncate(limit as usize);
        let next_cursor = more
            .then(|| rows.last())
            .flatten()
            .map(|last| self.cursor(b"users", last.user.email_normalized.as_bytes()));
        self.core
            .audit_by(op, AuditEvent::AdminRead(AdminRead::Users), None)
            .await;
        Ok(Page {
            items: rows,
            next_cursor,
        })
    }

    /// One account.
    pub async fn managed_user(&self, op: Operator<'_>, id: Uuid) -> Result<ManagedUser> {
        let user = self.target(id).await?;
        self.core
            .audit_by(op, AuditEvent::AdminRead(AdminRead::User), Some(id))
            .await;
        Ok(user)
    }

    /// The audit trail, newest first, a page at a time.
    pub async fn audit_trail(
        &self,
        op: Operator<'_>,
        filter: AuditFilter,
    ) -> Result<Page<EventRow>> {
        let mut v = Validator::new();
        let before = match filter.cursor.as_deref().filter(|c| !c.is_empty()) {
            None => Some(None),
            Some(c) => v.check(
                "cursor",
                self.open_cursor(b"audit", c)
                    .and_then(|b| event_key(&b).ok_or_else(cursor_error))
                    .map(Some),
            ),
        };
        let event = match filter.event.as_deref().filter(|e| !e.is_empty()) {
            None => Some(None),
            Some(e)
                if e.len() <= EVENT_MAX
                    && e.bytes()
                        .all(|b| b.is_ascii_lowercase() || b == b'.' || b == b'_') =>
            {
                Some(Some(e.to_owned()))
            }
            Some(_) => v.check(
                "type",
                Err("must be an event name such as login.failed".into()),
            ),
        };
        let (before, event) = v.finish(before.zip(event))?;
        let limit = i64::from(filter.limit);
        let mut rows = self
            .core
            .store
            .events(&EventQuery {
                since: filter.since,
                user_id: filter.user,
                org_id: filter.org,
                event,
                before,
                newest_first: true,
                limit: Some(limit + 1),
            })
            .await?;
        let more = rows.len() as i64 > limit;
        rows.truncate(limit as usize);
        let next_cursor = more.then(|| rows.last()).flatten().map(|last| {
            let key = [&last.at.to_be_bytes()[..], last.id.as_bytes()].concat();
            self.cursor(b"audit", &key)
        });
        self.core
            .audit_by(op, AuditEvent::AdminRead(AdminRead::Audit), filter.user)
            .await;
        Ok(Page {
            items: rows,
            next_cursor,
        })
    }

    /// `key` (the last row's sort key) and a keyed tag over it and the list it belongs to.
    fn cursor(&self, list: &[u8], key: &[u8]) -> String {
        self.core.secrets.cursor(&[b"admin", list], key)
    }

    /// The key of a cursor `cursor` issued for `list`.
    fn open_cursor(&self, list: &[u8], cursor: &str) -> Result<Vec<u8>, String> {
        self.core.secrets.open_cursor(&[b"admin", list], cursor)
    }
}

fn cursor_error() -> String {
    "is not a cursor this service issued".to_owned()
}

/// (at, id) of an audit cursor's key.
fn event_key(key: &[u8]) -> Option<(i64, Uuid)> {
    let (at, id) = key.split_first_chunk::<8>()?;
    Some((i64::from_be_bytes(*at), Uuid::from_slice(id).ok()?))
}
