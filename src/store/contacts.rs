//! Contacts: each belongs to one user, and every query is scoped by its owner.

use uuid::Uuid;

use super::{Store, on_pool, on_write_pool};

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ContactRow {
    pub id: Uuid,
    pub full_name: String,
    pub email: Option<String>,
    pub phone: Option<String>,
    pub company: Option<String>,
    pub notes: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

const CONTACT_COLUMNS: &str = "id, full_name, email, phone, company, notes, created_at, updated_at";

/// The fields a user sets, plus what is derived from them.
pub struct ContactFields<'a> {
    pub full_name: &'a str,
    pub email: Option<&'a str>,
    pub phone: Option<&'a str>,
    pub company: Option<&'a str>,
    pub notes: Option<&'a str>,
    pub search_text: &'a str,
}

impl Store {
    pub async fn insert_contact(
        &self,
        owner: Uuid,
        row: &ContactRow,
        search_text: &str,
    ) -> Result<(), sqlx::Error> {
        let sql = "INSERT INTO contacts (id, owner_id, full_name, email, phone, company, notes, \
                   search_text, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)";
        on_write_pool!(self, |pool| sqlx::query(sql)
            .bind(row.id)
            .bind(owner)
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
            .map(|_| ()))?;
        Ok(())
    }

    pub async fn contact(&self, owner: Uuid, id: Uuid) -> Result<Option<ContactRow>, sqlx::Error> {
        let sql = format!("SELECT {CONTACT_COLUMNS} FROM contacts WHERE owner_id = $1 AND id = $2");
        on_pool!(self, |pool| sqlx::query_as(&sql)
            .bind(owner)
            .bind(id)
            .fetch_optional(pool)
            .await)
    }

    pub async fn update_contact(
        &self,
        owner: Uuid,
        id: Uuid,
        fields: &ContactFields<'_>,
        updated_at: i64,
    ) -> Result<Option<ContactRow>, sqlx::Error> {
        let sql = format!(
            "UPDATE contacts SET full_name = $3, email = $4, phone = $5, company = $6, notes = $7, \
             search_text = $8, updated_at = $9 WHERE owner_id = $1 AND id = $2 \
             RETURNING {CONTACT_COLUMNS}"
        );
        on_write_pool!(self, |pool| sqlx::query_as(&sql)
            .bind(owner)
            .bind(id)
            .bind(fields.full_name)
            .bind(fields.email)
            .bind(fields.phone)
            .bind(fields.company)
            .bind(fields.notes)
            .bind(fields.search_text)
            .bind(updated_at)
            .fetch_optional(pool)
            .await)
    }

    pub async fn delete_contact(&self, owner: Uuid, id: Uuid) -> Result<bool, sqlx::Error> {
        let sql = "DELETE FROM contacts WHERE owner_id = $1 AND id = $2";
        let n = on_write_pool!(self, |pool| sqlx::query(sql)
            .bind(owner)
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
        owner: Uuid,
        before: Option<Uuid>,
        needle: Option<&str>,
        limit: i64,
    ) -> Result<Vec<ContactRow>, sqlx::Error> {
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
        let mut sql = format!("SELECT {CONTACT_COLUMNS} FROM contacts WHERE owner_id = $1");
        let mut n = 1;
        if before.is_some() {
            n += 1;
            sql.push_str(&format!(" AND id < ${n}"));
        }
        if pattern.is_some() {
            n += 1;
            sql.push_str(&format!(" AND search_text LIKE ${n} ESCAPE '\\'"));
        }
        sql.push_str(&format!(" ORDER BY id DESC LIMIT ${}", n + 1));
        on_pool!(self, |pool| {
            let mut query = sqlx::query_as(&sql).bind(owner);
            if let Some(before) = before {
                query = query.bind(before);
            }
            if let Some(pattern) = pattern.as_deref() {
                query = query.bind(pattern);
            }
            query.bind(limit).fetch_all(pool).await
        })
    }
}
