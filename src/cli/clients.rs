//! `gatehouse clients`: the API clients that may introspect tokens (docs/api.md §6).

use super::ClientsCommand;
use crate::clock::rfc3339;
use crate::error::Error;
use crate::services::Services;

pub(super) async fn clients(command: ClientsCommand, services: &Services) -> anyhow::Result<()> {
    let auth = &services.auth;
    match command {
        ClientsCommand::Add { name } => {
            let (client, secret) = auth.clients.add_client(&name).await.map_err(|e| match e {
                Error::Validation(_) => anyhow::anyhow!(
                    "the client name must be 1 to 200 characters, without control characters"
                ),
                other => other.into(),
            })?;
            println!("client_id: {}", client.id);
            println!("client_secret: {secret}");
            eprintln!(
                "gatehouse: keep the secret now: it is stored hashed and cannot be shown again"
            );
        }
        ClientsCommand::List => {
            for client in auth.clients.list().await? {
                println!(
                    "{}  {}  {}",
                    client.id,
                    rfc3339(client.created_at),
                    client.name
                );
            }
        }
        ClientsCommand::Remove { id } => {
            let parsed = uuid::Uuid::parse_str(&id).ok();
            match parsed {
                Some(uuid) => match auth.clients.remove_client(uuid).await {
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
    }
    // The mail a command caused (an invitation, a notice) waits in the outbox for a running
    // server's worker: delivering it here could send it by other settings than the server's
    // (a CLI without the SMTP settings would write it to files instead).
    Ok(())
}
