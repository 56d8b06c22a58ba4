//! Other OpenID providers, spoken to as their relying party (docs/api.md §14): the providers of
//! `GATEHOUSE_IDENTITY_PROVIDERS`, their discovery, the code exchange (`provider`) and the ID
//! token's validation (`id_token`). It speaks HTTP as a client only, and keeps nothing: no axum,
//! no SQL, no accounts. Signing people in through them (state, accounts, links, sessions) is
//! `crate::federation`, which stands on `auth`; this stands below both, so that the password login
//! can tell which addresses a provider owns.
//!
//! Nothing a request asks of `Providers` without a flow (`list`, `get`, `for_address`,
//! `authorization`) waits on the network: discovery runs in the background, so a provider out of
//! reach shows as unavailable instead of slowing the sign-in page.

mod id_token;
mod provider;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rand::RngCore as _;
use sha2::{Digest as _, Sha256};

use provider::{EXCHANGE_TIMEOUT, Upstream};

/// One `[[provider]]` of the file, checked.
#[derive(Clone, Debug)]
pub struct ProviderConfig {
    pub id: String,
    pub name: String,
    pub issuer: url::Url,
    pub client_id: String,
    pub client_secret: secrecy::SecretString,
    /// Default `["openid", "email", "profile"]`; "openid" always included.
    pub scopes: Vec<String>,
    /// Lower-case, no leading dot; each covers its subdomains.
    pub domains: Vec<String>,
    /// An organisation's slug; its existence is checked at start by the services.
    pub org: Option<String>,
    pub signup: bool,
    pub trust_second_factor: bool,
}

/// A provider as the sign-in page shows it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ProviderSummary {
    pub id: String,
    pub name: String,
    /// Its discovery document and JWK Set are in hand.
    pub available: bool,
    pub domains: Vec<String>,
}

/// An authorization request to send the browser to, and what the callback must check it against
/// (the flow keeps `state`, `nonce` and `pkce_verifier`, bound to the browser).
#[derive(Clone)]
pub struct Authorization {
    pub url: String,
    pub state: String,
    pub nonce: String,
    pub pkce_verifier: String,
}

/// Who the provider says signed in, from a validated ID token (and userinfo).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UpstreamIdentity {
    pub subject: String,
    pub email: Option<String>,
    pub email_verified: bool,
    pub name: Option<String>,
    pub amr: Vec<String>,
    /// When the person last signed in at the provider (seconds since the epoch), if it said.
    pub auth_time: Option<i64>,
}

/// Why a provider gave no identity. The text is for logs: it may quote the provider, so it never
/// goes into a URL or a page.
#[derive(Debug, thiserror::Error)]
pub enum UpstreamError {
    #[error("unknown provider")]
    UnknownProvider,
    /// Discovery not done, unreachable, timeout, 5xx.
    #[error("provider unavailable: {0}")]
    Unavailable(String),
    /// The token endpoint's error answer (invalid_grant…).
    #[error("provider refused: {0}")]
    Refused(String),
    /// Signature, iss, aud, azp, exp, iat, nonce or sub.
    #[error("ID token invalid: {0}")]
    InvalidToken(String),
}

/// The configured providers and what is known of each. Cheap to clone.
#[derive(Clone)]
pub struct Providers {
    inner: Arc<Inner>,
}

struct Inner {
    upstreams: Vec<Upstream>,
    /// Discovery is started once, however often `discover_in_background` is called.
    started: AtomicBool,
    /// `None` when the TLS client cannot be built: every provider is then unavailable.
    http: Option<reqwest::Client>,
}

/// Discovery retries wait this long at first, doubling to `RETRY_MAX`.
const RETRY_FIRST: Duration = Duration::from_secs(1);
const RETRY_MAX: Duration = Duration::from_secs(60);

impl Providers {
    /// No I/O: discovery starts with `discover_in_background`.
    pub fn new(configs: Vec<ProviderConfig>) -> Providers {
        let http = if configs.is_empty() {
            None
        } else {
            // No redirects: a provider's endpoints are the ones its document names, and a
            // redirect from the token endpoint would carry the code and secret elsewhere.
            let built = reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .timeout(EXCHANGE_TIMEOUT)
                .connect_timeout(EXCHANGE_TIMEOUT)
                .user_agent(concat!("Gatehouse/", env!("CARGO_PKG_VERSION")))
                .build();
            match built {
                Ok(client) => Some(client),
                Err(error) => {
                    tracing::error!(error = %error, "the HTTP client for identity providers cannot be built");
                    None
                }
            }
        };
        Providers {
            inner: Arc::new(Inner {
                upstreams: configs.into_iter().map(Upstream::new).collect(),
                started: AtomicBool::new(false),
                http,
            }),
        }
    }

