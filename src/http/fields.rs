//! The documented form of the text fields the domain checks: a name, a contact's optional fields
//! and its e-mail address. Each schema's `pattern` says what the check accepts, so that a request
//! the document calls valid is not refused for the form of a field (and, where the pattern is
//! exact, one it calls invalid is refused).
//!
//! The rules are the domain's (`domain::{Email, FullName}`, `crm::contact`): values are trimmed of
//! white space as `str::trim` does (the Unicode White_Space property) and may not hold control
//! characters as `char::is_control` says (general category Cc). The patterns spell both sets out:
//! `\s` means different sets in ECMA-262 (which counts U+FEFF but not U+0085), Python and Rust.
//! They use no look-around, which Hypothesis (Schemathesis) cannot generate from, and length
//! limits are written into the pattern where white space around the value does not count, because
//! `maxLength` would count it.

use serde_json::json;
use utoipa::openapi::schema::{Object, ObjectBuilder, SchemaType, Type};
use utoipa::openapi::{RefOr, Schema};

use crate::crm::{COMPANY_MAX, NOTES_MAX, PHONE_MAX};
use crate::domain::{Email, FullName};

/// `char::is_whitespace`, as a character class's contents.
const WHITE: &str = r"\t-\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000";
/// `char::is_control`, as a character class's contents.
const CONTROL: &str = r"\u0000-\u001f\u007f-\u009f";
/// Neither white space nor a control character: `WHITE` and `CONTROL` merged where they touch.
const VISIBLE: &str =
    r"[^\u0000-\u0020\u007f-\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]";

/// A value that is trimmed, then 1 to `max` characters with no control character: white space, a
/// visible character, optionally up to `max - 2` characters that are not control characters and a
/// last visible one, white space. `optional`: a blank value (none) is allowed too.
fn trimmed(max: usize, optional: bool) -> String {
    let inner = format!("{VISIBLE}(?:[^{CONTROL}]{{0,{}}}{VISIBLE})?", max - 2);
    let inner = if optional {
        format!("(?:{inner})?")
    } else {
        inner
    };
    format!("^[{WHITE}]*{inner}[{WHITE}]*$")
}

/// `FullName::parse`: trimmed, 1–200 characters, no control characters.
fn full_name_pattern() -> String {
    trimmed(FullName::MAX_LENGTH, false)
}

/// `phone`: blank for none, or trimmed, at most 50 characters, no control characters.
fn phone_pattern() -> String {
    trimmed(PHONE_MAX, true)
}

/// `company`: blank for none, or trimmed, at most 200 characters, no control characters.
fn company_pattern() -> String {
    trimmed(COMPANY_MAX, true)
}

/// `notes`: blank for none (at any length), or not trimmed and at most 10 000 characters (the
/// schema's `maxLength`), with no control characters but tab, line feed and carriage return. The
/// limit cannot be in the pattern: a repetition of 10 000 Unicode classes is over the size the
/// Rust regex engines (jsonschema-rs, so Schemathesis) compile. So a blank value longer than
/// 10 000 characters is accepted though the schema does not allow it.
fn notes_pattern() -> String {
    format!(r"^(?:[{WHITE}]*|[^\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]*)$")
}

