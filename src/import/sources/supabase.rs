//! Supabase (`--from supabase`): its `auth.users` table as CSV with a header line (`\copy
//! auth.users to 'users.csv' csv header`, or the dashboard's export). `encrypted_password` is
//! bcrypt; `email_confirmed_at` set means verified; the name is `full_name` or `name` of
//! `raw_user_meta_data`; rows with `deleted_at` are skipped, `banned_until` in the future disables.

use std::io::BufRead;

use super::{Row, csv_rows, flag, record};
use crate::import::{Person, Read, Record};

pub(super) fn read(file: impl BufRead, each: &mut dyn FnMut(Record) -> bool) -> Result<(), String> {
    let now = time::OffsetDateTime::now_utc();
    csv_rows(
        file,
        &["email", "encrypted_password"],
        &mut |number, place, row| {
            let read = match row.and_then(|row| person(&row, now)) {
                Ok(read) => read,
                Err(why) => Read::Bad(why),
            };
            each(record(number, place, read))
        },
    )
}

fn person(row: &Row, now: time::OffsetDateTime) -> Result<Read, String> {
    if row.get("deleted_at").is_some() {
        return Ok(Read::Skip("deleted in Supabase (deleted_at is set)".into()));
    }
    if flag(row.get("is_anonymous"), false).unwrap_or(false) {
        return Ok(Read::Skip("an anonymous user".into()));
    }
    let Some(email) = row.get("email") else {
        return Err("no e-mail address (a phone-only user)".into());
    };
    let meta: serde_json::Value = match row.get("raw_user_meta_data") {
        Some(text) => serde_json::from_str(text)
            .map_err(|e| format!("raw_user_meta_data is not JSON: {e}"))?,
        None => serde_json::Value::Null,
    };
    let name = ["full_name", "name"]
        .iter()
        .find_map(|key| meta.get(key).and_then(|v| v.as_str()))
        .map(str::to_owned);
    let banned = row
        .get("banned_until")
        .map(|until| banned_until(until).map(|t| t > now))
        .transpose()?
        .unwrap_or(false);
    Ok(Read::Person(Person {
        email: email.to_owned(),
        name,
        password_hash: row.get("encrypted_password").map(str::to_owned),
        email_verified: row.get("email_confirmed_at").is_some(),
        disabled: banned,
        roles: Vec::new(),
        totp_secret: None,
    }))
}

/// PostgreSQL's text form of a timestamptz (`2026-01-02 03:04:05.678+00`) or RFC 3339.
fn banned_until(text: &str) -> Result<time::OffsetDateTime, String> {
    let rfc3339 = text.replacen(' ', "T", 1);
    let rfc3339 = match rfc3339.rsplit_once(['+', '-']) {
        Some((_, zone)) if zone.len() == 2 => format!("{rfc3339}:00"),
        _ => rfc3339,
    };
    time::OffsetDateTime::parse(&rfc3339, &time::format_description::well_known::Rfc3339)
        .map_err(|_| format!("banned_until {text:?} is not a time"))
}
