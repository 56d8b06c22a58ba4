//! Organisations and their members (docs/api.md §13). Every change of a membership moves the
//! member's `users.updated_at` in its transaction, so each instance's directory forgets the old
//! membership by the poll it already makes (`auth::directory`). Changes that could leave an
//! organisation without an owner lock its row first (PostgreSQL; SQLite has one writer), so two
//! owners removing each other at once cannot both succeed.

use uuid::Uuid;

use super::{Backend, Store, is_unique_violation, on_pool, on_write_pool};
use crate::error::Result;
use crate::model::orgs::{Member, Membership, MembershipChange, OWNER, Org};

#[derive(sqlx::FromRow)]
pub(super) struct OrgRow {
    id: Uuid,
    name: String,
    slug: String,
    require_two_factor: bool,
    created_at: i64,
}

impl From<OrgRow> for Org {
    fn from(r: OrgRow) -> Self {
        Org {
            id: r.id,
            name: r.name,
            slug: r.slug,
            require_two_factor: r.require_two_factor,
            created_at: r.created_at,
        }
    }
}

macro_rules! org_columns {
    () => {
        "id, name, slug, require_two_factor, created_at"
    };
}

pub(super) fn split_roles(roles: &str) -> Vec<String> {
    roles.split_whitespace().map(str::to_owned).collect()
}

/// A directory miss's second read (the first is the account): shared with the plan tests.
pub(super) const MEMBERSHIPS_OF: &str = "SELECT m.org_id, m.roles, o.require_two_factor \
     FROM org_members m JOIN orgs o ON o.id = m.org_id WHERE m.user_id = $1";

/// The member's account moved, so that every instance's directory reads its memberships again.
macro_rules! touch_user {
    ($tx:ident, $user:expr, $now:expr) => {
        sqlx::query("UPDATE users SET updated_at = $2 WHERE id = $1")
            .bind($user)
            .bind($now)
            .execute(&mut *$tx)
            .await?;
    };
}
pub(super) use touch_user;

/// In `$tx`: locks the organisation's row ($lock: `Store::row_lock`), then reads the member's
/// roles and how many owners there are. `None` when either is missing.
macro_rules! owners_and_roles {
    ($tx:ident, $lock:expr, $org:expr, $user:expr) => {{
        let found: Option<Uuid> = sqlx::query_scalar(&format!("SELECT id FROM orgs WHERE id = $1{}", $lock))
            .bind($org)
            .fetch_optional(&mut *$tx)
            .await?;
        let roles: Option<String> =
            sqlx::query_scalar("SELECT roles FROM org_members WHERE org_id = $1 AND user_id = $2")
                .bind($org)
                .bind($user)
                .fetch_optional(&mut *$tx)
                .await?;
        // Roles are space-separated names: ' owner ' matches the whole name only.
        let owners: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM org_members WHERE org_id = $1 AND ' ' || roles || ' ' LIKE '% owner %'",
        )
        .bind($org)
        .fetch_one(&mut *$tx)
        .await?;
        found.and(roles).map(|r| (split_roles(&r), owners))
    }};
}

impl Store {
    /// A new organisation with `owner` its owner; false if the slug is in use.
    pub async fn insert_org(&self, org: &Org, owner: Uuid) -> Result<bool> {
        on_write_pool!(self, |pool| {
            let mut tx = pool.begin().await?;
            let inserted = sqlx::query(
                "INSERT INTO orgs (id, name, slug, require_two_factor, created_at) \
                 VALUES ($1, $2, $3, $4, $5)",
            )
            .bind(org.id)
            .bind(&org.name)
            .bind(&org.slug)
            .bind(org.require_two_factor)
            .bind(org.created_at)
            .execute(&mut *tx)
            .await;
            match inserted {
                Ok(_) => {}
                Err(e) if is_unique_violation(&e) => return Ok(false),
                Err(e) => return Err(e),
            }
            sqlx::query(
                "INSERT INTO org_members (org_id, user_id, roles, joined_at) VALUES ($1, $2, $3, $4)",
            )
            .bind(org.id)
            .bind(owner)
            .bind(OWNER)
            .bind(org.created_at)
            .execute(&mut *tx)
            .await?;
            touch_user!(tx, owner, org.created_at);
            tx.commit().await?;
            Ok(true)
        })
    }

    pub async fn org(&self, id: Uuid) -> Result<Option<Org>> {
        let sql = concat!("SELECT ", org_columns!(), " FROM orgs WHERE id = $1");
        let row: Option<OrgRow> = on_pool!(self, |pool| sqlx::query_as(sql)
            .bind(id)
            .fetch_optional(pool)
            .await)?;
        Ok(row.map(Org::from))
    }

