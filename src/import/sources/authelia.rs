//! Authelia (`--from authelia`): its file user database, `users_database.yml`: a `users` map of
//! username to `displayname`, `password` (argon2id, SHA-crypt, bcrypt, PBKDF2 or scrypt, as Authelia
//! writes them), `email`, `groups` (imported as roles) and `disabled`. Such files are small (the
//! file backend serves one machine's users), so it is read whole.

use std::io::BufRead;

use serde::Deserialize;

use super::{record, typed_yaml};
use crate::import::{Person, Read, Record};

#[derive(Deserialize)]
struct User {
    displayname: Option<String>,
    password: Option<String>,
    email: Option<String>,
    #[serde(default)]
    groups: Vec<String>,
    #[serde(default)]
    disabled: bool,
}

pub(super) fn read(file: impl BufRead, each: &mut dyn FnMut(Record) -> bool) -> Result<(), String> {
    let document: serde_yaml_ng::Value =
        serde_yaml_ng::from_reader(file).map_err(|e| format!("not YAML: {e}"))?;
    let users = document
        .get("users")
        .and_then(serde_yaml_ng::Value::as_mapping)
        .ok_or("the file has no \"users\" map")?;
    for (index, (name, user)) in users.iter().enumerate() {
        let username = name.as_str().unwrap_or("?").to_owned();
        let read = match typed_yaml::<User>(user.clone()).and_then(|u| person(&username, u)) {
            Ok(person) => Read::Person(person),
            Err(why) => Read::Bad(why),
        };
        let number = u64::try_from(index).unwrap_or(u64::MAX).saturating_add(1);
        if !each(record(number, format!("users.{username}"), read)) {
            break;
        }
    }
    Ok(())
}

fn person(username: &str, user: User) -> Result<Person, String> {
    let email = user
        .email
        .ok_or_else(|| format!("{username} has no e-mail address"))?;
    Ok(Person {
        email,
        name: user.displayname,
        password_hash: user.password,
        // Authelia keeps no proof of an address (`--addresses-verified` vouches for them).
        email_verified: false,
        disabled: user.disabled,
        roles: user.groups,
        totp_secret: None,
    })
}
