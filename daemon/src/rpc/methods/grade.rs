//! `grade`: program graders on a workspace. Each grader's result streams as a `grader` event
//! when it finishes; the response lists them all in the request's order.

use std::os::fd::OwnedFd;

use segi_proto::grade::GradeRequest;
use segi_proto::jsonrpc::{Response, RpcError};
use segi_proto::Event;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::grading;
use crate::judging::engine::Engine;
use crate::rpc::connection::Context;
use crate::rpc::launch;
use crate::run::passed;
use crate::run::request::file_bytes;

pub async fn start(ctx: &Context, id: Value, params: Value, fds: Vec<OwnedFd>) {
    let req: GradeRequest = match super::parse_params(params) {
        Ok(req) => req,
        Err(error) => return ctx.reply(Response::failure(id, error)).await,
    };
    let policy = req.policy.clone();
    launch::serve(ctx, id, &policy, "grading", move |ctx, events, cancel| async move {
        grade(&ctx, req, fds, events, cancel).await
    })
    .await
}

async fn grade(
    ctx: &Context,
    req: GradeRequest,
    fds: Vec<OwnedFd>,
    events: mpsc::Sender<Event>,
    cancel: CancellationToken,
) -> Result<Value, RpcError> {
    let policy = ctx.daemon.policies().get(&req.policy).ok_or_else(|| RpcError::invalid_params("unknown policy"))?;
    let named = req.workspace.fd.into_iter().collect();
    let mut passed = passed::read(fds, named, policy.box_size).await.map_err(RpcError::invalid_params)?;
    let archive = file_bytes(req.workspace.archive.as_ref(), req.workspace.fd, &mut passed, "the workspace")
        .map_err(RpcError::invalid_params)?;
    let grading = grading::check(req.policy, archive, req.input, req.graders).map_err(RpcError::invalid_params)?;
    let engine = Engine { daemon: ctx.daemon.clone(), cancel };
    let result = grading::grade(engine, grading, events).await;
    tracing::info!(
        method = "grade",
        peer_uid = ctx.peer_uid,
        graders = result.results.len(),
        passed = result.results.iter().filter(|r| r.passed).count(),
        "graded"
    );
    serde_json::to_value(&result).map_err(|e| RpcError::internal(e.to_string()))
}
