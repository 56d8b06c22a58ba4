//! What a client is registered with, checked: `NewClient` (the CLI's flags, the admin API's POST)
//! and `ClientChanges` (the admin API's PATCH) become the fields of a `Client`, or a
//! `VALIDATION_ERROR` naming every bad field by its API name (the CLI names its flag instead).
//!
//! Its tests are most of its length: every field's rule, named as the API names it.

use super::names::check_name;
use crate::addresses::redirect::{self, UriUse};
use crate::crypto::SigningAlg;
use crate::error::{Result, Validator};
use crate::model::resources::Catalog;
use crate::model::{Client, ClientType, GrantType};
use crate::provider::scopes;
use uuid::Uuid;

/// Most URIs of one kind a client may have.
pub const URIS_MAX: usize = 20;

/// A client to register, as given: every field is checked by `Clients::create`.
#[derive(Debug, Clone, Default)]
pub struct NewClient {
    pub name: String,
    /// `confidential` (the default) or `public`.
    pub client_type: Option<String>,
    pub first_party: bool,
    pub redirect_uris: Vec<String>,
    pub post_logout_redirect_uris: Vec<String>,
    /// `None`: `GrantType::DEFAULT`.
    pub grant_types: Option<Vec<String>>,
    /// `None`: `scopes::DEFAULT`.
    pub scopes: Option<Vec<String>>,
    pub backchannel_logout_uri: Option<String>,
    /// `None`: RS256.
    pub id_token_alg: Option<String>,
    /// The organisation the client belongs to (docs/api.md §13); checked by `Clients::create`,
    /// which reads it.
    pub org_id: Option<Uuid>,
    /// A resource server that may introspect tokens (RFC 7662); confidential clients only.
    /// `None`: a confidential client given neither grants nor redirect URIs (§6's `clients add
    /// NAME`, whose purpose that is) may, any other may not.
    pub introspection: Option<bool>,
    /// Whether it must use PKCE; `None`: it must. A public client always must.
    pub pkce_required: Option<bool>,
    /// Whether it must prove a DPoP key at the token endpoint (RFC 9449 §5.2); `None`: it need not.
    pub dpop_required: Option<bool>,
}

/// A change of a client: each `Some` field replaces the client's (`backchannel_logout_uri:
/// Some(None)` removes it). Its type and secret never change.
#[derive(Debug, Clone, Default)]
pub struct ClientChanges {
    /// Accepted only when it is the client's own type: a client sent back as read is no change.
    pub client_type: Option<String>,
    pub name: Option<String>,
    pub first_party: Option<bool>,
    pub redirect_uris: Option<Vec<String>>,
    pub post_logout_redirect_uris: Option<Vec<String>>,
    pub grant_types: Option<Vec<String>>,
    pub scopes: Option<Vec<String>>,
    pub backchannel_logout_uri: Option<Option<String>>,
    pub id_token_alg: Option<String>,
    pub introspection: Option<bool>,
    pub pkce_required: Option<bool>,
    pub dpop_required: Option<bool>,
}

impl ClientChanges {
    pub fn is_empty(&self) -> bool {
        self.client_type.is_none()
            && self.name.is_none()
            && self.first_party.is_none()
            && self.redirect_uris.is_none()
            && self.post_logout_redirect_uris.is_none()
            && self.grant_types.is_none()
            && self.scopes.is_none()
            && self.backchannel_logout_uri.is_none()
            && self.id_token_alg.is_none()
            && self.introspection.is_none()
            && self.pkce_required.is_none()
            && self.dpop_required.is_none()
    }

    /// The client as it would be with these changes, as a `NewClient` to check again whole (a
    /// change can break a rule between fields: no redirect URI left for `authorization_code`).
    pub(super) fn over(self, client: &Client) -> Result<NewClient> {
        if self
            .client_type
            .as_deref()
            .is_some_and(|t| t != client.client_type.as_str())
        {
            return Err(crate::error::Error::field(
                "type",
                "cannot be changed (a public client has no secret, a confidential one keeps its \
                 own): add another client",
            ));
        }
        Ok(NewClient {
            name: self.name.unwrap_or_else(|| client.name.clone()),
            client_type: Some(client.client_type.as_str().to_owned()),
            first_party: self.first_party.unwrap_or(client.first_party),
            redirect_uris: self
                .redirect_uris
                .unwrap_or_else(|| client.redirect_uris.clone()),
            post_logout_redirect_uris: self
                .post_logout_redirect_uris
                .unwrap_or_else(|| client.post_logout_redirect_uris.clone()),
            grant_types: Some(self.grant_types.unwrap_or_else(|| {
                client
                    .grant_types
                    .iter()
                    .map(|g| g.as_str().to_owned())
                    .collect()
            })),
            scopes: Some(self.scopes.unwrap_or_else(|| client.scopes.clone())),
            backchannel_logout_uri: self
                .backchannel_logout_uri
                .unwrap_or_else(|| client.backchannel_logout_uri.clone()),
            id_token_alg: Some(
                self.id_token_alg
                    .unwrap_or_else(|| client.id_token_alg.as_str().to_owned()),
            ),
            org_id: client.org_id,
            introspection: Some(self.introspection.unwrap_or(client.introspection)),
            pkce_required: Some(self.pkce_required.unwrap_or(client.pkce_required)),
            dpop_required: Some(self.dpop_required.unwrap_or(client.dpop_required)),
        })
    }
}

