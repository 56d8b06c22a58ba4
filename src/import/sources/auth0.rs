//! Auth0 (`--from auth0`): NDJSON, a user per line, as Auth0's export with password hashes and its
//! bulk-import schema write them. The hash is `custom_password_hash` (`algorithm` bcrypt, argon2,
//! pbkdf2 or sha512-crypt with the whole hash in `hash.value`), `password_hash` (bcrypt, the
//! import schema) or `passwordHash` (the export Auth0's support hands out).

use std::io::BufRead;

use serde::Deserialize;

use super::{joined_name, record, typed};
use crate::import::{Person, Read, Record};

#[derive(Deserialize)]
struct User {
    email: String,
    #[serde(default)]
    email_verified: bool,
    name: Option<String>,
    given_name: Option<String>,
    family_name: Option<String>,
    #[serde(default)]
    blocked: bool,
    password_hash: Option<String>,
    #[serde(rename = "passwordHash")]
    export_hash: Option<String>,
    custom_password_hash: Option<CustomHash>,
}

#[derive(Deserialize)]
struct CustomHash {
    algorithm: String,
    hash: HashValue,
    salt: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct HashValue {
    value: String,
    encoding: Option<String>,
}

pub(super) fn read(file: impl BufRead, each: &mut dyn FnMut(Record) -> bool) -> Result<(), String> {
    let mut number = 0;
    for (index, line) in file.lines().enumerate() {
        let line = line.map_err(|e| format!("cannot read line {}: {e}", index + 1))?;
        if line.trim().is_empty() {
            continue;
        }
        number += 1;
        let read = match serde_json::from_str(&line)
            .map_err(|e| format!("not JSON: {e}"))
            .and_then(typed::<User>)
            .and_then(person)
        {
            Ok(person) => Read::Person(person),
            Err(why) => Read::Bad(why),
        };
        if !each(record(number, format!("line {}", index + 1), read)) {
            break;
        }
    }
    Ok(())
}

fn person(user: User) -> Result<Person, String> {
    let password_hash = match (
        user.custom_password_hash,
        user.password_hash,
        user.export_hash,
    ) {
        (Some(custom), _, _) => Some(custom_hash(custom)?),
        (None, Some(hash), _) | (None, None, Some(hash)) => Some(hash),
        (None, None, None) => None,
    };
    Ok(Person {
        name: user
            .name
            .filter(|n| n.trim() != user.email.trim())
            .or_else(|| joined_name(user.given_name.as_deref(), user.family_name.as_deref())),
        email: user.email,
        password_hash,
        email_verified: user.email_verified,
        disabled: user.blocked,
        roles: Vec::new(),
        totp_secret: None,
    })
}

/// The algorithms whose `hash.value` is a whole self-describing hash; Auth0's salted raw digests
/// (md5, sha1, sha256 … with a separate salt) are refused: a fast digest is no password hash.
fn custom_hash(custom: CustomHash) -> Result<String, String> {
    let whole = matches!(
        custom.algorithm.as_str(),
        "bcrypt" | "argon2" | "pbkdf2" | "sha512-crypt" | "sha256-crypt"
    );
    if !whole
        || custom.salt.is_some()
        || custom.hash.encoding.as_deref().is_some_and(|e| e != "utf8")
    {
        return Err(format!(
            "custom_password_hash: the algorithm {:?} with a separate salt or encoding is not one \
             Gatehouse keeps (bcrypt, argon2, pbkdf2, sha512-crypt and sha256-crypt are)",
            custom.algorithm
        ));
    }
    Ok(custom.hash.value)
}
