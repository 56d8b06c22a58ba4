//! One upstream provider over HTTP: its discovery document, its JWK Set (refetched on an unknown
//! `kid`), the code exchange and the userinfo request. Every exchange is bounded (5 s, 1 MiB, no
//! redirects), so a slow or hostile provider slows only the flows that go through it.

use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use secrecy::ExposeSecret as _;
use url::Url;

use super::id_token::{self, Key};
use super::{ProviderConfig, UpstreamError};
use crate::addresses::is_loopback;

/// One exchange with a provider, from connecting to the last byte.
pub(super) const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(5);
/// The most bytes read of any answer (discovery documents and JWK Sets are a few KiB).
const MAX_ANSWER: usize = 1024 * 1024;
/// An unknown `kid` refetches the JWK Set at most this often per provider: a flood of tokens with
/// made-up key ids must not become a flood of requests to the provider.
pub(super) const REFETCH_EVERY: Duration = Duration::from_secs(60);

/// What discovery found.
#[derive(Debug)]
pub(super) struct Endpoints {
    /// Exactly as the document spells it: the ID token's `iss` must be this string.
    pub(super) issuer: String,
    pub(super) authorization: Url,
    token: Url,
    userinfo: Option<Url>,
    pub(super) jwks: Url,
    /// client_secret_post rather than client_secret_basic (the default of the standard).
    secret_in_body: bool,
}

/// A provider's configuration and what has been learnt about it.
pub(super) struct Upstream {
    pub(super) config: ProviderConfig,
    endpoints: RwLock<Option<Arc<Endpoints>>>,
    keys: RwLock<Arc<Vec<Key>>>,
    /// When the JWK Set was last refetched for an unknown `kid`; the lock also makes concurrent
    /// callbacks wait for one refetch instead of each making its own.
    refetched: tokio::sync::Mutex<Option<Instant>>,
}

impl Upstream {
    pub(super) fn new(config: ProviderConfig) -> Upstream {
        Upstream {
            config,
            endpoints: RwLock::new(None),
            keys: RwLock::new(Arc::new(Vec::new())),
            refetched: tokio::sync::Mutex::new(None),
        }
    }

    pub(super) fn endpoints(&self) -> Option<Arc<Endpoints>> {
        self.endpoints.read().ok().and_then(|e| e.clone())
    }

    /// Fetches the discovery document and the JWK Set; on success the provider is available.
    pub(super) async fn discover(&self, http: &reqwest::Client) -> Result<(), String> {
        let base = self.config.issuer.as_str().trim_end_matches('/');
        let url = Url::parse(&format!("{base}/.well-known/openid-configuration"))
            .map_err(|e| format!("bad discovery URL: {e}"))?;
        let document = get_json(http, &url, None).await?;
        let endpoints = endpoints(&self.config.issuer, &document)?;
        let keys = id_token::keys_of(&get_json(http, &endpoints.jwks, None).await?)?;
        if let Ok(mut slot) = self.keys.write() {
            *slot = Arc::new(keys);
        }
        if let Ok(mut slot) = self.endpoints.write() {
            *slot = Some(Arc::new(endpoints));
        }
        Ok(())
    }

    pub(super) fn keys(&self) -> Arc<Vec<Key>> {
        self.keys
            .read()
            .map(|k| k.clone())
            .unwrap_or_else(|_| Arc::new(Vec::new()))
    }

    /// The JWK Set fetched again, unless the last refetch is younger than `REFETCH_EVERY`. A set
    /// that cannot be fetched leaves the one held in place (logged).
    pub(super) async fn refetch_keys(&self, http: &reqwest::Client, jwks: &Url) {
        let mut last = self.refetched.lock().await;
        if last.is_some_and(|at| at.elapsed() < REFETCH_EVERY) {
            return;
        }
        *last = Some(Instant::now());
        let keys = match get_json(http, jwks, None).await {
            Ok(document) => id_token::keys_of(&document),
            Err(e) => Err(e),
        };
        match keys {
            Ok(keys) => {
                if let Ok(mut slot) = self.keys.write() {
                    *slot = Arc::new(keys);
                }
            }
            Err(reason) => tracing::warn!(
                provider = %self.config.id,
                %reason,
                "identity provider: its JWK Set could not be refetched"
            ),
        }
    }