/// The checked fields of a client (all but its id, secret and times).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    pub name: String,
    pub client_type: ClientType,
    pub first_party: bool,
    pub redirect_uris: Vec<String>,
    pub post_logout_redirect_uris: Vec<String>,
    pub grant_types: Vec<GrantType>,
    pub scopes: Vec<String>,
    pub backchannel_logout_uri: Option<String>,
    pub id_token_alg: SigningAlg,
    pub introspection: bool,
    pub pkce_required: bool,
    pub dpop_required: bool,
}

impl NewClient {
    /// Every field checked; the error names each bad one (`name`, `type`, `redirectUris`, …).
    /// `asked_grants`: the grants or redirect URIs were given in this request, so that a client
    /// with `authorization_code` must have a redirect URI. A client given neither keeps the
    /// default grants without one: that is §6's introspection client (`clients add NAME`), and
    /// without a redirect URI no authorization can reach it.
    pub(super) fn check(self, asked_grants: bool, catalog: &Catalog) -> Result<Checked> {
        let mut v = Validator::new();
        // Neither grants nor redirect URIs: §6's introspection client (`clients add NAME`).
        let resource_server = self.grant_types.is_none() && self.redirect_uris.is_empty();
        let name = v.check("name", check_name(&self.name));
        let client_type = v.check(
            "type",
            match self.client_type.as_deref() {
                None => Ok(ClientType::Confidential),
                Some(t) => ClientType::parse(t)
                    .ok_or_else(|| "must be \"confidential\" or \"public\"".to_owned()),
            },
        );
        let redirect_uris = v.check("redirectUris", check_uris(self.redirect_uris));
        let post_logout_redirect_uris = v.check(
            "postLogoutRedirectUris",
            check_uris(self.post_logout_redirect_uris),
        );
        let grant_types = v.check(
            "grantTypes",
            match self.grant_types {
                None => Ok(GrantType::DEFAULT.to_vec()),
                Some(names) => check_grants(&names),
            },
        );
        let scopes = v.check(
            "scopes",
            match self.scopes {
                None => Ok(scopes::DEFAULT.iter().map(|s| (*s).to_owned()).collect()),
                Some(names) => check_scopes(catalog, &names),
            },
        );
        let backchannel_logout_uri = v.check(
            "backchannelLogoutUri",
            match self.backchannel_logout_uri {
                None => Ok(None),
                Some(uri) => redirect::check(&uri, UriUse::Server).map(|()| Some(uri)),
            },
        );
        let id_token_alg = v.check(
            "idTokenSignedResponseAlg",
            match self.id_token_alg.as_deref() {
                None => Ok(SigningAlg::Rs256),
                Some(alg) => alg
                    .parse()
                    .map_err(|e: crate::crypto::UnknownAlg| e.to_string()),
            },
        );
        // The rules between fields, once each field is good on its own.
        if let (Some(client_type), Some(grants)) = (client_type, &grant_types) {
            if client_type == ClientType::Public && grants.contains(&GrantType::ClientCredentials) {
                v.check::<()>(
                    "grantTypes",
                    Err(
                        "a public client cannot have client_credentials: it keeps no secret".into(),
                    ),
                );
            }
            if client_type == ClientType::Public && grants.contains(&GrantType::TokenExchange) {
                v.check::<()>(
                    "grantTypes",
                    Err("a public client cannot exchange tokens: it keeps no secret".into()),
                );
            }
        }
        let introspection = self
            .introspection
            .unwrap_or(client_type == Some(ClientType::Confidential) && resource_server);
        let pkce_required = self.pkce_required.unwrap_or(true);
        if client_type == Some(ClientType::Public) && !pkce_required {
            v.check::<()>(
                "pkceRequired",
                Err("a public client must use PKCE: it has no secret to prove it is itself".into()),
            );
        }
        if client_type == Some(ClientType::Public) && introspection {
            v.check::<()>(
                "introspection",
                Err("a public client cannot introspect: it keeps no secret".into()),
            );
        }
        if let (true, Some(grants), Some(uris)) = (asked_grants, &grant_types, &redirect_uris) {
            if grants.contains(&GrantType::AuthorizationCode) && uris.is_empty() {
                v.check::<()>(
                    "redirectUris",
                    Err("authorization_code needs at least one redirect URI".into()),
                );
            }
        }
        let checked = (|| {
            Some(Checked {
                name: name?,
                client_type: client_type?,
                first_party: self.first_party,
                redirect_uris: redirect_uris?,
                post_logout_redirect_uris: post_logout_redirect_uris?,
                grant_types: grant_types?,
                scopes: scopes?,
                backchannel_logout_uri: backchannel_logout_uri?,
                id_token_alg: id_token_alg?,
                introspection,
                pkce_required,
                dpop_required: self.dpop_required.unwrap_or(false),
            })
        })();
        v.finish(checked)
    }
}

