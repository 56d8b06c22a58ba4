//! Client metadata as a client states it about itself (RFC 7591 §2), in a registration request or
//! in a client ID metadata document, turned into a `NewClient` under the rules of docs/api.md §12
//! for clients nobody vetted: third-party always, redirect URIs https or loopback only, the code
//! grant (and refresh) only, scopes bounded by what the provider supports.

use serde::Deserialize;
use url::Url;

use super::spec::NewClient;
use crate::addresses::{self, redirect, redirect::UriUse};
use crate::model::Catalog;
use crate::provider::OAuthError;

/// The fields Gatehouse reads; others are ignored (RFC 7591 §2: a server may ignore any).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ClientMetadata {
    /// Only in a metadata document, where it must be the document's URL.
    #[serde(default)]
    pub client_id: Option<String>,
    /// Only to be refused: a metadata document must not carry a secret.
    #[serde(default)]
    pub client_secret: Option<serde_json::Value>,
    #[serde(default)]
    pub redirect_uris: Option<Vec<String>>,
    #[serde(default)]
    pub token_endpoint_auth_method: Option<String>,
    #[serde(default)]
    pub grant_types: Option<Vec<String>>,
    #[serde(default)]
    pub response_types: Option<Vec<String>>,
    #[serde(default)]
    pub client_name: Option<String>,
    /// Space-separated.
    #[serde(default)]
    pub scope: Option<String>,
    #[serde(default)]
    pub post_logout_redirect_uris: Option<Vec<String>>,
    #[serde(default)]
    pub id_token_signed_response_alg: Option<String>,
    /// RFC 9449 §5.2: the client asks that its tokens always be DPoP-bound.
    #[serde(default)]
    pub dpop_bound_access_tokens: Option<bool>,
}

/// Why metadata was refused: the RFC 7591 §3.2.2 error and a sentence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataRefused {
    /// `invalid_redirect_uri` or `invalid_client_metadata`.
    pub error: OAuthError,
    pub description: String,
}

pub(super) fn metadata_error(description: impl Into<String>) -> MetadataRefused {
    MetadataRefused {
        error: OAuthError::InvalidClientMetadata,
        description: description.into(),
    }
}

fn redirect_error(description: impl Into<String>) -> MetadataRefused {
    MetadataRefused {
        error: OAuthError::InvalidRedirectUri,
        description: description.into(),
    }
}

/// The `token_endpoint_auth_method` a registration settled on.
pub(super) fn auth_method(meta: &ClientMetadata) -> Result<&'static str, MetadataRefused> {
    // RFC 7591 §2: client_secret_basic when absent.
    match meta.token_endpoint_auth_method.as_deref() {
        None | Some("client_secret_basic") => Ok("client_secret_basic"),
        Some("client_secret_post") => Ok("client_secret_post"),
        Some("none") => Ok("none"),
        Some(other) => Err(metadata_error(format!(
            "token_endpoint_auth_method {:?} is not supported: client_secret_basic, \
             client_secret_post or none",
            shown(other)
        ))),
    }
}

/// The client `meta` describes, public when `auth_method` is `none`. Unknown scopes are dropped
/// (RFC 7591 §2 lets the server narrow them); the answer says which were kept.
pub(super) fn new_client(
    meta: &ClientMetadata,
    auth_method: &str,
    fallback_name: &str,
    catalog: &Catalog,
) -> Result<NewClient, MetadataRefused> {
    let redirect_uris = meta.redirect_uris.clone().unwrap_or_default();
    for uri in redirect_uris
        .iter()
        .chain(meta.post_logout_redirect_uris.iter().flatten())
    {
        check_uri(uri)?;
    }
    let grants = meta
        .grant_types
        .clone()
        .unwrap_or_else(|| vec!["authorization_code".to_owned()]);
    for grant in &grants {
        match grant.as_str() {
            "authorization_code" | "refresh_token" => {}
            "client_credentials" => {
                return Err(metadata_error(
                    "client_credentials is not offered to clients that register themselves: \
                     ask the operator for a client",
                ));
            }
            other => {
                return Err(metadata_error(format!(
                    "grant type {:?} is not supported: authorization_code, refresh_token",
                    shown(other)
                )));
            }
        }
    }
    if !grants.iter().any(|g| g == "authorization_code") {
        return Err(metadata_error(
            "grant_types must include authorization_code",
        ));
    }
    if redirect_uris.is_empty() {
        return Err(redirect_error("redirect_uris must name at least one URI"));
    }
    if let Some(types) = &meta.response_types {
        if types.iter().any(|t| t != "code") {
            return Err(metadata_error("response_types may only be [\"code\"]"));
        }
    }
    let scopes = match meta.scope.as_deref() {
        None => None,
        Some(text) => {
            let mut kept: Vec<String> = Vec::new();
            for scope in text.split(' ').filter(|s| catalog.is_known(s)) {
                if !kept.iter().any(|k| k == scope) {
                    kept.push(scope.to_owned());
                }
            }
            if kept.is_empty() {
                return Err(metadata_error(format!(
                    "scope names none of the supported scopes ({})",
                    catalog.all().join(" ")
                )));
            }
            Some(kept)
        }
    };
    let name = meta
        .client_name
        .as_deref()
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .unwrap_or(fallback_name);
    Ok(NewClient {
        name: name.to_owned(),
        client_type: Some(
            if auth_method == "none" {
                "public"
            } else {
                "confidential"
            }
            .into(),
        ),
        first_party: false,
        redirect_uris,
        post_logout_redirect_uris: meta.post_logout_redirect_uris.clone().unwrap_or_default(),
        grant_types: Some(grants),
        scopes,
        backchannel_logout_uri: None,
        id_token_alg: meta.id_token_signed_response_alg.clone(),
        // Never bound to an organisation: that is an operator's decision (docs/api.md §13).
        org_id: None,
        // Nor a resource server that reads others' tokens (§6): the operator designates those.
        introspection: Some(false),
        // Nor let off PKCE: only an operator may, for a relying party it knows.
        pkce_required: Some(true),
        // A client may bind itself more strictly, never less.
        dpop_required: meta.dpop_bound_access_tokens,
    })
}