    pub fn none() -> Providers {
        Providers::new(Vec::new())
    }

    /// Spawns, per provider, discovery and the JWK Set fetch, retried with backoff until they
    /// succeed; each failure is one log line naming the provider. Needs a Tokio runtime.
    pub fn discover_in_background(&self) {
        let Some(http) = self.inner.http.clone() else {
            return;
        };
        if self.inner.started.swap(true, Ordering::SeqCst) {
            return;
        }
        for index in 0..self.inner.upstreams.len() {
            let inner = Arc::clone(&self.inner);
            let http = http.clone();
            tokio::spawn(async move {
                let upstream = &inner.upstreams[index];
                let mut wait = RETRY_FIRST;
                loop {
                    match upstream.discover(&http).await {
                        Ok(()) => {
                            tracing::info!(provider = %upstream.config.id, "identity provider discovered");
                            return;
                        }
                        Err(reason) => tracing::warn!(
                            provider = %upstream.config.id,
                            issuer = %upstream.config.issuer,
                            %reason,
                            retry_in_s = wait.as_secs(),
                            "identity provider unavailable: discovery failed"
                        ),
                    }
                    tokio::time::sleep(wait).await;
                    wait = (wait * 2).min(RETRY_MAX);
                }
            });
        }
    }

    pub fn list(&self) -> Vec<ProviderSummary> {
        self.inner
            .upstreams
            .iter()
            .map(|u| ProviderSummary {
                id: u.config.id.clone(),
                name: u.config.name.clone(),
                available: u.endpoints().is_some(),
                domains: u.config.domains.clone(),
            })
            .collect()
    }

    pub fn get(&self, id: &str) -> Option<&ProviderConfig> {
        self.upstream(id).map(|u| &u.config)
    }

    /// The provider whose `domains` cover this (normalised) address: the domain or a subdomain of it.
    pub fn for_address(&self, email_normalized: &str) -> Option<&ProviderConfig> {
        let (_, domain) = email_normalized.rsplit_once('@')?;
        let domain = domain.to_ascii_lowercase();
        self.inner.upstreams.iter().map(|u| &u.config).find(|c| {
            c.domains
                .iter()
                .any(|d| domain == *d || domain.ends_with(&format!(".{d}")))
        })
    }

    /// Whether `provider` speaks for `address` (normalised): may make, link or adopt an account
    /// of it (docs/guide/providers.md, "Which provider speaks for an address"). An address under a
    /// provider's `domains` is that provider's alone; a provider with `domains` speaks for no
    /// address outside them; a provider without `domains` speaks for every address no provider
    /// owns.
    pub fn speaks_for(&self, provider: &ProviderConfig, address: &str) -> bool {
        match self.for_address(address) {
            Some(owner) => owner.id == provider.id,
            None => provider.domains.is_empty(),
        }
    }

    /// Whether an account of `address` may sign in through `provider`: never through another
    /// provider than its domain's, whatever was linked before (its password is `SSO_REQUIRED`
    /// too).
    pub fn signs_in_through(&self, provider: &ProviderConfig, address: &str) -> bool {
        self.for_address(address)
            .is_none_or(|owner| owner.id == provider.id)
    }

    /// The authorization request (code, S256 PKCE, fresh random state and nonce, scopes;
    /// `login_hint` passed on).
    pub fn authorization(
        &self,
        id: &str,
        redirect_uri: &str,
        login_hint: Option<&str>,
    ) -> Result<Authorization, UpstreamError> {
        self.request(id, redirect_uri, login_hint, false)
    }

    /// The authorization request of a re-authentication: `prompt=login` and `max_age=0`, so the
    /// provider asks the person again rather than riding on its own session (whoever sits at an
    /// unattended computer has that too), and says when in `auth_time` (checked by the caller).
    pub fn fresh_authorization(
        &self,
        id: &str,
        redirect_uri: &str,
    ) -> Result<Authorization, UpstreamError> {
        self.request(id, redirect_uri, None, true)
    }

