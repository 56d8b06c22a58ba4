//! Authentication: passwords, tokens and their keys, TOTP, and the flows built from them.

pub mod crypto;
pub mod live;
pub mod password;
pub mod service;
pub mod throttle;
pub mod tokens;
pub mod totp;
