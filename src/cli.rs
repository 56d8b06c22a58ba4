//! The `gatehouse` command: the server and the administration commands of docs/api.md §4.

use std::io::BufRead as _;
use std::process::ExitCode;

use clap::{Args as _, CommandFactory as _, FromArgMatches as _, Parser, Subcommand};
use secrecy::SecretString;
use serde_json::json;

use crate::app::{Application, shutdown_signal};
use crate::auth::AuthService;
use crate::auth::admin::Operator;
use crate::clock::{Clock, rfc3339};
use crate::config::{COMMON_SETTINGS, Settings, SettingsArgs};
use crate::domain::{Email, FullName, Role};
use crate::error::Error;
use crate::services::{Opening, Services, master_key, open_store};
use crate::telemetry;

mod audit;
mod clients;

use audit::audit;
use clients::clients;

#[derive(Debug, Parser)]
#[command(
    name = "gatehouse",
    version,
    about = "Self-hosted authentication service for business APIs"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the service (every setting: `gatehouse help settings`)
    Serve,
    /// Create the database if there is none, apply its migrations, and exit
    Migrate,
    /// Every setting of the service: its flag, its environment variable and its default (keys of
    /// the --config file are the flags' names with `_` for `-`)
    Settings,
    /// Manage accounts
    #[command(subcommand)]
    User(UserCommand),
    /// Manage signing keys
    #[command(subcommand)]
    Keys(KeysCommand),
    /// Manage the API clients that may introspect tokens (RFC 7662)
    #[command(subcommand)]
    Clients(ClientsCommand),
    /// Print the OpenAPI document of the HTTP API
    Openapi,
    /// Print the audit trail, oldest first
    Audit {
        /// Only this account's events
        #[arg(long, value_name = "EMAIL")]
        user: Option<String>,
        /// From this time on: RFC 3339 (2026-11-21T08:00:00Z) or a span back from now (24h, 7d)
        /// [default: 24h]
        #[arg(long, value_name = "TIME")]
        since: Option<String>,
        /// Print a JSON array
        #[arg(long)]
        json: bool,
    },
    /// Run one housekeeping pass now and print what it deleted (each instance runs one every
    /// 10 minutes; this is for operators and benchmarks, hence hidden from the help)
    #[command(hide = true)]
    Housekeep,
}

