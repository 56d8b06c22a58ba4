//! The CRM's contacts: a per-user collection with keyset paging and literal substring search.

use std::sync::Arc;

use serde::Serialize;
use subtle::ConstantTimeEq;
use uuid::Uuid;

use crate::auth::crypto::{Secrets, b64url, b64url_decode};
use crate::domain::{Email, FullName};
use crate::error::{Error, Result, Validator};
use crate::store::contacts::{ContactFields, ContactRow};
use crate::store::{Store, now_ms, rfc3339};

pub const DEFAULT_LIMIT: i64 = 50;
pub const MAX_LIMIT: i64 = 100;
const PHONE_MAX: usize = 50;
const COMPANY_MAX: usize = 200;
const NOTES_MAX: usize = 10_000;
const QUERY_MAX: usize = 200;

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Contact {
    pub id: Uuid,
    #[schema(example = "Grace Hopper")]
    pub full_name: String,
    #[schema(example = "grace@example.com")]
    pub email: Option<String>,
    #[schema(example = "+1 555 0100")]
    pub phone: Option<String>,
    #[schema(example = "Navy")]
    pub company: Option<String>,
    pub notes: Option<String>,
    #[schema(format = DateTime, example = "2026-11-21T09:30:00.417Z")]
    pub created_at: String,
    #[schema(format = DateTime, example = "2026-11-21T09:30:00.417Z")]
    pub updated_at: String,
}

impl From<ContactRow> for Contact {
    fn from(r: ContactRow) -> Self {
        Contact {
            id: r.id,
            full_name: r.full_name,
            email: r.email,
            phone: r.phone,
            company: r.company,
            notes: r.notes,
            created_at: rfc3339(r.created_at),
            updated_at: rfc3339(r.updated_at),
        }
    }
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Page {
    pub items: Vec<Contact>,
    /// Give it as `cursor` for the next page; `null` on the last page.
    pub next_cursor: Option<String>,
}

/// A field of a partial update: left out, cleared with `null`, or set.
#[derive(Debug, Clone, Default)]
pub enum Patch<T> {
    #[default]
    Keep,
    Clear,
    Set(T),
}

/// The fields of a contact as a client sends them, before checking.
#[derive(Debug, Default)]
pub struct ContactInput {
    pub full_name: Patch<String>,
    pub email: Patch<String>,
    pub phone: Patch<String>,
    pub company: Patch<String>,
    pub notes: Patch<String>,
}

/// The raw list parameters, checked by `Contacts::list`.
#[derive(Debug, Default)]
pub struct ListParams {
    pub limit: Option<String>,
    pub cursor: Option<String>,
    pub q: Option<String>,
}

pub struct Contacts {
    store: Store,
    secrets: Arc<Secrets>,
}

/// Checked field values of a contact.
struct Checked {
    full_name: String,
    email: Option<String>,
    phone: Option<String>,
    company: Option<String>,
    notes: Option<String>,
}

impl Checked {
    fn search_text(&self) -> String {
        // U+001F cannot occur in a checked field or in `q`, so no match spans two fields.
        [
            Some(&self.full_name),
            self.email.as_ref(),
            self.company.as_ref(),
        ]
        .iter()
        .map(|f| f.map(|s| s.to_lowercase()).unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\u{1f}")
    }

    fn fields<'a>(&'a self, search_text: &'a str) -> ContactFields<'a> {
        ContactFields {
            full_name: &self.full_name,
            email: self.email.as_deref(),
            phone: self.phone.as_deref(),
            company: self.company.as_deref(),
            notes: self.notes.as_deref(),
            search_text,
        }
    }
}

fn bounded(max: usize, allow_newlines: bool) -> impl Fn(&str) -> Result<String, String> {
    move |value: &str| {
        let value = if allow_newlines { value } else { value.trim() };
        if value.chars().count() > max {
            return Err(format!("must be at most {max} characters"));
        }
        if value
            .chars()
            .any(|c| c.is_control() && !(allow_newlines && matches!(c, '\n' | '\r' | '\t')))
        {
            return Err("must not contain control characters".into());
        }
        Ok(value.to_owned())
    }
}

/// An optional text field: empty or blank is no value; anything else must pass `rule`.
fn optional(
    v: &mut Validator,
    name: &str,
    value: Option<String>,
    rule: impl Fn(&str) -> Result<String, String>,
) -> Option<Option<String>> {
    match value.filter(|s| !s.trim().is_empty()) {
        None => Some(None),
        Some(value) => v.check(name, rule(&value)).map(Some),
    }
}

/// Applies `input` over `base` (a stored contact, or nothing for a new one) and checks the result,
/// naming every bad field.
fn check(input: ContactInput, base: Option<&ContactRow>) -> Result<Checked> {
    let mut v = Validator::new();
    let merge = |patch: Patch<String>, old: Option<&Option<String>>| match patch {
        Patch::Keep => old.cloned().flatten(),
        Patch::Clear => None,
        Patch::Set(value) => Some(value),
    };
    let full_name = match input.full_name {
        Patch::Set(name) => v.check(
            "fullName",
            FullName::parse(&name).map(|n| n.as_str().to_owned()),
        ),
        Patch::Keep if base.is_some() => base.map(|b| b.full_name.clone()),
        _ => v.check("fullName", Err("is required".to_owned())),
    };
    let email_rule = |s: &str| Email::parse(s).map(|e| e.as_str().to_owned());
    let email = optional(
        &mut v,
        "email",
        merge(input.email, base.map(|b| &b.email)),
        email_rule,
    );
    let phone = optional(
        &mut v,
        "phone",
        merge(input.phone, base.map(|b| &b.phone)),
        bounded(PHONE_MAX, false),
    );
    let company = optional(
        &mut v,
        "company",
        merge(input.company, base.map(|b| &b.company)),
        bounded(COMPANY_MAX, false),
    );
    let notes = optional(
        &mut v,
        "notes",
        merge(input.notes, base.map(|b| &b.notes)),
        bounded(NOTES_MAX, true),
    );
    let checked = (|| {
        Some(Checked {
            full_name: full_name?,
            email: email?,
            phone: phone?,
            company: company?,
            notes: notes?,
        })
    })();
    v.finish(checked)
}

impl Contacts {
    pub fn new(store: Store, secrets: Arc<Secrets>) -> Self {
        Contacts { store, secrets }
    }