    /// Writes the organisation's fields; `Ok(false)` if the slug is another's. Nothing happens to
    /// an organisation that is gone (the caller read it first). A change of `require_two_factor`
    /// moves every member's account (`updated_at`), so that every instance's directory reads
    /// their memberships, and the policy, again.
    pub async fn update_org(&self, org: &Org, now: i64) -> Result<bool> {
        let read = format!(
            "SELECT require_two_factor FROM orgs WHERE id = $1{}",
            self.row_lock()
        );
        let sql = "UPDATE orgs SET name = $2, slug = $3, require_two_factor = $4 WHERE id = $1";
        let touch = "UPDATE users SET updated_at = $2 \
                     WHERE id IN (SELECT user_id FROM org_members WHERE org_id = $1)";
        on_write_pool!(self, |pool| {
            let mut tx = pool.begin().await?;
            let before: Option<bool> = sqlx::query_scalar(&read)
                .bind(org.id)
                .fetch_optional(&mut *tx)
                .await?;
            match sqlx::query(sql)
                .bind(org.id)
                .bind(&org.name)
                .bind(&org.slug)
                .bind(org.require_two_factor)
                .execute(&mut *tx)
                .await
            {
                Ok(_) => {}
                Err(e) if is_unique_violation(&e) => return Ok(false),
                Err(e) => return Err(e),
            }
            if before.is_some_and(|was| was != org.require_two_factor) {
                sqlx::query(touch)
                    .bind(org.id)
                    .bind(now)
                    .execute(&mut *tx)
                    .await?;
            }
            tx.commit().await?;
            Ok(true)
        })
    }

    /// Deletes an organisation with its memberships, invitations and contacts; its former
    /// members, or `None` if there was no such organisation.
    pub async fn delete_org(&self, id: Uuid, now: i64) -> Result<Option<Vec<Uuid>>> {
        let lock = self.row_lock();
        on_write_pool!(self, |pool| {
            let mut tx = pool.begin().await?;
            let found: Option<Uuid> =
                sqlx::query_scalar(&format!("SELECT id FROM orgs WHERE id = $1{lock}"))
                    .bind(id)
                    .fetch_optional(&mut *tx)
                    .await?;
            if found.is_none() {
                return Ok(None);
            }
            let members: Vec<Uuid> =
                sqlx::query_scalar("SELECT user_id FROM org_members WHERE org_id = $1")
                    .bind(id)
                    .fetch_all(&mut *tx)
                    .await?;
            for member in &members {
                touch_user!(tx, *member, now);
            }
            sqlx::query("DELETE FROM orgs WHERE id = $1")
                .bind(id)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok(Some(members))
        })
    }

    /// A person's roles in an organisation; `None` if they are not a member.
    pub async fn membership(&self, org: Uuid, user: Uuid) -> Result<Option<Membership>> {
        let sql = "SELECT m.roles, o.require_two_factor FROM org_members m \
                   JOIN orgs o ON o.id = m.org_id WHERE m.org_id = $1 AND m.user_id = $2";
        let found: Option<(String, bool)> = if let Backend::Sqlite { lite, .. } = &self.backend {
            lite.member_roles(sql, org, user).await?
        } else {
            on_pool!(self, |pool| sqlx::query_as(sql)
                .bind(org)
                .bind(user)
                .fetch_optional(pool)
                .await)?
        };
        Ok(found.map(|(r, two_factor_required)| Membership {
            org_id: org,
            roles: split_roles(&r),
            two_factor_required,
        }))
    }

    /// A person's memberships (the directory's profile).
    pub async fn memberships_of(&self, user: Uuid) -> Result<Vec<Membership>> {
        let rows: Vec<(Uuid, String, bool)> =
            on_pool!(self, |pool| sqlx::query_as(MEMBERSHIPS_OF)
                .bind(user)
                .fetch_all(pool)
                .await)?;
        Ok(rows
            .into_iter()
            .map(|(org_id, roles, two_factor_required)| Membership {
                org_id,
                roles: split_roles(&roles),
                two_factor_required,
            })
            .collect())
    }

    /// A person's organisations with their roles, by name.
    pub async fn orgs_of(&self, user: Uuid) -> Result<Vec<(Org, Vec<String>)>> {
        let sql = "SELECT o.id, o.name, o.slug, o.require_two_factor, o.created_at, m.roles \
                   FROM org_members m JOIN orgs o ON o.id = m.org_id \
                   WHERE m.user_id = $1 ORDER BY o.name, o.id";
        #[derive(sqlx::FromRow)]
        struct Row {
            #[sqlx(flatten)]
            org: OrgRow,
            roles: String,
        }
        let rows: Vec<Row> = on_pool!(self, |pool| sqlx::query_as(sql)
            .bind(user)
            .fetch_all(pool)
            .await)?;
        Ok(rows
            .into_iter()
            .map(|r| (Org::from(r.org), split_roles(&r.roles)))
            .collect())
    }

