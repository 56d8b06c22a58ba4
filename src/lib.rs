//! Gatehouse: a self-hosted authentication service for business APIs. E-mail and password login
//! with optional TOTP, Ed25519 JWT access tokens, rotating refresh tokens, sessions that can be
//! revoked, and a contacts API behind the tokens; SQLite by default, PostgreSQL for several
//! instances.
#![forbid(unsafe_code)]

pub mod app;
pub mod auth;
pub mod cli;
pub mod config;
pub mod crm;
pub mod domain;
pub mod error;
pub mod http;
pub mod metrics;
pub mod private_files;
pub mod server;
pub mod store;
pub mod telemetry;
