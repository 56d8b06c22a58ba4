//! The JWS algorithms Gatehouse signs with (RFC 7518, RFC 8037). Access tokens default to EdDSA;
//! ID tokens default to RS256, which OpenID Connect Core §15.1 requires of every provider and which
//! many relying parties verify alone.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SigningAlg {
    #[serde(rename = "RS256")]
    Rs256,
    #[serde(rename = "ES256")]
    Es256,
    #[serde(rename = "EdDSA")]
    EdDsa,
}

impl SigningAlg {
    /// Every algorithm, in the order discovery lists them (RS256 first).
    pub const ALL: [SigningAlg; 3] = [SigningAlg::Rs256, SigningAlg::Es256, SigningAlg::EdDsa];

    pub fn as_str(self) -> &'static str {
        match self {
            SigningAlg::Rs256 => "RS256",
            SigningAlg::Es256 => "ES256",
            SigningAlg::EdDsa => "EdDSA",
        }
    }
}

impl fmt::Display for SigningAlg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The name is not one of `RS256`, `ES256`, `EdDSA` (spelt exactly so, as JOSE does).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownAlg;

impl fmt::Display for UnknownAlg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("must be one of RS256, ES256, EdDSA")
    }
}

impl FromStr for SigningAlg {
    type Err = UnknownAlg;

    fn from_str(s: &str) -> Result<Self, UnknownAlg> {
        SigningAlg::ALL
            .into_iter()
            .find(|alg| alg.as_str() == s)
            .ok_or(UnknownAlg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_nothing_else_parses() {
        for alg in SigningAlg::ALL {
            assert_eq!(alg.as_str().parse(), Ok(alg));
            let json = serde_json::to_string(&alg).unwrap();
            assert_eq!(json, format!("\"{alg}\""));
        }
        for bad in ["rs256", "HS256", "none", "", "EDDSA"] {
            assert_eq!(bad.parse::<SigningAlg>(), Err(UnknownAlg), "{bad}");
        }
    }
}