/// Each URI checked (the first bad one named), duplicates dropped, order kept.
fn check_uris(uris: Vec<String>) -> Result<Vec<String>, String> {
    if uris.len() > URIS_MAX {
        return Err(format!("must be at most {URIS_MAX}"));
    }
    let mut kept: Vec<String> = Vec::with_capacity(uris.len());
    for uri in uris {
        redirect::check(&uri, UriUse::Browser).map_err(|reason| {
            let shown: String = uri.chars().take(100).collect();
            format!("{shown:?} {reason}")
        })?;
        if !kept.contains(&uri) {
            kept.push(uri);
        }
    }
    Ok(kept)
}

fn check_grants(names: &[String]) -> Result<Vec<GrantType>, String> {
    let mut grants = Vec::new();
    for name in names {
        let grant = GrantType::parse(name).ok_or_else(|| {
            let shown: String = name.chars().take(64).collect();
            format!(
                "{shown:?} is not a grant (authorization_code, refresh_token, client_credentials, \
                 urn:ietf:params:oauth:grant-type:device_code, \
                 urn:ietf:params:oauth:grant-type:token-exchange)"
            )
        })?;
        if !grants.contains(&grant) {
            grants.push(grant);
        }
    }
    if grants.is_empty() {
        return Err("must name at least one grant".into());
    }
    grants.sort();
    Ok(grants)
}

