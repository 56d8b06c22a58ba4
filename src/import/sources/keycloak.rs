//! Keycloak (`--from keycloak`): a realm export (`kc.sh export --realm R --file realm.json`, or
//! one of its `R-users-N.json` files), the `users` array read one person at a time. Password
//! credentials (PBKDF2 with SHA-1, -256 or -512, or Argon2) become the PHC strings Gatehouse
//! verifies; an OTP credential (TOTP, SHA-1, 6 digits, 30 s) becomes the account's second factor;
//! realm roles become roles, Keycloak's own defaults left out.

use std::io::BufRead;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD};
use serde::Deserialize;

use super::{joined_name, json_array, record, typed};
use crate::auth::password::{Pbkdf2Digest, pbkdf2_form};
use crate::import::{Person, Read, Record};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct User {
    username: Option<String>,
    email: Option<String>,
    #[serde(default)]
    email_verified: bool,
    first_name: Option<String>,
    last_name: Option<String>,
    #[serde(default = "yes")]
    enabled: bool,
    #[serde(default)]
    realm_roles: Vec<String>,
    #[serde(default)]
    credentials: Vec<Credential>,
    service_account_client_id: Option<String>,
}

fn yes() -> bool {
    true
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Credential {
    #[serde(rename = "type")]
    kind: String,
    /// JSON in a string, as Keycloak keeps it.
    secret_data: Option<String>,
    credential_data: Option<String>,
}

#[derive(Deserialize)]
struct Secret {
    value: String,
    salt: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PasswordData {
    hash_iterations: u32,
    algorithm: String,
    #[serde(default)]
    additional_parameters: std::collections::HashMap<String, Vec<String>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct OtpData {
    sub_type: String,
    digits: u32,
    period: u32,
    algorithm: String,
    secret_encoding: Option<String>,
}

/// Roles every Keycloak account has: nothing to carry over.
fn keycloak_default(role: &str) -> bool {
    role.starts_with("default-roles-") || role == "offline_access" || role == "uma_authorization"
}

pub(super) fn read(file: impl BufRead, each: &mut dyn FnMut(Record) -> bool) -> Result<(), String> {
    json_array(file, Some("users"), &mut |index, value| {
        let read = match typed::<User>(value).and_then(person) {
            Ok(read) => read,
            Err(why) => Read::Bad(why),
        };
        each(record(index, format!("users[{}]", index - 1), read))
    })
}

fn person(user: User) -> Result<Read, String> {
    if let Some(client) = user.service_account_client_id {
        return Ok(Read::Skip(format!(
            "the service account of the client {client}"
        )));
    }
    let Some(email) = user.email else {
        return Err(format!(
            "{} has no e-mail address",
            user.username.as_deref().unwrap_or("the user")
        ));
    };
    let mut password_hash = None;
    let mut totp_secret = None;
    for credential in user.credentials {
        match credential.kind.as_str() {
            "password" => password_hash = Some(password(&credential)?),
            "otp" => totp_secret = Some(otp(&credential)?),
            _ => {}
        }
    }
    Ok(Read::Person(Person {
        email,
        name: joined_name(user.first_name.as_deref(), user.last_name.as_deref()).or(user.username),
        password_hash,
        email_verified: user.email_verified,
        disabled: !user.enabled,
        roles: user
            .realm_roles
            .into_iter()
            .filter(|r| !keycloak_default(r))
            .collect(),
        totp_secret,
    }))
}

fn json_field<T: serde::de::DeserializeOwned>(text: Option<&str>, what: &str) -> Result<T, String> {
    let text = text.ok_or_else(|| format!("the {what} credential has no data"))?;
    serde_json::from_str(text).map_err(|e| format!("the {what} credential's data: {e}"))
}

fn password(credential: &Credential) -> Result<String, String> {
    let secret: Secret = json_field(credential.secret_data.as_deref(), "password")?;
    let data: PasswordData = json_field(credential.credential_data.as_deref(), "password")?;
    let decode = |b64: &str, what: &str| {
        STANDARD
            .decode(b64)
            .map_err(|_| format!("the password credential's {what} is not base64"))
    };
    let hash = decode(&secret.value, "value")?;
    let salt = decode(secret.salt.as_deref().unwrap_or_default(), "salt")?;
    let digest = match data.algorithm.as_str() {
        "pbkdf2" => Pbkdf2Digest::Sha1,
        "pbkdf2-sha256" => Pbkdf2Digest::Sha256,
        "pbkdf2-sha512" => Pbkdf2Digest::Sha512,
        "argon2" => return argon2(&data, &salt, &hash),
        other => {
            return Err(format!(
                "the password credential's algorithm {other:?} is not one Gatehouse verifies \
                 (pbkdf2, pbkdf2-sha256, pbkdf2-sha512 and argon2 are)"
            ));
        }
    };
    Ok(pbkdf2_form(digest, data.hash_iterations, &salt, &hash))
}

/// Keycloak's Argon2 provider keeps its parameters apart; Gatehouse verifies the PHC string.
fn argon2(data: &PasswordData, salt: &[u8], hash: &[u8]) -> Result<String, String> {
    let param = |name: &str, default: &str| {
        data.additional_parameters
            .get(name)
            .and_then(|v| v.first())
            .map_or_else(|| default.to_owned(), Clone::clone)
    };
    let variant = match param("type", "id").as_str() {
        "id" => "argon2id",
        "i" => "argon2i",
        "d" => "argon2d",
        other => return Err(format!("the Argon2 type {other:?} is not id, i or d")),
    };
    let version = match param("version", "1.3").as_str() {
        "1.3" => 19,
        "1.0" => 16,
        other => return Err(format!("the Argon2 version {other:?} is not 1.3 or 1.0")),
    };
    Ok(format!(
        "${variant}$v={version}$m={},t={},p={}${}${}",
        param("memory", "7168"),
        data.hash_iterations,
        param("parallelism", "1"),
        STANDARD_NO_PAD.encode(salt),
        STANDARD_NO_PAD.encode(hash)
    ))
}

/// The secret bytes an authenticator holds: Keycloak shows the base32 of its stored string's bytes
/// (or of the base32 it stored, when `secretEncoding` says so).
fn otp(credential: &Credential) -> Result<Vec<u8>, String> {
    let secret: Secret = json_field(credential.secret_data.as_deref(), "otp")?;
    let data: OtpData = json_field(credential.credential_data.as_deref(), "otp")?;
    if data.sub_type != "totp"
        || data.digits != 6
        || data.period != 30
        || data.algorithm != "HmacSHA1"
    {
        return Err(format!(
            "the OTP credential is {} with {} digits every {} s by {}: Gatehouse's second factor is \
             TOTP with 6 digits every 30 s by HmacSHA1",
            data.sub_type, data.digits, data.period, data.algorithm
        ));
    }
    match data.secret_encoding.as_deref() {
        Some("BASE32") => totp_rs::Secret::Encoded(secret.value)
            .to_bytes()
            .map_err(|_| "the OTP secret is not base32".to_owned()),
        _ => Ok(secret.value.into_bytes()),
    }
}