    /// A page of an organisation's members by user id, after `after`.
    pub async fn members(&self, org: Uuid, after: Option<Uuid>, limit: i64) -> Result<Vec<Member>> {
        let sql = "SELECT m.user_id, u.email, u.full_name, m.roles, m.joined_at \
                   FROM org_members m JOIN users u ON u.id = m.user_id \
                   WHERE m.org_id = $1 AND ($2 IS NULL OR m.user_id > $2) \
                   ORDER BY m.user_id LIMIT $3";
        let rows: Vec<(Uuid, String, String, String, i64)> = on_pool!(self, |pool| {
            sqlx::query_as(sql)
                .bind(org)
                .bind(after)
                .bind(limit)
                .fetch_all(pool)
                .await
        })?;
        Ok(rows
            .into_iter()
            .map(|(user_id, email, full_name, roles, joined_at)| Member {
                user_id,
                email,
                full_name,
                roles: split_roles(&roles),
                joined_at,
            })
            .collect())
    }

    /// Replaces a member's roles if they are still `old`; refuses to take the last owner's.
    pub async fn set_member_roles(
        &self,
        org: Uuid,
        user: Uuid,
        old: &[String],
        new: &[String],
        now: i64,
    ) -> Result<MembershipChange> {
        let lock = self.row_lock();
        on_write_pool!(self, |pool| {
            let mut tx = pool.begin().await?;
            let Some((roles, owners)) = owners_and_roles!(tx, lock, org, user) else {
                return Ok(MembershipChange::Stale);
            };
            if roles != old {
                return Ok(MembershipChange::Stale);
            }
            let loses_owner = old.iter().any(|r| r == OWNER) && !new.iter().any(|r| r == OWNER);
            if loses_owner && owners <= 1 {
                return Ok(MembershipChange::LastOwner);
            }
            sqlx::query("UPDATE org_members SET roles = $3 WHERE org_id = $1 AND user_id = $2")
                .bind(org)
                .bind(user)
                .bind(new.join(" "))
                .execute(&mut *tx)
                .await?;
            touch_user!(tx, user, now);
            tx.commit().await?;
            Ok(MembershipChange::Done)
        })
    }

    /// Ends a membership; refuses to remove the last owner.
    pub async fn remove_member(&self, org: Uuid, user: Uuid, now: i64) -> Result<MembershipChange> {
        let lock = self.row_lock();
        on_write_pool!(self, |pool| {
            let mut tx = pool.begin().await?;
            let Some((roles, owners)) = owners_and_roles!(tx, lock, org, user) else {
                return Ok(MembershipChange::Stale);
            };
            if roles.iter().any(|r| r == OWNER) && owners <= 1 {
                return Ok(MembershipChange::LastOwner);
            }
            sqlx::query("DELETE FROM org_members WHERE org_id = $1 AND user_id = $2")
                .bind(org)
                .bind(user)
                .execute(&mut *tx)
                .await?;
            touch_user!(tx, user, now);
            tx.commit().await?;
            Ok(MembershipChange::Done)
        })
    }

    /// Every organisation whose name or slug contains `needle` (lower-cased, literal), by id,
    /// after `after`: the admin API's list.
    pub async fn all_orgs(
        &self,
        needle: Option<&str>,
        after: Option<Uuid>,
        limit: i64,
    ) -> Result<Vec<Org>> {
        let pattern = needle.map(|n| {
            let escaped = n
                .replace('\\', "\\\\")
                .replace('%', "\\%")
                .replace('_', "\\_");
            format!("%{escaped}%")
        });
        let sql = concat!(
            "SELECT ",
            org_columns!(),
            " FROM orgs WHERE ($1 IS NULL OR id > $1) \
             AND ($2 IS NULL OR LOWER(name) LIKE $2 ESCAPE '\\' OR slug LIKE $2 ESCAPE '\\') \
             ORDER BY id LIMIT $3"
        );
        let rows: Vec<OrgRow> = on_pool!(self, |pool| {
            sqlx::query_as(sql)
                .bind(after)
                .bind(pattern.as_deref())
                .bind(limit)
                .fetch_all(pool)
                .await
        })?;
        Ok(rows.into_iter().map(Org::from).collect())
    }
}
