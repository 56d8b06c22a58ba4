//! `gatehouse clients`: the client registry of the OpenID provider, whose confidential clients
//! the operator designates may also introspect tokens (docs/api.md §11, §6).

use clap::Subcommand;
use serde_json::json;

use crate::auth::NewClient;
use crate::auth::admin::Operator;
use crate::clock::rfc3339;
use crate::error::Error;
use crate::model::Client;
use crate::services::Services;

#[derive(Debug, Subcommand)]
pub enum ClientsCommand {
    /// Register a client; prints its id and, for a confidential client, its secret, which is shown
    /// only this once
    Add(ClientAdd),
    /// Print each client: id, creation time, type, name, grants, scopes, redirect URIs, and
    /// whether it introspects
    List {
        /// Print a JSON array of the clients as the admin API shows them
        #[arg(long)]
        json: bool,
    },
    /// Remove a client: its calls are refused within a second
    Remove { id: String },
    /// Print an initial access token for POST /oauth2/register (GATEHOUSE_OAUTH_REGISTRATION=token):
    /// it registers one client; shown only this once
    RegistrationToken {
        /// How long it may be used, e.g. 1h, 7d (at most 30d) [default: 24h]
        #[arg(long, value_name = "D")]
        ttl: Option<String>,
        /// Print {"token", "expiresAt"}
        #[arg(long)]
        json: bool,
    },
}

/// `gatehouse clients add` (docs/api.md §11).
#[derive(Debug, clap::Args)]
pub struct ClientAdd {
    /// The name people see on the consent page (1 to 200 characters)
    name: String,
    /// A public client (a SPA, a native app): it gets no secret
    #[arg(long)]
    public: bool,
    /// A first-party client: people are not asked for consent
    #[arg(long)]
    first_party: bool,
    /// A redirect URI (repeatable): https, http on 127.0.0.1, [::1] or localhost, or a native
    /// app's com.example.app:/callback
    #[arg(long = "redirect-uri", value_name = "U")]
    redirect_uris: Vec<String>,
    /// A post-logout redirect URI (repeatable), by the same rules
    #[arg(long = "post-logout-redirect-uri", value_name = "U")]
    post_logout_redirect_uris: Vec<String>,
    /// A grant (repeatable): authorization_code, refresh_token, client_credentials [default:
    /// authorization_code and refresh_token]
    #[arg(long = "grant", value_name = "G")]
    grants: Vec<String>,
    /// A scope (repeatable, or several space-separated) [default: openid profile email
    /// offline_access]
    #[arg(long = "scope", value_name = "S")]
    scopes: Vec<String>,
    /// Where logout tokens are POSTed: https, or http on a loopback host
    #[arg(long, value_name = "U")]
    backchannel_logout_uri: Option<String>,
    /// How its ID tokens are signed: RS256 (default), ES256 or EdDSA
    #[arg(long, value_name = "A")]
    id_token_alg: Option<String>,
    /// Bind the client to an organisation (its id): its client-credentials tokens carry it as
    /// org_id, and people authorizing it act in it
    #[arg(long, value_name = "ORG_ID")]
    org: Option<uuid::Uuid>,
    /// A resource server that may introspect tokens (RFC 7662) [default: only a client given
    /// neither --redirect-uri nor --grant, which is what such a client is for]
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    introspect: Option<bool>,
    /// Print {"clientId", "clientSecret"} (clientSecret null for a public client)
    #[arg(long)]
    json: bool,
}

impl ClientAdd {
    fn into_new(self) -> NewClient {
        NewClient {
            name: self.name,
            client_type: Some(
                if self.public {
                    "public"
                } else {
                    "confidential"
                }
                .to_owned(),
            ),
            first_party: self.first_party,
            redirect_uris: self.redirect_uris,
            post_logout_redirect_uris: self.post_logout_redirect_uris,
            grant_types: (!self.grants.is_empty()).then_some(self.grants),
            scopes: (!self.scopes.is_empty()).then(|| {
                self.scopes
                    .iter()
                    .flat_map(|s| s.split(' ').filter(|s| !s.is_empty()))
                    .map(str::to_owned)
                    .collect()
            }),
            backchannel_logout_uri: self.backchannel_logout_uri,
            id_token_alg: self.id_token_alg,
            org_id: self.org,
            introspection: self.introspect,
        }
    }
}

/// The flag (or argument) the registry's field name stands for here.
fn flag(field: &str) -> &str {
    match field {
        "name" => "NAME",
        "type" => "--public",
        "redirectUris" => "--redirect-uri",
        "postLogoutRedirectUris" => "--post-logout-redirect-uri",
        "grantTypes" => "--grant",
        "scopes" => "--scope",
        "backchannelLogoutUri" => "--backchannel-logout-uri",
        "idTokenSignedResponseAlg" => "--id-token-alg",
        "orgId" => "--org",
        "introspection" => "--introspect",
        other => other,
    }
}

