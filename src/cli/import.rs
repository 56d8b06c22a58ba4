//! `gatehouse import --from SOURCE FILE` (docs/api.md §15): the file read on a thread of its own
//! into the import (`crate::import`), a line for each record that was refused, skipped or changed
//! (every record's line in a dry run), a progress line on a terminal, and the counts at the end.

use std::io::{BufReader, IsTerminal as _, Write as _};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use clap::{Args, ValueEnum};

use crate::clock::Clock;
use crate::config::Settings;
use crate::crypto::Secrets;
use crate::import::{FirebaseHash, Importer, Outcome, Report, Source, Summary};
use crate::services::{Opening, master_key, open_store};

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum SourceName {
    Auth0,
    Keycloak,
    Firebase,
    Supabase,
    Authelia,
    Django,
    Csv,
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The system FILE comes from (docs/guide/moving-in.md says what each exports)
    #[arg(long = "from", value_name = "SOURCE")]
    from: SourceName,
    /// The export file
    #[arg(value_name = "FILE")]
    file: PathBuf,
    /// Print what each record would become (imported, already there, refused and why) and change
    /// nothing
    #[arg(long)]
    dry_run: bool,
    /// Mark every imported address verified: the source keeps no proof of them (Authelia, Django,
    /// a CSV without `email_verified`) and you vouch for them
    #[arg(long)]
    addresses_verified: bool,
    /// Stop at the first refused record (what was imported before it stays)
    #[arg(long)]
    stop_on_error: bool,
    /// Firebase: the project's base64_signer_key (console: Authentication, Users, ⋮, Password
    /// hash parameters)
    #[arg(
        long,
        value_name = "BASE64",
        help_heading = "Firebase's hash parameters"
    )]
    hash_key: Option<String>,
    /// Firebase: base64_salt_separator
    #[arg(
        long,
        value_name = "BASE64",
        help_heading = "Firebase's hash parameters"
    )]
    salt_separator: Option<String>,
    /// Firebase: rounds
    #[arg(long, value_name = "N", help_heading = "Firebase's hash parameters")]
    rounds: Option<u32>,
    /// Firebase: mem_cost
    #[arg(long, value_name = "N", help_heading = "Firebase's hash parameters")]
    mem_cost: Option<u8>,
}

impl ImportArgs {
    fn source(&self) -> anyhow::Result<Source> {
        Ok(match self.from {
            SourceName::Auth0 => Source::Auth0,
            SourceName::Keycloak => Source::Keycloak,
            SourceName::Supabase => Source::Supabase,
            SourceName::Authelia => Source::Authelia,
            SourceName::Django => Source::Django,
            SourceName::Csv => Source::Csv,
            SourceName::Firebase => {
                let (Some(key), Some(separator), Some(rounds), Some(mem_cost)) = (
                    &self.hash_key,
                    &self.salt_separator,
                    self.rounds,
                    self.mem_cost,
                ) else {
                    anyhow::bail!(
                        "--from firebase needs the project's hash parameters: --hash-key, \
                         --salt-separator, --rounds and --mem-cost"
                    );
                };
                Source::Firebase(FirebaseHash {
                    signer_key: STANDARD.decode(key).context("--hash-key is not base64")?,
                    salt_separator: STANDARD
                        .decode(separator)
                        .context("--salt-separator is not base64")?,
                    rounds,
                    mem_cost,
                })
            }
        })
    }
}

