//! `judge`: a submission judged on a problem package (Sphere Engine's model). Each test's
//! result streams as a `test` event in test order; the response is the final verdict.

use std::collections::BTreeMap;
use std::os::fd::OwnedFd;
use std::sync::Arc;

use segi_proto::jsonrpc::{Response, RpcError};
use segi_proto::judge::JudgeRequest;
use segi_proto::Event;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::judging::engine::Engine;
use crate::judging::problem::Problem;
use crate::judging::sphere::{self, Submission};
use crate::rpc::connection::Context;
use crate::rpc::launch;
use crate::run::passed;
use crate::run::request::{check_relative_path, file_bytes, normalize};

/// Most bytes a problem package and submission may bring in all.
const MAX_PACKAGE: u64 = 1 << 30;

pub async fn start(ctx: &Context, id: Value, params: Value, fds: Vec<OwnedFd>) {
    let req: JudgeRequest = match super::parse_params(params) {
        Ok(req) => req,
        Err(error) => return ctx.reply(Response::failure(id, error)).await,
    };
    let policy = "default".to_string();
    launch::serve(ctx, id, &policy, "judging", move |ctx, events, cancel| async move {
        judge(&ctx, req, fds, events, cancel).await
    })
    .await
}

async fn judge(
    ctx: &Context,
    req: JudgeRequest,
    fds: Vec<OwnedFd>,
    events: mpsc::Sender<Event>,
    cancel: CancellationToken,
) -> Result<Value, RpcError> {
    let named = req.problem.iter().filter_map(|f| f.fd).chain(req.submission.fd).collect();
    let mut passed = passed::read(fds, named, MAX_PACKAGE).await.map_err(RpcError::invalid_params)?;
    let filename = &req.submission.filename;
    if filename.is_empty() || filename.contains(['/', '\0']) {
        return Err(RpcError::invalid_params(format!("submission filename {filename:?} must be a basename")));
    }
    let source = file_bytes(req.submission.content.as_ref(), req.submission.fd, &mut passed, "the submission")
        .map_err(RpcError::invalid_params)?;
    let mut files = BTreeMap::new();
    for file in &req.problem {
        check_relative_path(&file.path, "the problem")
            .map_err(|e| RpcError::invalid_params(format!("problem file {e}")))?;
        let what = format!("problem file {:?}", file.path);
        let bytes = file_bytes(file.content.as_ref(), file.fd, &mut passed, &what).map_err(RpcError::invalid_params)?;
        if files.insert(normalize(&file.path), Arc::new(bytes)).is_some() {
            return Err(RpcError::invalid_params(format!("problem file {:?} is given twice", file.path)));
        }
    }
    let problem = Problem::from_files(&files).map_err(RpcError::invalid_params)?;
    let policies = ctx.daemon.policies();
    let languages = policies.languages.clone();
    // A strategy may take a submission that is no program (an archive, raw data): its
    // language is then unknown, and only compiling it fails (CE).
    let language = match languages.choose(req.language.as_deref(), filename) {
        Ok((language, _)) => language,
        Err(_) if problem.pipeline.is_some() && req.language.is_none() => "",
        Err(e) => return Err(RpcError::invalid_params(e)),
    };
    let submission =
        Submission { filename: filename.clone(), source: Arc::new(source), language: language.to_string() };

    let engine = Engine { daemon: ctx.daemon.clone(), cancel };
    if problem.pipeline.is_some() {
        // A problem with a strategy (pipelines.md): the strategy decides.
        let runtime = policies
            .strategy_runtime
            .clone()
            .map_err(|e| RpcError::internal(format!("segi's strategy runtime is missing: {e}")))?;
        let result =
            crate::pipeline::host::judge(engine, Arc::new(problem), languages, &runtime, submission, events).await;
        tracing::info!(
            method = "judge",
            peer_uid = ctx.peer_uid,
            strategy = result.strategy,
            language = result.language,
            verdict = result.verdict,
            points = result.points,
            "judged"
        );
        return serde_json::to_value(&result).map_err(|e| RpcError::internal(e.to_string()));
    }
    let result = sphere::judge(engine, Arc::new(problem), &languages, submission, events).await;
    tracing::info!(
        method = "judge",
        peer_uid = ctx.peer_uid,
        language = result.language,
        status = %result.status,
        score = result.score,
        tests = result.tests.len(),
        message = result.message.as_deref().map(|m| m.lines().next().unwrap_or_default()),
        "judged"
    );
    serde_json::to_value(&result).map_err(|e| RpcError::internal(e.to_string()))
}
