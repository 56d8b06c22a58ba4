//! Client ID metadata documents (draft-ietf-oauth-client-id-metadata-document; docs/api.md §12):
//! with `GATEHOUSE_OAUTH_CLIENT_METADATA_DOCUMENTS=on`, a `client_id` that is an https URL names
//! a JSON document the client serves about itself. It is fetched (`crate::fetch`: the SSRF rules)
//! when first seen and again once its `Cache-Control` lapses (at most a day), and kept as a row
//! of the registry so that consents, codes and sessions hang off it like any client's. A refused
//! document leaves nothing behind.

use url::Url;
use uuid::Uuid;

use super::Clients;
use super::metadata::{self, ClientMetadata};
use crate::error::Result;
use crate::model::{Catalog, Client, ClientOrigin};

/// Longest a document is believed without fetching it again.
const MAX_FRESH_MS: i64 = 24 * 3_600_000;
/// Believed this long when its `Cache-Control` says nothing.
const DEFAULT_FRESH_MS: i64 = 5 * 60_000;
/// Longest `client_id` URL.
const URL_MAX: usize = 2_000;

impl Clients {
    /// Whether an https `client_id` is read as a metadata document's URL.
    pub fn documents_on(&self) -> bool {
        self.core.settings.client_registration.metadata_documents
    }

    /// Whether `client_id` would be read as a metadata document's URL.
    pub fn names_document(&self, client_id: &str) -> bool {
        let settings = &self.core.settings.client_registration;
        settings.metadata_documents
            && (client_id.starts_with("https://")
                || (settings.insecure_loopback && client_id.starts_with("http://")))
    }

    /// The client whose document is at `url`: as stored while fresh, else fetched now. `Err`
    /// (inside) says why the document was refused.
    pub(super) async fn document_client(
        &self,
        url: &str,
    ) -> Result<std::result::Result<Client, String>> {
        let parsed = match check_url(url) {
            Ok(parsed) => parsed,
            Err(why) => return Ok(Err(why)),
        };
        let now = self.core.clock.now_ms();
        let stored = self.core.store.client_by_metadata_url(url).await?;
        if let Some(client) = &stored {
            if let ClientOrigin::MetadataDocument { fresh_until, .. } = client.origin {
                if now < fresh_until {
                    return Ok(Ok(client.clone()));
                }
            }
        }
        self.core.throttle.document_fetch()?;
        let fetched = match self.fetcher.fetch(&parsed).await {
            Ok(fetched) => fetched,
            Err(why) => {
                tracing::info!(url = %url, why = %why, "client metadata document refused");
                return Ok(Err(why));
            }
        };
        let fresh_ms = fetched.max_age.map_or(DEFAULT_FRESH_MS, |age| {
            i64::try_from(age.as_millis()).unwrap_or(i64::MAX)
        });
        let catalog = self.core.catalog.current();
        let client = match read_document(url, &parsed, &fetched.body, &catalog) {
            Ok(new) => new,
            Err(why) => {
                tracing::info!(url = %url, why = %why, "client metadata document refused");
                return Ok(Err(why));
            }
        };
        let checked = match client.check(true, &catalog) {
            Ok(checked) => checked,
            Err(error) => {
                let why = match super::registration::refusal(error) {
                    crate::provider::OAuthFailure::Refused { description, .. } => description,
                    crate::provider::OAuthFailure::Failed(error) => return Err(error),
                };
                return Ok(Err(why));
            }
        };
        if self.copies_operator_name(&checked.name).await? {
            let why = super::COPIED_NAME.to_owned();
            tracing::info!(url = %url, why = %why, "client metadata document refused");
            return Ok(Err(why));
        }
        let origin = ClientOrigin::MetadataDocument {
            url: url.to_owned(),
            fresh_until: now + fresh_ms.min(MAX_FRESH_MS),
        };
        let client = Client {
            id: stored.as_ref().map_or_else(Uuid::now_v7, |c| c.id),
            name: checked.name,
            client_type: checked.client_type,
            first_party: false,
            secret_hash: Vec::new(),
            redirect_uris: checked.redirect_uris,
            post_logout_redirect_uris: checked.post_logout_redirect_uris,
            grant_types: checked.grant_types,
            scopes: checked.scopes,
            backchannel_logout_uri: None,
            id_token_alg: checked.id_token_alg,
            // A stranger's client belongs to no organisation, and introspects no one's tokens.
            org_id: None,
            introspection: false,
            previous_secret: None,
            pkce_required: true,
            dpop_required: checked.dpop_required,
            created_at: stored.as_ref().map_or(now, |c| c.created_at),
            updated_at: stored.as_ref().map_or(now, |c| now.max(c.updated_at + 1)),
            origin,
        };
        let client = self.core.store.put_metadata_client(&client).await?;
        if stored.is_none() {
            let event = crate::auth::audit::AuditEvent::ClientRegistered {
                client: client.id,
                origin: client.origin.as_str(),
            };
            self.core
                .audit(event, crate::auth::audit::Subject::anyone())
                .await;
        }
        Ok(Ok(client))
    }
}