    pub async fn create(&self, owner: Uuid, input: ContactInput) -> Result<Contact> {
        let checked = check(input, None)?;
        let now = now_ms();
        let row = ContactRow {
            // UUIDv7 from one process are strictly increasing: creation order, even within a ms.
            id: Uuid::now_v7(),
            full_name: checked.full_name.clone(),
            email: checked.email.clone(),
            phone: checked.phone.clone(),
            company: checked.company.clone(),
            notes: checked.notes.clone(),
            created_at: now,
            updated_at: now,
        };
        self.store
            .insert_contact(owner, &row, &checked.search_text())
            .await?;
        Ok(row.into())
    }

    pub async fn get(&self, owner: Uuid, id: Uuid) -> Result<Contact> {
        self.store
            .contact(owner, id)
            .await?
            .map(Contact::from)
            .ok_or(Error::NotFound)
    }

    pub async fn update(&self, owner: Uuid, id: Uuid, input: ContactInput) -> Result<Contact> {
        let current = self
            .store
            .contact(owner, id)
            .await?
            .ok_or(Error::NotFound)?;
        let checked = check(input, Some(&current))?;
        let search_text = checked.search_text();
        let updated = self
            .store
            .update_contact(owner, id, &checked.fields(&search_text), now_ms())
            .await?;
        updated.map(Contact::from).ok_or(Error::NotFound)
    }

    pub async fn delete(&self, owner: Uuid, id: Uuid) -> Result<()> {
        if self.store.delete_contact(owner, id).await? {
            Ok(())
        } else {
            Err(Error::NotFound)
        }
    }

    pub async fn list(&self, owner: Uuid, params: ListParams) -> Result<Page> {
        let mut v = Validator::new();
        let limit = match params.limit.as_deref() {
            None => Some(DEFAULT_LIMIT),
            Some(raw) => v.check(
                "limit",
                raw.trim()
                    .parse::<i64>()
                    .ok()
                    .filter(|n| (1..=MAX_LIMIT).contains(n))
                    .ok_or_else(|| format!("must be a whole number from 1 to {MAX_LIMIT}")),
            ),
        };
        let before = match params.cursor.as_deref().filter(|c| !c.is_empty()) {
            None => Some(None),
            Some(cursor) => v.check("cursor", self.open_cursor(owner, cursor).map(Some)),
        };
        let needle = match params.q.as_deref().filter(|q| !q.is_empty()) {
            None => Some(None),
            Some(q) if q.chars().count() > QUERY_MAX => {
                v.check("q", Err(format!("must be at most {QUERY_MAX} characters")))
            }
            Some(q) if q.chars().any(char::is_control) => {
                v.check("q", Err("must not contain control characters".into()))
            }
            Some(q) => Some(Some(q.to_lowercase())),
        };
        let (limit, (before, needle)) = v.finish(limit.zip(before.zip(needle)))?;

        // One row more than asked tells whether there is a next page.
        let mut rows = self
            .store
            .list_contacts(owner, before, needle.as_deref(), limit + 1)
            .await?;
        let more = rows.len() as i64 > limit;
        rows.truncate(limit as usize);
        let next_cursor = if more {
            rows.last().map(|last| self.cursor(owner, last.id))
        } else {
            None
        };
        Ok(Page {
            items: rows.into_iter().map(Contact::from).collect(),
            next_cursor,
        })
    }

    /// The id of the last contact of a page, with a keyed tag binding it to its owner, so a cursor
    /// the service did not issue (or issued to someone else) is refused.
    fn cursor(&self, owner: Uuid, last: Uuid) -> String {
        let tag = self
            .secrets
            .cursor_tag(&[owner.as_bytes(), last.as_bytes()]);
        b64url(&[&last.as_bytes()[..], &tag[..16]].concat())
    }

    fn open_cursor(&self, owner: Uuid, cursor: &str) -> Result<Uuid, String> {
        let invalid = || "is not a cursor this service issued".to_owned();
        let bytes = b64url_decode(cursor)
            .filter(|b| b.len() == 32)
            .ok_or_else(invalid)?;
        let id = Uuid::from_slice(&bytes[..16]).map_err(|_| invalid())?;
        let tag = self.secrets.cursor_tag(&[owner.as_bytes(), id.as_bytes()]);
        if bool::from(tag[..16].ct_eq(&bytes[16..])) {
            Ok(id)
        } else {
            Err(invalid())
        }
    }
}
