//! Integration tests: the real service over HTTP (and the real binary for the CLI), on SQLite and,
//! when `GATEHOUSE_TEST_POSTGRES_URL` is set, on PostgreSQL. One binary, so the suite links once.

// A test that panics on a broken assumption is what a test should do: the lints that refuse
// unwrap and expect in the service (Cargo.toml) do not apply here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod authenticator;
mod helpers;
mod hostile;
mod oauth_helpers;
mod smtp;
mod smtp_conversation;
mod smtp_server;
mod smtp_tls;
mod upstream;

mod abuse;
mod address_proof;
mod admin;
mod backup;
mod book;
mod browser;
mod browser_sessions;
mod cli;
mod cli_check;
mod cli_safety;
mod client_registration;
mod client_tokens;
mod clients;
mod contacts;
mod discovery;
mod docs;
mod errors;
mod forward_auth_input;
mod framing;
mod guard;
mod hardening;
mod instances;
mod introspection;
mod login;
mod mail;
mod mail_account;
mod mail_delivery;
mod mail_files;
mod mail_links;
mod metadata_documents;
mod oauth_code;
mod oauth_instances;
mod oauth_logout;
mod oauth_logout_flows;
mod oauth_orgs;
mod oauth_refusals;
mod oauth_resources;
mod operations;
mod orgs;
mod orgs_admin;
mod orgs_live;
mod outage;
mod pages;
mod passkey_input;
mod passkey_refusals;
mod passkeys;
mod proxies;
mod proxy_attacks;
mod proxy_clients;
mod reauth;
mod refresh;
mod relying_parties;
mod resource_metadata;
mod sessions;
mod signing_keys;
mod slow;
mod startup;
mod storage;
mod tokens;
mod two_factor;
mod walkthrough;
