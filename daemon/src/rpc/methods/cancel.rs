//! `cancel`: stop a run of this connection by its request id.

use segi_proto::jsonrpc::RpcError;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::rpc::connection::Context;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    id: Value,
}

pub fn apply(ctx: &Context, params: Value) -> Result<Value, RpcError> {
    let params: Params = super::parse_params(params)?;
    let key = params.id.to_string();
    let token = ctx.running.lock().unwrap_or_else(|p| p.into_inner()).get(&key).cloned();
    if let Some(token) = &token {
        token.cancel();
    }
    Ok(json!({ "cancelled": token.is_some() }))
}
