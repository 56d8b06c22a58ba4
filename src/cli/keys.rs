//! `gatehouse keys`: the signing keys (docs/api.md §2).

use clap::Subcommand;

use crate::clock::rfc3339;
use crate::error::Error;
use crate::services::Services;

#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Print each signing key's kid, algorithm, state and creation time
    List,
    /// Make a new signing key of every algorithm (RS256, ES256, EdDSA), printing each one's kid
    /// and algorithm; running instances switch to them within seconds
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
                println!(
                    "{}  {:<5}  {:<7}  {}",
                    key.kid,
                    key.alg,
                    key.state,
                    rfc3339(key.created_at)
                );
            }
        }
        KeysCommand::Rotate => {
            let kids = services.auth.admin.rotate_signing_keys().await?;
            for (alg, kid) in &kids {
                println!("{kid}  {alg}");
            }
            for (alg, kid) in &kids {
                eprintln!("gatehouse: {kid} is the {alg} signing key now");
            }
            eprintln!(
                "gatehouse: running instances switch to them within {} s; the retired keys stay published until their tokens expire",
                crate::app::KEY_RELOAD_INTERVAL.as_secs()
            );
        }
        KeysCommand::Revoke { kid } => {
            match services.auth.admin.revoke_signing_key(&kid).await {
                Ok(()) => {}
                Err(Error::NotFound) => anyhow::bail!(
                    "there is no retired key {kid:?} to revoke (`gatehouse keys list` shows them; rotate first to retire the active keys)"
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
