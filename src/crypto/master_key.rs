//! The master key: the one secret an operator keeps, from which every key that protects data at
//! rest is derived (`Secrets`). It never appears in `Debug` output.

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use secrecy::{ExposeSecret, SecretBox};

/// The 32-byte master key. It never appears in `Debug` output.
pub struct MasterKey(SecretBox<[u8; 32]>);

impl MasterKey {
    pub fn new(bytes: [u8; 32]) -> Self {
        MasterKey(SecretBox::new(Box::new(bytes)))
    }

    pub fn generate() -> Self {
        Self::new(rand::random())
    }

    pub fn parse(encoded: &str) -> Result<Self, String> {
        let bytes = BASE64
            .decode(encoded.trim())
            .map_err(|_| "is not base64".to_owned())?;
        let bytes: [u8; 32] = bytes
            .try_into()
            .map_err(|v: Vec<u8>| format!("is {} bytes long, not 32", v.len()))?;
        Ok(Self::new(bytes))
    }

    pub fn encode(&self) -> String {
        BASE64.encode(self.0.expose_secret())
    }

    pub fn expose(&self) -> &[u8; 32] {
        self.0.expose_secret()
    }
}

impl Clone for MasterKey {
    fn clone(&self) -> Self {
        Self::new(*self.expose())
    }
}

impl fmt::Debug for MasterKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("MasterKey([redacted])")
    }
}