/// `Email::parse` as the contact's `email` field applies it: blank for none, or an address with
/// white space around it. No pattern can say exactly what that accepts, so this one is a subset:
/// the plain ASCII addr-spec, which the service always accepts.
///
/// - The address may hold non-ASCII letters and digits (`char::is_alphanumeric`, RFC 6531).
///   Regex dialects class those differently (Schemathesis reads `\p{L}` as Latin only), and the
///   local part's limit is 64 bytes of UTF-8, not characters, which a pattern cannot count.
/// - The local part's 64 characters need a look-ahead once it has dots, and Hypothesis cannot
///   generate from one. So the pattern bounds it by its form: up to 64 characters without a dot,
///   up to 32 besides the dots, or a quoted string of up to 31. `maxLength` bounds the rest.
///
/// Accepted but outside the pattern, then: an internationalised address, a dotted local part of
/// 33 to 64 characters besides the dots, a longer quoted one, and an address of up to 254
/// characters padded to more. The document promises less than the service does, never more. The
/// honest cost is in Schemathesis's negative phase, which sends strings the pattern refuses and
/// expects a refusal (else ST201): measured with Hypothesis's text strategy against
/// `Email::parse`, about 1 such string in 4 000 is an internationalised address (`å@ú`), and a
/// run of scripts/schemathesis.sh sends some ten of them (seeds 1 to 10 pass).
fn email_pattern() -> String {
    const ATEXT: &str = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]";
    const ALNUM: &str = r"[A-Za-z0-9]";
    // qtext (no `"` or `\`) or a quoted pair; no space: `Email::parse` refuses white space.
    const QUOTED: &str = r#""(?:[!#-\[\]-~]|\\[!-~]){1,31}""#;
    let local = format!(r"(?:{ATEXT}{{1,64}}|{ATEXT}(?:\.?{ATEXT}){{0,31}}|{QUOTED})");
    let label = format!(r"{ALNUM}(?:{ATEXT}{{0,61}}{ALNUM})?");
    // A domain literal's dtext, less `@`: the crate splits the address at its last `@`.
    let domain = format!(r"(?:{label}(?:\.{label})*|\[[!-?A-Z^-~]*\])");
    format!("^[{WHITE}]*(?:{local}@{domain}[{WHITE}]*)?$")
}

fn text(pattern: String, nullable: bool) -> ObjectBuilder {
    let schema_type = if nullable {
        SchemaType::from_iter([Type::String, Type::Null])
    } else {
        SchemaType::Type(Type::String)
    };
    ObjectBuilder::new()
        .schema_type(schema_type)
        .pattern(Some(pattern))
}

fn done(object: ObjectBuilder) -> RefOr<Schema> {
    RefOr::T(Schema::Object(Object::from(object)))
}

fn name(example: &str) -> RefOr<Schema> {
    done(
        text(full_name_pattern(), false)
            .description(Some("Trimmed, 1–200 characters, no control characters."))
            .examples([json!(example)]),
    )
}

/// A contact's `fullName`.
pub(crate) fn full_name() -> RefOr<Schema> {
    name("Grace Hopper")
}

/// An account's `fullName`, at registration.
pub(crate) fn account_name() -> RefOr<Schema> {
    name("Ada Lovelace")
}

pub(crate) fn contact_email() -> RefOr<Schema> {
    done(
        text(email_pattern(), true)
            .max_length(Some(Email::MAX_LENGTH))
            .description(Some(
                "A valid e-mail address (RFC 5322 addr-spec, at most 254 characters once \
                 trimmed, no blanks, no TLD required); `null` or blank for none. The pattern is \
                 the plain ASCII form: internationalised addresses (non-ASCII letters and \
                 digits), dotted local parts of over 32 characters besides the dots and longer quoted ones are \
                 accepted too.",
            ))
            .examples([json!("grace@example.com")]),
    )
}

pub(crate) fn phone() -> RefOr<Schema> {
    done(
        text(phone_pattern(), true)
            .description(Some(
                "Trimmed, at most 50 characters, no control characters; `null` or blank for none.",
            ))
            .examples([json!("+1 555 0100")]),
    )
}

pub(crate) fn company() -> RefOr<Schema> {
    done(
        text(company_pattern(), true)
            .description(Some(
                "Trimmed, at most 200 characters, no control characters; `null` or blank for none.",
            ))
            .examples([json!("Navy")]),
    )
}

pub(crate) fn notes() -> RefOr<Schema> {
    done(
        text(notes_pattern(), true)
            .max_length(Some(NOTES_MAX))
            .description(Some(
                "Not trimmed, at most 10 000 characters; tab, line feed and carriage return are \
                 the only control characters allowed; `null` or blank for none.",
            )),
    )
}

/// A list's page size as the query gives it: absent → `default`, else a whole number from 1 to
/// `max` (else a reason under `limit`). Every paged list of the API reads it so.
pub fn page_limit(
    v: &mut crate::error::Validator,
    raw: Option<&str>,
    default: u32,
    max: u32,
) -> Option<u32> {
    match raw {
        None => Some(default),
        Some(raw) => v.check(
            "limit",
            raw.trim()
                .parse::<u32>()
                .ok()
                .filter(|n| (1..=max).contains(n))
                .ok_or_else(|| format!("must be a whole number from 1 to {max}")),
        ),
    }
}
