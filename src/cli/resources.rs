//! `gatehouse resources`: the business APIs tokens are issued for and their scopes
//! (docs/guide/resources.md). The settings' are listed; the operator's are declared, changed and
//! removed here, as by the admin API.

use clap::Subcommand;
use serde_json::json;

use crate::auth::audit::Operator;
use crate::auth::{ResourceChanges, ResourceInput};
use crate::error::Error;
use crate::model::Resource;
use crate::services::Services;

#[derive(Debug, Subcommand)]
pub enum ResourcesCommand {
    /// Print each API: id, origin, audience, name, and its scopes with their descriptions
    List {
        /// Print a JSON array of the APIs as the admin API shows them
        #[arg(long)]
        json: bool,
    },
    /// Declare an API: its scopes are clients', API keys' and rules' to use at once
    Add {
        /// 1 to 32 of a-z, 0-9 and -
        id: String,
        /// Its name for people
        #[arg(long)]
        name: String,
        /// The `aud` of its tokens and the RFC 8707 resource its clients name (an absolute URL)
        /// [default: GATEHOUSE_AUDIENCE, the services behind the proxies]
        #[arg(long, value_name = "URL")]
        audience: Option<String>,
        /// A scope and what the consent screen says of it, as NAME=DESCRIPTION (repeatable)
        #[arg(long = "scope", value_name = "NAME=DESCRIPTION", required = true)]
        scopes: Vec<String>,
    },
    /// Change an operator's API: each flag given replaces that field (--scope the whole set)
    Update {
        id: String,
        #[arg(long)]
        name: Option<String>,
        #[arg(long, value_name = "URL", conflicts_with = "no_audience")]
        audience: Option<String>,
        /// Its tokens carry GATEHOUSE_AUDIENCE again
        #[arg(long)]
        no_audience: bool,
        #[arg(long = "scope", value_name = "NAME=DESCRIPTION")]
        scopes: Vec<String>,
    },
    /// Remove an operator's API: its scopes are no scopes any more
    Remove { id: String },
}

/// `NAME=DESCRIPTION` flags as pairs.
fn scope_pairs(flags: &[String]) -> anyhow::Result<Vec<(String, String)>> {
    flags
        .iter()
        .map(|flag| match flag.split_once('=') {
            Some((name, description)) => Ok((name.trim().to_owned(), description.to_owned())),
            None => anyhow::bail!("--scope: {flag:?} is not NAME=DESCRIPTION"),
        })
        .collect()
}

/// The flag that gives an API field.
fn flag(field: &str) -> &str {
    match field {
        "scopes" => "--scope",
        "audience" => "--audience",
        "name" => "--name",
        _ => "ID",
    }
}

/// The registry's refusal in one line, naming the flag.
fn one_line(error: Error) -> anyhow::Error {
    super::refusal(error, flag, "resource")
}

pub(super) async fn resources(
    command: ResourcesCommand,
    services: &Services,
) -> anyhow::Result<()> {
    let registry = &services.auth.resources;
    match command {
        ResourcesCommand::List { json } => {
            let all = registry.list();
            if json {
                let items: Vec<_> = all.iter().map(view).collect();
                println!("{}", serde_json::to_string_pretty(&items)?);
            } else {
                for r in &all {
                    println!(
                        "{}  {}  {}  {}",
                        r.id,
                        r.origin.as_str(),
                        r.audience.as_deref().unwrap_or("GATEHOUSE_AUDIENCE"),
                        r.name
                    );
                    for s in &r.scopes {
                        println!("    {}  {}", s.name, s.description);
                    }
                }
            }
        }
        ResourcesCommand::Add {
            id,
            name,
            audience,
            scopes,
        } => {
            let input = ResourceInput {
                id,
                name,
                audience,
                scopes: scope_pairs(&scopes)?,
            };
            let made = registry
                .create(Operator::Cli, input)
                .await
                .map_err(one_line)?;
            eprintln!(
                "gatehouse: declared {} with {} scope(s): every instance knows them within a second",
                made.id,
                made.scopes.len()
            );
        }
        ResourcesCommand::Update {
            id,
            name,
            audience,
            no_audience,
            scopes,
        } => {
            let changes = ResourceChanges {
                name,
                audience: if no_audience {
                    Some(None)
                } else {
                    audience.map(Some)
                },
                scopes: if scopes.is_empty() {
                    None
                } else {
                    Some(scope_pairs(&scopes)?)
                },
            };
            if changes.is_empty() {
                anyhow::bail!("give at least one flag of the resource to change (see --help)");
            }
            match registry.update(Operator::Cli, &id, changes).await {
                Err(Error::NotFound) => anyhow::bail!("there is no resource {id:?}"),
                other => other.map_err(one_line)?,
            };
            eprintln!("gatehouse: changed {id}");
        }
        ResourcesCommand::Remove { id } => {
            match registry.remove(Operator::Cli, &id).await {
                Err(Error::NotFound) => anyhow::bail!("there is no resource {id:?}"),
                other => other.map_err(one_line)?,
            };
            eprintln!("gatehouse: removed {id}");
        }
    }
    Ok(())
}

/// An API as the admin API shows it.
fn view(r: &Resource) -> serde_json::Value {
    let scopes: serde_json::Map<String, serde_json::Value> = r
        .scopes
        .iter()
        .map(|s| (s.name.clone(), json!(s.description)))
        .collect();
    json!({
        "id": r.id,
        "name": r.name,
        "audience": r.audience,
        "scopes": scopes,
        "origin": r.origin.as_str(),
    })
}
