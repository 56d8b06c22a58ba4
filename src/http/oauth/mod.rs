//! OAuth 2.0 and OpenID Connect endpoints (docs/api.md §6, §11): RFC 7662 introspection for
//! registered clients, and the discovery documents. These speak OAuth's own JSON (`{"active": …}`,
//! `{"error": …}`), not the envelope, so that stock OAuth libraries can call them. Client
//! authentication is here once for every endpoint that takes it.

use std::net::IpAddr;

use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use utoipa_axum::router::OpenApiRouter;

use super::AppState;
use crate::error::Error;
use crate::model::Client;
use crate::provider::OAuthError;

mod authorize;
mod device;
mod discovery;
mod end_session;
pub(crate) mod errors;
mod introspect;
mod register;
mod revoke;
mod token;
mod userinfo;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .merge(introspect::router())
        .merge(discovery::router())
        .merge(authorize::router())
        .merge(token::router())
        .merge(device::router())
        .merge(userinfo::router())
        .merge(revoke::router())
        .merge(end_session::router())
        .merge(register::router())
}

/// Why a client was not accepted at an endpoint that takes client authentication.
pub(crate) enum ClientRefused {
    /// Wrong or missing credentials, or a confidential client naming itself without its secret:
    /// `invalid_client` (with why, for the endpoints that describe their errors).
    Invalid(&'static str),
    /// Two methods at once, or a repeated parameter: `invalid_request` (RFC 6749 §2.3).
    Ambiguous,
    /// Throttled (too many wrong credentials from the address), or the store failed.
    Failed(Error),
}

impl ClientRefused {
    /// The plain OAuth answer of introspection and revocation: `{"error": …}`, no description.
    pub(crate) fn into_plain_response(self) -> Response {
        match self {
            ClientRefused::Invalid(_) => errors::answer(OAuthError::InvalidClient, None),
            ClientRefused::Ambiguous => errors::answer(OAuthError::InvalidRequest, None),
            ClientRefused::Failed(Error::RateLimited { retry_after }) => {
                errors::rate_limited(retry_after, None)
            }
            ClientRefused::Failed(error) => error.into_response(),
        }
    }
}

/// The client calling an endpoint that takes client authentication (RFC 6749 §2.3): a
/// confidential client by its secret, or, where `public_may_call`, a public client naming itself
/// with `client_id`. Where only confidential clients may call, missing credentials are wrong
/// credentials: checked (and counted against the address) the same way.
pub(crate) async fn calling_client(
    state: &AppState,
    headers: &HeaderMap,
    form: Option<&[(String, String)]>,
    ip: IpAddr,
    public_may_call: bool,
) -> Result<Client, ClientRefused> {
    const WRONG: &str = "the client credentials are wrong";
    let clients = &state.auth.clients;
    let (id, secret) = match client_credentials(headers, form) {
        ClientCredentials::Secret { id, secret } => (id, secret),
        ClientCredentials::Ambiguous => return Err(ClientRefused::Ambiguous),
        ClientCredentials::None { id: Some(id) } if public_may_call => {
            return match clients.find(&id).await.map_err(ClientRefused::Failed)? {
                Some(client) if client.is_public() => Ok(client),
                _ => Err(ClientRefused::Invalid("the client must authenticate")),
            };
        }
        ClientCredentials::None { id: None } if public_may_call => {
            return Err(ClientRefused::Invalid("no client credentials"));
        }
        ClientCredentials::None { id } => (id.unwrap_or_default(), String::new()),
    };
    clients
        .authenticate(&id, &secret, Some(ip))
        .await
        .map_err(ClientRefused::Failed)?
        .ok_or(ClientRefused::Invalid(WRONG))
}

/// A client's form-encoded call at an endpoint that takes client authentication and describes its
/// errors (the token endpoint, device authorization): the form, the caller's address and the
/// client, or the OAuth answer that refuses the call.
pub(crate) async fn client_form(
    state: &AppState,
    peer: std::net::SocketAddr,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<(Vec<(String, String)>, IpAddr, Client), Response> {
    let refusal = |error: OAuthError, why: &str| errors::answer(error, Some(why.to_owned()));
    state
        .require_provider()
        .map_err(IntoResponse::into_response)?;
    let Some(form) = form_parameters(headers, body) else {
        return Err(refusal(
            OAuthError::InvalidRequest,
            "the body must be application/x-www-form-urlencoded",
        ));
    };
    let ip = crate::http::extract::client_ip(peer.ip(), headers, &state.trusted_proxies);
    match calling_client(state, headers, Some(&form), ip, true).await {
        Ok(client) => Ok((form, ip, client)),
        Err(ClientRefused::Invalid(why)) => Err(refusal(OAuthError::InvalidClient, why)),
        Err(ClientRefused::Ambiguous) => Err(refusal(
            OAuthError::InvalidRequest,
            "the client authenticated by more than one method, or a parameter was repeated",
        )),
        Err(ClientRefused::Failed(error)) => Err(errors::failed(error)),
    }
}

/// A form body's parameters; `None` without a form content type or with a body that is not one.
pub(crate) fn form_parameters(headers: &HeaderMap, body: &[u8]) -> Option<Vec<(String, String)>> {
    let form = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| {
            v.trim()
                .eq_ignore_ascii_case("application/x-www-form-urlencoded")
        });
    form.then(|| {
        form_urlencoded::parse(body)
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect()
    })
}

/// A parameter given at most once (RFC 6749 §3.2: a parameter must not be repeated): `Ok(None)`
/// when absent, `Err(())` when repeated. An empty value counts as absent.
pub(crate) fn single<'a>(form: &'a [(String, String)], name: &str) -> Result<Option<&'a str>, ()> {
    let mut values = form
        .iter()
        .filter(|(k, _)| k == name)
        .map(|(_, v)| v.as_str());
    let first = values.next();
    if values.next().is_some() {
        return Err(());
    }
    Ok(first.filter(|v| !v.is_empty()))
}

