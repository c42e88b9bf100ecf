//! Byte payloads on the wire: valid UTF-8 travels as `"text"`, anything else as `"base64"`.

use base64::Engine as _;
use serde::{Deserialize, Serialize};

/// Bytes as JSON: `{"text": "..."}` or `{"base64": "..."}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Payload {
    Text(String),
    Base64(String),
}

impl Payload {
    /// Chooses `text` when the bytes are UTF-8 and `base64` otherwise.
    pub fn from_bytes(bytes: &[u8]) -> Self {
        match std::str::from_utf8(bytes) {
            Ok(text) => Payload::Text(text.to_owned()),
            Err(_) => Payload::Base64(base64::engine::general_purpose::STANDARD.encode(bytes)),
        }
    }

    /// Decodes the payload; fails only on malformed base64.
    pub fn to_bytes(&self) -> Result<Vec<u8>, base64::DecodeError> {
        match self {
            Payload::Text(text) => Ok(text.as_bytes().to_vec()),
            Payload::Base64(b64) => base64::engine::general_purpose::STANDARD.decode(b64),
        }
    }
}
