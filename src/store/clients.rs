//! The client registry (docs/api.md §11, §6): one row per client in `api_clients`, its lists
//! space-separated.

use uuid::Uuid;

use super::{Store, on_pool, on_write_pool};
use crate::crypto::SigningAlg;
use crate::error::{Error, Result};
use crate::model::{Client, ClientOrigin, ClientType, GrantType};

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
    org_id: Option<Uuid>,
    origin: String,
    metadata_url: Option<String>,
    metadata_fresh_until: Option<i64>,
    introspection: bool,
    previous_secret_hash: Option<Vec<u8>>,
    previous_secret_until: Option<i64>,
    pkce_required: bool,
    dpop_required: bool,
}

const COLUMNS: &str = "id, name, secret_hash, created_at, client_type, first_party, redirect_uris, \
                       post_logout_redirect_uris, grant_types, scopes, backchannel_logout_uri, \
                       id_token_alg, updated_at, org_id, origin, metadata_url, \
                       metadata_fresh_until, introspection, previous_secret_hash, \
                       previous_secret_until, pkce_required, dpop_required";

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
        let origin = match (r.origin.as_str(), r.metadata_url) {
            ("operator", None) => ClientOrigin::Operator,
            ("registered", None) => ClientOrigin::Registered,
            ("metadata_document", Some(url)) => ClientOrigin::MetadataDocument {
                url,
                fresh_until: r.metadata_fresh_until.unwrap_or(0),
            },
            _ => return Err(broken("origin")),
        };
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
            org_id: r.org_id,
            origin,
            introspection: r.introspection,
            previous_secret: r.previous_secret_hash.zip(r.previous_secret_until),
            pkce_required: r.pkce_required,
            dpop_required: r.dpop_required,
        })
    }
}

fn grants(client: &Client) -> String {
    let names: Vec<&str> = client.grant_types.iter().map(|g| g.as_str()).collect();
    names.join(" ")
}

fn metadata(client: &Client) -> (Option<&str>, Option<i64>) {
    match &client.origin {
        ClientOrigin::MetadataDocument { url, fresh_until } => (Some(url), Some(*fresh_until)),
        _ => (None, None),
    }
}

impl Store {
    pub async fn insert_client(&self, client: &Client) -> Result<()> {
        self.write_client(client, "").await
    }

    /// Writes a metadata-document client as its document now says, keeping the row (and so the
    /// id, consents and sessions) of an earlier fetch of the same URL; returns the row as stored.
    /// Two instances fetching at once both succeed: the later write wins.
    pub async fn put_metadata_client(&self, client: &Client) -> Result<Client> {
        let (Some(url), Some(_)) = metadata(client) else {
            return Err(Error::internal(anyhow::anyhow!(
                "put_metadata_client given a client without a document"
            )));
        };
        self.write_client(
            client,
            " ON CONFLICT (metadata_url) DO UPDATE SET name = excluded.name, \
             redirect_uris = excluded.redirect_uris, \
             post_logout_redirect_uris = excluded.post_logout_redirect_uris, \
             scopes = excluded.scopes, metadata_fresh_until = excluded.metadata_fresh_until, \
             dpop_required = excluded.dpop_required, updated_at = excluded.updated_at",
        )
        .await?;
        self.client_by_metadata_url(url)
            .await?
            .ok_or_else(|| Error::internal(anyhow::anyhow!("metadata client vanished")))
    }

    /// Inserts `client`'s row, with `on_conflict` (empty, or an `ON CONFLICT` clause) after it.
    async fn write_client(&self, client: &Client, on_conflict: &str) -> Result<()> {
        let sql = format!(
            "INSERT INTO api_clients ({COLUMNS}) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, \
             $18, $19, $20, $21, $22)\
             {on_conflict}"
        );
        let (metadata_url, fresh_until) = metadata(client);
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
            .bind(client.org_id)
            .bind(client.origin.as_str())
            .bind(metadata_url)
            .bind(fresh_until)
            .bind(client.introspection)
            .bind(client.previous_secret.as_ref().map(|(hash, _)| hash))
            .bind(client.previous_secret.as_ref().map(|(_, until)| *until))
            .bind(client.pkce_required)
            .bind(client.dpop_required)
            .execute(pool)
            .await
            .map(|_| ()))
    }

    /// The client whose document is at `url`, as last fetched (fresh or not).
    pub async fn client_by_metadata_url(&self, url: &str) -> Result<Option<Client>> {
        let sql = format!("SELECT {COLUMNS} FROM api_clients WHERE metadata_url = $1");
        let row: Option<ClientRow> = on_pool!(self, |pool| sqlx::query_as(&sql)
            .bind(url)
            .fetch_optional(pool)
            .await)?;
        row.map(Client::try_from).transpose()
    }

    /// Writes every field but the id, type, secret and creation time; false if there was no such
    /// client.
    pub async fn update_client(&self, client: &Client) -> Result<bool> {
        let sql = "UPDATE api_clients SET name = $2, first_party = $3, redirect_uris = $4, \
                   post_logout_redirect_uris = $5, grant_types = $6, scopes = $7, \
                   backchannel_logout_uri = $8, id_token_alg = $9, updated_at = $10, \
                   introspection = $11, pkce_required = $12, dpop_required = $13 WHERE id = $1";
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
            .bind(client.introspection)
            .bind(client.pkce_required)
            .bind(client.dpop_required)
            .execute(pool)
            .await
            .map(|r| r.rows_affected() == 1))
    }

    /// Replaces a confidential client's secret: the old one is kept as the previous secret until
    /// `previous_until` (ms; a time already past ends it at once). `false` without the client.
    pub async fn rotate_client_secret(
        &self,
        id: Uuid,
        new_hash: &[u8],
        previous_until: i64,
        now: i64,
    ) -> Result<bool> {
        let sql = "UPDATE api_clients SET previous_secret_hash = secret_hash, \
                   previous_secret_until = $3, secret_hash = $2, updated_at = $4 \
                   WHERE id = $1 AND client_type = 'confidential'";
        on_write_pool!(self, |pool| sqlx::query(sql)
            .bind(id)
            .bind(new_hash)
            .bind(previous_until)
            .bind(now)
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

    /// The names of the clients an operator registered (a self-registered client may not take
    /// one: `Clients::copies_operator_name`).
    pub async fn operator_client_names(&self) -> Result<Vec<String>> {
        on_pool!(self, |pool| sqlx::query_scalar(
            "SELECT name FROM api_clients WHERE origin = 'operator'"
        )
        .fetch_all(pool)
        .await)
    }

    /// The clients bound to an organisation.
    pub async fn clients_of_org(&self, org: Uuid) -> Result<Vec<Uuid>> {
        on_pool!(self, |pool| sqlx::query_scalar(
            "SELECT id FROM api_clients WHERE org_id = $1"
        )
        .bind(org)
        .fetch_all(pool)
        .await)
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
