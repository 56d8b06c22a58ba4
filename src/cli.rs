//! The `gatehouse` command: the server and the administration commands of docs/api.md §4.

use std::process::ExitCode;

use clap::{Args as _, CommandFactory as _, FromArgMatches as _, Parser, Subcommand};

use crate::app::{Application, shutdown_signal};
use crate::clock::Clock;
use crate::config::{COMMON_SETTINGS, Settings, SettingsArgs};
use crate::services::{Opening, Services, master_key, open_store};
use crate::telemetry;

mod audit;
mod backup;
mod check;
mod clients;
mod import;
mod keys;
mod move_to_postgres;
mod resources;
mod user;

use audit::audit;
use clients::{ClientsCommand, clients};
use keys::{KeysCommand, keys};
use resources::{ResourcesCommand, resources};
use user::{UserCommand, user};

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
    Migrate {
        /// Print the migrations that would run (version and name, one a line), and change
        /// nothing: no database is made, none is migrated
        #[arg(long)]
        dry_run: bool,
    },
    /// Read every setting, file, the database and the master key as `serve` would, print what was
    /// found (one line each), and change nothing; exits 1 with serve's one-line error, 2 for a bad
    /// setting
    Check,
    /// Copy the SQLite database, while the service runs, into one consistent file at PATH, and
    /// its master key file to PATH.master.key (both mode 0600; neither may exist); both are
    /// checked. To restore: stop the service, put PATH in place of the database file and
    /// PATH.master.key beside it as gatehouse.master.key, start. Keep the two apart when the backup
    /// leaves the machine: the key opens the database's secrets. With PostgreSQL, says what to run
    /// with pg_dump and fails (it made no backup).
    Backup {
        /// The backup file to make (it must not exist)
        #[arg(value_name = "PATH")]
        path: std::path::PathBuf,
    },
    /// Copy the SQLite database (a consistent snapshot: the service may run, but what it records
    /// after the snapshot is not moved) into a new, empty PostgreSQL database: every table, the
    /// counts compared, in one transaction. The instances on PostgreSQL need the same master key
    MoveToPostgres {
        /// The PostgreSQL database to move into (postgres://USER:PASSWORD@HOST/NAME); it may be
        /// migrated already, but must hold no account
        #[arg(value_name = "URL")]
        url: String,
    },
    /// Every setting of the service: its flag, its environment variable and its default (keys of
    /// the --config file are the flags' names with `_` for `-`)
    Settings,
    /// Manage accounts
    #[command(subcommand)]
    User(UserCommand),
    /// Bring people from another system with their password hashes (kept, and replaced by
    /// Argon2id at each one's first sign-in); an address that has an account is left as it is, so
    /// a second run imports nothing twice. Exits 1 when a record was refused
    Import(import::ImportArgs),
    /// Manage signing keys
    #[command(subcommand)]
    Keys(KeysCommand),
    /// Manage the clients of the OpenID provider, and the resource servers that may introspect
    /// tokens (RFC 7662)
    #[command(subcommand)]
    Clients(ClientsCommand),
    /// Manage the business APIs tokens are issued for, and their scopes
    #[command(subcommand)]
    Resources(ResourcesCommand),
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

/// The Debian package's settings file, when this is the package's binary and no `--config` or
/// `GATEHOUSE_CONFIG` names another: an operator's `sudo gatehouse user add …` then reads the
/// settings the service reads (the unit sets `GATEHOUSE_CONFIG`; a shell does not), rather than
/// making a database in the current folder.
fn packaged_config() -> Option<std::path::PathBuf> {
    const BINARY: &str = "/usr/bin/gatehouse";
    const CONFIG: &str = "/etc/gatehouse/gatehouse.toml";
    let here = std::env::current_exe().ok()?;
    (here == std::path::Path::new(BINARY) && std::path::Path::new(CONFIG).exists())
        .then(|| CONFIG.into())
}

/// Parses the command line, runs the command, and turns any failure into one line on stderr.
pub fn run() -> ExitCode {
    let (command, mut args) = parse();
    if args.config.is_none() {
        args.config = packaged_config();
    }
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
    match runtime.block_on(execute(command, settings, args.config)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            // `{:#}` prints the cause chain on one line.
            eprintln!("gatehouse: {error:#}");
            ExitCode::FAILURE
        }
    }
}

