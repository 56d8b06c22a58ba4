//! `gatehouse clients`: the client registry of the OpenID provider, whose confidential clients
//! the operator designates may also introspect tokens (docs/api.md §11, §6).

use clap::Subcommand;
use serde_json::json;

use crate::auth::audit::Operator;
use crate::clock::rfc3339;
use crate::error::Error;
use crate::model::Client;
use crate::provider::{ClientChanges, NewClient};
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
    /// Change a client: each flag given replaces that field (a list flag the whole list), the
    /// others stay; every instance sees the change within a second
    Update(ClientUpdate),
    /// Give a confidential client a new secret, shown only this once; the old one keeps working
    /// for --overlap, so that the relying party can be given the new one without an outage
    RotateSecret {
        id: String,
        /// How long the old secret keeps working, e.g. 1h, 7d, 0s to end it now (at most 30d)
        /// [default: 24h]
        #[arg(long, value_name = "D")]
        overlap: Option<String>,
        /// Print {"clientId", "clientSecret", "previousSecretExpiresAt"}
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
    /// A grant (repeatable): authorization_code, refresh_token, client_credentials,
    /// urn:ietf:params:oauth:grant-type:device_code (command-line tools),
    /// urn:ietf:params:oauth:grant-type:token-exchange (agents) [default: authorization_code and
    /// refresh_token]
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
    /// PKCE (RFC 7636): required (default), or optional for a confidential client whose library
    /// cannot send it (its authorizations must then carry a nonce for openid)
    #[arg(long, value_name = "P", value_parser = ["required", "optional"])]
    pkce: Option<String>,
    /// DPoP (RFC 9449): optional (default: tokens are bound when the client sends a proof), or
    /// required (a token request without a proof is refused)
    #[arg(long, value_name = "D", value_parser = ["required", "optional"])]
    dpop: Option<String>,
    /// Print {"clientId", "clientSecret"} (clientSecret null for a public client)
    #[arg(long)]
    json: bool,
}

/// `gatehouse clients update` (docs/api.md §11): the flags of `add` that a client can change.
#[derive(Debug, clap::Args)]
pub struct ClientUpdate {
    id: String,
    /// The name people see on the consent page
    #[arg(long)]
    name: Option<String>,
    /// Whether people are asked for consent (true: not asked)
    #[arg(long, value_name = "BOOL")]
    first_party: Option<bool>,
    /// A redirect URI (repeatable): the list becomes these
    #[arg(long = "redirect-uri", value_name = "U")]
    redirect_uris: Vec<String>,
    /// A post-logout redirect URI (repeatable): the list becomes these
    #[arg(long = "post-logout-redirect-uri", value_name = "U")]
    post_logout_redirect_uris: Vec<String>,
    /// Remove every post-logout redirect URI
    #[arg(long, conflicts_with = "post_logout_redirect_uris")]
    no_post_logout_redirect_uris: bool,
    /// A grant (repeatable): the list becomes these
    #[arg(long = "grant", value_name = "G")]
    grants: Vec<String>,
    /// A scope (repeatable, or several space-separated): the list becomes these
    #[arg(long = "scope", value_name = "S")]
    scopes: Vec<String>,
    /// Where logout tokens are POSTed
    #[arg(long, value_name = "U")]
    backchannel_logout_uri: Option<String>,
    /// Remove the back-channel logout URI
    #[arg(long, conflicts_with = "backchannel_logout_uri")]
    no_backchannel_logout_uri: bool,
    /// How its ID tokens are signed: RS256, ES256 or EdDSA
    #[arg(long, value_name = "A")]
    id_token_alg: Option<String>,
    /// Whether it may introspect tokens (RFC 7662)
    #[arg(long, value_name = "BOOL")]
    introspect: Option<bool>,
    /// PKCE: required, or optional (a confidential client only)
    #[arg(long, value_name = "P", value_parser = ["required", "optional"])]
    pkce: Option<String>,
    /// DPoP: required, or optional
    #[arg(long, value_name = "D", value_parser = ["required", "optional"])]
    dpop: Option<String>,
    /// Print the client as the admin API shows it
    #[arg(long)]
    json: bool,
}

/// Repeated `--scope` flags, each possibly several space-separated.
fn scope_names(flags: &[String]) -> Vec<String> {
    flags
        .iter()
        .flat_map(|s| s.split(' ').filter(|s| !s.is_empty()))
        .map(str::to_owned)
        .collect()
}