    fn request(
        &self,
        id: &str,
        redirect_uri: &str,
        login_hint: Option<&str>,
        fresh: bool,
    ) -> Result<Authorization, UpstreamError> {
        let upstream = self.upstream(id).ok_or(UpstreamError::UnknownProvider)?;
        let endpoints = upstream
            .endpoints()
            .ok_or_else(|| UpstreamError::Unavailable("discovery not done".into()))?;
        let state = random();
        let nonce = random();
        let pkce_verifier = random();
        let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(pkce_verifier.as_bytes()));
        let mut url = endpoints.authorization.clone();
        {
            let mut query = url.query_pairs_mut();
            query
                .append_pair("response_type", "code")
                .append_pair("client_id", &upstream.config.client_id)
                .append_pair("redirect_uri", redirect_uri)
                .append_pair("scope", &upstream.config.scopes.join(" "))
                .append_pair("state", &state)
                .append_pair("nonce", &nonce)
                .append_pair("code_challenge", &challenge)
                .append_pair("code_challenge_method", "S256");
            if let Some(hint) = login_hint.filter(|h| !h.is_empty()) {
                query.append_pair("login_hint", hint);
            }
            if fresh {
                query
                    .append_pair("prompt", "login")
                    .append_pair("max_age", "0");
            }
        }
        Ok(Authorization {
            url: url.into(),
            state,
            nonce,
            pkce_verifier,
        })
    }

    /// Exchanges the code (client_secret_basic or _post per discovery) and validates the ID token
    /// fully (see `id_token`); on an unknown `kid` the JWK Set is fetched again once, at most once
    /// per 60 s per provider. email, email_verified and name from the ID token, else from userinfo
    /// when the provider has one; amr from the ID token.
    pub async fn complete(
        &self,
        id: &str,
        redirect_uri: &str,
        code: &str,
        pkce_verifier: &str,
        nonce: &str,
    ) -> Result<UpstreamIdentity, UpstreamError> {
        let upstream = self.upstream(id).ok_or(UpstreamError::UnknownProvider)?;
        let (Some(http), Some(endpoints)) = (&self.inner.http, upstream.endpoints()) else {
            return Err(UpstreamError::Unavailable("discovery not done".into()));
        };
        let (token, access_token) = upstream
            .exchange(http, &endpoints, redirect_uri, code, pkce_verifier)
            .await?;
        let head = id_token::head(&token)?;
        let mut keys = upstream.keys();
        let unknown_kid = head.kid.is_some() && id_token::candidates(&keys, &head).is_empty();
        if unknown_kid {
            // Refetched here, or a moment ago by a concurrent callback (which this one waited
            // for): either way the set in hand now is the newest there is.
            upstream.refetch_keys(http, &endpoints.jwks).await;
            keys = upstream.keys();
        }
        let expected = id_token::Expected {
            issuer: &endpoints.issuer,
            client_id: &upstream.config.client_id,
            nonce,
            now: now(),
        };
        let candidates = id_token::candidates(&keys, &head);
        if candidates.is_empty() {
            return Err(UpstreamError::InvalidToken(
                "signed by a key the provider does not publish".into(),
            ));
        }
        let mut identity = id_token::validate(&token, &head, &candidates, &expected)?;
        let incomplete = identity.email.is_none() || identity.name.is_none();
        if let Some(access_token) = access_token.filter(|_| incomplete) {
            match upstream.userinfo(http, &endpoints, &access_token).await {
                Ok(info) => merge_userinfo(&mut identity, &info),
                // Not fatal: the ID token is valid; what is missing decides the flow's answer.
                Err(reason) => {
                    tracing::debug!(provider = %id, %reason, "identity provider: no userinfo")
                }
            }
        }
        Ok(identity)
    }

    fn upstream(&self, id: &str) -> Option<&Upstream> {
        self.inner.upstreams.iter().find(|u| u.config.id == id)
    }
}

/// Fills what the ID token left out from a userinfo document, which counts only when its `sub` is
/// the token's (OpenID Connect Core §5.3.2: else it may describe someone else). The address and
/// its `email_verified` come from the same document: a flag never vouches for another address,
/// and a token's own `email_verified` is never overruled.
fn merge_userinfo(identity: &mut UpstreamIdentity, info: &serde_json::Value) {
    if id_token::text(info.get("sub")).as_deref() != Some(identity.subject.as_str()) {
        return;
    }
    if identity.email.is_none() {
        identity.email = id_token::text(info.get("email"));
        identity.email_verified = id_token::verified(info.get("email_verified"));
    }
    if identity.name.is_none() {
        identity.name = id_token::text(info.get("name"));
    }
}

/// 32 random bytes, base64url: a state, a nonce, or a PKCE verifier (RFC 7636 §4.1: 43 characters).
fn random() -> String {
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests;
