//! Contacts: each belongs to one user or one organisation (`Collection`), and every query is
//! scoped by its owner.

use uuid::Uuid;

use super::{Backend, Store, on_pool, on_write_pool};
use crate::error::Result;
use crate::model::contacts::{Contact, ContactFields};
use crate::model::orgs::Collection;

#[derive(sqlx::FromRow)]
pub(super) struct ContactRow {
    pub(super) id: Uuid,
    pub(super) full_name: String,
    pub(super) email: Option<String>,
    pub(super) phone: Option<String>,
    pub(super) company: Option<String>,
    pub(super) notes: Option<String>,
    pub(super) created_at: i64,
    pub(super) updated_at: i64,
    pub(super) version: i64,
}

impl From<ContactRow> for Contact {
    fn from(r: ContactRow) -> Self {
        Contact {
            id: r.id,
            full_name: r.full_name,
            email: r.email,
            phone: r.phone,
            company: r.company,
            notes: r.notes,
            created_at: r.created_at,
            updated_at: r.updated_at,
            version: r.version,
        }
    }
}

/// The columns of `ContactRow`, as a literal so that query texts can be `concat!`ed consts.
macro_rules! contact_columns {
    () => {
        "id, full_name, email, phone, company, notes, created_at, updated_at, version"
    };
}
const CONTACT_COLUMNS: &str = contact_columns!();

/// The list query of table `$table`, one text per shape (cursor or not, search or not; see
/// `list_contacts`), shared with the plan tests (`store::plans`). `$1` the owner, then the cursor
/// and the pattern where the shape has them, and the limit last.
macro_rules! list_queries {
    ($table:literal) => {
        [
            concat!(
                "SELECT ",
                contact_columns!(),
                " FROM ",
                $table,
                " WHERE owner_id = $1 ORDER BY id DESC LIMIT $2"
            ),
            concat!(
                "SELECT ",
                contact_columns!(),
                " FROM ",
                $table,
                " WHERE owner_id = $1 AND id < $2 ORDER BY id DESC LIMIT $3"
            ),
            concat!(
                "SELECT ",
                contact_columns!(),
                " FROM ",
                $table,
                " WHERE owner_id = $1 AND search_text LIKE $2 ESCAPE '\\' \
                 ORDER BY id DESC LIMIT $3"
            ),
            concat!(
                "SELECT ",
                contact_columns!(),
                " FROM ",
                $table,
                " WHERE owner_id = $1 AND id < $2 AND search_text LIKE $3 ESCAPE '\\' \
                 ORDER BY id DESC LIMIT $4"
            ),
        ]
    };
}
/// A person's own contacts (`contacts`) and an organisation's shared ones (`org_contacts`, the
/// same columns, owned by the organisation): the same queries over either table.
const PERSONAL_LISTS: [&str; 4] = list_queries!("contacts");
pub(super) const ORG_LISTS: [&str; 4] = list_queries!("org_contacts");
#[cfg(test)]
pub(super) const LIST_CONTACTS: &str = PERSONAL_LISTS[0];
#[cfg(test)]
pub(super) const LIST_CONTACTS_AFTER: &str = PERSONAL_LISTS[1];
#[cfg(test)]
pub(super) const LIST_CONTACTS_SEARCH: &str = PERSONAL_LISTS[2];
#[cfg(test)]
pub(super) const LIST_CONTACTS_SEARCH_AFTER: &str = PERSONAL_LISTS[3];

fn table(owner: Collection) -> &'static str {
    match owner {
        Collection::Personal(_) => "contacts",
        Collection::Org(_) => "org_contacts",
    }
}

impl Store {
    pub async fn insert_contact(
        &self,
        owner: Collection,
        row: &Contact,
        search_text: &str,
    ) -> Result<()> {
        let sql = format!(
            "INSERT INTO {} (id, owner_id, full_name, email, phone, company, notes, \
             search_text, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
            table(owner)
        );
        on_write_pool!(self, |pool| sqlx::query(&sql)
            .bind(row.id)
            .bind(owner.owner())
            .bind(&row.full_name)
            .bind(&row.email)
            .bind(&row.phone)
            .bind(&row.company)
            .bind(&row.notes)
            .bind(search_text)
            .bind(row.created_at)
            .bind(row.updated_at)
            .execute(pool)
            .await
            .map(|_| ()))
    }