async fn execute(
    command: Command,
    settings: Settings,
    config: Option<std::path::PathBuf>,
) -> anyhow::Result<()> {
    match command {
        Command::Backup { path } => backup::backup(&settings, &path).await,
        Command::Check => {
            let config = config.map(|c| crate::services::absolute(&c).display().to_string());
            check::check(&settings, config.as_deref()).await
        }
        Command::Serve => {
            let signal = shutdown_signal();
            let app = Application::build(&settings).await?;
            app.run_until(signal).await
        }
        Command::Migrate { dry_run: true } => migrate_dry_run(&settings).await,
        Command::Migrate { dry_run: false } => {
            // What will run, counted first, so the answer says what was done.
            let made = settings.sqlite_path().is_some_and(|p| !p.exists());
            let pending = match made {
                true => crate::store::MIGRATIONS.len(),
                false => crate::services::connect_store(&settings)
                    .await?
                    .pending_migrations()
                    .await?
                    .len(),
            };
            let store = open_store(&settings, Opening::Create).await?;
            // A new SQLite database gets its key file now, so that the commands after it (which
            // never make one) work before the first start.
            if settings.sqlite_path().is_some() {
                master_key(&settings, &store, Opening::Create).await?;
            }
            match (made, pending) {
                (_, 0) => eprintln!("gatehouse: the database is up to date"),
                (true, n) => eprintln!(
                    "gatehouse: made the database and applied its {n} migrations; it is up to date"
                ),
                (false, n) => {
                    eprintln!("gatehouse: applied {n} migration(s); the database is up to date")
                }
            }
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
                 {} audit events, {} mailed tokens, {} invitations, {} federation sign-ins in \
                 {:.1} s (longest batch {:.1} ms)",
                purged.sessions,
                purged.refresh_tokens,
                purged.challenges,
                purged.throttles,
                purged.audit_events,
                purged.mail_tokens,
                purged.invitations,
                purged.federation,
                started.elapsed().as_secs_f64(),
                purged.longest_batch.as_secs_f64() * 1000.0
            );
            Ok(())
        }
        Command::User(command) => user(command, &services(&settings).await?).await,
        Command::Import(args) => import::import(args, &settings).await,
        Command::MoveToPostgres { url } => {
            move_to_postgres::move_to_postgres(&settings, &url).await
        }
        Command::Keys(command) => keys(command, &services(&settings).await?).await,
        Command::Clients(command) => clients(command, &services(&settings).await?).await,
        Command::Resources(command) => resources(command, &services(&settings).await?).await,
    }
}

/// `gatehouse migrate --dry-run`: the migrations the database lacks, one a line on stdout
/// (`0024 trust between parties`), and how many on stderr. Reads only: a SQLite database that
/// does not exist is not made (every migration would run), and none is applied.
async fn migrate_dry_run(settings: &Settings) -> anyhow::Result<()> {
    let missing_file = settings.sqlite_path().is_some_and(|p| !p.exists());
    let pending = if missing_file {
        crate::store::MIGRATIONS.clone()
    } else {
        let store = crate::services::connect_store(settings).await?;
        store.pending_migrations().await?
    };
    for version in &pending {
        let name = crate::store::migration_description(*version).unwrap_or_default();
        println!("{version:04} {name}");
    }
    match pending.len() {
        0 => eprintln!("gatehouse: the database is up to date; nothing would run"),
        n if missing_file => eprintln!(
            "gatehouse: there is no database yet: `gatehouse migrate` would make it and run {n} \
             migration(s)"
        ),
        n => eprintln!("gatehouse: {n} migration(s) would run; nothing was changed"),
    }
    Ok(())
}

async fn services(settings: &Settings) -> anyhow::Result<Services> {
    Services::open(settings, Clock::system(), Opening::Existing).await
}

/// A registry's refusal in one line, naming the first bad field (fields are sorted by name) by
/// the flag that gives it (`flag` maps the API's field names to the command's flags).
fn refusal(error: crate::error::Error, flag: fn(&str) -> &str, what: &str) -> anyhow::Error {
    match error {
        crate::error::Error::Validation(fields) => match fields.into_iter().next() {
            Some((field, reason)) => anyhow::anyhow!("{}: {reason}", flag(&field)),
            None => anyhow::anyhow!("the {what} is not valid"),
        },
        other => other.into(),
    }
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