/// The draft's rules for the URL itself (§3): https (or the tests' loopback http, which the
/// fetcher alone allows), a path, no fragment, no user name or password, no dot segments.
fn check_url(url: &str) -> std::result::Result<Url, String> {
    if url.len() > URL_MAX {
        return Err(format!("the client_id URL is longer than {URL_MAX} bytes"));
    }
    let parsed = Url::parse(url).map_err(|_| "the client_id is not a URL".to_owned())?;
    // Compared as sent: the document must name exactly this string.
    if parsed.as_str() != url {
        return Err("the client_id URL is not in its normal form".into());
    }
    if parsed.fragment().is_some() || !parsed.username().is_empty() || parsed.password().is_some() {
        return Err("the client_id URL must have no fragment, user name or password".into());
    }
    if parsed.path() == "/" {
        return Err("the client_id URL must have a path".into());
    }
    Ok(parsed)
}

/// The client a fetched document describes, or why it is refused.
fn read_document(
    url: &str,
    parsed: &Url,
    body: &[u8],
    catalog: &Catalog,
) -> std::result::Result<super::NewClient, String> {
    let meta: ClientMetadata = serde_json::from_slice(body)
        .map_err(|_| "the document is not a JSON object of client metadata".to_owned())?;
    if meta.client_id.as_deref() != Some(url) {
        return Err("the document's client_id is not its own URL".into());
    }
    if meta.client_secret.is_some() {
        return Err("the document must not carry a client_secret".into());
    }
    // A document is public: anyone can read it, so it can hold no secret to authenticate with.
    match meta.token_endpoint_auth_method.as_deref() {
        None | Some("none") => {}
        Some(other) => {
            return Err(format!(
                "token_endpoint_auth_method {:?} is not supported for a metadata document: none",
                other.chars().take(64).collect::<String>()
            ));
        }
    }
    let host = parsed.host_str().unwrap_or("client").to_owned();
    metadata::new_client(&meta, "none", &host, catalog).map_err(|r| r.description)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_rules() {
        assert!(check_url("https://app.example/client.json").is_ok());
        for bad in [
            "https://app.example/",
            "https://app.example",
            "https://app.example/a#b",
            "https://u:p@app.example/a",
            "https://app.example/a/../b",
            "https://APP.example/a",
            "not a url",
        ] {
            assert!(check_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn documents() {
        let url = "https://app.example/client.json";
        let parsed = Url::parse(url).unwrap();
        let catalog = Catalog::new(vec![crate::model::Resource::contacts_example()]);
        let doc =
            |v: serde_json::Value| read_document(url, &parsed, v.to_string().as_bytes(), &catalog);
        let good = doc(serde_json::json!({
            "client_id": url,
            "client_name": "Agent",
            "redirect_uris": ["http://127.0.0.1:33418/callback"],
        }))
        .unwrap();
        assert_eq!(good.client_type.as_deref(), Some("public"));
        assert_eq!(good.name, "Agent");
        for bad in [
            serde_json::json!({"client_id": "https://other.example/client.json", "redirect_uris": ["https://a.example/cb"]}),
            serde_json::json!({"redirect_uris": ["https://a.example/cb"]}),
            serde_json::json!({"client_id": url, "redirect_uris": ["https://a.example/cb"], "client_secret": "s"}),
            serde_json::json!({"client_id": url, "redirect_uris": ["https://a.example/cb"], "token_endpoint_auth_method": "client_secret_basic"}),
            serde_json::json!({"client_id": url}),
            serde_json::json!([1, 2]),
        ] {
            assert!(doc(bad.clone()).is_err(), "{bad}");
        }
    }
}
