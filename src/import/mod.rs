//! Bringing people from another system (`gatehouse import`, docs/api.md §15). A source's export is
//! read as a stream of records (`sources`) on a thread of its own; each record is checked here
//! (address, name, hash, roles, TOTP secret) and the good ones are written a batch at a time, each
//! batch one transaction, so nothing is ever half-imported. Password hashes are kept as the other
//! system made them (`auth::password::recognise` says which can be), verified in their own
//! algorithm at the next sign-in and replaced there by Argon2id. An address that already has an
//! account is left as it is: a second run of the same file imports nothing twice.

pub mod sources;

use std::collections::{BTreeMap, HashMap};
use std::hash::BuildHasher as _;
use std::sync::Arc;

use uuid::Uuid;

use crate::auth::audit::{AuditEvent, Origin};
use crate::auth::password::{recognise, seal_signer_key};
use crate::clock::Clock;
use crate::crypto::Secrets;
use crate::domain::{Email, FullName, Role};
use crate::error::Result;
use crate::store::Store;
use crate::store::imports::{ImportEvent, ImportedUser};

pub use sources::{FirebaseHash, Source};

/// People written per transaction: large enough that 1 000 000 take minutes, small enough that
/// a batch holds SQLite's write turn for milliseconds, not seconds, while the service runs.
const BATCH: usize = 500;

/// The role an import never gives: administration of Gatehouse is granted by its operator
/// (`gatehouse user roles`), not carried over from another system's group of the same name.
const WITHHELD_ROLE: &str = "admin";

/// A person as a source's export describes them.
#[derive(Debug, Default)]
pub struct Person {
    pub email: String,
    pub name: Option<String>,
    /// As the source keeps it; `None`: the person has no password there.
    pub password_hash: Option<String>,
    pub email_verified: bool,
    pub disabled: bool,
    pub roles: Vec<String>,
    /// The raw TOTP secret (the bytes an authenticator's base32 spells).
    pub totp_secret: Option<Vec<u8>>,
}

/// What a source made of one record.
#[derive(Debug)]
pub enum Read {
    Person(Person),
    /// A record the source itself marks as gone (e.g. deleted): not imported, not an error.
    Skip(String),
    /// A record that cannot be read as a person of this format.
    Bad(String),
}

#[derive(Debug)]
pub struct Record {
    pub number: u64,
    /// Where it is in the file (`line 3`, `users[2]`).
    pub place: String,
    pub read: Read,
}

/// What became of a record.
#[derive(Debug)]
pub enum Outcome {
    /// Imported (or, in a dry run, would be), with the algorithm of its kept hash; `notes` say
    /// what of the record was left out.
    Imported {
        email: String,
        algorithm: &'static str,
        notes: Vec<String>,
    },
    AlreadyThere {
        email: String,
    },
    Skipped(String),
    Refused(String),
}

/// One record's outcome, as the command prints it.
#[derive(Debug)]
pub struct Report {
    pub number: u64,
    pub place: String,
    pub outcome: Outcome,
}

/// The counts at the end.
#[derive(Debug, Default)]
pub struct Summary {
    pub records: u64,
    pub imported: u64,
    pub already_there: u64,
    pub skipped: u64,
    pub refused: u64,
    pub without_password: u64,
    pub with_two_factor: u64,
    pub algorithms: BTreeMap<&'static str, u64>,
}

/// A record that passed the checks, waiting for its batch.
struct Checked {
    id: Uuid,
    email: Email,
    normalized: String,
    name: FullName,
    hash: String,
    algorithm: &'static str,
    email_verified: bool,
    disabled: bool,
    roles: String,
    totp_sealed: Option<Vec<u8>>,
    notes: Vec<String>,
}

pub struct Importer {
    store: Store,
    secrets: Arc<Secrets>,
    clock: Clock,
    source: &'static str,
    dry_run: bool,
    /// Every address counts as verified (`--addresses-verified`).
    vouched: bool,
    /// Addresses seen in this file (a keyed hash of each, not the address: 1 000 000 of them fit in
    /// 30 MB) and the record that had it first.
    seen: HashMap<u64, u64>,
    keyed: std::collections::hash_map::RandomState,
    pending: Vec<(u64, String, std::result::Result<Checked, Outcome>)>,
    /// The people among `pending` (the rest are refusals and skips, told in order with them).
    pending_people: usize,
    pub summary: Summary,
}

impl Importer {
    pub fn new(
        store: Store,
        secrets: Arc<Secrets>,
        clock: Clock,
        source: &Source,
        dry_run: bool,
    ) -> Self {
        Importer {
            store,
            secrets,
            clock,
            source: source.name(),
            dry_run,
            vouched: false,
            seen: HashMap::new(),
            keyed: std::collections::hash_map::RandomState::new(),
            pending: Vec::with_capacity(BATCH),
            pending_people: 0,
            summary: Summary::default(),
        }
    }