/// A self-registered client's URI: https, or http on a loopback address (RFC 8252 §7.3); never a
/// private-use scheme, which any app on a device can claim.
fn check_uri(uri: &str) -> Result<(), MetadataRefused> {
    redirect::check(uri, UriUse::Browser)
        .map_err(|why| redirect_error(format!("{:?} {why}", shown(uri))))?;
    let url = Url::parse(uri).map_err(|_| redirect_error("not an absolute URI"))?;
    if !addresses::https_or_loopback(&url) {
        return Err(redirect_error(format!(
            "{:?} must be https, or http on a loopback address",
            shown(uri)
        )));
    }
    Ok(())
}

fn shown(text: &str) -> String {
    text.chars().take(100).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog() -> Catalog {
        Catalog::new(vec![crate::model::Resource::contacts_example()])
    }

    fn meta(json: serde_json::Value) -> ClientMetadata {
        serde_json::from_value(json).unwrap()
    }

    fn refused(json: serde_json::Value) -> OAuthError {
        let m = meta(json);
        let method = auth_method(&m).map_err(|e| e.error);
        match method.and_then(|a| new_client(&m, a, "x", &catalog()).map_err(|e| e.error)) {
            Err(e) => e,
            Ok(c) => panic!("accepted: {c:?}"),
        }
    }

    #[test]
    fn defaults_and_narrowing() {
        let m = meta(serde_json::json!({
            "redirect_uris": ["https://app.example/cb", "http://127.0.0.1/cb"],
            "scope": "openid email tools:run",
            "token_endpoint_auth_method": "none"
        }));
        let c = new_client(&m, auth_method(&m).unwrap(), "app.example", &catalog()).unwrap();
        assert_eq!(c.client_type.as_deref(), Some("public"));
        assert!(!c.first_party);
        assert_eq!(c.grant_types, Some(vec!["authorization_code".to_owned()]));
        assert_eq!(
            c.scopes,
            Some(vec!["openid".to_owned(), "email".to_owned()])
        );
        assert_eq!(c.name, "app.example");
        assert_eq!(
            auth_method(&ClientMetadata::default()),
            Ok("client_secret_basic")
        );
    }

    #[test]
    fn refusals() {
        let uri = serde_json::json!(["https://app.example/cb"]);
        for (json, error) in [
            (serde_json::json!({}), OAuthError::InvalidRedirectUri),
            (
                serde_json::json!({"redirect_uris": ["http://app.example/cb"]}),
                OAuthError::InvalidRedirectUri,
            ),
            (
                serde_json::json!({"redirect_uris": ["com.example.app:/cb"]}),
                OAuthError::InvalidRedirectUri,
            ),
            (
                serde_json::json!({"redirect_uris": ["https://app.example/cb#f"]}),
                OAuthError::InvalidRedirectUri,
            ),
            (
                serde_json::json!({"redirect_uris": uri, "grant_types": ["client_credentials"]}),
                OAuthError::InvalidClientMetadata,
            ),
            (
                serde_json::json!({"redirect_uris": uri, "grant_types": ["implicit"]}),
                OAuthError::InvalidClientMetadata,
            ),
            (
                serde_json::json!({"redirect_uris": uri, "grant_types": ["refresh_token"]}),
                OAuthError::InvalidClientMetadata,
            ),
            (
                serde_json::json!({"redirect_uris": uri, "response_types": ["token"]}),
                OAuthError::InvalidClientMetadata,
            ),
            (
                serde_json::json!({"redirect_uris": uri, "scope": "admin"}),
                OAuthError::InvalidClientMetadata,
            ),
            (
                serde_json::json!({"redirect_uris": uri, "token_endpoint_auth_method": "private_key_jwt"}),
                OAuthError::InvalidClientMetadata,
            ),
        ] {
            assert_eq!(refused(json.clone()), error, "{json}");
        }
    }
}