pub(super) async fn clients(command: ClientsCommand, services: &Services) -> anyhow::Result<()> {
    let registry = &services.auth.clients;
    match command {
        ClientsCommand::Add(add) => {
            let json = add.json;
            let (client, secret) = registry
                .create(Operator::Cli, add.into_new())
                .await
                .map_err(|e| match e {
                    // One line, naming the first bad flag (fields are sorted by name).
                    Error::Validation(fields) => match fields.into_iter().next() {
                        Some((field, reason)) => anyhow::anyhow!("{}: {reason}", flag(&field)),
                        None => anyhow::anyhow!("the client is not valid"),
                    },
                    other => other.into(),
                })?;
            if json {
                println!(
                    "{}",
                    json!({ "clientId": client.id.to_string(), "clientSecret": secret })
                );
            } else {
                println!("client_id: {}", client.id);
                if let Some(secret) = &secret {
                    println!("client_secret: {secret}");
                }
            }
            if secret.is_some() {
                eprintln!(
                    "gatehouse: keep the secret now: it is stored hashed and cannot be shown again"
                );
            }
        }
        ClientsCommand::List { json } => {
            let clients = registry.list(Operator::Cli).await?;
            if json {
                let items: Vec<_> = clients.iter().map(view).collect();
                println!("{}", serde_json::to_string_pretty(&items)?);
            } else {
                for c in &clients {
                    let grants: Vec<&str> = c.grant_types.iter().map(|g| g.as_str()).collect();
                    println!(
                        "{}  {}  {:<12}  {}  grants={}  scopes={}  redirect_uris={}{}{}{}",
                        c.id,
                        rfc3339(c.created_at),
                        c.client_type.as_str(),
                        c.name,
                        grants.join(","),
                        c.scopes.join(","),
                        c.redirect_uris.join(","),
                        if c.first_party { "  first-party" } else { "" },
                        if c.introspection { "  introspects" } else { "" },
                        match c.origin.as_str() {
                            "operator" => String::new(),
                            origin => format!("  origin={origin}"),
                        },
                    );
                }
            }
        }
        ClientsCommand::Remove { id } => {
            let parsed = uuid::Uuid::parse_str(&id).ok();
            match parsed {
                Some(uuid) => match registry.remove(Operator::Cli, uuid).await {
                    Ok(()) => {}
                    Err(Error::NotFound) => anyhow::bail!("there is no client {id}"),
                    Err(error) => return Err(error.into()),
                },
                None => {
                    anyhow::bail!("there is no client {id:?} (`gatehouse clients list` shows them)")
                }
            }
            eprintln!("gatehouse: removed client {id}");
        }
        ClientsCommand::RegistrationToken { ttl, json } => {
            let ttl_ms = match ttl.as_deref().map(humantime::parse_duration) {
                None => None,
                Some(Ok(d)) => Some(i64::try_from(d.as_millis()).unwrap_or(i64::MAX)),
                Some(Err(_)) => anyhow::bail!("--ttl: not a duration (e.g. 1h, 7d)"),
            };
            let issued = registry
                .registration_token(Operator::Cli, ttl_ms)
                .await
                .map_err(|e| match e {
                    Error::Validation(_) => anyhow::anyhow!("--ttl: must be from 1s to 30d"),
                    other => other.into(),
                })?;
            let expires_at = rfc3339(issued.expires_at);
            if json {
                println!(
                    "{}",
                    json!({ "token": issued.token, "expiresAt": expires_at })
                );
            } else {
                println!("{}", issued.token);
                eprintln!(
                    "gatehouse: it registers one client until {expires_at}; it is stored hashed \
                     and cannot be shown again"
                );
            }
        }
    }
    Ok(())
}

/// A client as the admin API shows it (docs/api.md §11).
fn view(c: &Client) -> serde_json::Value {
    let grants: Vec<&str> = c.grant_types.iter().map(|g| g.as_str()).collect();
    json!({
        "clientId": c.id.to_string(),
        "name": c.name,
        "type": c.client_type.as_str(),
        "firstParty": c.first_party,
        "redirectUris": c.redirect_uris,
        "postLogoutRedirectUris": c.post_logout_redirect_uris,
        "grantTypes": grants,
        "scopes": c.scopes,
        "backchannelLogoutUri": c.backchannel_logout_uri,
        "idTokenSignedResponseAlg": c.id_token_alg.as_str(),
        "createdAt": rfc3339(c.created_at),
        "orgId": c.org_id,
        "origin": c.origin.as_str(),
        "introspection": c.introspection,
        "metadataUrl": match &c.origin {
            crate::model::ClientOrigin::MetadataDocument { url, .. } => Some(url.as_str()),
            _ => None,
        },
    })
}