    pub async fn contact(&self, owner: Collection, id: Uuid) -> Result<Option<Contact>> {
        let sql = format!(
            "SELECT {CONTACT_COLUMNS} FROM {} WHERE owner_id = $1 AND id = $2",
            table(owner)
        );
        let row: Option<ContactRow> = on_pool!(self, |pool| sqlx::query_as(&sql)
            .bind(owner.owner())
            .bind(id)
            .fetch_optional(pool)
            .await)?;
        Ok(row.map(Contact::from))
    }

    /// Writes `fields` over the contact if it is still at `version` (compare-and-set: a change
    /// merged from an older read must not overwrite a newer one); `None` if it has moved on or is
    /// gone.
    pub async fn update_contact(
        &self,
        owner: Collection,
        id: Uuid,
        version: i64,
        fields: &ContactFields<'_>,
        updated_at: i64,
    ) -> Result<Option<Contact>> {
        let sql = format!(
            "UPDATE {} SET full_name = $3, email = $4, phone = $5, company = $6, notes = $7, \
             search_text = $8, updated_at = $9, version = version + 1 \
             WHERE owner_id = $1 AND id = $2 AND version = $10 \
             RETURNING {CONTACT_COLUMNS}",
            table(owner)
        );
        let row: Option<ContactRow> = on_write_pool!(self, |pool| sqlx::query_as(&sql)
            .bind(owner.owner())
            .bind(id)
            .bind(fields.full_name)
            .bind(fields.email)
            .bind(fields.phone)
            .bind(fields.company)
            .bind(fields.notes)
            .bind(fields.search_text)
            .bind(updated_at)
            .bind(version)
            .fetch_optional(pool)
            .await)?;
        Ok(row.map(Contact::from))
    }

    pub async fn delete_contact(&self, owner: Collection, id: Uuid) -> Result<bool> {
        let sql = format!(
            "DELETE FROM {} WHERE owner_id = $1 AND id = $2",
            table(owner)
        );
        let n = on_write_pool!(self, |pool| sqlx::query(&sql)
            .bind(owner.owner())
            .bind(id)
            .execute(pool)
            .await
            .map(|r| r.rows_affected()))?;
        Ok(n == 1)
    }

    /// One page of an owner's contacts, newest first, strictly older than `before` if given,
    /// whose search text contains `needle` (already lower-cased) if given. Fetches `limit` rows;
    /// the index (owner_id, id DESC) serves the order and the cursor, whatever the table size.
    pub async fn list_contacts(
        &self,
        owner: Collection,
        before: Option<Uuid>,
        needle: Option<&str>,
        limit: i64,
    ) -> Result<Vec<Contact>> {
        // `q` is a literal substring: LIKE's own wildcards in it are escaped.
        let pattern = needle.map(|n| {
            let escaped = n
                .replace('\\', "\\\\")
                .replace('%', "\\%")
                .replace('_', "\\_");
            format!("%{escaped}%")
        });
        // Only the conditions in use are written, so each of the four shapes gets its own plan:
        // with a generic `($2 IS NULL OR id < $2)` PostgreSQL cannot start the index scan at the
        // cursor and would walk the owner's newer contacts on every later page.
        let queries = match owner {
            Collection::Personal(_) => &PERSONAL_LISTS,
            Collection::Org(_) => &ORG_LISTS,
        };
        let sql = queries[usize::from(before.is_some()) + 2 * usize::from(pattern.is_some())];
        if let Backend::Sqlite { lite, .. } = &self.backend {
            return lite
                .list_contacts(sql, owner.owner(), before, pattern, limit)
                .await;
        }
        let rows: Vec<ContactRow> = on_pool!(self, |pool| {
            let mut query = sqlx::query_as(sql).bind(owner.owner());
            if let Some(before) = before {
                query = query.bind(before);
            }
            if let Some(pattern) = pattern.as_deref() {
                query = query.bind(pattern);
            }
            query.bind(limit).fetch_all(pool).await
        })?;
        Ok(rows.into_iter().map(Contact::from).collect())
    }
}