impl ClientUpdate {
    fn changes(&self) -> ClientChanges {
        let list = |flags: &Vec<String>| (!flags.is_empty()).then(|| flags.clone());
        ClientChanges {
            client_type: None,
            name: self.name.clone(),
            first_party: self.first_party,
            redirect_uris: list(&self.redirect_uris),
            post_logout_redirect_uris: if self.no_post_logout_redirect_uris {
                Some(Vec::new())
            } else {
                list(&self.post_logout_redirect_uris)
            },
            grant_types: list(&self.grants),
            scopes: (!self.scopes.is_empty()).then(|| scope_names(&self.scopes)),
            backchannel_logout_uri: match (
                &self.backchannel_logout_uri,
                self.no_backchannel_logout_uri,
            ) {
                (_, true) => Some(None),
                (Some(uri), false) => Some(Some(uri.clone())),
                (None, false) => None,
            },
            id_token_alg: self.id_token_alg.clone(),
            introspection: self.introspect,
            pkce_required: self.pkce.as_deref().map(|p| p == "required"),
            dpop_required: self.dpop.as_deref().map(|d| d == "required"),
        }
    }
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
            scopes: (!self.scopes.is_empty()).then(|| scope_names(&self.scopes)),
            backchannel_logout_uri: self.backchannel_logout_uri,
            id_token_alg: self.id_token_alg,
            org_id: self.org,
            introspection: self.introspect,
            pkce_required: self.pkce.as_deref().map(|p| p == "required"),
            dpop_required: self.dpop.as_deref().map(|d| d == "required"),
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
        "pkceRequired" => "--pkce",
        "dpopBoundAccessTokens" => "--dpop",
        "overlap" => "--overlap",
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
                .map_err(one_line)?;
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
        ClientsCommand::Update(update) => {
            let id = client_id(&update.id)?;
            let changes = update.changes();
            if changes.is_empty() {
                anyhow::bail!("give at least one flag of the client to change (see --help)");
            }
            let client = match registry.update(Operator::Cli, id, changes).await {
                Err(Error::NotFound) => anyhow::bail!("there is no client {}", update.id),
                other => other.map_err(one_line)?,
            };
            if update.json {
                println!("{}", serde_json::to_string_pretty(&view(&client))?);
            }
            eprintln!("gatehouse: changed client {id}: every instance sees it within a second");
        }
        ClientsCommand::RotateSecret { id, overlap, json } => {
            let parsed = client_id(&id)?;
            let overlap_ms = match overlap.as_deref().map(humantime::parse_duration) {
                None => None,
                Some(Ok(d)) => Some(i64::try_from(d.as_millis()).unwrap_or(i64::MAX)),
                Some(Err(_)) => anyhow::bail!("--overlap: not a duration (e.g. 1h, 7d, 0s)"),
            };
            let rotated = match registry
                .rotate_secret(Operator::Cli, parsed, overlap_ms)
                .await
            {
                Err(Error::NotFound) => anyhow::bail!("there is no client {id}"),
                other => other.map_err(one_line)?,
            };
            let until = rfc3339(rotated.previous_until);
            if json {
                println!(
                    "{}",
                    json!({
                        "clientId": parsed.to_string(),
                        "clientSecret": rotated.secret,
                        "previousSecretExpiresAt": until,
                    })
                );
            } else {
                println!("client_secret: {}", rotated.secret);
            }
            eprintln!(
                "gatehouse: keep the secret now: it is stored hashed and cannot be shown again; \
                 the previous one works until {until}"
            );
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
                        "{}  {}  {:<12}  {}  grants={}  scopes={}  redirect_uris={}{}{}{}{}{}",
                        c.id,
                        rfc3339(c.created_at),
                        c.client_type.as_str(),
                        c.name,
                        grants.join(","),
                        c.scopes.join(","),
                        c.redirect_uris.join(","),
                        if c.first_party { "  first-party" } else { "" },
                        if c.introspection { "  introspects" } else { "" },
                        if c.pkce_required {
                            ""
                        } else {
                            "  pkce=optional"
                        },
                        if c.dpop_required {
                            "  dpop=required"
                        } else {
                            ""
                        },
                        match c.origin.as_str() {
                            "operator" => String::new(),
                            origin => format!("  origin={origin}"),
                        },
                    );
                }
            }
        }
        ClientsCommand::Remove { id } => {
            match registry.remove(Operator::Cli, client_id(&id)?).await {
                Ok(()) => {}
                Err(Error::NotFound) => anyhow::bail!("there is no client {id}"),
                Err(error) => return Err(error.into()),
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

/// The registry's refusal in one line, naming the first bad flag.
fn one_line(error: Error) -> anyhow::Error {
    super::refusal(error, flag, "client")
}

/// A client id as typed; anything but a UUID names no client.
fn client_id(id: &str) -> anyhow::Result<uuid::Uuid> {
    uuid::Uuid::parse_str(id).map_err(|_| {
        anyhow::anyhow!("there is no client {id:?} (`gatehouse clients list` shows them)")
    })
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
        "pkceRequired": c.pkce_required,
        "dpopBoundAccessTokens": c.dpop_required,
        "previousSecretExpiresAt": c.previous_secret.as_ref().map(|(_, until)| rfc3339(*until)),
        "metadataUrl": match &c.origin {
            crate::model::ClientOrigin::MetadataDocument { url, .. } => Some(url.as_str()),
            _ => None,
        },
    })
}
