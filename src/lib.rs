//! Gatehouse: a self-hosted authentication service for business APIs. E-mail and password login
//! with optional TOTP, Ed25519 JWT access tokens, rotating refresh tokens, sessions that can be
//! revoked, and a contacts API behind the tokens; SQLite by default, PostgreSQL for several
//! instances. The contract it keeps is `docs/api.md`.
//!
//! The library's public face is what the binary and the tests need: the settings, the running
//! `Application` with its operator `Handle`, the `Clock` tests move, and the logging set-up.
//! Everything else is the crate's own, so the compiler reports what nothing uses.
// `deny`, not `forbid`: `memory` holds the one audited exception (glibc's `malloc_trim`).
#![deny(unsafe_code)]

mod addresses;
mod admin;
mod app;
mod auth;
mod authz;
mod backchannel;
pub mod cli;
pub mod clock;
pub mod config;
mod crm;
mod crypto;
mod domain;
mod error;
mod federation;
mod fetch;
mod flows;
mod guard;
mod http;
mod import;
mod mail;
mod memory;
mod metrics;
mod model;
mod orgs;
mod outbox;
mod private_files;
mod provider;
mod server;
mod services;
mod startup;
mod store;
pub mod telemetry;
pub mod upstream;

pub use app::{Application, Handle};
pub use clock::Clock;
pub use store::purge::Purged;
