//! How each system spells its hashes: the parsers `Foreign::parse` dispatches to, one per form of
//! the table in `super`, and the forms an import writes for hashes whose parts another system keeps
//! apart (Keycloak's PBKDF2, Firebase's scrypt with the project's key sealed).

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD};

use super::{Digest, Foreign, MAX_BCRYPT_COST, SIGNER_KEY_CONTEXT, SignerKey};
use crate::crypto::Secrets;

/// The stored Firebase form for one person (`gatehouse import --from firebase`): the project's hash
/// parameters travel with each hash, as an Argon2 string carries its own.
pub fn firebase_form(
    log_n: u8,
    rounds: u32,
    signer_key: &[u8],
    separator: &[u8],
    salt: &[u8],
    hash: &[u8],
) -> String {
    format!(
        "$firebase-scrypt$n={log_n},r={rounds},k={},s={}${}${}",
        STANDARD.encode(signer_key),
        STANDARD.encode(separator),
        STANDARD.encode(salt),
        STANDARD.encode(hash)
    )
}

/// `hash` with a Firebase signer key in the clear (`k=`) sealed under the master key (`ks=`), as
/// an import keeps it; any other hash as it is.
pub fn seal_signer_key(hash: &str, secrets: &Secrets) -> String {
    let Some(rest) = hash.strip_prefix("$firebase-scrypt$") else {
        return hash.to_owned();
    };
    let Some((params, tail)) = rest.split_once('$') else {
        return hash.to_owned();
    };
    let params: Vec<String> = params
        .split(',')
        .map(|p| match p.strip_prefix("k=").map(|k| STANDARD.decode(k)) {
            Some(Ok(key)) => format!(
                "ks={}",
                STANDARD.encode(secrets.seal(SIGNER_KEY_CONTEXT, &key))
            ),
            _ => p.to_owned(),
        })
        .collect();
    format!("$firebase-scrypt${}${tail}", params.join(","))
}

/// The PHC form of a PBKDF2 hash whose parts another system keeps apart (Keycloak).
pub fn pbkdf2_form(digest: Digest, iterations: u32, salt: &[u8], hash: &[u8]) -> String {
    let name = match digest {
        Digest::Sha1 => "pbkdf2",
        Digest::Sha256 => "pbkdf2-sha256",
        Digest::Sha512 => "pbkdf2-sha512",
    };
    format!(
        "${name}$i={iterations},l={}${}${}",
        hash.len(),
        STANDARD_NO_PAD.encode(salt),
        STANDARD_NO_PAD.encode(hash)
    )
}

pub(super) fn bcrypt_mcf(s: &str) -> bool {
    let mut parts = s.split('$');
    let (Some(""), Some(version), Some(cost), Some(rest), None) = (
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
    ) else {
        return false;
    };
    matches!(version, "2a" | "2b" | "2y" | "2x")
        && cost.len() == 2
        && cost
            .parse::<u32>()
            .is_ok_and(|c| (4..=MAX_BCRYPT_COST).contains(&c))
        && rest.len() == 53
}

pub(super) fn sha_crypt(s: &str) -> Option<Foreign<'_>> {
    // $6$[rounds=N$]salt$hash: the crate's check reads the rest.
    let fields = s.split('$').count();
    let sha512 = s.starts_with("$6$");
    (fields == 4 || fields == 5).then_some(Foreign::ShaCrypt { mcf: s, sha512 })
}

/// `I$SALT$HASH`: the salt is used as its text, the hash is standard base64.
pub(super) fn django_pbkdf2(
    rest: &str,
    digest: Digest,
    label: &'static str,
) -> Option<Foreign<'static>> {
    let (iterations, salt, hash) = three_fields(rest)?;
    Some(Foreign::Pbkdf2 {
        digest,
        iterations: iterations.parse().ok()?,
        salt: salt.as_bytes().to_vec(),
        hash: STANDARD.decode(hash).ok().filter(|h| !h.is_empty())?,
        label,
    })
}

