//! The `credential` a client sends back from `navigator.credentials.create()` / `.get()`, parsed
//! before any ceremony is looked at. WebAuthn's JSON form (`PublicKeyCredential.toJSON()`, Level 3)
//! encodes every binary field as base64url without padding; webauthn-rs would also take standard
//! base64, padded or not, and arrays of numbers. Only the one form is accepted here, so that a
//! client's encoding bug is a clear `VALIDATION_ERROR` naming the field rather than a signature
//! that happens to check on some inputs and not on others.

use serde::de::DeserializeOwned;
use serde_json::Value;
use webauthn_rs::prelude::{PublicKeyCredential, RegisterPublicKeyCredential};

/// The binary fields of both kinds of credential; `userHandle` may be `null` (non-discoverable).
const BINARY_FIELDS: &[&[&str]] = &[
    &["rawId"],
    &["response", "clientDataJSON"],
    &["response", "attestationObject"],
    &["response", "authenticatorData"],
    &["response", "signature"],
    &["response", "userHandle"],
];

/// The answer of `navigator.credentials.create()`.
#[derive(Debug)]
pub struct RegistrationResponse(pub(super) RegisterPublicKeyCredential);

/// The answer of `navigator.credentials.get()`.
#[derive(Debug)]
pub struct AssertionResponse(pub(super) PublicKeyCredential);

impl RegistrationResponse {
    /// The credential, or the reason it is malformed, keyed by its path (`credential.…`).
    pub fn parse(value: Value) -> Result<Self, (String, String)> {
        parse(value, &["attestationObject"]).map(RegistrationResponse)
    }
}

impl AssertionResponse {
    pub fn parse(value: Value) -> Result<Self, (String, String)> {
        parse(value, &["authenticatorData", "signature"]).map(AssertionResponse)
    }

    /// Whether the browser ran the ceremony in a frame of another origin (`crossOrigin: true` in
    /// the client data): a page elsewhere framing the service's pages to get an assertion made.
    /// webauthn-rs refuses it at registration but not at sign-in (0.5.4).
    pub(super) fn cross_origin(&self) -> bool {
        #[derive(serde::Deserialize)]
        struct ClientData {
            #[serde(rename = "crossOrigin")]
            cross_origin: Option<bool>,
        }
        let json = self.0.response.client_data_json.as_slice();
        serde_json::from_slice::<ClientData>(json).is_ok_and(|c| c.cross_origin == Some(true))
    }
}

fn parse<T: DeserializeOwned>(value: Value, required: &[&str]) -> Result<T, (String, String)> {
    let at = |path: &str| format!("credential{path}");
    let Value::Object(object) = &value else {
        return Err((
            at(""),
            "must be an object (PublicKeyCredential.toJSON())".into(),
        ));
    };
    if object.get("type").and_then(Value::as_str) != Some("public-key") {
        return Err((at(".type"), "must be \"public-key\"".into()));
    }
    match object.get("id") {
        Some(Value::String(id)) if is_base64url(id) => {}
        _ => return Err((at(".id"), BASE64URL.into())),
    }
    for name in ["clientDataJSON"].iter().chain(required) {
        if value["response"].get(name).is_none() {
            return Err((at(&format!(".response.{name}")), "is required".into()));
        }
    }
    for path in BINARY_FIELDS {
        let field = path.iter().try_fold(&value, |v, key| v.get(key));
        match field {
            None | Some(Value::Null) => {}
            Some(Value::String(s)) if is_base64url(s) => {}
            Some(_) => return Err((at(&format!(".{}", path.join("."))), BASE64URL.into())),
        }
    }
    // The id the client names must be the credential's (browsers send the two alike).
    let raw_id = value["rawId"].as_str().unwrap_or_default();
    if value["id"].as_str() != Some(raw_id) {
        return Err((at(".id"), "must equal rawId".into()));
    }
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let path = if path == "." {
            String::new()
        } else {
            format!(".{path}")
        };
        (at(&path), e.inner().to_string())
    })
}

const BASE64URL: &str = "must be base64url without padding (RFC 4648 §5)";

fn is_base64url(s: &str) -> bool {
    // A length of 1 mod 4 is no whole byte.
    s.len() % 4 != 1
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn assertion() -> Value {
        json!({
            "id": "AAEC", "rawId": "AAEC", "type": "public-key",
            "response": {"clientDataJSON": "e30", "authenticatorData": "AAEC", "signature": "AAEC",
                         "userHandle": null},
            "clientExtensionResults": {}
        })
    }

    #[test]
    fn only_unpadded_base64url_is_taken() {
        assert!(AssertionResponse::parse(assertion()).is_ok());
        for (field, bad) in [
            ("signature", "AA+C"),
            ("signature", "AA/C"),
            ("signature", "AAE="),
            ("signature", "A"),
            ("authenticatorData", "AA EC"),
        ] {
            let mut v = assertion();
            v["response"][field] = json!(bad);
            let (path, reason) = AssertionResponse::parse(v).unwrap_err();
            assert_eq!(path, format!("credential.response.{field}"), "{bad}");
            assert!(reason.contains("base64url"), "{reason}");
        }
        let mut v = assertion();
        v["rawId"] = json!([0, 1, 2]);
        assert_eq!(
            AssertionResponse::parse(v).unwrap_err().0,
            "credential.rawId"
        );
    }

    #[test]
    fn the_shape_is_checked_and_named() {
        assert_eq!(
            AssertionResponse::parse(json!("x")).unwrap_err().0,
            "credential"
        );
        let mut v = assertion();
        v["type"] = json!("password");
        assert_eq!(
            AssertionResponse::parse(v).unwrap_err().0,
            "credential.type"
        );
        let mut v = assertion();
        v["response"].as_object_mut().unwrap().remove("signature");
        assert_eq!(
            AssertionResponse::parse(v).unwrap_err().0,
            "credential.response.signature"
        );
        let mut v = assertion();
        v["id"] = json!("AAED");
        assert_eq!(AssertionResponse::parse(v).unwrap_err().0, "credential.id");
        assert_eq!(
            RegistrationResponse::parse(assertion()).unwrap_err().0,
            "credential.response.attestationObject"
        );
    }
}
