//! A contact: the entity, the fields a client sends, and the rules they must pass.

use crate::domain::{Email, FullName};
use crate::error::{Result, Validator};
use crate::model::contacts::{Contact, ContactFields};

pub const PHONE_MAX: usize = 50;
pub const COMPANY_MAX: usize = 200;
pub const NOTES_MAX: usize = 10_000;

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

#[cfg(test)]
mod tests {
    use std::sync::OnceLock;

    use proptest::prelude::*;
    use regex::Regex;
    use serde_json::Value;

    use super::*;

    /// The `pattern` and `maxLength` the API document gives a field of the new-contact body.
    fn documented(field: &str) -> (String, Option<usize>) {
        static DOC: OnceLock<Value> = OnceLock::new();
        let doc = DOC.get_or_init(|| serde_json::to_value(crate::http::openapi()).unwrap());
        let schema = &doc["components"]["schemas"]["NewContact"]["properties"][field];
        let other = &doc["components"]["schemas"]["ContactBody"]["properties"][field];
        assert_eq!(schema, other, "{field}: one schema for create and patch");
        let pattern = schema["pattern"].as_str().unwrap().to_owned();
        let max = schema.get("maxLength").and_then(Value::as_u64);
        (pattern, max.map(|n| n as usize))
    }

    const FIELDS: [&str; 5] = ["fullName", "email", "phone", "company", "notes"];