#[derive(Debug, Subcommand)]
pub enum UserCommand {
    /// Create an account; prints its id
    Add {
        /// The account's e-mail address, its sign-in name (verified: an operator vouches for it)
        #[arg(long)]
        email: String,
        /// The account's full name, as shown to its owner and in forward-auth's Remote-Name
        #[arg(long)]
        name: String,
        /// Read the password from the first line of standard input
        #[arg(long)]
        password_stdin: bool,
    },
    /// List accounts
    List {
        /// Print a JSON array
        #[arg(long)]
        json: bool,
    },
    /// Disable an account and end all its sessions
    Disable { email: String },
    /// Enable a disabled account
    Enable { email: String },
    /// Set an account's password and end all its sessions
    SetPassword {
        email: String,
        /// Read the password from the first line of standard input
        #[arg(long)]
        password_stdin: bool,
    },
    /// Turn two-factor authentication off for an account and end all its sessions
    #[command(name = "reset-2fa")]
    Reset2fa { email: String },
    /// End all sessions of an account
    EndSessions { email: String },
    /// Mail an account a password-reset link (within its 3 reset mails an hour)
    SendReset { email: String },
    /// Delete an account as its owner leaving would: sessions end, personal data goes
    Delete { email: String },
    /// Create an account without a password and mail its owner an invitation link; prints its id
    Invite {
        /// The address the invitation goes to, the account's sign-in name
        #[arg(long)]
        email: String,
        /// The account's full name
        #[arg(long)]
        name: String,
        /// Give the new account this role (repeatable)
        #[arg(long = "role", value_name = "ROLE")]
        role: Vec<String>,
    },
    /// Print an account's roles, one a line, after adding and removing the ones given
    Roles {
        email: String,
        /// Give the account this role (repeatable)
        #[arg(long = "add", value_name = "ROLE")]
        add: Vec<String>,
        /// Take this role from the account (repeatable)
        #[arg(long = "remove", value_name = "ROLE")]
        remove: Vec<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum ClientsCommand {
    /// Register a client; prints its id and its secret, which is shown only this once
    Add { name: String },
    /// Print each client's id, creation time and name
    List,
    /// Remove a client: its introspection calls are refused within a second
    Remove { id: String },
}

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

/// The command line: the settings every command reads are global flags; the server's own are
/// flags of `serve` (and of the `settings` help topic). They are still read from the environment
/// and the file for every command, and still accepted before the command name (hidden there), so
/// `gatehouse user add --help` shows what `user add` takes and not forty server settings.
fn command_line() -> clap::Command {
    let every = SettingsArgs::augment_args(clap::Command::new("settings"));
    let (common, server): (Vec<clap::Arg>, Vec<clap::Arg>) = every
        .get_arguments()
        .cloned()
        .partition(|a| COMMON_SETTINGS.contains(&a.get_id().as_str()));
    let shown = |args: &[clap::Arg]| args.to_vec();
    Cli::command()
        .args(
            common
                .into_iter()
                .map(|a| a.global(true).help_heading("Settings (every command)")),
        )
        .args(server.iter().cloned().map(|a| a.hide(true)))
        .mut_subcommand("serve", |c| c.args(shown(&server)))
        .mut_subcommand("settings", |c| c.args(shown(&server)))
}

/// The command and its settings: a setting given after `serve` wins over one given before it.
fn parse() -> (Command, SettingsArgs) {
    let matches = command_line().get_matches();
    let parsed = (|| {
        let cli = Cli::from_arg_matches(&matches)?;
        let mut settings = SettingsArgs::from_arg_matches(&matches)?;
        if let Some(("serve", serve)) = matches.subcommand() {
            settings.update_from_arg_matches(serve)?;
        }
        Ok::<_, clap::Error>((cli.command, settings))
    })();
    parsed.unwrap_or_else(|e| e.exit())
}

/// Parses the command line, runs the command, and turns any failure into one line on stderr.
pub fn run() -> ExitCode {
    let (command, args) = parse();
    if let Command::Settings = command {
        let mut line = command_line();
        if let Some(topic) = line.find_subcommand_mut("settings") {
            let _ = topic.print_long_help();
        }
        return ExitCode::SUCCESS;
    }
    let settings = match Settings::resolve(&args) {
        Ok(settings) => settings,
        Err(error) => {
            eprintln!("gatehouse: {error}");
            return ExitCode::from(2);
        }
    };
    // An administration command says what it did in its own lines: its log is for warnings,
    // unless GATEHOUSE_LOG asks for more.
    let filter = match (&command, &args.log) {
        (Command::Serve, _) | (_, Some(_)) => settings.log.as_str(),
        _ => "warn",
    };
    telemetry::init(filter, settings.log_format);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("gatehouse: cannot start the runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(execute(command, settings)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            // `{:#}` prints the cause chain on one line.
            eprintln!("gatehouse: {error:#}");
            ExitCode::FAILURE
        }
    }
}

async fn execute(command: Command, settings: Settings) -> anyhow::Result<()> {
    match command {
        Command::Serve => {
            let app = Application::build(&settings).await?;
            app.run_until(shutdown_signal()).await
        }
        Command::Migrate => {
            let store = open_store(&settings, Opening::Create).await?;
            // A new SQLite database gets its key file now, so that the commands after it (which
            // never make one) work before the first start.
            if settings.sqlite_path().is_some() {
                master_key(&settings, &store, Opening::Create).await?;
            }
            eprintln!("gatehouse: the database is up to date");
            Ok(())
        }
        Command::Settings => Ok(()),
        Command::Openapi => {
            println!("{}", crate::http::openapi().to_pretty_json()?);
            Ok(())
        }
        Command::Audit { user, since, json } => {
            audit(user, since, json, &services(&settings).await?).await
        }
        Command::Housekeep => {
            let started = std::time::Instant::now();
            let purged = services(&settings)
                .await?
                .auth
                .housekeeping
                .housekeep()
                .await?;
            println!(
                "deleted {} sessions, {} refresh-token records, {} challenges, {} throttle keys, \
                 {} audit events in {:.1} s (longest batch {:.1} ms)",
                purged.sessions,
                purged.refresh_tokens,
                purged.challenges,
                purged.throttles,
                purged.audit_events,
                started.elapsed().as_secs_f64(),
                purged.longest_batch.as_secs_f64() * 1000.0
            );
            Ok(())
        }
        Command::User(command) => user(command, &services(&settings).await?).await,
        Command::Keys(command) => keys(command, &services(&settings).await?).await,
        Command::Clients(command) => clients(command, &services(&settings).await?).await,
    }
}

async fn services(settings: &Settings) -> anyhow::Result<Services> {
    Services::open(settings, Clock::system(), Opening::Existing).await
}

fn email(raw: &str) -> anyhow::Result<Email> {
    Email::parse(raw).map_err(|reason| anyhow::anyhow!("the e-mail address {raw:?} {reason}"))
}

/// Domain errors read as sentences on the command line.
fn explain(error: Error, email: &Email) -> anyhow::Error {
    match error {
        Error::NotFound => anyhow::anyhow!("there is no account with the e-mail address {email}"),
        Error::EmailTaken => anyhow::anyhow!("the e-mail address {email} is in use already"),
        Error::Internal(cause) | Error::Unavailable(cause) => cause,
        other => anyhow::anyhow!("{other}"),
    }
}

/// The id of the account with this e-mail (the command names accounts by address; the actions
/// take ids, as the administration API does).
async fn account(auth: &AuthService, email: &Email) -> anyhow::Result<uuid::Uuid> {
    auth.admin
        .find_user(email)
        .await
        .map(|u| u.id)
        .map_err(|e| explain(e, email))
}

/// Role names as given on the command line, each checked.
fn roles(names: &[String]) -> anyhow::Result<Vec<Role>> {
    names
        .iter()
        .map(|n| Role::parse(n).map_err(|reason| anyhow::anyhow!("{reason}")))
        .collect()
}

/// One line of standard input, without its line ending.
fn password_from_stdin(given: bool) -> anyhow::Result<SecretString> {
    if !given {
        anyhow::bail!(
            "pass --password-stdin and the password on standard input (on the command line it would show in process lists and shell history)"
        );
    }
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    let password = line.strip_suffix('\n').unwrap_or(&line);
    let password = password.strip_suffix('\r').unwrap_or(password);
    if password.is_empty() {
        anyhow::bail!("no password on standard input");
    }
    Ok(SecretString::from(password))
}

async fn user(command: UserCommand, services: &Services) -> anyhow::Result<()> {
    let auth = &services.auth;
    match command {
        UserCommand::Add {
            email: raw,
            name,
            password_stdin,
        } => {
            let email = email(&raw)?;
            let name =
                FullName::parse(&name).map_err(|reason| anyhow::anyhow!("the name {reason}"))?;
            let password = password_from_stdin(password_stdin)?;
            let user = auth
                .admin
                .add_user(Operator::Cli, &email, &name, &[], Some(password))
                .await
                .map_err(|e| explain(e, &email))?;
            println!("{}", user.id);
        }
        UserCommand::List { json } => {
            let users = services.store.list_users().await?;
            if json {
                let items: Vec<_> = users
                    .iter()
                    .map(|u| {
                        json!({
                            "id": u.id, "email": u.email, "fullName": u.full_name, "disabled": u.disabled,
                            "twoFactorEnabled": u.two_factor_enabled(), "roles": u.roles,
                            "createdAt": rfc3339(u.created_at), "emailVerified": u.email_verified,
                            "lastLoginAt": u.last_login_at.map(rfc3339),
                        })
                    })
                    .collect();
                println!("{}", serde_json::to_string_pretty(&items)?);
            } else {
                print_table(&users);
            }
        }
        UserCommand::Disable { email: raw } => {
            let email = email(&raw)?;
            let id = account(auth, &email).await?;
            let n = auth
                .admin
                .disable_user(Operator::Cli, id)
                .await
                .map_err(|e| explain(e, &email))?;
            eprintln!("gatehouse: disabled {email}; ended {n} session(s)");
        }
        UserCommand::Enable { email: raw } => {
            let email = email(&raw)?;
            let id = account(auth, &email).await?;
            auth.admin
                .enable_user(Operator::Cli, id)
                .await
                .map_err(|e| explain(e, &email))?;
            eprintln!("gatehouse: enabled {email}");
        }
        UserCommand::SetPassword {
            email: raw,
            password_stdin,
        } => {
            let email = email(&raw)?;
            let password = password_from_stdin(password_stdin)?;
            let id = account(auth, &email).await?;
            let n = auth
                .admin
                .set_password(Operator::Cli, id, password)
                .await
                .map_err(|e| explain(e, &email))?;
            eprintln!("gatehouse: set the password of {email}; ended {n} session(s)");
        }
        UserCommand::Reset2fa { email: raw } => {
            let email = email(&raw)?;
            let id = account(auth, &email).await?;
            auth.admin
                .reset_two_factor(Operator::Cli, id)
                .await
                .map_err(|e| explain(e, &email))?;
            eprintln!("gatehouse: two-factor authentication is off for {email}");
        }
        UserCommand::EndSessions { email: raw } => {
            let email = email(&raw)?;
            let id = account(auth, &email).await?;
            let n = auth
                .admin
                .end_user_sessions(Operator::Cli, id)
                .await
                .map_err(|e| explain(e, &email))?;
            eprintln!("gatehouse: ended {n} session(s) of {email}");
        }
        UserCommand::SendReset { email: raw } => {
            let email = email(&raw)?;
            let id = account(auth, &email).await?;
            auth.admin
                .send_password_reset(Operator::Cli, id)
                .await
                .map_err(|e| explain(e, &email))?;
            eprintln!("gatehouse: a reset link for {email} is in the outbox");
        }
        UserCommand::Delete { email: raw } => {
            let email = email(&raw)?;
            let id = account(auth, &email).await?;
            let n = auth
                .admin
                .delete_user(Operator::Cli, id)
                .await
                .map_err(|e| explain(e, &email))?;
            eprintln!("gatehouse: deleted {email}; ended {n} session(s)");
        }
        UserCommand::Invite {
            email: raw,
            name,
            role,
        } => {
            let email = email(&raw)?;
            let name =
                FullName::parse(&name).map_err(|reason| anyhow::anyhow!("the name {reason}"))?;
            // Checked before anything is made, so a bad role leaves no half-made invitation.
            let roles = roles(&role)?;
            let user = auth
                .admin
                .add_user(Operator::Cli, &email, &name, &roles, None)
                .await
                .map_err(|e| explain(e, &email))?;
            println!("{}", user.id);
        }
        UserCommand::Roles {
            email: raw,
            add,
            remove,
        } => {
            let email = email(&raw)?;
            let (add, remove) = (roles(&add)?, roles(&remove)?);
            let id = account(auth, &email).await?;
            let roles = auth
                .admin
                .change_roles(Operator::Cli, id, &add, &remove)
                .await
                .map_err(|e| explain(e, &email))?;
            for role in roles {
                println!("{role}");
            }
        }
    }
    Ok(())
}

/// `user list`: one account a line, each column as wide as its widest value.
fn print_table(users: &[crate::model::User]) {
    let header = [
        "ID", "EMAIL", "NAME", "ROLES", "STATE", "2FA", "VERIFIED", "CREATED",
    ];
    let rows: Vec<[String; 8]> = users
        .iter()
        .map(|u| {
            [
                u.id.to_string(),
                u.email.clone(),
                u.full_name.clone(),
                if u.roles.is_empty() {
                    "-".to_owned()
                } else {
                    u.roles.join(",")
                },
                (if u.disabled { "disabled" } else { "active" }).to_owned(),
                (if u.two_factor_enabled() { "on" } else { "off" }).to_owned(),
                (if u.email_verified { "yes" } else { "no" }).to_owned(),
                rfc3339(u.created_at),
            ]
        })
        .collect();
    let mut widths = header.map(|h| h.chars().count());
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: &[&str]| {
        let padded: Vec<String> = cells
            .iter()
            .zip(widths)
            .map(|(cell, width)| format!("{cell}{}", " ".repeat(width - cell.chars().count())))
            .collect();
        println!("{}", padded.join("  ").trim_end());
    };
    line(&header);
    for row in &rows {
        line(&row.each_ref().map(String::as_str));
    }
}

async fn keys(command: KeysCommand, services: &Services) -> anyhow::Result<()> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kid_starting_with_a_hyphen_is_the_kid() {
        let cli = Cli::try_parse_from(["gatehouse", "keys", "revoke", "-5Qx_a"]).unwrap();
        let Command::Keys(KeysCommand::Revoke { kid }) = cli.command else {
            panic!("not keys revoke");
        };
        assert_eq!(kid, "-5Qx_a");
    }
}
