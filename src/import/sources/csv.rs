//! The plain CSV (`--from csv`): a header line naming the columns, `email` required, `name`,
//! `password_hash` (PHC or modular-crypt form), and optionally `email_verified` (empty: false),
//! `disabled`, `roles` (space-separated) and `totp_secret` (base32).

use std::io::BufRead;

use super::{Row, csv_rows, flag, record};
use crate::import::{Person, Read, Record};

pub(super) fn read(file: impl BufRead, each: &mut dyn FnMut(Record) -> bool) -> Result<(), String> {
    csv_rows(file, &["email"], &mut |number, place, row| {
        let read = match row.and_then(|row| person(&row)) {
            Ok(person) => Read::Person(person),
            Err(why) => Read::Bad(why),
        };
        each(record(number, place, read))
    })
}

fn person(row: &Row) -> Result<Person, String> {
    let totp_secret = match row.get("totp_secret") {
        None => None,
        Some(base32) => Some(
            totp_rs::Secret::Encoded(base32.replace([' ', '-'], "").to_uppercase())
                .to_bytes()
                .map_err(|_| "totp_secret is not base32".to_owned())?,
        ),
    };
    Ok(Person {
        email: row
            .get("email")
            .ok_or("the email column is empty")?
            .to_owned(),
        name: row.get("name").map(str::to_owned),
        password_hash: row.get("password_hash").map(str::to_owned),
        email_verified: flag(row.get("email_verified"), false)
            .map_err(|why| format!("email_verified: {why}"))?,
        disabled: flag(row.get("disabled"), false).map_err(|why| format!("disabled: {why}"))?,
        roles: row
            .get("roles")
            .map(|r| r.split_whitespace().map(str::to_owned).collect())
            .unwrap_or_default(),
        totp_secret,
    })
}
