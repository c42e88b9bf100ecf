//! `ping`: is the daemon there, and which version.

use segi_proto::jsonrpc::RpcError;
use serde_json::{json, Value};

pub fn apply() -> Result<Value, RpcError> {
    Ok(json!({ "pong": true, "version": env!("CARGO_PKG_VERSION") }))
}
