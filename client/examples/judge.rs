//! A tiny judge frontend on `segi_client`: one connection, the tests of a problem run at once
//! (segid queues what exceeds its `--max-runs`), each answer compared with the expected one.
//!
//! ```sh
//! segid --socket /tmp/segi/segid.sock --policies ./policies &
//! SEGID_SOCKET=/tmp/segi/segid.sock cargo run -p segi-client --example judge
//! ```

use segi_client::{default_socket, Client};
use segi_proto::{Payload, RunRequest, Verdict};

/// The "submission": a shell one-liner that adds two numbers.
const SUBMISSION: &str = "read a b; echo $((a + b))";

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let tests = [("1 2\n", "3\n"), ("40 2\n", "42\n"), ("-5 5\n", "0\n")];
    let client = Client::connect(default_socket()?).await?;
    let runs = tests.iter().map(|(input, _)| {
        let request: RunRequest = serde_json::from_value(serde_json::json!({
            "command": ["sh", "-c", SUBMISSION],
            "limits": { "cpu_time": 1.0, "wall_time": 5.0, "memory": 64 << 20 },
        }))
        .expect("a valid request");
        let request = RunRequest { stdin: Some(Payload::Text(input.to_string())), ..request };
        let client = &client;
        async move {
            let mut output = Vec::new();
            let result = client
                .run(&request, |event| {
                    if let segi_proto::Event::Stdout(payload) = event {
                        output.extend(payload.to_bytes().unwrap_or_default());
                    }
                })
                .await;
            (result, output)
        }
    });
    // All tests at once over the one connection; results come back in test order.
    let outcomes = futures_join_all(runs).await;
    let mut passed = 0;
    for (n, ((result, output), (_, expected))) in outcomes.into_iter().zip(tests).enumerate() {
        let result = result?;
        let verdict = match result.verdict {
            Verdict::OK if output == expected.as_bytes() => "AC",
            Verdict::OK => "WA",
            other => return Err(anyhow::anyhow!("test {n}: {other} ({:?})", result.message)),
        };
        passed += usize::from(verdict == "AC");
        println!("test {n}: {verdict} cpu={:.3}s memory={}B", result.cpu_time, result.memory);
    }
    println!("{passed}/{} passed", tests.len());
    Ok(())
}

/// Awaits every future concurrently (what `futures::future::join_all` does), kept here so the
/// example needs nothing beyond tokio.
async fn futures_join_all<F: std::future::Future>(futures: impl IntoIterator<Item = F>) -> Vec<F::Output> {
    let mut pinned: Vec<_> = futures.into_iter().map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = pinned.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (future, output) in pinned.iter_mut().zip(outputs.iter_mut()) {
            if output.is_none() {
                match future.as_mut().poll(cx) {
                    std::task::Poll::Ready(value) => *output = Some(value),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    outputs.into_iter().map(|o| o.expect("every future finished")).collect()
}
