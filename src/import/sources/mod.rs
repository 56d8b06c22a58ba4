//! The exports `gatehouse import` reads, one module each: every reader turns its file into
//! records (a person, a record the source itself marks as gone, or a record it cannot read), in
//! the file's order, without holding the file in memory. What a record holds is checked by the
//! import (`super`), not here.

use std::io::BufRead;
use std::sync::Arc;

use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::{Read, Record};

mod auth0;
mod authelia;
mod csv;
mod django;
mod firebase;
mod keycloak;
mod supabase;

pub use firebase::FirebaseHash;

/// A system people are imported from (`--from`).
#[derive(Debug, Clone)]
pub enum Source {
    Auth0,
    Keycloak,
    Firebase(FirebaseHash),
    Supabase,
    Authelia,
    Django,
    Csv,
}

impl Source {
    /// Its `--from` name, also the audit detail's `from=`.
    pub fn name(&self) -> &'static str {
        match self {
            Source::Auth0 => "auth0",
            Source::Keycloak => "keycloak",
            Source::Firebase(_) => "firebase",
            Source::Supabase => "supabase",
            Source::Authelia => "authelia",
            Source::Django => "django",
            Source::Csv => "csv",
        }
    }

    /// Reads `file` record by record into `each` until the file ends or `each` answers false.
    /// An error is the file's own (not the format, cut off): the records before it were read.
    pub fn read(
        &self,
        file: impl BufRead,
        each: &mut dyn FnMut(Record) -> bool,
    ) -> Result<(), String> {
        match self {
            Source::Auth0 => auth0::read(file, each),
            Source::Keycloak => keycloak::read(file, each),
            Source::Firebase(hash) => firebase::read(file, hash, each),
            Source::Supabase => supabase::read(file, each),
            Source::Authelia => authelia::read(file, each),
            Source::Django => django::read(file, each),
            Source::Csv => csv::read(file, each),
        }
    }
}

/// A record at `place` (`line 3`, `users[2]`), numbered from 1 in the file's order.
fn record(number: u64, place: String, read: Read) -> Record {
    Record {
        number,
        place,
        read,
    }
}

/// Streams the elements of a JSON array: the whole document (`field` None), or the array under
/// `field` of the top-level object (Keycloak's and Firebase's `users`). Each element is handed to
/// `each` with its index, as a value (one person is small; the file need not be).
fn json_array(
    file: impl BufRead,
    field: Option<&'static str>,
    each: &mut dyn FnMut(u64, serde_json::Value) -> bool,
) -> Result<(), String> {
    let mut deserializer = serde_json::Deserializer::from_reader(file);
    let mut state = ArrayState {
        each,
        index: 0,
        stopped: false,
        found: false,
    };
    let result = match field {
        None => serde::Deserializer::deserialize_seq(&mut deserializer, Elements(&mut state)),
        Some(name) => serde::Deserializer::deserialize_map(
            &mut deserializer,
            Fields {
                name,
                state: &mut state,
            },
        ),
    };
    if state.stopped {
        return Ok(());
    }
    result
        .and_then(|()| deserializer.end())
        .map_err(|error| match state.index {
            0 => format!("not the expected JSON: {error}"),
            n => format!("the file breaks off after record {n}: {error}"),
        })?;
    match (field, state.found) {
        (Some(name), false) => Err(format!("the file has no \"{name}\" array")),
        _ => Ok(()),
    }
}

struct ArrayState<'a> {
    each: &'a mut dyn FnMut(u64, serde_json::Value) -> bool,
    index: u64,
    /// `each` asked to stop (the rest of the file is not read).
    stopped: bool,
    found: bool,
}

struct Elements<'s, 'a>(&'s mut ArrayState<'a>);

impl<'de> Visitor<'de> for Elements<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an array of people")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.0.found = true;
        while let Some(element) = seq.next_element::<serde_json::Value>()? {
            self.0.index += 1;
            if !(self.0.each)(self.0.index, element) {
                self.0.stopped = true;
                // Unread elements make the deserializer fail; `json_array` ignores that.
                return Err(serde::de::Error::custom("stopped"));
            }
        }
        Ok(())
    }
}

impl<'de> DeserializeSeed<'de> for Elements<'_, '_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

struct Fields<'s, 'a> {
    name: &'static str,
    state: &'s mut ArrayState<'a>,
}

