//! `run`: one program in a fresh sandbox. Events stream as `event` notifications; the result
//! object is the response.

use std::os::fd::OwnedFd;

use segi_proto::RunRequest;
use serde_json::Value;

use crate::rpc::connection::Context;
use crate::rpc::launch::{self, Launch};
use crate::run::request;

pub async fn start(ctx: &Context, id: Value, params: Value, fds: Vec<OwnedFd>) {
    let req: RunRequest = match super::parse_params(params) {
        Ok(req) => req,
        Err(error) => return ctx.reply(segi_proto::jsonrpc::Response::failure(id, error)).await,
    };
    let launch = Launch {
        method: "run",
        policy: req.policy.clone(),
        fds,
        named_fds: request::run_fds(&req),
        build: Box::new(move |passed| request::from_run(req, passed)),
    };
    launch::start(ctx, id, launch).await
}