    /// The code exchanged at the token endpoint: the ID token and the access token.
    pub(super) async fn exchange(
        &self,
        http: &reqwest::Client,
        endpoints: &Endpoints,
        redirect_uri: &str,
        code: &str,
        pkce_verifier: &str,
    ) -> Result<(String, Option<String>), UpstreamError> {
        let config = &self.config;
        let secret = config.client_secret.expose_secret();
        // The serializer is not `Send`: it lives in this block only, so that no await sees it
        // (the callback's future must be `Send` to be an axum handler's).
        let body = {
            let mut form = form_urlencoded::Serializer::new(String::new());
            form.append_pair("grant_type", "authorization_code")
                .append_pair("code", code)
                .append_pair("redirect_uri", redirect_uri)
                .append_pair("code_verifier", pkce_verifier);
            if endpoints.secret_in_body {
                form.append_pair("client_id", &config.client_id)
                    .append_pair("client_secret", secret);
            }
            form.finish()
        };
        let mut request = http
            .post(endpoints.token.clone())
            .header("accept", "application/json");
        if !endpoints.secret_in_body {
            // RFC 6749 §2.3.1: both parts form-encoded before the Basic encoding.
            let user =
                form_urlencoded::byte_serialize(config.client_id.as_bytes()).collect::<String>();
            let pass = form_urlencoded::byte_serialize(secret.as_bytes()).collect::<String>();
            let basic = STANDARD.encode(format!("{user}:{pass}"));
            request = request.header("authorization", format!("Basic {basic}"));
        }
        let request = request
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body);
        let (status, body) = send(request).await.map_err(UpstreamError::Unavailable)?;
        if status.is_server_error() {
            return Err(UpstreamError::Unavailable(format!(
                "the token endpoint answered {status}"
            )));
        }
        let answer: serde_json::Value = serde_json::from_slice(&body).map_err(|_| {
            UpstreamError::Refused(format!("the token endpoint answered {status}, not JSON"))
        })?;
        if !status.is_success() {
            // Only the registered error code: the description is the provider's free text.
            let error =
                id_token::text(answer.get("error")).unwrap_or_else(|| "no error code".into());
            return Err(UpstreamError::Refused(format!("{status}: {error}")));
        }
        let id_token = id_token::text(answer.get("id_token")).ok_or_else(|| {
            UpstreamError::InvalidToken("the token answer has no id_token".into())
        })?;
        Ok((id_token, id_token::text(answer.get("access_token"))))
    }

    /// The userinfo document for this access token, or why not.
    pub(super) async fn userinfo(
        &self,
        http: &reqwest::Client,
        endpoints: &Endpoints,
        access_token: &str,
    ) -> Result<serde_json::Value, String> {
        let Some(url) = &endpoints.userinfo else {
            return Err("no userinfo endpoint".into());
        };
        get_json(http, url, Some(access_token)).await
    }
}

/// The endpoints of a discovery document, checked: its `issuer` must be the configured one
/// (OpenID Connect Discovery §4.3: else anyone serving a document could impersonate it), and
/// every endpoint https (or http on a loopback host, as the issuer may be).
fn endpoints(configured: &Url, document: &serde_json::Value) -> Result<Endpoints, String> {
    let issuer = id_token::text(document.get("issuer")).ok_or("the document has no issuer")?;
    if Url::parse(&issuer).ok().as_ref() != Some(configured) {
        return Err(format!(
            "the document's issuer {issuer:?} is not the configured {configured}"
        ));
    }
    let endpoint = |key: &str| -> Result<Option<Url>, String> {
        let Some(value) = id_token::text(document.get(key)) else {
            return Ok(None);
        };
        let url = Url::parse(&value).map_err(|_| format!("{key} is not a URL"))?;
        match url.scheme() {
            "https" => Ok(Some(url)),
            "http" if is_loopback(&url) => Ok(Some(url)),
            _ => Err(format!("{key} must be https")),
        }
    };
    let required = |key: &str| endpoint(key)?.ok_or_else(|| format!("the document has no {key}"));
    let methods: Vec<&str> = document
        .get("token_endpoint_auth_methods_supported")
        .and_then(|m| m.as_array())
        .map(|m| m.iter().filter_map(|v| v.as_str()).collect())
        .unwrap_or_default();
    let secret_in_body = !methods.is_empty()
        && !methods.contains(&"client_secret_basic")
        && methods.contains(&"client_secret_post");
    if !methods.is_empty() && !methods.contains(&"client_secret_basic") && !secret_in_body {
        return Err(format!(
            "its token endpoint takes neither client_secret_basic nor client_secret_post ({})",
            methods.join(", ")
        ));
    }
    Ok(Endpoints {
        issuer,
        authorization: required("authorization_endpoint")?,
        token: required("token_endpoint")?,
        userinfo: endpoint("userinfo_endpoint")?,
        jwks: required("jwks_uri")?,
        secret_in_body,
    })
}

