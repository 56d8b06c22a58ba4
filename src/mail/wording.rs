//! How mails read: durations as their readers say them ("1 hour", "7 days", "1 day and 12 hours"
//! for the lifetimes of mailed links, not a machine's "1h" or "7days"), and bodies as written.

use std::time::Duration;

use lettre::message::header::{ContentTransferEncoding, ContentType};
use lettre::message::{Body, SinglePart};

/// `duration` in words, largest unit first, each unit that is not zero: days, hours, minutes,
/// seconds (what is left below a second is dropped). Zero reads "0 seconds".
pub fn duration(duration: Duration) -> String {
    let total = duration.as_secs();
    let units = [
        (total / 86_400, "day"),
        (total % 86_400 / 3_600, "hour"),
        (total % 3_600 / 60, "minute"),
        (total % 60, "second"),
    ];
    let parts: Vec<String> = units
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, unit)| match n {
            1 => format!("1 {unit}"),
            n => format!("{n} {unit}s"),
        })
        .collect();
    match parts.as_slice() {
        [] => "0 seconds".to_owned(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// A part in 8bit: the text as written, so a mail read with `cat` (the `.eml` mailbox) shows it
/// and a link copied from it is whole (lettre's own choice wraps lines at 76 characters in
/// quoted-printable, splitting the links). RFC 5322 allows lines of up to 998 octets; a text with
/// a longer line (a very long name, say) or a NUL is left to lettre's choice. A part that is not
/// ASCII needs an SMTP server that takes 8BITMIME (RFC 6152; lettre asks for it), as every
/// current one does.
pub fn readable(kind: ContentType, text: String) -> SinglePart {
    let plain = text.replace("\r\n", "\n");
    let fits = !plain.contains(['\0', '\r']) && plain.split('\n').all(|line| line.len() <= 998);
    let body = if fits {
        Body::dangerous_pre_encoded(
            plain.replace('\n', "\r\n").into_bytes(),
            ContentTransferEncoding::EightBit,
        )
    } else {
        Body::new(text)
    };
    SinglePart::builder().header(kind).body(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(secs: u64) -> String {
        duration(Duration::from_secs(secs))
    }

    #[test]
    fn single_units_read_as_words() {
        assert_eq!(words(1), "1 second");
        assert_eq!(words(45), "45 seconds");
        assert_eq!(words(60), "1 minute");
        assert_eq!(words(15 * 60), "15 minutes");
        assert_eq!(words(3600), "1 hour");
        assert_eq!(words(2 * 3600), "2 hours");
        assert_eq!(words(86_400), "1 day");
        assert_eq!(words(7 * 86_400), "7 days");
        assert_eq!(words(30 * 86_400), "30 days");
    }

    #[test]
    fn mixed_durations_name_every_unit_largest_first() {
        assert_eq!(words(90 * 60), "1 hour and 30 minutes");
        assert_eq!(words(86_400 + 12 * 3600), "1 day and 12 hours");
        assert_eq!(
            words(2 * 86_400 + 3600 + 60 + 1),
            "2 days, 1 hour, 1 minute and 1 second"
        );
        assert_eq!(words(86_400 + 5), "1 day and 5 seconds");
    }

    fn encoded(text: &str) -> (String, String) {
        let part = readable(ContentType::TEXT_PLAIN, text.to_owned());
        let text = String::from_utf8(part.formatted()).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        (head.to_owned(), body.to_owned())
    }

    #[test]
    fn bodies_are_8bit_with_long_lines_whole() {
        let link = format!(
            "https://example.com/reset-password?token={}",
            "A".repeat(200)
        );
        let (head, body) = encoded(&format!("Hello Zoë,\n\n{link}\n"));
        assert!(head.contains("Content-Transfer-Encoding: 8bit"), "{head}");
        assert!(
            body.starts_with(&format!("Hello Zoë,\r\n\r\n{link}\r\n")),
            "{body}"
        );
    }

    #[test]
    fn a_line_too_long_for_8bit_is_left_to_lettre() {
        let (head, body) = encoded(&"x".repeat(1200));
        assert!(!head.contains("8bit"), "{head}");
        assert!(body.lines().all(|l| l.len() <= 998));
    }

    #[test]
    fn zero_and_fractions() {
        assert_eq!(words(0), "0 seconds");
        assert_eq!(duration(Duration::from_millis(999)), "0 seconds");
        assert_eq!(duration(Duration::from_millis(3_600_500)), "1 hour");
    }
}