fn check_scopes(catalog: &Catalog, names: &[String]) -> Result<Vec<String>, String> {
    let scopes = catalog
        .parse_names(names.iter().map(String::as_str))
        .map_err(|e| e.to_string())?;
    if scopes.is_empty() {
        return Err("must name at least one scope".into());
    }
    Ok(scopes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use crate::provider::clients::names::NAME_MAX;

    fn catalog() -> Catalog {
        Catalog::new(vec![crate::model::Resource::contacts_example()])
    }

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    fn web_app() -> NewClient {
        NewClient {
            name: "Grafana".into(),
            redirect_uris: strings(&["https://grafana.example.com/login/generic_oauth"]),
            ..NewClient::default()
        }
    }

    fn refused(client: NewClient) -> Vec<String> {
        let asked = client.grant_types.is_some();
        match client.check(asked, &catalog()) {
            Err(Error::Validation(fields)) => fields.into_keys().collect(),
            other => panic!("not refused: {other:?}"),
        }
    }

    #[test]
    fn defaults_are_the_contracts() {
        let c = web_app().check(false, &catalog()).unwrap();
        assert_eq!(c.client_type, ClientType::Confidential);
        assert!(!c.first_party);
        assert_eq!(c.grant_types, GrantType::DEFAULT);
        assert_eq!(c.scopes, scopes::DEFAULT);
        assert_eq!(c.id_token_alg, SigningAlg::Rs256);
        assert_eq!(c.backchannel_logout_uri, None);
        // An introspection-only client: no redirect URI, no authorization code.
        let service = NewClient {
            name: "billing".into(),
            grant_types: Some(strings(&["client_credentials"])),
            ..NewClient::default()
        };
        assert!(service.check(true, &catalog()).is_ok());
        // §6's `clients add NAME`: the default grants, no redirect URI.
        let introspection = NewClient {
            name: "billing".into(),
            ..NewClient::default()
        };
        let checked = introspection.check(false, &catalog()).unwrap();
        assert_eq!(checked.grant_types, GrantType::DEFAULT);
        // ... which is the one kind that introspects unless told otherwise (docs/api.md §6).
        assert!(checked.introspection);
        assert!(!web_app().check(false, &catalog()).unwrap().introspection);
        let designated = NewClient {
            introspection: Some(true),
            ..web_app()
        };
        assert!(designated.check(false, &catalog()).unwrap().introspection);
    }

    #[test]
    fn names_that_draw_as_another_are_refused() {
        for bad in [
            "Acme\u{202E}lapyaP",
            "Acme\u{200B}Billing",
            "Acme\u{2066}Billing\u{2069}",
            "Acme\u{FEFF}",
            "Acme\u{00AD}Billing",
            "Acme\u{2028}Billing",
            "Acme\u{E000}",
            "Acme\u{0007}",
        ] {
            let client = NewClient {
                name: bad.into(),
                ..web_app()
            };
            assert_eq!(refused(client), ["name"], "{bad:?}");
        }
        for good in ["Zoë's Café", "東京 Billing", "Grafana (staging) – EU"] {
            let client = NewClient {
                name: good.into(),
                ..web_app()
            };
            assert!(client.check(false, &catalog()).is_ok(), "{good:?}");
        }
    }

    #[test]
    fn pkce_is_required_unless_an_operator_lets_a_confidential_client_off() {
        assert!(web_app().check(false, &catalog()).unwrap().pkce_required);
        let legacy = NewClient {
            pkce_required: Some(false),
            ..web_app()
        };
        assert!(!legacy.check(false, &catalog()).unwrap().pkce_required);
        let public = NewClient {
            client_type: Some("public".into()),
            pkce_required: Some(false),
            ..web_app()
        };
        assert_eq!(refused(public), ["pkceRequired"]);
    }

    #[test]
    fn a_public_client_cannot_introspect() {
        let client = NewClient {
            client_type: Some("public".into()),
            introspection: Some(true),
            ..web_app()
        };
        assert_eq!(refused(client), ["introspection"]);
    }

    #[test]
    fn rules_between_fields() {
        let public_machine = NewClient {
            client_type: Some("public".into()),
            grant_types: Some(strings(&["authorization_code", "client_credentials"])),
            ..web_app()
        };
        assert_eq!(refused(public_machine), ["grantTypes"]);
        let no_redirect = NewClient {
            redirect_uris: vec![],
            grant_types: Some(strings(&["authorization_code"])),
            ..web_app()
        };
        assert_eq!(refused(no_redirect), ["redirectUris"]);
    }

    #[test]
    fn each_bad_field_is_named() {
        let bad = NewClient {
            name: " ".into(),
            client_type: Some("private".into()),
            first_party: false,
            redirect_uris: strings(&["http://app.example.com/cb"]),
            post_logout_redirect_uris: strings(&["https://app.example.com/#x"]),
            grant_types: Some(strings(&["implicit"])),
            scopes: Some(strings(&["openid", "admin"])),
            backchannel_logout_uri: Some("com.example.app:/logout".into()),
            id_token_alg: Some("HS256".into()),
            org_id: None,
            introspection: None,
            pkce_required: None,
            dpop_required: None,
        };
        assert_eq!(
            refused(bad),
            [
                "backchannelLogoutUri",
                "grantTypes",
                "idTokenSignedResponseAlg",
                "name",
                "postLogoutRedirectUris",
                "redirectUris",
                "scopes",
                "type"
            ]
        );
        let empty_lists = NewClient {
            grant_types: Some(vec![]),
            scopes: Some(vec![]),
            ..web_app()
        };
        assert_eq!(refused(empty_lists), ["grantTypes", "scopes"]);
        let long = NewClient {
            name: "x".repeat(NAME_MAX + 1),
            ..web_app()
        };
        assert_eq!(refused(long), ["name"]);
    }

    #[test]
    fn lists_lose_duplicates_and_keep_order() {
        let c = NewClient {
            redirect_uris: strings(&[
                "https://b.example/cb",
                "https://a.example/cb",
                "https://b.example/cb",
            ]),
            grant_types: Some(strings(&[
                "refresh_token",
                "authorization_code",
                "refresh_token",
            ])),
            scopes: Some(strings(&["email", "openid", "email"])),
            ..web_app()
        }
        .check(true, &catalog())
        .unwrap();
        assert_eq!(
            c.redirect_uris,
            ["https://b.example/cb", "https://a.example/cb"]
        );
        assert_eq!(c.grant_types, GrantType::DEFAULT);
        assert_eq!(c.scopes, ["email", "openid"]);
    }
}