/// How a client presented its credentials (RFC 6749 §2.3.1).
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ClientCredentials {
    /// `client_secret_basic` or `client_secret_post`: an id and a secret.
    Secret { id: String, secret: String },
    /// No secret at all: a public client names itself with `client_id`, or nobody is named.
    None { id: Option<String> },
    /// Two methods at once, or a repeated parameter: `invalid_request` (RFC 6749 §2.3).
    Ambiguous,
}

/// The client's credentials: HTTP Basic, or `client_id` and `client_secret` in the form.
pub(crate) fn client_credentials(
    headers: &HeaderMap,
    form: Option<&[(String, String)]>,
) -> ClientCredentials {
    let (id, secret) = match form {
        Some(form) => match (single(form, "client_id"), single(form, "client_secret")) {
            (Ok(id), Ok(secret)) => (id, secret),
            _ => return ClientCredentials::Ambiguous,
        },
        None => (None, None),
    };
    if headers.contains_key(header::AUTHORIZATION) {
        if secret.is_some() {
            return ClientCredentials::Ambiguous;
        }
        // Unreadable Basic credentials are wrong credentials: checked (and counted) the same way.
        let (basic_id, basic_secret) = basic_credentials(headers).unwrap_or_default();
        if id.is_some_and(|id| id != basic_id) {
            return ClientCredentials::Ambiguous;
        }
        return ClientCredentials::Secret {
            id: basic_id,
            secret: basic_secret,
        };
    }
    match (id, secret) {
        (Some(id), Some(secret)) => ClientCredentials::Secret {
            id: id.to_owned(),
            secret: secret.to_owned(),
        },
        (None, Some(_)) => ClientCredentials::Ambiguous,
        (id, None) => ClientCredentials::None {
            id: id.map(str::to_owned),
        },
    }
}

/// `Authorization: Basic base64(id:secret)`, each part form-urlencoded (RFC 6749 §2.3.1).
fn basic_credentials(headers: &HeaderMap) -> Option<(String, String)> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, encoded) = value.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()?;
    let decoded = String::from_utf8(decoded).ok()?;
    let (id, secret) = decoded.split_once(':')?;
    let unescape = |s: &str| -> Option<String> {
        let plus = s.replace('+', " ");
        percent_encoding::percent_decode_str(&plus)
            .decode_utf8()
            .ok()
            .map(|c| c.into_owned())
    };
    Some((unescape(id)?, unescape(secret)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn basic(id: &str, secret: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        let encoded = base64::engine::general_purpose::STANDARD.encode(format!("{id}:{secret}"));
        headers.insert(
            header::AUTHORIZATION,
            format!("Basic {encoded}").parse().unwrap(),
        );
        headers
    }

    #[test]
    fn client_credentials_come_by_one_method() {
        let secret = |id: &str, s: &str| ClientCredentials::Secret {
            id: id.into(),
            secret: s.into(),
        };
        let none = HeaderMap::new();
        assert_eq!(client_credentials(&basic("a", "s"), None), secret("a", "s"));
        let post = form(&[("client_id", "a"), ("client_secret", "s")]);
        assert_eq!(client_credentials(&none, Some(&post)), secret("a", "s"));
        let public = form(&[("client_id", "a")]);
        assert_eq!(
            client_credentials(&none, Some(&public)),
            ClientCredentials::None {
                id: Some("a".into())
            }
        );
        assert_eq!(
            client_credentials(&none, Some(&[])),
            ClientCredentials::None { id: None }
        );
        // Basic plus the same client_id is allowed (some libraries send both).
        assert_eq!(
            client_credentials(&basic("a", "s"), Some(&public)),
            secret("a", "s")
        );
        for (headers, body) in [
            (basic("a", "s"), post.clone()),
            (basic("a", "s"), form(&[("client_id", "b")])),
            (none.clone(), form(&[("client_secret", "s")])),
            (
                none.clone(),
                form(&[
                    ("client_id", "a"),
                    ("client_id", "a"),
                    ("client_secret", "s"),
                ]),
            ),
        ] {
            assert_eq!(
                client_credentials(&headers, Some(&body)),
                ClientCredentials::Ambiguous,
                "{body:?}"
            );
        }
    }
}
