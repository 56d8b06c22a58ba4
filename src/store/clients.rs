//! API clients registered to introspect tokens (docs/api.md §6).

use uuid::Uuid;

use super::{Store, on_pool, on_write_pool};
use crate::error::Result;
use crate::model::ApiClient;

#[derive(sqlx::FromRow)]
struct ClientRow {
    id: Uuid,
    name: String,
    secret_hash: Vec<u8>,
    created_at: i64,
}

impl From<ClientRow> for ApiClient {
    fn from(r: ClientRow) -> Self {
        ApiClient {
            id: r.id,
            name: r.name,
            secret_hash: r.secret_hash,
            created_at: r.created_at,
        }
    }
}

impl Store {
    pub async fn insert_client(&self, client: &ApiClient) -> Result<()> {
        let sql = "INSERT INTO api_clients (id, name, secret_hash, created_at) \
                   VALUES ($1, $2, $3, $4)";
        on_write_pool!(self, |pool| sqlx::query(sql)
            .bind(client.id)
            .bind(&client.name)
            .bind(&client.secret_hash)
            .bind(client.created_at)
            .execute(pool)
            .await
            .map(|_| ()))
    }

    pub async fn client(&self, id: Uuid) -> Result<Option<ApiClient>> {
        let sql = "SELECT id, name, secret_hash, created_at FROM api_clients WHERE id = $1";
        let row: Option<ClientRow> = on_pool!(self, |pool| sqlx::query_as(sql)
            .bind(id)
            .fetch_optional(pool)
            .await)?;
        Ok(row.map(ApiClient::from))
    }

    pub async fn clients(&self) -> Result<Vec<ApiClient>> {
        let sql = "SELECT id, name, secret_hash, created_at FROM api_clients ORDER BY created_at";
        let rows: Vec<ClientRow> =
            on_pool!(self, |pool| sqlx::query_as(sql).fetch_all(pool).await)?;
        Ok(rows.into_iter().map(ApiClient::from).collect())
    }

    /// False if there was no such client.
    pub async fn delete_client(&self, id: Uuid) -> Result<bool> {
        let sql = "DELETE FROM api_clients WHERE id = $1";
        on_write_pool!(self, |pool| sqlx::query(sql)
            .bind(id)
            .execute(pool)
            .await
            .map(|r| r.rows_affected() == 1))
    }
}