/// `i=I,l=L$SALT$HASH` (PHC) or `I$SALT$HASH` (passlib): salt and hash in base64, passlib's with
/// `.` for `+`, both without padding.
pub(super) fn modular_pbkdf2(
    rest: &str,
    digest: Digest,
    label: &'static str,
) -> Option<Foreign<'static>> {
    let (params, salt, hash) = three_fields(rest)?;
    let iterations = match params.parse::<u32>() {
        Ok(n) => n,
        Err(_) => param(params, "i")?.parse().ok()?,
    };
    let hash = adapted_base64(hash)?;
    if let Some(length) = param(params, "l") {
        if length.parse::<usize>().ok()? != hash.len() {
            return None;
        }
    }
    Some(Foreign::Pbkdf2 {
        digest,
        iterations,
        salt: adapted_base64(salt)?,
        hash: Some(hash).filter(|h| !h.is_empty())?,
        label,
    })
}

/// `ln=N,r=R,p=P$SALT$HASH`.
pub(super) fn passlib_scrypt(rest: &str) -> Option<Foreign<'static>> {
    let (params, salt, hash) = three_fields(rest)?;
    let param = |name: &str| param(params, name);
    Some(Foreign::Scrypt {
        log_n: param("ln")?.parse().ok()?,
        r: param("r")?.parse().ok()?,
        p: param("p")?.parse().ok()?,
        salt: adapted_base64(salt)?,
        hash: adapted_base64(hash).filter(|h| !h.is_empty())?,
        label: "scrypt",
    })
}

/// Django's `N$SALT$R$P$HASH`: N itself (a power of two), the salt as its text.
pub(super) fn django_scrypt(rest: &str) -> Option<Foreign<'static>> {
    let parts: Vec<&str> = rest.split('$').collect();
    let [n, salt, r, p, hash] = parts.as_slice() else {
        return None;
    };
    let n: u64 = n.parse().ok()?;
    if !n.is_power_of_two() || n < 2 {
        return None;
    }
    Some(Foreign::Scrypt {
        log_n: u8::try_from(n.trailing_zeros()).ok()?,
        r: r.parse().ok()?,
        p: p.parse().ok()?,
        salt: salt.as_bytes().to_vec(),
        hash: STANDARD.decode(hash).ok().filter(|h| !h.is_empty())?,
        label: "scrypt (Django)",
    })
}

pub(super) fn firebase(rest: &str) -> Option<Foreign<'static>> {
    let (params, salt, hash) = three_fields(rest)?;
    let param = |name: &str| param(params, name);
    let separator = STANDARD.decode(param("s")?).ok()?;
    let mut salt = STANDARD.decode(salt).ok()?;
    // The separator is only ever appended to the salt: keep them joined.
    salt.extend_from_slice(&separator);
    Some(Foreign::Firebase {
        log_n: param("n")?.parse().ok()?,
        r: param("r")?.parse().ok()?,
        signer_key: match (param("k"), param("ks")) {
            (Some(plain), None) => {
                SignerKey::Plain(STANDARD.decode(plain).ok().filter(|k| !k.is_empty())?)
            }
            (None, Some(sealed)) => SignerKey::Sealed(STANDARD.decode(sealed).ok()?),
            _ => return None,
        },
        salt,
        hash: STANDARD.decode(hash).ok().filter(|h| !h.is_empty())?,
    })
}

/// `A$B$C`, exactly three fields (parameters, salt, hash).
pub(super) fn three_fields(rest: &str) -> Option<(&str, &str, &str)> {
    let mut parts = rest.split('$');
    match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some(a), Some(b), Some(c), None) => Some((a, b, c)),
        _ => None,
    }
}

/// `name=value` among comma-separated parameters.
pub(super) fn param<'p>(params: &'p str, name: &str) -> Option<&'p str> {
    params
        .split(',')
        .find_map(|p| p.strip_prefix(name)?.strip_prefix('='))
}

/// Base64 with or without padding, with `.` for `+` as passlib writes it.
pub(super) fn adapted_base64(text: &str) -> Option<Vec<u8>> {
    let text = text.replace('.', "+");
    STANDARD_NO_PAD.decode(text.trim_end_matches('=')).ok()
}
