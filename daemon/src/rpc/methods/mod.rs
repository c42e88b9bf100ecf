//! The dispatch table: one module per method, each parse → apply → reply.

mod cancel;
mod capabilities;
mod evaluate;
mod grade;
mod judge;
mod ping;
mod run;

use std::os::fd::OwnedFd;

use segi_proto::jsonrpc::{self, Response, RpcError};
use serde_json::Value;

use super::connection::Context;

/// Every method, as `capabilities` lists them.
pub const METHODS: &[&str] = &["ping", "capabilities", "run", "evaluate", "judge", "grade", "cancel"];

/// Runs `method`. `fds` are the descriptors passed with the request line; only run-like
/// methods take any, the others close them.
pub async fn dispatch(ctx: &Context, method: &str, id: Option<Value>, params: Value, fds: Vec<OwnedFd>) {
    // A notification (no id) gets no answer (JSON-RPC 2.0); only `cancel` means anything as one.
    let Some(id) = id else {
        if method == "cancel" {
            let _ = cancel::apply(ctx, params);
        }
        return;
    };
    let result = match method {
        "ping" => ping::apply(),
        "capabilities" => capabilities::apply(ctx),
        "cancel" => cancel::apply(ctx, params),
        // Streams events and replies when the run is over, from its own task.
        "run" => return run::start(ctx, id, params, fds).await,
        "evaluate" => return evaluate::start(ctx, id, params, fds).await,
        "judge" => return judge::start(ctx, id, params, fds).await,
        "grade" => return grade::start(ctx, id, params, fds).await,
        other => Err(RpcError::new(
            jsonrpc::METHOD_NOT_FOUND,
            format!("unknown method {other:?}; segid offers: {}", METHODS.join(", ")),
        )),
    };
    ctx.reply(match result {
        Ok(value) => Response::success(id, value),
        Err(error) => Response::failure(id, error),
    })
    .await;
}

/// Params as `T`, or -32602 with serde's account of what is wrong.
pub fn parse_params<T: serde::de::DeserializeOwned>(params: Value) -> Result<T, RpcError> {
    let params = if params.is_null() { Value::Object(Default::default()) } else { params };
    serde_json::from_value(params).map_err(|e| RpcError::invalid_params(format!("invalid params: {e}")))
}
