//! Organisations through the administration API (docs/api.md §13, §8): listed, read, their
//! members listed, deleted. Reads are audited as the other admin reads are; a deletion is an
//! organisation event with the admin as its actor.

use uuid::Uuid;

use super::Admin;
use crate::auth::audit::Operator;
use crate::auth::audit::{Actor, AdminRead, AuditEvent, OrgEvent};
use crate::error::{Error, Result, Validator};
use crate::model::Page;
use crate::model::orgs::Org;
use crate::orgs::MemberPage;

/// Longest `q`, in characters.
const QUERY_MAX: usize = 200;

impl Admin {
    /// `GET /admin/orgs`: every organisation whose name or slug holds `q`, by id, a page at a time.
    pub async fn list_orgs(
        &self,
        op: Operator<'_>,
        q: Option<&str>,
        limit: u32,
        cursor: Option<&str>,
    ) -> Result<Page<Org>> {
        let mut v = Validator::new();
        let after = match cursor.filter(|c| !c.is_empty()) {
            None => Some(None),
            Some(c) => v.check(
                "cursor",
                self.core
                    .secrets
                    .open_cursor(&[b"admin", b"orgs"], c)
                    .and_then(|b| {
                        Uuid::from_slice(&b)
                            .map_err(|_| "is not a cursor this service issued".to_owned())
                    })
                    .map(Some),
            ),
        };
        let needle = match q.filter(|q| !q.is_empty()) {
            None => Some(None),
            Some(q) if q.chars().count() > QUERY_MAX => {
                v.check("q", Err(format!("must be at most {QUERY_MAX} characters")))
            }
            Some(q) if q.chars().any(char::is_control) => {
                v.check("q", Err("must not contain control characters".into()))
            }
            Some(q) => Some(Some(q.to_lowercase())),
        };
        let (after, needle) = v.finish(after.zip(needle))?;
        let limit = i64::from(limit.max(1));
        let mut rows = self
            .core
            .store
            .all_orgs(needle.as_deref(), after, limit + 1)
            .await?;
        let more = rows.len() as i64 > limit;
        rows.truncate(limit as usize);
        let next_cursor = more.then(|| rows.last()).flatten().map(|last| {
            self.core
                .secrets
                .cursor(&[b"admin", b"orgs"], last.id.as_bytes())
        });
        self.core
            .audit_by(op, AuditEvent::AdminRead(AdminRead::Orgs), None)
            .await;
        Ok(Page {
            items: rows,
            next_cursor,
        })
    }

    /// `GET /admin/orgs/{id}`.
    pub async fn org(&self, op: Operator<'_>, id: Uuid) -> Result<Org> {
        let org = self.core.store.org(id).await?.ok_or(Error::NotFound)?;
        self.core
            .audit_by(op, AuditEvent::AdminRead(AdminRead::Orgs), None)
            .await;
        Ok(org)
    }

    /// `GET /admin/orgs/{id}/members`.
    pub async fn org_members(
        &self,
        op: Operator<'_>,
        id: Uuid,
        limit: u32,
        cursor: Option<&str>,
    ) -> Result<MemberPage> {
        self.core.store.org(id).await?.ok_or(Error::NotFound)?;
        let page = self.orgs.member_page(id, limit, cursor).await?;
        self.core
            .audit_by(op, AuditEvent::AdminRead(AdminRead::Orgs), None)
            .await;
        Ok(page)
    }

    /// `DELETE /admin/orgs/{id}`: as its owner would.
    pub async fn delete_org(&self, op: Operator<'_>, id: Uuid) -> Result<()> {
        self.orgs.remove(id).await?;
        let event = AuditEvent::Org {
            org: id,
            what: OrgEvent::Deleted {
                by: match op {
                    Operator::Cli => Actor::Cli,
                    Operator::Admin { .. } => Actor::Admin,
                },
            },
        };
        self.core.audit_by(op, event, None).await;
        Ok(())
    }
}
