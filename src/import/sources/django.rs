//! Django (`--from django`): the `auth_user` table, either as `manage.py dumpdata auth.user` writes
//! it (a JSON array, read one element at a time) or as CSV with a header line (`\copy auth_user to
//! 'users.csv' csv header`). Django's hashes are kept: `pbkdf2_sha256$`, `pbkdf2_sha1$`,
//! `bcrypt_sha256$` and `scrypt$` as they are; `argon2$…` and `bcrypt$…` in the PHC and
//! modular-crypt forms they wrap. An unusable password (`!…`) is an account without one.

use std::io::BufRead;

use serde::Deserialize;

use super::{Row, csv_rows, flag, joined_name, json_array, record, typed};
use crate::import::{Person, Read, Record};

#[derive(Deserialize)]
struct Dumped {
    model: String,
    fields: Fields,
}

#[derive(Deserialize)]
struct Fields {
    #[serde(default)]
    password: String,
    username: Option<String>,
    first_name: Option<String>,
    last_name: Option<String>,
    email: Option<String>,
    #[serde(default = "yes")]
    is_active: bool,
}

fn yes() -> bool {
    true
}

pub(super) fn read(
    mut file: impl BufRead,
    each: &mut dyn FnMut(Record) -> bool,
) -> Result<(), String> {
    let starts_json = loop {
        let buffer = file
            .fill_buf()
            .map_err(|e| format!("cannot read the file: {e}"))?;
        match buffer.iter().position(|b| !b.is_ascii_whitespace()) {
            Some(at) => break buffer.get(at) == Some(&b'['),
            None if buffer.is_empty() => break false,
            None => {
                let all = buffer.len();
                file.consume(all);
            }
        }
    };
    if starts_json {
        json_array(file, None, &mut |index, value| {
            let read = match typed::<Dumped>(value) {
                Ok(dumped) if dumped.model == "auth.user" => person(dumped.fields),
                Ok(dumped) => Read::Skip(format!("a {} record, not a user", dumped.model)),
                Err(why) => Read::Bad(why),
            };
            each(record(index, format!("element {}", index - 1), read))
        })
    } else {
        csv_rows(file, &["email", "password"], &mut |number, place, row| {
            let read = match row.and_then(|row| fields(&row)) {
                Ok(fields) => person(fields),
                Err(why) => Read::Bad(why),
            };
            each(record(number, place, read))
        })
    }
}

fn fields(row: &Row) -> Result<Fields, String> {
    Ok(Fields {
        password: row.get("password").unwrap_or_default().to_owned(),
        username: row.get("username").map(str::to_owned),
        first_name: row.get("first_name").map(str::to_owned),
        last_name: row.get("last_name").map(str::to_owned),
        email: row.get("email").map(str::to_owned),
        is_active: flag(row.get("is_active"), true).map_err(|why| format!("is_active: {why}"))?,
    })
}

fn person(fields: Fields) -> Read {
    let Some(email) = fields.email.filter(|e| !e.trim().is_empty()) else {
        return Read::Bad(format!(
            "{} has no e-mail address",
            fields.username.as_deref().unwrap_or("the user")
        ));
    };
    Read::Person(Person {
        email,
        name: joined_name(fields.first_name.as_deref(), fields.last_name.as_deref())
            .or(fields.username),
        password_hash: django_hash(&fields.password),
        // Django keeps no proof of an address (`--addresses-verified` vouches for them).
        email_verified: false,
        disabled: !fields.is_active,
        roles: Vec::new(),
        totp_secret: None,
    })
}

fn django_hash(password: &str) -> Option<String> {
    if password.is_empty() || password.starts_with('!') {
        return None;
    }
    if let Some(phc) = password.strip_prefix("argon2") {
        return Some(phc.to_owned());
    }
    if let Some(mcf) = password.strip_prefix("bcrypt$") {
        return Some(mcf.to_owned());
    }
    Some(password.to_owned())
}
