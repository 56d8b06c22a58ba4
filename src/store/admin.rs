//! What the administration API reads: accounts a page at a time, with their passkey count.

use super::users::user_columns;
use uuid::Uuid;

use super::users::UserRow;
use super::{Store, on_pool};
use crate::error::Result;
use crate::model::{ManagedUser, User};

#[derive(sqlx::FromRow)]
struct ManagedRow {
    #[sqlx(flatten)]
    user: UserRow,
    passkeys: i64,
}

impl From<ManagedRow> for ManagedUser {
    fn from(r: ManagedRow) -> Self {
        ManagedUser {
            user: User::from(r.user),
            passkeys: r.passkeys,
            identities: Vec::new(),
        }
    }
}

/// The columns of a managed account: the user's, and how many passkeys it has (one index probe of
/// `passkeys_user` per row of the page).
macro_rules! managed_select {
    () => {
        concat!(
            "SELECT ",
            user_columns!(),
            ", (SELECT COUNT(*) FROM passkeys p WHERE p.user_id = users.id) AS passkeys \
             FROM users WHERE deleted_at IS NULL"
        )
    };
}

// The list, one text per shape (cursor or not, search or not), shared with the plan tests
// (`store::plans`). Ordered by `email_normalized`, which is unique, so the last address of a page
// is an exact keyset cursor, and the UNIQUE index on it serves both the order and the cursor:
// a page costs `limit` rows of the index (more with a search, which filters as it walks), never
// a sort of the table. Deleted accounts (scrubbed rows kept for their revocations) are not listed.
pub(super) const USERS_PAGE: &str =
    concat!(managed_select!(), " ORDER BY email_normalized LIMIT $1");
pub(super) const USERS_PAGE_AFTER: &str = concat!(
    managed_select!(),
    " AND email_normalized > $2 ORDER BY email_normalized LIMIT $1"
);
/// `$2` is a LIKE pattern of the lower-cased search text with its wildcards escaped; it is matched
/// against the address (lower-cased already) and the lower-cased name.
pub(super) const USERS_SEARCH: &str = concat!(
    managed_select!(),
    " AND (email_normalized LIKE $2 ESCAPE '\\' OR lower(full_name) LIKE $2 ESCAPE '\\') \
     ORDER BY email_normalized LIMIT $1"
);
pub(super) const USERS_SEARCH_AFTER: &str = concat!(
    managed_select!(),
    " AND email_normalized > $3 \
     AND (email_normalized LIKE $2 ESCAPE '\\' OR lower(full_name) LIKE $2 ESCAPE '\\') \
     ORDER BY email_normalized LIMIT $1"
);
const MANAGED_USER: &str = concat!(managed_select!(), " AND id = $1");

impl Store {
    /// Up to `limit` accounts in address order, after the address `after`, whose address or name
    /// holds `search` (a literal substring, any case).
    pub async fn users_page(
        &self,
        after: Option<&str>,
        search: Option<&str>,
        limit: i64,
    ) -> Result<Vec<ManagedUser>> {
        // `search` is literal: LIKE's own wildcards and the escape character in it are escaped.
        let pattern = search.map(|s| {
            let escaped = s
                .to_lowercase()
                .replace('\\', "\\\\")
                .replace('%', "\\%")
                .replace('_', "\\_");
            format!("%{escaped}%")
        });
        let rows: Vec<ManagedRow> = on_pool!(self, |pool| {
            let query = match (after, pattern.as_deref()) {
                (None, None) => sqlx::query_as(USERS_PAGE).bind(limit),
                (Some(after), None) => sqlx::query_as(USERS_PAGE_AFTER).bind(limit).bind(after),
                (None, Some(p)) => sqlx::query_as(USERS_SEARCH).bind(limit).bind(p),
                (Some(after), Some(p)) => sqlx::query_as(USERS_SEARCH_AFTER)
                    .bind(limit)
                    .bind(p)
                    .bind(after),
            };
            query.fetch_all(pool).await
        })?;
        let mut users: Vec<ManagedUser> = rows.into_iter().map(ManagedUser::from).collect();
        self.add_identities(&mut users).await?;
        Ok(users)
    }

    /// Fills in the accounts' linked identities, in one query for the page: an `IN` list of the
    /// page's ids (at most a page's worth), by the `federated_identities_user` index.
    async fn add_identities(&self, users: &mut [ManagedUser]) -> Result<()> {
        if users.is_empty() {
            return Ok(());
        }
        let marks: Vec<String> = (1..=users.len()).map(|i| format!("${i}")).collect();
        let sql = format!(
            "SELECT user_id, provider_id, subject FROM federated_identities \
             WHERE user_id IN ({}) ORDER BY provider_id",
            marks.join(", ")
        );
        let ids: Vec<Uuid> = users.iter().map(|u| u.user.id).collect();
        let rows: Vec<(Uuid, String, String)> = on_pool!(self, |pool| {
            let mut query = sqlx::query_as(&sql);
            for id in &ids {
                query = query.bind(*id);
            }
            query.fetch_all(pool).await
        })?;
        for (user, provider, subject) in rows {
            if let Some(u) = users.iter_mut().find(|u| u.user.id == user) {
                u.identities.push((provider, subject));
            }
        }
        Ok(())
    }

    /// One account that has not been deleted, with its passkey count.
    pub async fn managed_user(&self, id: Uuid) -> Result<Option<ManagedUser>> {
        let row: Option<ManagedRow> = on_pool!(self, |pool| sqlx::query_as(MANAGED_USER)
            .bind(id)
            .fetch_optional(pool)
            .await)?;
        let mut users: Vec<ManagedUser> = row.into_iter().map(ManagedUser::from).collect();
        self.add_identities(&mut users).await?;
        Ok(users.pop())
    }

    /// Whether any account exists: before the first, the start says how to make one.
    pub async fn has_accounts(&self) -> Result<bool> {
        let sql = "SELECT EXISTS (SELECT 1 FROM users WHERE deleted_at IS NULL)";
        on_pool!(self, |pool| sqlx::query_scalar(sql).fetch_one(pool).await)
    }
}
