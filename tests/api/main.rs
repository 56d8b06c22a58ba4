//! Integration tests: the real service over HTTP (and the real binary for the CLI), on SQLite and,
//! when `GATEHOUSE_TEST_POSTGRES_URL` is set, on PostgreSQL. One binary, so the suite links once.

mod helpers;
mod hostile;

mod abuse;
mod cli;
mod contacts;
mod docs;
mod errors;
mod framing;
mod hardening;
mod instances;
mod login;
mod operations;
mod outage;
mod refresh;
mod sessions;
mod slow;
mod tokens;
mod two_factor;
