//! Firebase Authentication (`--from firebase`): `firebase auth:export users.json --format=json`,
//! the `users` array read one person at a time. Its password hashes are Firebase's modified scrypt,
//! whose parameters belong to the project, not to the export: they are given on the command line
//! as Firebase's own `auth:import` takes them (`--hash-key`, `--salt-separator`, `--rounds`,
//! `--mem-cost`) and travel with each imported hash.

use std::io::BufRead;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE};
use serde::Deserialize;

use super::{json_array, record, typed};
use crate::auth::password::firebase_form;
use crate::import::{Person, Read, Record};

/// The project's password hash parameters (the console's "Password hash parameters").
#[derive(Debug, Clone)]
pub struct FirebaseHash {
    pub signer_key: Vec<u8>,
    pub salt_separator: Vec<u8>,
    pub rounds: u32,
    pub mem_cost: u8,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct User {
    local_id: Option<String>,
    email: Option<String>,
    #[serde(default)]
    email_verified: bool,
    display_name: Option<String>,
    password_hash: Option<String>,
    salt: Option<String>,
    #[serde(default)]
    disabled: bool,
}

pub(super) fn read(
    file: impl BufRead,
    hash: &FirebaseHash,
    each: &mut dyn FnMut(Record) -> bool,
) -> Result<(), String> {
    json_array(file, Some("users"), &mut |index, value| {
        let read = match typed::<User>(value).and_then(|user| person(user, hash)) {
            Ok(person) => Read::Person(person),
            Err(why) => Read::Bad(why),
        };
        each(record(index, format!("users[{}]", index - 1), read))
    })
}

fn base64(text: &str, what: &str) -> Result<Vec<u8>, String> {
    STANDARD
        .decode(text)
        .or_else(|_| URL_SAFE.decode(text))
        .map_err(|_| format!("{what} is not base64"))
}

fn person(user: User, project: &FirebaseHash) -> Result<Person, String> {
    let Some(email) = user.email else {
        return Err(format!(
            "{} has no e-mail address (a phone-only account)",
            user.local_id.as_deref().unwrap_or("the user")
        ));
    };
    let password_hash = match (user.password_hash, user.salt) {
        (Some(hash), Some(salt)) => Some(firebase_form(
            project.mem_cost,
            project.rounds,
            &project.signer_key,
            &project.salt_separator,
            &base64(&salt, "salt")?,
            &base64(&hash, "passwordHash")?,
        )),
        (Some(_), None) => return Err("passwordHash without its salt".into()),
        (None, _) => None,
    };
    Ok(Person {
        email,
        name: user.display_name,
        password_hash,
        email_verified: user.email_verified,
        disabled: user.disabled,
        roles: Vec::new(),
        totp_secret: None,
    })
}
