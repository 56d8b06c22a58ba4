//! A contact: the entity, the fields a client sends, and the rules they must pass.

use uuid::Uuid;

use crate::domain::{Email, FullName};
use crate::error::{Result, Validator};
use crate::store::contacts::ContactFields;

const PHONE_MAX: usize = 50;
const COMPANY_MAX: usize = 200;
const NOTES_MAX: usize = 10_000;

#[derive(Debug, Clone)]
pub struct Contact {
    pub id: Uuid,
    pub full_name: String,
    pub email: Option<String>,
    pub phone: Option<String>,
    pub company: Option<String>,
    pub notes: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
    /// Bumped by every change: the base a partial update was merged over.
    pub version: i64,
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
#[derive(Debug, Clone, Default)]
pub struct ContactInput {
    pub full_name: Patch<String>,
    pub email: Patch<String>,
    pub phone: Patch<String>,
    pub company: Patch<String>,
    pub notes: Patch<String>,
}

/// Checked field values of a contact.
pub(super) struct Checked {
    pub full_name: String,
    pub email: Option<String>,
    pub phone: Option<String>,
    pub company: Option<String>,
    pub notes: Option<String>,
}

impl Checked {
    pub(super) fn search_text(&self) -> String {
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

    pub(super) fn fields<'a>(&'a self, search_text: &'a str) -> ContactFields<'a> {
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
pub(super) fn check(input: ContactInput, base: Option<&Contact>) -> Result<Checked> {
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