    pub fn vouching_for_addresses(mut self, vouched: bool) -> Self {
        self.vouched = vouched;
        self
    }

    /// Takes one record; when a batch is full, writes it and answers the reports of its records
    /// (in the file's order). `refused` in the answer: the caller may stop there.
    pub async fn take(&mut self, record: Record) -> Result<Vec<Report>> {
        self.summary.records += 1;
        let checked = match record.read {
            Read::Person(person) => self.check(record.number, person),
            Read::Skip(reason) => Err(Outcome::Skipped(reason)),
            Read::Bad(reason) => Err(Outcome::Refused(reason)),
        };
        self.pending_people += usize::from(checked.is_ok());
        self.pending.push((record.number, record.place, checked));
        if self.pending_people >= BATCH {
            return self.flush().await;
        }
        // Refusals are told at once (only people wait for their batch), unless people before them
        // in the file still wait: the reports keep the file's order.
        if self.pending_people == 0 {
            return self.flush().await;
        }
        Ok(Vec::new())
    }

    /// Whether a refused record waits among the reports (`--stop-on-error` stops there).
    pub fn holds_refusal(&self) -> bool {
        self.pending
            .iter()
            .any(|(_, _, c)| matches!(c, Err(Outcome::Refused(_))))
    }

    /// Writes what waits (the end of the file, or a stop).
    pub async fn finish(&mut self) -> Result<Vec<Report>> {
        self.flush().await
    }

    async fn flush(&mut self) -> Result<Vec<Report>> {
        let pending = std::mem::take(&mut self.pending);
        self.pending_people = 0;
        let people: Vec<&Checked> = pending
            .iter()
            .filter_map(|(_, _, c)| c.as_ref().ok())
            .collect();
        let made = if people.is_empty() {
            Vec::new()
        } else if self.dry_run {
            let addresses: Vec<&str> = people.iter().map(|c| c.normalized.as_str()).collect();
            let taken = self.store.taken_addresses(&addresses).await?;
            taken.into_iter().map(|t| !t).collect()
        } else {
            self.write(&people).await?
        };
        let mut made = made.into_iter();
        let mut reports = Vec::with_capacity(pending.len());
        for (number, place, checked) in pending {
            let outcome = match checked {
                Ok(checked) => {
                    if made.next().unwrap_or(false) {
                        self.count_imported(&checked);
                        Outcome::Imported {
                            email: checked.email.as_str().to_owned(),
                            algorithm: checked.algorithm,
                            notes: checked.notes,
                        }
                    } else {
                        self.summary.already_there += 1;
                        Outcome::AlreadyThere {
                            email: checked.email.as_str().to_owned(),
                        }
                    }
                }
                Err(outcome) => {
                    match outcome {
                        Outcome::Skipped(_) => self.summary.skipped += 1,
                        _ => self.summary.refused += 1,
                    }
                    outcome
                }
            };
            reports.push(Report {
                number,
                place,
                outcome,
            });
        }
        Ok(reports)
    }

    async fn write(&self, people: &[&Checked]) -> Result<Vec<bool>> {
        let batch: Vec<ImportedUser<'_>> = people
            .iter()
            .map(|c| ImportedUser {
                id: c.id,
                email: c.email.as_str(),
                email_normalized: &c.normalized,
                full_name: c.name.as_str(),
                password_hash: &c.hash,
                email_verified: c.email_verified,
                disabled: c.disabled,
                roles: &c.roles,
                totp_secret: c.totp_sealed.as_deref(),
            })
            .collect();
        let created = AuditEvent::UserCreated(Origin::Import(self.source));
        let detail = created.detail();
        let event = ImportEvent {
            name: created.name(),
            detail: detail.as_deref(),
        };
        self.store
            .import_users(&batch, &event, self.clock.now_ms())
            .await
    }

    fn count_imported(&mut self, checked: &Checked) {
        let summary = &mut self.summary;
        summary.imported += 1;
        if checked.hash.is_empty() {
            summary.without_password += 1;
        } else {
            *summary.algorithms.entry(checked.algorithm).or_default() += 1;
        }
        if checked.totp_sealed.is_some() {
            summary.with_two_factor += 1;
        }
    }

