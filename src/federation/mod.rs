//! Signing in through other OpenID providers (docs/api.md §14): Gatehouse as a relying party of
//! the providers of `GATEHOUSE_IDENTITY_PROVIDERS`. It speaks HTTP as a client only (no axum, no
//! SQL): the flow that stores state, makes accounts and answers browsers is `crate::auth::federation`.
//!
//! Nothing a request asks of `Providers` without a flow (`list`, `get`, `for_address`,
//! `authorization`) waits on the network: discovery runs in the background, so a provider out of
//! reach shows as unavailable instead of slowing the sign-in page.

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
