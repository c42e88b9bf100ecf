//! The case that times segid's SEGI stdout parser (`segi-bench --parser`): throughput of plain
//! text lines and of a data block's JSON lines, fed in 64 KiB chunks as the daemon reads them.
//!
//! Each stream is generated in memory once; only parsing is timed, dropping the events
//! included (the daemon drops them too, once sent). The bar of issue 4: at least 500 MB/s each.

use std::hint::black_box;
use std::time::{Duration, Instant};

use segid::evaluation::parser::{ParsedEvent, Parser};

/// What the daemon reads at once from a pipe.
const CHUNK: usize = 64 * 1024;

/// The issue's bar, in MB/s (10^6 bytes a second).
pub const BAR_MB_S: f64 = 500.0;

const BEGIN: &str = "--evaluation-data-begin-7e112fc35845cd01d454";
const END: &str = "--evaluation-data-end---46c11713eef6050e3ca6";

/// Builds a stream of about the given size.
type Generator = fn(usize) -> Vec<u8>;

/// One stream's figures.
#[derive(Debug)]
pub struct Throughput {
    pub case: &'static str,
    pub label: &'static str,
    pub bytes: usize,
    pub events: usize,
    /// One figure per repetition, in MB/s.
    pub mb_s: Vec<f64>,
}

impl Throughput {
    pub fn median_mb_s(&self) -> f64 {
        let mut sorted = self.mb_s.clone();
        sorted.sort_by(f64::total_cmp);
        sorted[sorted.len() / 2]
    }

    /// The fastest pass: what the parser can do when nothing else competes for the CPU.
    pub fn best_mb_s(&self) -> f64 {
        self.mb_s.iter().copied().fold(0.0, f64::max)
    }

    /// Judged on the median, not the best pass.
    pub fn meets_bar(&self) -> bool {
        self.median_mb_s() >= BAR_MB_S
    }
}

/// Times both streams, `size` bytes each, `repetitions` times each.
pub fn measure(size: usize, repetitions: usize, progress: impl Fn(&str)) -> Vec<Throughput> {
    let cases: [(&str, &str, Generator); 2] =
        [("text", "plain text, 80-byte lines", text_stream), ("data", "data block, ~100-byte JSON lines", data_stream)];
    cases
        .into_iter()
        .map(|(case, label, generate)| {
            progress(&format!("generating {} MiB of {label}", size >> 20));
            let stream = generate(size);
            progress(&format!("parsing {label}"));
            let mut events = 0;
            let mb_s = (0..repetitions)
                .map(|_| {
                    let (took, n) = parse(&stream);
                    events = n;
                    stream.len() as f64 / took.as_secs_f64() / 1e6
                })
                .collect();
            Throughput { case, label, bytes: stream.len(), events, mb_s }
        })
        .collect()
}

/// Parses `stream` in 64 KiB chunks; returns the time taken and the number of events.
fn parse(stream: &[u8]) -> (Duration, usize) {
    let start = Instant::now();
    let mut parser = Parser::new(BEGIN.as_bytes(), END.as_bytes());
    let mut out: Vec<ParsedEvent> = Vec::with_capacity(4096);
    let mut events = 0;
    for chunk in stream.chunks(CHUNK) {
        parser.feed(chunk, &mut out);
        events += out.len();
        black_box(&out);
        out.clear();
    }
    let warnings = parser.finish(&mut out);
    events += out.len();
    let took = start.elapsed();
    assert!(warnings.is_empty(), "the generated stream gave warnings: {warnings:?}");
    (took, events)
}

/// Lines of 79 printable bytes and a `\n`, like an evaluator's progress output.
fn text_stream(size: usize) -> Vec<u8> {
    let mut stream = Vec::with_capacity(size + 128);
    let mut i = 0u64;
    while stream.len() < size {
        let line = format!("test case {i:>7}: output matches the expected answer, time {:>4} ms, score", i % 997);
        stream.extend_from_slice(format!("{line:<79.79}\n").as_bytes());
        i += 1;
    }
    stream
}

/// One data block of ~100-byte JSON lines, as an evaluator reporting goals would print.
fn data_stream(size: usize) -> Vec<u8> {
    let mut stream = Vec::with_capacity(size + 256);
    stream.extend_from_slice(format!("\n{BEGIN}\n").as_bytes());
    let mut i = 0u64;
    while stream.len() < size {
        let line = format!(
            r#"{{"type": "goal", "name": "case_{i:07}", "outcome": {}, "time": 0.{:03}, "memory_kib": {}}}"#,
            !i.is_multiple_of(3),
            i % 1000,
            2048 + i % 4096
        );
        stream.extend_from_slice(line.as_bytes());
        stream.push(b'\n');
        i += 1;
    }
    stream.extend_from_slice(format!("{END}\n").as_bytes());
    stream
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_streams_look_as_described() {
        let text = text_stream(1 << 16);
        assert!(text.split(|&b| b == b'\n').filter(|l| !l.is_empty()).all(|l| l.len() == 79));
        let data = data_stream(1 << 16);
        let lines: Vec<&[u8]> = data.split(|&b| b == b'\n').collect();
        assert!(lines[2..lines.len() - 2].iter().all(|l| (90..=110).contains(&l.len())), "{}", lines[2].len());
        let (_, events) = parse(&data);
        assert_eq!(events, lines.len() - 4);
    }
}