pub async fn import(args: ImportArgs, settings: &Settings) -> anyhow::Result<()> {
    let source = args.source()?;
    let file = std::fs::File::open(&args.file)
        .with_context(|| format!("cannot open {}", args.file.display()))?;
    let store = open_store(settings, Opening::Existing).await?;
    let secrets = Arc::new(Secrets::new(
        &master_key(settings, &store, Opening::Existing).await?,
    ));
    let mut importer = Importer::new(store, secrets, Clock::system(), &source, args.dry_run)
        .vouching_for_addresses(args.addresses_verified);

    // The reader runs ahead by at most this many records: memory stays flat whatever the file.
    let (records, arriving) = flume::bounded(2048);
    let reader = std::thread::Builder::new()
        .name("gatehouse-import".into())
        .spawn(move || {
            let file = BufReader::with_capacity(1 << 16, file);
            source.read(file, &mut |record| records.send(record).is_ok())
        })
        .context("cannot start the reading thread")?;

    let mut progress = Progress::new();
    let mut stopped = false;
    while let Ok(record) = arriving.recv_async().await {
        let mut reports = importer.take(record).await?;
        // A refusal is either told at once (nobody before it waits) or waits with its batch.
        let refused = |reports: &[Report]| {
            reports
                .iter()
                .any(|r| matches!(r.outcome, Outcome::Refused(_)))
        };
        if args.stop_on_error && (refused(&reports) || importer.holds_refusal()) {
            reports.extend(importer.finish().await?);
            stopped = true;
        }
        print(&reports, args.dry_run, &mut progress);
        progress.show(&importer.summary);
        if stopped {
            break;
        }
    }
    drop(arriving);
    let reports = importer.finish().await?;
    print(&reports, args.dry_run, &mut progress);
    progress.clear();
    let file_error = tokio::task::spawn_blocking(move || reader.join())
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_else(|| Err("the reading thread failed".into()));

    println!("{}", summary_line(&importer.summary, args.dry_run, stopped));
    if let (Err(error), false) = (&file_error, stopped) {
        anyhow::bail!("{}: {error}", args.file.display());
    }
    match importer.summary.refused {
        0 => Ok(()),
        n => anyhow::bail!("{n} record(s) refused (the lines above say why)"),
    }
}

fn print(reports: &[Report], dry_run: bool, progress: &mut Progress) {
    let mut out = std::io::stdout().lock();
    for report in reports {
        let line = match &report.outcome {
            Outcome::Imported {
                email,
                algorithm,
                notes,
            } if dry_run || !notes.is_empty() => {
                let verb = if dry_run { "would import" } else { "imported" };
                let notes: String = notes.iter().map(|n| format!("; {n}")).collect();
                format!("{verb} {email} ({algorithm}){notes}")
            }
            Outcome::AlreadyThere { email } if dry_run => {
                format!("already there: {email} (left as it is)")
            }
            Outcome::Skipped(why) => format!("skipped: {why}"),
            Outcome::Refused(why) => format!("refused: {why}"),
            _ => continue,
        };
        progress.clear();
        let _ = writeln!(out, "record {} ({}): {line}", report.number, report.place);
    }
}

fn summary_line(summary: &Summary, dry_run: bool, stopped: bool) -> String {
    let mut kept: Vec<String> = summary
        .algorithms
        .iter()
        .map(|(algorithm, n)| format!("{algorithm} {n}"))
        .collect();
    if summary.without_password > 0 {
        kept.push(format!("{} without a password", summary.without_password));
    }
    if summary.with_two_factor > 0 {
        kept.push(format!("{} with two-factor", summary.with_two_factor));
    }
    let kept = match kept.is_empty() {
        true => String::new(),
        false => format!(" ({})", kept.join(", ")),
    };
    let verb = if dry_run { "would import" } else { "imported" };
    let mut line = format!(
        "{verb} {} of {} records{kept}; {} already there, {} skipped, {} refused",
        summary.imported, summary.records, summary.already_there, summary.skipped, summary.refused
    );
    if stopped {
        line.push_str("; stopped at the first refusal (--stop-on-error)");
    }
    if dry_run {
        line.push_str("; nothing was changed");
    }
    line
}

/// The counts so far on one line of a terminal's stderr, redrawn at most five times a second;
/// nothing when stderr is not a terminal (a log, a pipe). Hand-written: one line needs no crate.
struct Progress {
    terminal: bool,
    drawn: bool,
    last: Instant,
}

impl Progress {
    fn new() -> Self {
        Progress {
            terminal: std::io::stderr().is_terminal(),
            drawn: false,
            last: Instant::now(),
        }
    }

    fn show(&mut self, summary: &Summary) {
        if !self.terminal || self.last.elapsed() < Duration::from_millis(200) {
            return;
        }
        self.last = Instant::now();
        self.drawn = true;
        eprint!(
            "\r\x1b[2K{} records read: {} imported, {} already there, {} refused",
            summary.records, summary.imported, summary.already_there, summary.refused
        );
    }

    fn clear(&mut self) {
        if self.drawn {
            eprint!("\r\x1b[2K");
            self.drawn = false;
        }
    }
}
