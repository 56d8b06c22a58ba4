//! TOTP (RFC 6238: SHA-1, 6 digits, 30 s steps, one step of skew), the otpauth URI and its QR
//! code, and recovery codes.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use subtle::ConstantTimeEq;
use totp_rs::{Algorithm, TOTP};

pub const STEP_SECONDS: u64 = 30;
pub const DIGITS: usize = 6;
/// 160 bits, the size RFC 4226 recommends for the shared secret.
pub const SECRET_BYTES: usize = 20;
pub const RECOVERY_CODES: usize = 10;

pub fn generate_secret() -> [u8; SECRET_BYTES] {
    rand::random()
}

pub fn base32(secret: &[u8]) -> String {
    match totp_rs::Secret::Raw(secret.to_vec()).to_encoded() {
        totp_rs::Secret::Encoded(s) => s,
        totp_rs::Secret::Raw(_) => unreachable!("to_encoded returns the encoded form"),
    }
}

fn totp(secret: &[u8]) -> Option<TOTP> {
    TOTP::new(Algorithm::SHA1, DIGITS, 1, STEP_SECONDS, secret.to_vec()).ok()
}

/// The time step (Unix seconds / 30) whose code `code` is, among now-1, now and now+1 steps;
/// every candidate is compared in constant time.
pub fn matching_step(secret: &[u8], code: &str, unix_seconds: u64) -> Option<u64> {
    let totp = totp(secret)?;
    if code.len() != DIGITS || !code.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let now = unix_seconds / STEP_SECONDS;
    let mut found = None;
    for step in [now.saturating_sub(1), now, now + 1] {
        let expected = totp.generate(step * STEP_SECONDS);
        if bool::from(expected.as_bytes().ct_eq(code.as_bytes())) {
            found = Some(step);
        }
    }
    found
}

/// The code for a moment, as the authenticator app shows it.
#[cfg(test)]
pub fn code_at(secret: &[u8], unix_seconds: u64) -> String {
    totp(secret)
        .map(|t| t.generate(unix_seconds))
        .unwrap_or_default()
}

/// Characters left as they are in the label: enough that `alice@example.com` reads as itself.
const LABEL: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'@')
    .remove(b'.')
    .remove(b'-')
    .remove(b'_')
    .remove(b'+');

/// `otpauth://totp/Gatehouse:<email>?secret=…&issuer=Gatehouse&algorithm=SHA1&digits=6&period=30`
pub fn otpauth_uri(secret_base32: &str, email: &str) -> String {
    format!(
        "otpauth://totp/Gatehouse:{}?secret={secret_base32}&issuer=Gatehouse&algorithm=SHA1&digits={DIGITS}&period={STEP_SECONDS}",
        utf8_percent_encode(email, LABEL)
    )
}

/// The URI as a QR code in SVG, for the enrolment screen.
pub fn qr_svg(uri: &str) -> Result<String, qrcode::types::QrError> {
    let code = qrcode::QrCode::with_error_correction_level(uri, qrcode::EcLevel::M)?;
    Ok(code
        .render::<qrcode::render::svg::Color<'_>>()
        .min_dimensions(200, 200)
        .quiet_zone(true)
        .build())
}

/// Alphabet of recovery codes: lower-case letters and digits without 0/o, 1/l/i, so a code read
/// off paper is typed right. 31 symbols, so a 10-symbol code carries about 49 bits.
const RECOVERY_ALPHABET: &[u8] = b"abcdefghjkmnpqrstuvwxyz23456789";

/// Ten codes like `k7m2p-x9qrt`.
pub fn generate_recovery_codes() -> Vec<String> {
    use rand::Rng as _;
    let mut rng = rand::thread_rng();
    (0..RECOVERY_CODES)
        .map(|_| {
            let chars: String = (0..10)
                .map(|_| RECOVERY_ALPHABET[rng.gen_range(0..RECOVERY_ALPHABET.len())] as char)
                .collect();
            format!("{}-{}", &chars[..5], &chars[5..])
        })
        .collect()
}

/// A recovery code as typed (any case, with or without its dash, surrounding blanks) in the form
/// that is hashed; `None` if it cannot be one.
pub fn normalize_recovery_code(input: &str) -> Option<String> {
    let code: String = input
        .trim()
        .chars()
        .filter(|c| *c != '-')
        .collect::<String>()
        .to_lowercase();
    (code.len() == 10 && code.bytes().all(|b| RECOVERY_ALPHABET.contains(&b))).then_some(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc6238_sha1_vector() {
        // RFC 6238 appendix B, SHA-1 seed, truncated to 6 digits.
        let secret = b"12345678901234567890";
        assert_eq!(code_at(secret, 59), "287082");
        assert_eq!(code_at(secret, 1111111109), "081804");
        assert_eq!(
            matching_step(secret, "081804", 1111111109),
            Some(1111111109 / 30)
        );
    }

    #[test]
    fn one_step_of_skew_each_way_and_no_more() {
        let secret = generate_secret();
        let now = 1_800_000_000;
        for (offset, ok) in [
            (-60i64, false),
            (-30, true),
            (0, true),
            (30, true),
            (60, false),
        ] {
            let code = code_at(&secret, (now as i64 + offset) as u64);
            assert_eq!(
                matching_step(&secret, &code, now).is_some(),
                ok,
                "offset {offset}"
            );
        }
        assert_eq!(matching_step(&secret, "12345", now), None);
        assert_eq!(matching_step(&secret, "abcdef", now), None);
    }

    #[test]
    fn otpauth_uri_is_exactly_the_contract() {
        assert_eq!(
            otpauth_uri("JBSWY3DPEHPK3PXP", "alice@example.com"),
            "otpauth://totp/Gatehouse:alice@example.com?secret=JBSWY3DPEHPK3PXP&issuer=Gatehouse&algorithm=SHA1&digits=6&period=30"
        );
        assert!(otpauth_uri("X", "a b?c@d.e").contains("Gatehouse:a%20b%3Fc@d.e?"));
    }

    #[test]
    fn recovery_codes_normalise() {
        let codes = generate_recovery_codes();
        assert_eq!(codes.len(), 10);
        for code in &codes {
            assert_eq!(code.len(), 11);
            let n = normalize_recovery_code(code).unwrap();
            assert_eq!(
                normalize_recovery_code(&code.to_uppercase()),
                Some(n.clone())
            );
            assert_eq!(normalize_recovery_code(&code.replace('-', "")), Some(n));
        }
        assert_eq!(normalize_recovery_code("123456"), None);
    }

    #[test]
    fn qr_code_is_svg() {
        let svg = qr_svg(&otpauth_uri("JBSWY3DPEHPK3PXP", "a@b.c")).unwrap();
        assert!(svg.contains("<svg"));
    }
}
