//! What every run-like method (`run`, `evaluate`) shares once it has parsed its params: the
//! duplicate-id check, the files passed as descriptors, a run slot (queueing first come, first
//! served), the event forwarder, the log line and the response.
//!
//! A method gives a [`Launch`]: its policy's name, the descriptor indexes its request names,
//! and how to turn the request into a [`Spec`] once those files are read.

use std::os::fd::OwnedFd;
use std::sync::atomic::Ordering;
use std::time::Instant;

use segi_proto::jsonrpc::{self, event_notification, Response, RpcError};
use segi_proto::{Event, Verdict};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::connection::Context;
use crate::run::passed::{self, PassedFiles};
use crate::run::request::{self, Prepared, Spec};
use crate::run::{self as runner};

/// Events waiting to be framed for one run; small, so that output is paced by the client.
const EVENT_QUEUE: usize = 16;

/// Turns a parsed request into its spec, given the bytes of the files it passed by descriptor.
pub type BuildSpec = Box<dyn FnOnce(&mut PassedFiles) -> Result<Spec, String> + Send>;

/// A run-like request, parsed.
pub struct Launch {
    /// `run`, `evaluate`: for the log.
    pub method: &'static str,
    pub policy: String,
    /// The descriptors that came with the request line, and the indexes the request names.
    pub fds: Vec<OwnedFd>,
    pub named_fds: Vec<usize>,
    pub build: BuildSpec,
}

pub fn refuse_when_stopping(ctx: &Context) -> Result<(), RpcError> {
    match ctx.daemon.stopping.load(Ordering::SeqCst) {
        true => {
            Err(RpcError::new(jsonrpc::SHUTTING_DOWN, "segid is stopping and takes no new runs; retry once it is back"))
        }
        false => Ok(()),
    }
}

/// Streams `event`s for request `id` to the client until every sender is dropped; await the
/// handle before answering, so that all events come before the response.
pub fn forward_events(ctx: &Context, id: &Value) -> (mpsc::Sender<Event>, tokio::task::JoinHandle<()>) {
    let (events, mut incoming) = mpsc::channel::<Event>(EVENT_QUEUE);
    let outbox = ctx.outbox.clone();
    let event_id = id.clone();
    let forwarder = tokio::spawn(async move {
        while let Some(event) = incoming.recv().await {
            if outbox.send(event_notification(&event_id, &event)).await.is_err() {
                break;
            }
        }
    });
    (events, forwarder)
}

/// Serves a request that runs many sandboxes (`judge`, `grade`) in its own task: the id is
/// registered for `cancel`, `work` gets the event sender and the cancellation, and its value
/// is the response (a cancelled request answers -32002 with the value as `data`).
pub async fn serve<F, Fut>(ctx: &Context, id: Value, policy: &str, what: &'static str, work: F)
where
    F: FnOnce(Context, mpsc::Sender<Event>, CancellationToken) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = Result<Value, RpcError>> + Send,
{
    let cancel = match register(ctx, &id, policy) {
        Ok(cancel) => cancel,
        Err(error) => return ctx.reply(Response::failure(id, error)).await,
    };
    let ctx = ctx.clone();
    tokio::spawn(async move {
        let key = id.to_string();
        let (events, forwarder) = forward_events(&ctx, &id);
        let outcome = work(ctx.clone(), events, cancel.clone()).await;
        let _ = forwarder.await;
        let response = match outcome {
            Ok(value) if cancel.is_cancelled() => {
                let mut error = RpcError::new(jsonrpc::CANCELLED, format!("the {what} was cancelled"));
                error.data = Some(value);
                Response::failure(id, error)
            }
            Ok(value) => Response::success(id, value),
            Err(error) => Response::failure(id, error),
        };
        ctx.reply(response).await;
        ctx.running.lock().unwrap_or_else(|p| p.into_inner()).remove(&key);
    });
}

/// Starts the run in its own task and returns; the task replies when the run is over.
pub async fn start(ctx: &Context, id: Value, launch: Launch) {
    match register(ctx, &id, &launch.policy) {
        Ok(cancel) => {
            let ctx = ctx.clone();
            tokio::spawn(async move {
                let key = id.to_string();
                prepare_and_execute(&ctx, id, launch, cancel).await;
                ctx.running.lock().unwrap_or_else(|p| p.into_inner()).remove(&key);
            });
        }
        Err(error) => ctx.reply(Response::failure(id, error)).await,
    }
}

/// The checks that need no I/O: shutdown, the policy's name, the id's uniqueness.
pub fn register(ctx: &Context, id: &Value, policy: &str) -> Result<CancellationToken, RpcError> {
    refuse_when_stopping(ctx)?;
    let policies = ctx.daemon.policies();
    if policies.get(policy).is_none() {
        return Err(RpcError::invalid_params(format!(
            "unknown policy {policy:?}; available: {}",
            policies.names().join(", ")
        )));
    }
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
    Ok(cancel)
}

async fn prepare_and_execute(ctx: &Context, id: Value, launch: Launch, cancel: CancellationToken) {
    let Some(policy) = ctx.daemon.policies().get(&launch.policy) else {
        let error = RpcError::invalid_params(format!("policy {:?} was removed by a reload", launch.policy));
        return ctx.reply(Response::failure(id, error)).await;
    };
    let passed = tokio::select! {
        passed = passed::read(launch.fds, launch.named_fds, policy.box_size) => passed,
        _ = cancel.cancelled() => {
            return ctx.reply(Response::failure(id, RpcError::new(jsonrpc::CANCELLED, "cancelled before it started"))).await;
        }
    };
    let base = runner::base_plan(&ctx.daemon, &policy);
    let policy_name = policy.name.clone();
    let prepared =
        passed.and_then(|mut passed| (launch.build)(&mut passed)).and_then(|spec| request::prepare(spec, policy, base));
    match prepared {
        Ok(prepared) => execute(ctx, id, prepared, cancel, policy_name, launch.method).await,
        Err(why) => ctx.reply(Response::failure(id, RpcError::invalid_params(why))).await,
    }
}

async fn execute(
    ctx: &Context,
    id: Value,
    prepared: Prepared,
    cancel: CancellationToken,
    policy: String,
    method: &'static str,
) {
    // Wait for a run slot (tokio's semaphore is fair: first come, first served), but not past
    // a cancel; say so when the run has to wait.
    if ctx.daemon.run_slots.available_permits() == 0 {
        let ahead = ctx.daemon.waiting.load(Ordering::SeqCst) as u64;
        let line = event_notification(&id, &Event::Queued { ahead });
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
    let (events, forwarder) = forward_events(ctx, &id);
    // The run's task outlives this reply (teardown) and holds the slot until it is done.
    let (result_tx, result_rx) = oneshot::channel();
    let cancelled = cancel.clone();
    let run = runner::execute(ctx.daemon.clone(), prepared, events, cancel, result_tx);
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
        method,
        peer_uid = ctx.peer_uid,
        policy,
        verdict = %result.verdict,
        exit_code = result.exit_code,
        signal = result.signal,
        cpu_time = result.cpu_time,
        wall_time = result.wall_time,
        memory = result.memory,
        limit = ?result.limit,
        warnings = result.warnings.len(),
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
