//! The settings as flags and environment variables (clap), still as text.

use std::path::PathBuf;

/// The settings as clap reads them from flags and the environment (clap gives a flag precedence
/// over its variable). They stay strings here so that every value, whatever its source, is parsed
/// and reported by the same code. No `Debug`: raw, they hold the master key and URLs with
/// passwords; `Settings`, parsed, prints them masked.
#[derive(Default, Clone, clap::Args)]
pub struct SettingsArgs {
    /// TOML file with settings: the flags' names with `_` for `-` (`gatehouse settings` lists them)
    #[arg(long, env = "GATEHOUSE_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Address to serve on [default: 127.0.0.1:8080]
    #[arg(long, env = "GATEHOUSE_LISTEN", value_name = "ADDR")]
    pub listen: Option<String>,
    /// sqlite://PATH or postgres://… [default: sqlite://gatehouse.db]
    #[arg(long, env = "GATEHOUSE_DATABASE_URL", value_name = "URL")]
    pub database_url: Option<String>,
    /// Base64 of 32 bytes; encrypts TOTP secrets and signing keys
    #[arg(
        long,
        env = "GATEHOUSE_MASTER_KEY",
        value_name = "BASE64",
        hide_env_values = true
    )]
    pub master_key: Option<String>,
    /// Access token lifetime [default: 24h]
    #[arg(long, env = "GATEHOUSE_ACCESS_TOKEN_TTL", value_name = "DURATION")]
    pub access_token_ttl: Option<String>,
    /// Refresh token lifetime [default: 30d]
    #[arg(long, env = "GATEHOUSE_REFRESH_TOKEN_TTL", value_name = "DURATION")]
    pub refresh_token_ttl: Option<String>,
    /// Two-factor challenge lifetime [default: 5m]
    #[arg(long, env = "GATEHOUSE_TEMP_TOKEN_TTL", value_name = "DURATION")]
    pub temp_token_ttl: Option<String>,
    /// How long a rotated refresh token may still be presented by a racing client [default: 10s]
    #[arg(long, env = "GATEHOUSE_REFRESH_REUSE_GRACE", value_name = "DURATION")]
    pub refresh_reuse_grace: Option<String>,
    /// `open` enables POST /auth/register [default: closed]
    #[arg(long, env = "GATEHOUSE_REGISTRATION", value_name = "open|closed")]
    pub registration: Option<String>,
    /// `off` disables login throttling [default: on]
    #[arg(long, env = "GATEHOUSE_RATE_LIMIT", value_name = "on|off")]
    pub rate_limit: Option<String>,
    /// Comma-separated CIDRs whose X-Forwarded-For is believed [default: none]
    #[arg(long, env = "GATEHOUSE_TRUSTED_PROXIES", value_name = "CIDRS")]
    pub trusted_proxies: Option<String>,
    /// `iss` of issued tokens [default: gatehouse]
    #[arg(long, env = "GATEHOUSE_ISSUER")]
    pub issuer: Option<String>,
    /// `aud` of access tokens [default: gatehouse-api]
    #[arg(long, env = "GATEHOUSE_AUDIENCE")]
    pub audience: Option<String>,
    /// Resource servers (RFC 8707) whose tokens clients may ask for, beside GATEHOUSE_AUDIENCE:
    /// absolute URLs, comma-separated, e.g. an MCP server's [default: none]
    #[arg(long, env = "GATEHOUSE_OAUTH_RESOURCES", value_name = "URLS")]
    pub oauth_resources: Option<String>,
    /// What access and refresh tokens are signed with: EdDSA, ES256 or RS256 [default: EdDSA]
    #[arg(long, env = "GATEHOUSE_ACCESS_TOKEN_ALG", value_name = "ALG")]
    pub access_token_alg: Option<String>,
    /// A client must send a request's headers within this [default: 10s]
    #[arg(long, env = "GATEHOUSE_HEADER_TIMEOUT", value_name = "DURATION")]
    pub header_timeout: Option<String>,
    /// A client must send a request's whole body within this [default: 10s]
    #[arg(long, env = "GATEHOUSE_BODY_TIMEOUT", value_name = "DURATION")]
    pub body_timeout: Option<String>,
    /// Open client connections at most; more wait to be accepted [default: 1024]
    #[arg(long, env = "GATEHOUSE_MAX_CONNECTIONS", value_name = "N")]
    pub max_connections: Option<String>,
    /// A write that makes no progress for this long ends the connection [default: 10s]
    #[arg(long, env = "GATEHOUSE_WRITE_TIMEOUT", value_name = "DURATION")]
    pub write_timeout: Option<String>,
    /// A connection older than this is closed after its request in flight [default: 5m]
    #[arg(long, env = "GATEHOUSE_CONNECTION_LIFETIME", value_name = "DURATION")]
    pub connection_lifetime: Option<String>,
    /// Open connections per client address (IPv6: per /64) at most [default: 64]
    #[arg(long, env = "GATEHOUSE_MAX_CONNECTIONS_PER_CLIENT", value_name = "N")]
    pub max_connections_per_client: Option<String>,
    /// `on` serves Swagger UI at /docs [default: off]
    #[arg(long, env = "GATEHOUSE_DOCS", value_name = "on|off")]
    pub docs: Option<String>,
    /// On SIGTERM/SIGINT, how long requests in flight may take to finish [default: 30s]
    #[arg(long, env = "GATEHOUSE_SHUTDOWN_TIMEOUT", value_name = "DURATION")]
    pub shutdown_timeout: Option<String>,
    /// How long audit events are kept [default: 90d]
    #[arg(long, env = "GATEHOUSE_AUDIT_RETENTION", value_name = "DURATION")]
    pub audit_retention: Option<String>,
    /// Address of a separate listener for Prometheus /metrics [default: off]
    #[arg(long, env = "GATEHOUSE_METRICS_LISTEN", value_name = "ADDR")]
    pub metrics_listen: Option<String>,
    /// TOML file of access rules for forward-auth (docs/api.md §6) [default: none]
    #[arg(long, env = "GATEHOUSE_ACCESS_RULES", value_name = "FILE")]
    pub access_rules: Option<String>,
    /// TOML file of the business APIs tokens are issued for, and their scopes (docs/guide/
    /// resources.md) [default: none]
    #[arg(long, env = "GATEHOUSE_RESOURCES", value_name = "FILE")]
    pub resources: Option<String>,
    /// The contacts example API (/api/v1/crm/contacts, scopes contacts:read and contacts:write):
    /// on or off [default: on]
    #[arg(long, env = "GATEHOUSE_CONTACTS_API", value_name = "on|off")]
    pub contacts_api: Option<String>,
    /// TOML file of the identity providers people may sign in through (docs/api.md §14)
    /// [default: none]
    #[arg(long, env = "GATEHOUSE_IDENTITY_PROVIDERS", value_name = "FILE")]
    pub identity_providers: Option<String>,
    /// With access rules, forward-auth from a peer outside GATEHOUSE_TRUSTED_PROXIES: `refuse`
    /// (403) or `token-only` (judged by its token, without the rules) [default: refuse]
    #[arg(
        long,
        env = "GATEHOUSE_UNTRUSTED_FORWARD_AUTH",
        value_name = "refuse|token-only"
    )]
    pub untrusted_forward_auth: Option<String>,
    /// Log filter, e.g. `info` or `gatehouse=debug` [default: info; `warn` for commands other than serve]
    #[arg(long, env = "GATEHOUSE_LOG", value_name = "FILTER")]
    pub log: Option<String>,
    /// A log line per request (method, route, status, time, client address): on or off
    /// [default: off]
    #[arg(long, env = "GATEHOUSE_ACCESS_LOG", value_name = "on|off")]
    pub access_log: Option<String>,
    /// `text` or `json` [default: text]
    #[arg(long, env = "GATEHOUSE_LOG_FORMAT", value_name = "text|json")]
    pub log_format: Option<String>,
    /// The address users reach the service at, e.g. https://login.example.com [default:
    /// http://<listen address>]
    #[arg(long, env = "GATEHOUSE_PUBLIC_URL", value_name = "URL")]
    pub public_url: Option<String>,
    /// Where /sign-in?return_to= may send a user: origins or URL prefixes, comma-separated
    /// [default: none: always /account]
    #[arg(long, env = "GATEHOUSE_ALLOWED_RETURN_URLS", value_name = "URLS")]
    pub allowed_return_urls: Option<String>,
    /// Name of the browser session cookie (docs/api.md §6b) [default: gatehouse_session]
    #[arg(long, env = "GATEHOUSE_COOKIE_NAME", value_name = "NAME")]
    pub cookie_name: Option<String>,
    /// Domain of the session cookie, e.g. example.com: every host under it shares the sign-in
    /// and is a valid return_to [default: none: a host-only cookie]
    #[arg(long, env = "GATEHOUSE_COOKIE_DOMAIN", value_name = "DOMAIN")]
    pub cookie_domain: Option<String>,
    /// Origins whose pages may call the API across origins (CORS), comma-separated, exact
    /// [default: none]
    #[arg(long, env = "GATEHOUSE_CORS_ORIGINS", value_name = "ORIGINS")]
    pub cors_origins: Option<String>,
    /// Passkeys' relying-party id: the registrable domain of the pages [default: the public URL's
    /// host]
    #[arg(long, env = "GATEHOUSE_WEBAUTHN_RP_ID", value_name = "DOMAIN")]
    pub webauthn_rp_id: Option<String>,
    /// Origins whose pages may use passkeys, comma-separated [default: the public URL's origin]
    #[arg(long, env = "GATEHOUSE_WEBAUTHN_ORIGINS", value_name = "ORIGINS")]
    pub webauthn_origins: Option<String>,
    /// smtp://host:port, smtp+starttls://…, smtps://user:pass@host:port [default: none: mails go
    /// to .eml files in the mail folder]
    #[arg(
        long,
        env = "GATEHOUSE_SMTP_URL",
        value_name = "URL",
        hide_env_values = true
    )]
    pub smtp_url: Option<String>,
    /// From address of mails, e.g. `Gatehouse <no-reply@example.com>` [default: Gatehouse
    /// <gatehouse@localhost>]
    #[arg(long, env = "GATEHOUSE_MAIL_FROM", value_name = "MAILBOX")]
    pub mail_from: Option<String>,
    /// Folder of the .eml files when no SMTP server is set [default: mail/ beside a SQLite
    /// database, else in the working folder]
    #[arg(long, env = "GATEHOUSE_MAIL_DIR", value_name = "DIR")]
    pub mail_dir: Option<String>,
    /// Folder of mail templates replacing the embedded ones [default: none]
    #[arg(long, env = "GATEHOUSE_MAIL_TEMPLATES", value_name = "DIR")]
    pub mail_templates: Option<String>,
    /// Product name in mails [default: Gatehouse]
    #[arg(long, env = "GATEHOUSE_PRODUCT_NAME", value_name = "NAME")]
    pub product_name: Option<String>,
    /// Longest wait between two delivery attempts of a mail [default: 30s]
    #[arg(long, env = "GATEHOUSE_MAIL_RETRY_MAX", value_name = "DURATION")]
    pub mail_retry_max: Option<String>,
    /// An SMTP exchange that takes longer is abandoned and retried later [default: 10s]
    #[arg(long, env = "GATEHOUSE_SMTP_TIMEOUT", value_name = "DURATION")]
    pub smtp_timeout: Option<String>,
    /// Lifetime of a password-reset link [default: 1h]
    #[arg(long, env = "GATEHOUSE_RESET_TOKEN_TTL", value_name = "DURATION")]
    pub reset_token_ttl: Option<String>,
    /// Lifetime of an address-verification link [default: 24h]
    #[arg(long, env = "GATEHOUSE_VERIFY_TOKEN_TTL", value_name = "DURATION")]
    pub verify_token_ttl: Option<String>,
    /// Lifetime of an invitation link [default: 7d]
    #[arg(long, env = "GATEHOUSE_INVITE_TOKEN_TTL", value_name = "DURATION")]
    pub invite_token_ttl: Option<String>,
    /// `on`: a right password for an unverified address is refused [default: off]
    #[arg(long, env = "GATEHOUSE_REQUIRE_VERIFIED_EMAIL", value_name = "on|off")]
    pub require_verified_email: Option<String>,
    /// PEM file of CA certificates trusted for the SMTP server's certificate, beside the
    /// system's (smtp+starttls:// and smtps:// only) [default: none]
    #[arg(long, env = "GATEHOUSE_SMTP_CA_FILE", value_name = "FILE")]
    pub smtp_ca_file: Option<String>,
    /// Dynamic client registration at /oauth2/register: off, token (an initial access token) or
    /// open [default: off]
    #[arg(
        long,
        env = "GATEHOUSE_OAUTH_REGISTRATION",
        value_name = "off|token|open"
    )]
    pub oauth_registration: Option<String>,
    /// `on`: an https client_id is fetched as a client ID metadata document [default: off]
    #[arg(
        long,
        env = "GATEHOUSE_OAUTH_CLIENT_METADATA_DOCUMENTS",
        value_name = "on|off"
    )]
    pub oauth_client_metadata_documents: Option<String>,
    /// `required`: DPoP proofs at the token endpoint must carry a nonce this server gave
    /// (RFC 9449 §8) [default: off]
    #[arg(long, env = "GATEHOUSE_OAUTH_DPOP_NONCE", value_name = "required|off")]
    pub oauth_dpop_nonce: Option<String>,
    /// Not a setting but the tests' switch, set in code and never from a flag, the environment or
    /// the file: metadata documents may also be fetched over http from loopback, where the tests
    /// serve them. An operator has no way to turn the fetch's address rules off.
    #[arg(skip)]
    #[doc(hidden)]
    pub oauth_client_metadata_insecure_loopback: bool,
}

/// The settings every command reads: where the data is and how to log. The others are the
/// server's, shown by `gatehouse serve --help` and `gatehouse help settings` (a command other than
/// `serve` still reads them from the environment and the file: `user invite` mails links).
pub const COMMON_SETTINGS: &[&str] = &["config", "database_url", "master_key", "log", "log_format"];