    /// The field's documented pattern, compiled once.
    fn regex(field: &str) -> &'static Regex {
        static ALL: OnceLock<Vec<(&str, Regex)>> = OnceLock::new();
        let all = ALL.get_or_init(|| {
            FIELDS
                .iter()
                .map(|f| (*f, Regex::new(&documented(f).0).unwrap()))
                .collect()
        });
        &all.iter().find(|(f, _)| *f == field).unwrap().1
    }

    /// Values the field's pattern allows, within its `maxLength`.
    fn documented_values(field: &'static str) -> impl Strategy<Value = String> {
        let (pattern, max) = documented(field);
        // proptest generates from a pattern without anchors.
        let unanchored = pattern
            .strip_prefix('^')
            .unwrap()
            .strip_suffix('$')
            .unwrap();
        proptest::string::string_regex(unanchored)
            .unwrap()
            .prop_filter("over maxLength", move |v| {
                max.is_none_or(|max| v.chars().count() <= max)
            })
    }

    /// Whether `check` takes `value` for `field` in a new contact.
    fn accepts(field: &str, value: &str) -> bool {
        let set = |name: &str| {
            if name == field {
                Patch::Set(value.to_owned())
            } else {
                Patch::Keep
            }
        };
        let full_name = if field == "fullName" {
            Patch::Set(value.to_owned())
        } else {
            Patch::Set("Grace Hopper".to_owned())
        };
        let input = ContactInput {
            full_name,
            email: set("email"),
            phone: set("phone"),
            company: set("company"),
            notes: set("notes"),
        };
        check(input, None).is_ok()
    }

    /// Characters at the edges of the rules: white space that is and is not a control character,
    /// controls that are not white space, U+FEFF (white space to ECMA-262 only), letters.
    fn edgy_text(max_len: usize) -> impl Strategy<Value = String> {
        let chars = prop_oneof![
            4 => prop::sample::select(vec!['a', 'Z', '0', '@', '.', '-', 'é', 'ß', '漢', '😀']),
            2 => prop::sample::select(vec![
                ' ', '\t', '\n', '\r', '\u{b}', '\u{c}', '\u{85}', '\u{a0}', '\u{1680}',
                '\u{2000}', '\u{200a}', '\u{2028}', '\u{2029}', '\u{202f}', '\u{205f}', '\u{3000}',
            ]),
            1 => prop::sample::select(vec![
                '\0', '\u{1}', '\u{1f}', '\u{7f}', '\u{80}', '\u{9f}', '\u{feff}', '\u{200b}',
            ]),
            1 => any::<char>(),
        ];
        prop::collection::vec(chars, 0..=max_len).prop_map(|v| v.into_iter().collect())
    }

    const EXACT: [(&str, usize); 3] = [("fullName", 200), ("phone", 50), ("company", 200)];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        /// The document promises nothing the service refuses: every value a field's pattern
        /// (and `maxLength`) allows is accepted.
        #[test]
        fn documented_names_are_accepted(value in documented_values("fullName")) {
            prop_assert!(accepts("fullName", &value), "{:?}", value);
        }

        #[test]
        fn documented_emails_are_accepted(value in documented_values("email")) {
            prop_assert!(accepts("email", &value), "{:?}", value);
        }

        #[test]
        fn documented_phones_are_accepted(value in documented_values("phone")) {
            prop_assert!(accepts("phone", &value), "{:?}", value);
        }

        #[test]
        fn documented_companies_are_accepted(value in documented_values("company")) {
            prop_assert!(accepts("company", &value), "{:?}", value);
        }

        #[test]
        fn documented_notes_are_accepted(value in documented_values("notes")) {
            prop_assert!(accepts("notes", &value), "{:?}", value);
        }

        /// For the name, phone and company the pattern is exact: it allows what the service
        /// accepts and nothing else.
        #[test]
        fn text_patterns_are_exact(value in edgy_text(210)) {
            for (field, _) in EXACT {
                prop_assert_eq!(documented(field).1, None);
                let matches = regex(field).is_match(&value);
                prop_assert_eq!(matches, accepts(field, &value), "{}: {:?}", field, value);
            }
        }

        /// The notes' pattern and `maxLength` are exact but for a blank value over the limit.
        #[test]
        fn notes_pattern_is_exact(value in edgy_text(40)) {
            prop_assert_eq!(documented("notes").1, Some(NOTES_MAX));
            let matches = regex("notes").is_match(&value);
            prop_assert_eq!(matches, accepts("notes", &value), "{:?}", value);
        }
    }

    #[test]
    fn text_limits_are_at_the_edges() {
        for (field, max) in EXACT {
            let re = regex(field);
            for (value, ok) in [
                (format!("  {}\t", "x".repeat(max)), true),
                (format!("x{}x", " ".repeat(max - 2)), true),
                ("x".repeat(max + 1), false),
                ("\u{85}x\u{85}".to_owned(), true),
                ("x\u{85}x".to_owned(), false),
                ("\u{feff}".to_owned(), true),
            ] {
                assert_eq!(re.is_match(&value), ok, "{field}: {value:?}");
                assert_eq!(accepts(field, &value), ok, "{field}: {value:?}");
            }
        }
        let re = regex("notes");
        let long = format!("\n{}\r\n", "x".repeat(NOTES_MAX - 3));
        assert!(re.is_match(&long) && accepts("notes", &long));
        let blank = " ".repeat(NOTES_MAX + 1);
        assert!(
            re.is_match(&blank) && accepts("notes", &blank),
            "blank, not counted"
        );
    }

    /// What the e-mail pattern leaves out though the service takes it (said in `http::fields`).
    #[test]
    fn email_pattern_is_a_subset() {
        let re = regex("email");
        assert_eq!(documented("email").1, Some(254));
        for value in [
            "",
            " \u{3000}",
            "grace@example.com",
            " \tgrace.hopper+navy@example.com\n",
            "a@b",
            "\"quoted@local\"@[192.168.0.1]",
            "x@[]",
            "a!#$%&'*+/=?^_`{|}~-@x-y.z",
        ] {
            assert!(re.is_match(value) && accepts("email", value), "{value:?}");
        }
        let dotted = format!("{}.{}@example.com", "a".repeat(20), "b".repeat(20));
        let padded = format!("{}@example.com{}", "a".repeat(60), " ".repeat(190));
        for value in ["ü@example.com", "grace@exämple.com", &dotted, &padded] {
            assert!(accepts("email", value), "{value:?}");
            let allowed = re.is_match(value) && value.chars().count() <= 254;
            assert!(!allowed, "{value:?}");
        }
        for value in [
            "a@b@c",
            "a@-b",
            "a..b@c",
            ".a@b",
            "a b@c",
            "\"a\"@b c",
            "a@[b]c",
            "a@[x@y]",
        ] {
            assert!(!re.is_match(value) && !accepts("email", value), "{value:?}");
        }
        let longest = format!("{}@{}", "a".repeat(64), "b".repeat(63));
        assert!(re.is_match(&longest) && accepts("email", &longest));
        let over = format!("{}@b", "a".repeat(65));
        assert!(!re.is_match(&over) && !accepts("email", &over));
    }
}