impl<'de> Visitor<'de> for Fields<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "an object with a \"{}\" array", self.name)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            if key == self.name && !self.state.found {
                map.next_value_seed(Elements(&mut *self.state))?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

/// Reads one record's value as the source's own shape; a mismatch is that record's refusal.
fn typed<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> Result<T, String> {
    serde_path_to_error::deserialize(value).map_err(|error| {
        let path = error.path().to_string();
        let inner = error.into_inner();
        match path.as_str() {
            "." => format!("not a record of this format: {inner}"),
            path => format!("{path}: {inner}"),
        }
    })
}

/// Reads CSV records by their header's names (case-insensitive), `line N` each. A header without
/// a `required` column is the file's refusal (once, not once a record).
fn csv_rows(
    file: impl BufRead,
    required: &[&str],
    each: &mut dyn FnMut(u64, String, Result<Row, String>) -> bool,
) -> Result<(), String> {
    // Records end at `\n` alone: with the crate's default (CR, LF or CRLF), a CRLF file's records
    // were counted a line early. A CR left at a field's end is trimmed with its blanks (`Row::get`).
    let mut reader = ::csv::ReaderBuilder::new()
        .terminator(::csv::Terminator::Any(b'\n'))
        .from_reader(file);
    let header: Arc<[String]> = reader
        .headers()
        .map_err(|e| format!("cannot read the header line: {e}"))?
        .iter()
        .map(|h| h.trim().trim_start_matches('\u{feff}').to_lowercase())
        .collect();
    if let Some(missing) = required.iter().find(|r| !header.iter().any(|h| h == *r)) {
        return Err(format!(
            "the header line has no {missing} column (it has: {}; columns are separated by commas)",
            header.join(", ")
        ));
    }
    let mut record = ::csv::StringRecord::new();
    let mut number = 0;
    loop {
        let line = reader.position().line();
        let read = match reader.read_record(&mut record) {
            Ok(false) => return Ok(()),
            Ok(true) => Ok(Row {
                header: header.clone(),
                values: record.iter().map(str::to_owned).collect(),
            }),
            // A row of the wrong width, or not UTF-8: that row's refusal; the next row is read.
            Err(e)
                if matches!(
                    e.kind(),
                    ::csv::ErrorKind::UnequalLengths { .. } | ::csv::ErrorKind::Utf8 { .. }
                ) =>
            {
                Err(format!("not a row of the header's columns: {e}"))
            }
            Err(e) => return Err(format!("cannot read the line after line {line}: {e}")),
        };
        number += 1;
        let line = record.position().map_or(line, ::csv::Position::line);
        if !each(number, format!("line {line}"), read) {
            return Ok(());
        }
    }
}

/// A CSV row, by column name.
pub struct Row {
    header: Arc<[String]>,
    values: Vec<String>,
}

impl Row {
    /// The column's value, `None` when the header has no such column or it is empty.
    fn get(&self, name: &str) -> Option<&str> {
        let at = self.header.iter().position(|h| h == name)?;
        self.values
            .get(at)
            .map(|v| v.trim())
            .filter(|v| !v.is_empty())
    }
}

/// A yes/no column as exports write it (`true`, `t`, `1`, `yes`; empty is `default`).
fn flag(value: Option<&str>, default: bool) -> Result<bool, String> {
    match value.map(str::to_lowercase).as_deref() {
        None => Ok(default),
        Some("true" | "t" | "1" | "yes" | "y") => Ok(true),
        Some("false" | "f" | "0" | "no" | "n") => Ok(false),
        Some(other) => Err(format!("{other:?} is not true or false")),
    }
}

/// A name made of given and family names, either of which may be missing.
fn joined_name(given: Option<&str>, family: Option<&str>) -> Option<String> {
    let parts: Vec<&str> = [given, family]
        .into_iter()
        .flatten()
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect();
    (!parts.is_empty()).then(|| parts.join(" "))
}

/// `typed` for a YAML value (Authelia's file).
fn typed_yaml<T: serde::de::DeserializeOwned>(value: serde_yaml_ng::Value) -> Result<T, String> {
    serde_yaml_ng::from_value(value).map_err(|e| format!("not a record of this format: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_records_are_numbered_by_their_line_whatever_the_line_ends() {
        for text in [
            "email,name\na@example.com,A\n\"b@example.com\",\"B\nB\"\nc@example.com,C\n",
            "email,name\r\na@example.com,A\r\n\"b@example.com\",\"B\r\nB\"\r\nc@example.com,C\r\n",
        ] {
            let mut seen = Vec::new();
            csv_rows(text.as_bytes(), &["email"], &mut |n, place, row| {
                let row = row.unwrap();
                seen.push((n, place, row.get("email").unwrap().to_owned()));
                true
            })
            .unwrap();
            let places: Vec<&str> = seen.iter().map(|(_, p, _)| p.as_str()).collect();
            assert_eq!(places, ["line 2", "line 3", "line 5"], "{text:?}");
            assert_eq!(seen[2].2, "c@example.com");
        }
    }
}
