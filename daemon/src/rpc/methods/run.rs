//! `run`: one program in a fresh sandbox. Events stream as `event` notifications; the result
//! object is the response.

use std::sync::atomic::Ordering;
use std::time::Instant;

use segi_proto::jsonrpc::{self, event_notification, Response, RpcError};
use segi_proto::{Event, RunRequest, Verdict};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::rpc::connection::Context;
use crate::run::{self, request};

/// Events waiting to be framed for one run; small, so that output is paced by the client.
const EVENT_QUEUE: usize = 16;

pub async fn start(ctx: &Context, id: Value, params: Value) {
    match prepare(ctx, &id, params) {
        Ok((prepared, cancel, policy_name)) => {
            let ctx = ctx.clone();
            tokio::spawn(async move {
                let key = id.to_string();
                execute(&ctx, id, prepared, cancel, policy_name).await;
                ctx.running.lock().unwrap_or_else(|p| p.into_inner()).remove(&key);
            });
        }
        Err(error) => ctx.reply(Response::failure(id, error)).await,
    }
}

fn refuse_when_stopping(ctx: &Context) -> Result<(), RpcError> {
    match ctx.daemon.stopping.load(Ordering::SeqCst) {
        true => {
            Err(RpcError::new(jsonrpc::SHUTTING_DOWN, "segid is stopping and takes no new runs; retry once it is back"))
        }
        false => Ok(()),
    }
}

fn prepare(
    ctx: &Context,
    id: &Value,
    params: Value,
) -> Result<(request::Prepared, tokio_util::sync::CancellationToken, String), RpcError> {
    refuse_when_stopping(ctx)?;
    let req: RunRequest = super::parse_params(params)?;
    let policies = ctx.daemon.policies();
    let policy = policies.get(&req.policy).ok_or_else(|| {
        RpcError::invalid_params(format!("unknown policy {:?}; available: {}", req.policy, policies.names().join(", ")))
    })?;
    let policy_name = policy.name.clone();
    let base = run::base_plan(&ctx.daemon, &policy);
    let prepared = request::prepare(req, policy, base).map_err(RpcError::invalid_params)?;
    let cancel = ctx.closed.child_token();
    let mut running = ctx.running.lock().unwrap_or_else(|p| p.into_inner());
    let key = id.to_string();
    if running.contains_key(&key) {
        return Err(RpcError::new(
            jsonrpc::DUPLICATE_ID,
            format!("a request with id {key} is already running on this connection"),
        ));
    }
    running.insert(key, cancel.clone());
    Ok((prepared, cancel, policy_name))
}

async fn execute(
    ctx: &Context,
    id: Value,
    prepared: request::Prepared,
    cancel: tokio_util::sync::CancellationToken,
    policy: String,
) {
    // Wait for a run slot (tokio's semaphore is fair: first come, first served), but not past
    // a cancel; say so when the run has to wait.
    if ctx.daemon.run_slots.available_permits() == 0 {
        let ahead = ctx.daemon.waiting.load(Ordering::SeqCst) as u64;
        let line = event_notification(&id, &Event::Queued { ahead }).to_string();
        let _ = ctx.outbox.send(line).await;
    }
    ctx.daemon.waiting.fetch_add(1, Ordering::SeqCst);
    let slot = tokio::select! {
        slot = ctx.daemon.run_slots.clone().acquire_owned() => match slot {
            Ok(slot) => slot,
            Err(_) => return ctx.reply(Response::failure(id, RpcError::new(jsonrpc::SHUTTING_DOWN, "segid is shutting down"))).await,
        },
        _ = cancel.cancelled() => {
            ctx.daemon.waiting.fetch_sub(1, Ordering::SeqCst);
            return ctx.reply(Response::failure(id, RpcError::new(jsonrpc::CANCELLED, "cancelled before it started"))).await;
        }
    };
    ctx.daemon.waiting.fetch_sub(1, Ordering::SeqCst);
    if let Err(error) = refuse_when_stopping(ctx) {
        return ctx.reply(Response::failure(id, error)).await;
    }
    let began = Instant::now();
    let (events, mut incoming) = mpsc::channel::<Event>(EVENT_QUEUE);
    let outbox = ctx.outbox.clone();
    let event_id = id.clone();
    let forwarder = tokio::spawn(async move {
        while let Some(event) = incoming.recv().await {
            let line = event_notification(&event_id, &event).to_string();
            if outbox.send(line).await.is_err() {
                break;
            }
        }
    });
    // The run's task outlives this reply (teardown) and holds the slot until it is done.
    let (result_tx, result_rx) = oneshot::channel();
    let cancelled = cancel.clone();
    let run = run::execute(ctx.daemon.clone(), prepared, events, cancel, result_tx);
    ctx.daemon.runs.spawn(async move {
        run.await;
        drop(slot);
    });
    let result = match result_rx.await {
        Ok(result) => result,
        Err(_) => {
            return ctx.reply(Response::failure(id, RpcError::internal("the run's task ended without a result"))).await
        }
    };
    // All events are out before the response.
    let _ = forwarder.await;
    tracing::info!(
        peer_uid = ctx.peer_uid,
        policy,
        verdict = %result.verdict,
        exit_code = result.exit_code,
        signal = result.signal,
        cpu_time = result.cpu_time,
        wall_time = result.wall_time,
        memory = result.memory,
        limit = ?result.limit,
        message = result.message.as_deref(),
        overhead_ms = (began.elapsed().as_secs_f64() - result.wall_time) * 1e3,
        "run"
    );
    let response = match serde_json::to_value(&result) {
        // Stopped by `cancel` (or the connection closing) before it ended by itself: an error,
        // with what was measured until then as its data.
        Ok(value) if cancelled.is_cancelled() && result.verdict == Verdict::IE => {
            let mut error = RpcError::new(jsonrpc::CANCELLED, "the run was cancelled");
            error.data = Some(value);
            Response::failure(id, error)
        }
        Ok(value) => Response::success(id, value),
        Err(e) => Response::failure(id, RpcError::internal(e.to_string())),
    };
    ctx.reply(response).await;
}
