//! The business APIs operators declare through the CLI or the admin API (docs/guide/resources.md;
//! those of the settings are not stored): one row each, its scopes as JSON.

use serde::{Deserialize, Serialize};

use super::{Store, is_unique_violation, on_pool, on_write_pool};
use crate::error::{Error, Result};
use crate::model::{Resource, ResourceOrigin, ResourceScope};

#[derive(sqlx::FromRow)]
struct ResourceRow {
    id: String,
    name: String,
    audience: Option<String>,
    scopes: String,
}

#[derive(Serialize, Deserialize)]
struct StoredScope {
    name: String,
    description: String,
}

const COLUMNS: &str = "id, name, audience, scopes";

fn scopes_json(resource: &Resource) -> Result<String> {
    let stored: Vec<StoredScope> = resource
        .scopes
        .iter()
        .map(|s| StoredScope {
            name: s.name.clone(),
            description: s.description.clone(),
        })
        .collect();
    serde_json::to_string(&stored).map_err(Error::internal)
}

impl TryFrom<ResourceRow> for Resource {
    type Error = Error;

    fn try_from(r: ResourceRow) -> Result<Self> {
        let stored: Vec<StoredScope> = serde_json::from_str(&r.scopes).map_err(|e| {
            Error::internal(anyhow::anyhow!(
                "resources row {} has bad scopes: {e}",
                r.id
            ))
        })?;
        Ok(Resource {
            id: r.id,
            name: r.name,
            audience: r.audience,
            scopes: stored
                .into_iter()
                .map(|s| ResourceScope {
                    name: s.name,
                    description: s.description,
                })
                .collect(),
            origin: ResourceOrigin::Operator,
        })
    }
}

impl Store {
    /// Every stored resource, by id.
    pub async fn resources(&self) -> Result<Vec<Resource>> {
        let sql = format!("SELECT {COLUMNS} FROM resources ORDER BY id");
        let rows: Vec<ResourceRow> =
            on_pool!(self, |pool| sqlx::query_as(&sql).fetch_all(pool).await)?;
        rows.into_iter().map(Resource::try_from).collect()
    }

    /// Inserts a resource; `false` when its id or audience is taken.
    pub async fn insert_resource(&self, resource: &Resource, now: i64) -> Result<bool> {
        let scopes = scopes_json(resource)?;
        let sql = "INSERT INTO resources (id, name, audience, scopes, created_at, updated_at) \
                   VALUES ($1, $2, $3, $4, $5, $5)";
        on_write_pool!(self, |pool| match sqlx::query(sql)
            .bind(&resource.id)
            .bind(&resource.name)
            .bind(&resource.audience)
            .bind(&scopes)
            .bind(now)
            .execute(pool)
            .await
        {
            Ok(_) => Ok(true),
            Err(e) if is_unique_violation(&e) => Ok(false),
            Err(e) => Err(e),
        })
    }

    /// Writes a resource's name, audience and scopes; `Ok(None)` without it, `Ok(Some(false))`
    /// when the audience is another's.
    pub async fn update_resource(&self, resource: &Resource, now: i64) -> Result<Option<bool>> {
        let scopes = scopes_json(resource)?;
        let sql = "UPDATE resources SET name = $2, audience = $3, scopes = $4, \
                   updated_at = $5 WHERE id = $1";
        on_write_pool!(self, |pool| match sqlx::query(sql)
            .bind(&resource.id)
            .bind(&resource.name)
            .bind(&resource.audience)
            .bind(&scopes)
            .bind(now)
            .execute(pool)
            .await
        {
            Ok(done) => Ok((done.rows_affected() == 1).then_some(true)),
            Err(e) if is_unique_violation(&e) => Ok(Some(false)),
            Err(e) => Err(e),
        })
    }

    /// Deletes a resource; `false` without it.
    pub async fn delete_resource(&self, id: &str) -> Result<bool> {
        on_write_pool!(self, |pool| sqlx::query(
            "DELETE FROM resources WHERE id = $1"
        )
        .bind(id)
        .execute(pool)
        .await
        .map(|r| r.rows_affected() == 1))
    }
}