/// A JSON document by GET (with a bearer token for userinfo).
async fn get_json(
    http: &reqwest::Client,
    url: &Url,
    bearer: Option<&str>,
) -> Result<serde_json::Value, String> {
    let mut request = http.get(url.clone()).header("accept", "application/json");
    if let Some(token) = bearer {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    let (status, body) = send(request).await?;
    if !status.is_success() {
        return Err(format!("{url} answered {status}"));
    }
    serde_json::from_slice(&body).map_err(|_| format!("{url} did not answer JSON"))
}

/// The status and body of one exchange, within `EXCHANGE_TIMEOUT` as a whole and `MAX_ANSWER`.
async fn send(request: reqwest::RequestBuilder) -> Result<(reqwest::StatusCode, Vec<u8>), String> {
    let exchange = async {
        let mut response = request.send().await.map_err(|e| describe(&e))?;
        let status = response.status();
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| describe(&e))? {
            if body.len() + chunk.len() > MAX_ANSWER {
                return Err(format!("its answer is longer than {MAX_ANSWER} bytes"));
            }
            body.extend_from_slice(&chunk);
        }
        Ok((status, body))
    };
    tokio::time::timeout(EXCHANGE_TIMEOUT, exchange)
        .await
        .unwrap_or_else(|_| Err(format!("no answer within {} s", EXCHANGE_TIMEOUT.as_secs())))
}

/// reqwest's error with its causes, on one line (the URL is in it; it holds no secret: codes
/// travel in bodies).
fn describe(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_document_for_another_issuer_or_with_http_endpoints_is_refused() {
        let issuer = Url::parse("https://login.acme.example").unwrap();
        let good = serde_json::json!({
            "issuer": "https://login.acme.example",
            "authorization_endpoint": "https://login.acme.example/auth",
            "token_endpoint": "https://login.acme.example/token",
            "jwks_uri": "https://login.acme.example/jwks",
        });
        let found = endpoints(&issuer, &good).unwrap();
        assert_eq!(found.issuer, "https://login.acme.example");
        assert!(!found.secret_in_body && found.userinfo.is_none());
        let mut other = good.clone();
        other["issuer"] = "https://evil.example".into();
        assert!(
            endpoints(&issuer, &other)
                .unwrap_err()
                .contains("not the configured")
        );
        let mut http = good.clone();
        http["token_endpoint"] = "http://login.acme.example/token".into();
        assert_eq!(
            endpoints(&issuer, &http).unwrap_err(),
            "token_endpoint must be https"
        );
        let mut none = good.clone();
        none.as_object_mut().unwrap().remove("jwks_uri");
        assert_eq!(
            endpoints(&issuer, &none).unwrap_err(),
            "the document has no jwks_uri"
        );
    }

    #[test]
    fn the_secret_goes_in_the_body_only_when_basic_is_not_offered() {
        let issuer = Url::parse("http://127.0.0.1:9").unwrap();
        let mut doc = serde_json::json!({
            "issuer": "http://127.0.0.1:9",
            "authorization_endpoint": "http://127.0.0.1:9/auth",
            "token_endpoint": "http://127.0.0.1:9/token",
            "jwks_uri": "http://127.0.0.1:9/jwks",
            "token_endpoint_auth_methods_supported": ["client_secret_post"],
        });
        assert!(endpoints(&issuer, &doc).unwrap().secret_in_body);
        doc["token_endpoint_auth_methods_supported"] =
            serde_json::json!(["client_secret_post", "client_secret_basic"]);
        assert!(!endpoints(&issuer, &doc).unwrap().secret_in_body);
        doc["token_endpoint_auth_methods_supported"] = serde_json::json!(["private_key_jwt"]);
        assert!(endpoints(&issuer, &doc).is_err());
    }
}
