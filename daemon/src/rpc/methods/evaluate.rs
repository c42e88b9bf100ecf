//! `evaluate`: a SEGI evaluation. The evaluator runs on the submission under the `evaluator`
//! policy; its stdout streams as `text` and `data` events, its stderr as `stderr` events (its
//! log), and the response is the result object with the protocol `warnings`.

use std::os::fd::OwnedFd;

use segi_proto::jsonrpc::Response;
use segi_proto::EvaluateRequest;
use serde_json::Value;

use crate::evaluation::markers::Markers;
use crate::evaluation::request;
use crate::rpc::connection::Context;
use crate::rpc::launch::{self, Launch};

pub async fn start(ctx: &Context, id: Value, params: Value, fds: Vec<OwnedFd>) {
    let req: EvaluateRequest = match super::parse_params(params) {
        Ok(req) => req,
        Err(error) => return ctx.reply(Response::failure(id, error)).await,
    };
    let launch = Launch {
        method: "evaluate",
        policy: req.policy.clone(),
        fds,
        named_fds: request::named_fds(&req),
        build: Box::new(move |passed| {
            let markers = Markers::fresh()?;
            request::to_spec(req, passed, &markers)
        }),
    };
    launch::start(ctx, id, launch).await
}
