//! The client registry (docs/api.md §11, §6): one row per client in `api_clients`, its lists
//! space-separated.

use uuid::Uuid;

use super::{Store, on_pool, on_write_pool};
use crate::crypto::SigningAlg;
use crate::error::{Error, Result};
use crate::model::{Client, ClientType, GrantType};

#[derive(sqlx::FromRow)]
struct ClientRow {
    id: Uuid,
    name: String,
    secret_hash: Vec<u8>,
    created_at: i64,
    client_type: String,
    first_party: bool,
    redirect_uris: String,
    post_logout_redirect_uris: String,
    grant_types: String,
    scopes: String,
    backchannel_logout_uri: Option<String>,
    id_token_alg: String,
    updated_at: i64,
}

const COLUMNS: &str = "id, name, secret_hash, created_at, client_type, first_party, redirect_uris, \
                       post_logout_redirect_uris, grant_types, scopes, backchannel_logout_uri, \
                       id_token_alg, updated_at";

fn words(list: &str) -> impl Iterator<Item = &str> {
    list.split(' ').filter(|w| !w.is_empty())
}

impl TryFrom<ClientRow> for Client {
    type Error = Error;

    /// Only the registry writes these columns; a value it would not write is a broken row, not
    /// something to guess around.
    fn try_from(r: ClientRow) -> Result<Self> {
        let broken = |what: &str| {
            Error::internal(anyhow::anyhow!("api_clients row {} has a bad {what}", r.id))
        };
        let client_type = ClientType::parse(&r.client_type).ok_or_else(|| broken("client_type"))?;
        let grant_types = words(&r.grant_types)
            .map(GrantType::parse)
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| broken("grant_types"))?;
        let id_token_alg: SigningAlg =
            r.id_token_alg.parse().map_err(|_| broken("id_token_alg"))?;
        Ok(Client {
            id: r.id,
            client_type,
            first_party: r.first_party,
            redirect_uris: words(&r.redirect_uris).map(str::to_owned).collect(),
            post_logout_redirect_uris: words(&r.post_logout_redirect_uris)
                .map(str::to_owned)
                .collect(),
            grant_types,
            scopes: words(&r.scopes).map(str::to_owned).collect(),
            id_token_alg,
            name: r.name,
            secret_hash: r.secret_hash,
            backchannel_logout_uri: r.backchannel_logout_uri,
            created_at: r.created_at,
            updated_at: r.updated_at,
        })
    }
}

fn grants(client: &Client) -> String {
    let names: Vec<&str> = client.grant_types.iter().map(|g| g.as_str()).collect();
    names.join(" ")
}

impl Store {
    pub async fn insert_client(&self, client: &Client) -> Result<()> {
        let sql = format!(
            "INSERT INTO api_clients ({COLUMNS}) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)"
        );
        on_write_pool!(self, |pool| sqlx::query(&sql)
            .bind(client.id)
            .bind(&client.name)
            .bind(&client.secret_hash)
            .bind(client.created_at)
            .bind(client.client_type.as_str())
            .bind(client.first_party)
            .bind(client.redirect_uris.join(" "))
            .bind(client.post_logout_redirect_uris.join(" "))
            .bind(grants(client))
            .bind(client.scopes.join(" "))
            .bind(&client.backchannel_logout_uri)
            .bind(client.id_token_alg.as_str())
            .bind(client.updated_at)
            .execute(pool)
            .await
            .map(|_| ()))
    }

    /// Writes every field but the id, type, secret and creation time; false if there was no such
    /// client.
    pub async fn update_client(&self, client: &Client) -> Result<bool> {
        let sql = "UPDATE api_clients SET name = $2, first_party = $3, redirect_uris = $4, \
                   post_logout_redirect_uris = $5, grant_types = $6, scopes = $7, \
                   backchannel_logout_uri = $8, id_token_alg = $9, updated_at = $10 \
                   WHERE id = $1";
        on_write_pool!(self, |pool| sqlx::query(sql)
            .bind(client.id)
            .bind(&client.name)
            .bind(client.first_party)
            .bind(client.redirect_uris.join(" "))
            .bind(client.post_logout_redirect_uris.join(" "))
            .bind(grants(client))
            .bind(client.scopes.join(" "))
            .bind(&client.backchannel_logout_uri)
            .bind(client.id_token_alg.as_str())
            .bind(client.updated_at)
            .execute(pool)
            .await
            .map(|r| r.rows_affected() == 1))
    }

    pub async fn client(&self, id: Uuid) -> Result<Option<Client>> {
        let sql = format!("SELECT {COLUMNS} FROM api_clients WHERE id = $1");
        let row: Option<ClientRow> = on_pool!(self, |pool| sqlx::query_as(&sql)
            .bind(id)
            .fetch_optional(pool)
            .await)?;
        row.map(Client::try_from).transpose()
    }

    pub async fn clients(&self) -> Result<Vec<Client>> {
        let sql = format!("SELECT {COLUMNS} FROM api_clients ORDER BY created_at, id");
        let rows: Vec<ClientRow> =
            on_pool!(self, |pool| sqlx::query_as(&sql).fetch_all(pool).await)?;
        rows.into_iter().map(Client::try_from).collect()
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