    /// The checks a person passes before a batch takes them; a refusal says why, in words an
    /// operator can act on.
    fn check(&mut self, number: u64, person: Person) -> std::result::Result<Checked, Outcome> {
        let refuse = |why: String| Err(Outcome::Refused(why));
        let email = match Email::parse(&person.email) {
            Ok(email) => email,
            Err(why) => return refuse(format!("the address {:?} {why}", person.email)),
        };
        let normalized = email.normalized();
        let key = self.keyed.hash_one(&normalized);
        if let Some(first) = self.seen.get(&key) {
            return refuse(format!(
                "{email}: the address is record {first}'s too (addresses match whatever their case)"
            ));
        }
        self.seen.insert(key, number);
        let name = person
            .name
            .as_deref()
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| email.as_str().split('@').next().unwrap_or_default());
        let name = match FullName::parse(name) {
            Ok(name) => name,
            Err(why) => return refuse(format!("{email}: the name {why}")),
        };
        let (hash, algorithm) = match person.password_hash.as_deref().map(str::trim) {
            None | Some("") => (String::new(), "none"),
            Some(hash) => match recognise(hash) {
                // A project's secret in a hash (Firebase's signer key) is kept sealed.
                Some(algorithm) => (seal_signer_key(hash, &self.secrets), algorithm),
                None => {
                    return refuse(format!(
                        "{email}: the password hash is of a form Gatehouse cannot verify \
                         (docs/api.md §15 lists those it can): {}",
                        hash_form(hash)
                    ));
                }
            },
        };
        let mut notes = Vec::new();
        let mut roles = Vec::new();
        for role in &person.roles {
            if role == WITHHELD_ROLE {
                notes.push(format!(
                    "the role {WITHHELD_ROLE} is not imported (grant it with `gatehouse user roles`)"
                ));
                continue;
            }
            match Role::parse(role) {
                Ok(role) => roles.push(role.as_str().to_owned()),
                Err(why) => return refuse(format!("{email}: {why}")),
            }
        }
        roles.sort();
        roles.dedup();
        let id = Uuid::now_v7();
        let totp_sealed = match person.totp_secret {
            None => None,
            Some(secret) if secret.len() < 16 => {
                return refuse(format!(
                    "{email}: the TOTP secret is {} bits; authenticator codes need at least 128",
                    secret.len() * 8
                ));
            }
            Some(secret) => Some(self.secrets.seal(id.as_bytes(), &secret)),
        };
        Ok(Checked {
            id,
            email,
            normalized,
            name,
            hash,
            algorithm,
            email_verified: person.email_verified || self.vouched,
            disabled: person.disabled,
            roles: roles.join(" "),
            totp_sealed,
            notes,
        })
    }
}

/// Enough of a hash to name its form, never the hash itself, nor the start of a password a source
/// kept in plain text where the hash belongs: a form is named only when it is spelled as schemes
/// are (`$name$`, `{NAME}`, or one of Django's `name$`).
fn hash_form(hash: &str) -> String {
    const DJANGO: [&str; 6] = [
        "md5",
        "sha1",
        "unsalted_md5",
        "unsalted_sha1",
        "crypt",
        "sha256",
    ];
    let scheme = |name: &str, upper: bool| {
        let case = |b: u8| match upper {
            true => b.is_ascii_uppercase(),
            false => b.is_ascii_lowercase(),
        };
        (1..=24).contains(&name.len())
            && name
                .bytes()
                .all(|b| case(b) || b.is_ascii_digit() || b == b'-' || b == b'_')
    };
    if let Some(name) = hash
        .strip_prefix('$')
        .and_then(|rest| rest.split('$').next())
    {
        if scheme(name, false) {
            return format!("${name}$…");
        }
    } else if let Some((name, _)) = hash.split_once('$') {
        if DJANGO.contains(&name) {
            return format!("{name}$…");
        }
    } else if let Some(name) = hash
        .strip_prefix('{')
        .and_then(|rest| rest.split('}').next())
    {
        if scheme(name, true) && hash.len() > name.len() + 1 {
            return format!("{{{name}}}…");
        }
    }
    "an unmarked string".to_owned()
}

#[cfg(test)]
mod tests {
    use super::hash_form;

    #[test]
    fn a_refused_hash_is_named_by_its_form_alone() {
        assert_eq!(hash_form("{SSHA}c2VjcmV0"), "{SSHA}…");
        assert_eq!(hash_form("$md5$rounds=904$salt$hash"), "$md5$…");
        assert_eq!(hash_form("sha1$salt$deadbeef"), "sha1$…");
        // A password kept in plain text where the hash belongs is not echoed.
        assert_eq!(hash_form("hunter2hunter2"), "an unmarked string");
        assert_eq!(hash_form("summer$2024"), "an unmarked string");
        assert_eq!(hash_form("$Summer2024"), "an unmarked string");
        assert_eq!(hash_form("{not a scheme}x"), "an unmarked string");
    }
}
