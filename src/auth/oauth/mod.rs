//! The OpenID Connect provider's domain (docs/api.md §11): what its flows share, over `Core`,
//! without HTTP or SQL.

// The authorization and token flows (which land next) parse and compare scopes with it.
#[allow(dead_code)]
pub mod scopes;
