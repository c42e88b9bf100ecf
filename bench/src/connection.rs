//! Case (e): sequential `run` requests over one persistent `segi_client::Client` connection,
//! the path a judge takes (no process start, no connect per run).

use anyhow::{bail, Context, Result};
use segi_proto::{RunRequest, Verdict};
use std::path::Path;
use std::time::{Duration, Instant};

use crate::interrupted;

/// Connects once, makes `warmup` untimed runs of `program` (at least one, which checks that
/// it works), then `iterations` timed ones, and returns the time of each timed request.
pub async fn time_runs(socket: &Path, program: &str, warmup: usize, iterations: usize) -> Result<Vec<Duration>> {
    let client =
        segi_client::Client::connect(socket).await.with_context(|| format!("connecting to {}", socket.display()))?;
    let request = RunRequest {
        policy: "default".into(),
        command: vec![program.into()],
        limits: Default::default(),
        env: Default::default(),
        stdin: None,
        files: Vec::new(),
        collect: Vec::new(),
    };
    let runs = warmup.max(1) + iterations;
    let mut samples = Vec::with_capacity(iterations);
    for i in 0..runs {
        if interrupted() {
            bail!("interrupted");
        }
        let start = Instant::now();
        // /bin/true prints nothing; the events are not part of what is measured.
        let result = client.run(&request, |_event| {}).await.with_context(|| format!("run {} of {program}", i + 1))?;
        let elapsed = start.elapsed();
        if result.verdict != Verdict::OK {
            bail!(
                "run {} of {program} ended with {} ({})",
                i + 1,
                result.verdict,
                result.message.as_deref().unwrap_or("no message")
            );
        }
        if i >= runs - iterations {
            samples.push(elapsed);
        }
    }
    Ok(samples)
}
