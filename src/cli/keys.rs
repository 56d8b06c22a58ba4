//! `gatehouse keys`: the signing keys (docs/api.md §2).

use clap::Subcommand;

use crate::clock::rfc3339;
use crate::error::Error;
use crate::services::Services;

#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Print each signing key's kid, state and creation time
    List,
    /// Make a new signing key; running instances switch to it within seconds
    Rotate,
    /// Revoke a retired key (rotate first to retire the active one): the tokens it signed stop
    /// verifying on every running instance within seconds
    Revoke {
        /// A kid is a base64url thumbprint, so one in 64 starts with '-': still the kid, not a flag
        #[arg(allow_hyphen_values = true)]
        kid: String,
    },
}

pub(super) async fn keys(command: KeysCommand, services: &Services) -> anyhow::Result<()> {
    match command {
        KeysCommand::List => {
            for key in services.store.all_signing_keys().await? {
                println!("{}  {:<7}  {}", key.kid, key.state, rfc3339(key.created_at));
            }
        }
        KeysCommand::Rotate => {
            let kid = services.auth.admin.rotate_signing_key().await?;
            println!("{kid}");
            eprintln!(
                "gatehouse: {kid} is the signing key now; running instances switch to it within {} s",
                crate::app::KEY_RELOAD_INTERVAL.as_secs()
            );
        }
        KeysCommand::Revoke { kid } => {
            match services.auth.admin.revoke_signing_key(&kid).await {
                Ok(()) => {}
                Err(Error::NotFound) => anyhow::bail!(
                    "there is no retired key {kid:?} to revoke (`gatehouse keys list` shows them; rotate first to retire the active key)"
                ),
                Err(error) => return Err(error.into()),
            }
            eprintln!(
                "gatehouse: revoked {kid}; running instances stop accepting its tokens within {} s",
                crate::app::KEY_RELOAD_INTERVAL.as_secs()
            );
        }
    }
    Ok(())
}
