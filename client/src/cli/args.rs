//! The command line as the user writes it (`interface.md`), before any file is read.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use segi_proto::units::{parse_duration, parse_size};
use segi_proto::Limits;

const TOP_HELP: &str = "\
Examples:
  segi-client ping
  segi-client run --time 1s --memory 256M -- sh -c 'echo hi'
  segi-client evaluate --problem examples/sum --submission source=examples/sum/submissions/correct.c -- python3 evaluator.py
  segi-client judge --problem examples/problems/sum --submission examples/problems/sum/solutions/ac.c
  segi-client grade --workspace examples/graders/workspace --config examples/graders/graders.yaml
  segi-client help run

Exit status of `run` and `evaluate`: the program's exit code if it exited, 128+N if it was
killed by signal N (a limit included), 125 if segi-client or segid failed.
Exit status of `judge`: 0 for AC, 1 for any other verdict of the submission (WA, TLE, RE,
MLE, OLE, CE; WA 3, PT, ...), 2 for IE or CF, 125 if segi-client or segid failed.
Exit status of `grade`: 0 if every grader passed, 1 if any failed, 125 if segi-client or segid
failed.";

const PING_HELP: &str = "\
Prints `pong (segid VERSION)`, or with --json the answer as one JSON line.

Example:
  $ segi-client ping
  pong (segid 0.1.0)";

const CAPABILITIES_HELP: &str = "\
Shows what the daemon's host can enforce: cgroup version and controllers, landlock ABI,
seccomp, user namespaces, the limits that fall back to a weaker mechanism, the policies and
methods the daemon offers. With --json, prints the answer as one JSON line.

Example:
  $ segi-client capabilities
  version            0.1.0
  cgroup             v2 (cpu, memory, pids)
  ...";

const RUN_HELP: &str = "\
PROGRAM runs in a fresh sandbox whose working directory is /box. Each --file puts a host
file in /box (BOXPATH is relative to /box; the host file's executable bit is kept). Each
--collect copies a regular file out of /box to HOSTPATH after the run. segi-client reads and
writes these host files itself.

Sizes: bytes or a number with K, M, G (also KiB, MiB, GiB), e.g. 64K, 256M, 1G.
Durations: seconds or a number with ms, s or m, e.g. 1.5, 500ms, 2s, 1m.
A limit left out takes the policy's default; one above the policy's maximum is refused.

Without --json, the program's stdout and stderr are forwarded as they come and a summary goes
to stderr at the end:
  segi: TLE cpu=1.003s wall=1.004s memory=1.2MiB signal=9 limit=cpu_time
With --json, stdout carries only JSON Lines: each output event
({\"type\":\"stdout\",\"text\":\"...\"}, or \"base64\" for bytes that are not UTF-8), then the
result object (collected files are written to their HOSTPATH and left out of it).

Exit status: the program's exit code if it exited; 128+N if it was killed by signal N (a limit
included; 137 for a limit without a signal); 125 if segi-client or segid failed; 130 if
interrupted.

Example:
  $ segi-client run --time 2s --memory 256M --file prog=./a.out \\
        --stdin tests/1.in --collect out.txt=./1.out -- ./prog
  segi: OK cpu=0.120s wall=0.131s memory=3.1MiB exit=0";

const EVALUATE_HELP: &str = "\
Runs a SEGI evaluator on a submission. EVALUATOR runs in a fresh sandbox under the
`evaluator` policy. Each --submission FIELD=PATH is one field of the submission: segi-client
opens PATH itself (a regular file) and passes the open file to segid, which puts it read-only
at /submission/FIELD/NAME (NAME is PATH's file name) and sets SUBMISSION_FILE_<FIELD> (FIELD
in capitals) to that path. FIELD is lowercase letters, digits and _, starting with a letter.
With --problem DIR, segi-client sends every file under DIR (a top-level .git left out;
symlinks only to files or directories inside DIR), and the evaluator runs in /problem, a
read-only copy of DIR; without it, the evaluator runs in /box.

Limits take the same forms as for `run` (see `segi-client help run`) and bound the whole
evaluation, the evaluator and what it runs.

The evaluator's stdout is its report: text, and data blocks between the lines
$EVALUATION_DATA_BEGIN and $EVALUATION_DATA_END, one JSON value per line. Without --json,
text is printed as it comes, each data value as a line of its own, `  data: JSON`, and the
evaluator's stderr goes to stderr; at the end, stderr gets each mistake the evaluator made in
its report (`segi: warning: stdout line N ...`) and the summary line of `run`.
With --json, stdout carries only JSON Lines: each event as segid sent it
({\"type\":\"text\",\"payload\":\"...\"}, {\"type\":\"data\",\"payload\":...},
{\"type\":\"stderr\",\"text\":\"...\"}), then the result object, with its \"warnings\".

Exit status: as for `run`: the evaluator's exit code if it exited (whatever the score); 128+N
if it was killed by signal N; 125 if segi-client or segid failed (a field name or file segid
refuses included); 130 if interrupted.

Example:
  $ segi-client evaluate --problem examples/sum \\
        --submission source=examples/sum/submissions/correct.c -- python3 evaluator.py
  Compiling correct.c...
    data: {\"type\":\"compilation\",\"outcome\":\"success\"}
  case 01: correct (0.00 s)
    data: {\"type\":\"testcase\",\"case\":\"01\",\"outcome\":\"correct\",\"time\":0.001}
  ...
    data: {\"type\":\"goal\",\"name\":\"correct\",\"outcome\":true}
    data: {\"type\":\"score\",\"value\":100}
  Score: 100/100 (6/6 cases correct)
  segi: OK cpu=0.119s wall=0.118s memory=12.1MiB exit=0";

const JUDGE_HELP: &str = "\
Judges a submission on a problem package. segid judges two kinds of problems (see
docs/problems.md):
- a Sphere problem, judged the way Sphere Engine does: the submission is compiled (if its
  language compiles) and run on each test, a test case judge gives each test a status and a
  score, and the master judge turns them into the verdict;
- a problem with a strategy (problem.toml sets `strategy`, a built-in one such as
  \"standard\" or a custom one): the strategy compiles and runs the submission and the
  problem's programs (checkers, interactors, ...) in a pipeline, and each test gets a verdict
  and points; the submission's verdict follows from them and from the test groups.

--problem DIR is the package: problem.toml (limits, judges or the strategy), tests/0.in,
tests/0.out, tests/1.in, ... and any judge sources; segi-client sends every file under DIR (a
top-level .git left out; symlinks only to files or directories inside DIR). --submission FILE
is the source: segi-client opens it itself (a regular file) and passes the open file to segid.
Its language is --language L (a language of segid's languages.toml, e.g. c, cpp, python3), or
else chosen by segid from FILE's extension.

A Sphere problem, without --json: each test's line is printed as the test finishes, then the
verdict's line, on stdout:
  test N - STATUS (score=SCORE, sig=SIGNAL, time=SECONDS, mem=KIB)
(SECONDS of CPU time, peak memory in KiB), with a line `  info: ...` under a test for each
line its test case judge wrote for the user, and `  message: ...` for each line of segid's
note on it (the reason for an IE, or which limit was hit). Before the verdict's line, stderr
gets the compiler's output after a compilation error (CE), or the reason for an IE
(`segi: internal error: ...`).
STATUS is one of AC (accepted), WA (wrong answer), TLE (time limit), RE (runtime error: a
non-zero exit or a signal), MLE (memory limit), OLE (output limit), CE (compilation error),
IE (internal error: a judge or the sandbox failed, never the submission's fault).

A problem with a strategy, without --json: each verdict change is printed on stdout as it
happens, a test's or the submission's, with its points (PT) and comment:
  test 3: WA (expected 5, got 6)
  submission: PT 2.5
then, at the end, each test's line (none after CE: no test ran), each group's line (when the
problem has groups) and the verdict's line:
  test N - VERDICT (points=POINTS/MAX, time=SECONDS, mem=KIB KiB)
    comment: ...
  group NAME: POINTS/MAX passed (or failed)
  VERDICT (points=POINTS/MAX)
Before the verdict's line, stderr gets the result's comment: the compiler's output after CE,
the strategy's error after CF (`segi: check failed: ...`).
A test's VERDICT is OK, WA, PE (presentation error), RE, TLE, MLE, ILE (idleness: real time),
SV (security violation), PT (partial points), IG (ignored: a group it depends on failed), CF
(check failed: the problem's fault, never the submission's) or CE. The submission's VERDICT
is AC, the first failed test's verdict and number (e.g. WA 3), PT (a scored problem), CE or
CF.

With --json, stdout carries only JSON Lines: each test or verdict event as segid sent it
({\"type\":\"test\",\"test\":0,\"status\":\"AC\",...} or
{\"type\":\"verdict\",\"test\":3,\"verdict\":\"WA\",...}), then the result object: for a
Sphere problem status, score, signal, time, memory, language, tests, message, compilation;
for a problem with a strategy verdict, points, max_points, language, strategy, tests, groups,
comment.

Exit status: 0 if the verdict is AC; 1 for any other verdict the submission earned (WA, TLE,
RE, MLE, OLE, CE; WA 3, PT, ...); 2 for IE or CF (the judge's or the problem's failure); 125 if
segi-client or segid failed (connection, usage, a problem package or language segid refuses);
130 if interrupted (Ctrl-C cancels the judging).

Examples:
  $ segi-client judge --problem examples/problems/sum \\
        --submission examples/problems/sum/solutions/ac.c
  test 0 - AC (score=0.00, sig=0, time=0.00, mem=572)
  test 1 - AC (score=0.00, sig=0, time=0.00, mem=528)
  ...
  test 4 - AC (score=0.00, sig=0, time=0.00, mem=580)
  AC (score=0.00, sig=0, time=0.01, mem=580)

  $ segi-client judge --problem examples/pipelines/standard \\
        --submission examples/pipelines/standard/solutions/ac.cpp
  test 1 - OK (points=1.00/1.00, time=0.00, mem=1408 KiB)
  ...
  AC (points=3.00/3.00)";

const GRADE_HELP: &str = "\
Runs program graders (Microsoft Vally's \"program\" grader) on a workspace an AI agent changed.
segi-client archives --workspace DIR (files with their modes, directories, symlinks as symlinks;
named pipes, sockets and devices are left out with a warning) and passes the archive to segid
open. Each grader runs under the `evaluator` policy (--policy) on its own copy of the workspace,
in its root (or in --sub-path below it), with EVALUATE_WORKSPACE set to the workspace root and
EVALUATE_GRADER_INPUT to a file holding the GraderInput: --input FILE, a JSON object
(trajectory, stimulus, ...), or {} without it. Graders run in parallel.

The graders come from --config FILE, the reference's YAML (or the same shape in JSON):
  graders:
    - type: program
      name: check-output            # optional
      config:
        program: python3            # required
        args: [graders/check_output.py]
        shell: false                # through /bin/sh -c, program and args joined by spaces
        sub_path: src/app           # working directory below the workspace root
        timeout: 60s                # or seconds as a number; default 60s
        env: {API_ENDPOINT: https://test.example.com}
Only `program` graders can run; other keys of the file are ignored. Or one grader from the
flags: --program P [--arg A]... [--shell] [--sub-path S] [--timeout DUR] [--env K=V]... [--name N].

A grader passes by exiting 0 with nothing on stdout (score 1; else score 0), or by printing one
JSON GraderResult object: {\"passed\": true, \"score\": 0.85, \"evidence\": \"...\"}.

Without --json, each grader's line is printed on stdout in the order of the graders, as soon as
it and every grader before it have finished, with its evidence indented under it (and, for a
grader that failed, the end of its stderr):
  ✔ NAME  score=1.00  Grader exited successfully
  ✘ NAME  score=0.00  Grader exited with exit code 1
    evidence: 14 of 16 assertions passed
then the count on stderr: `segi: 2 of 3 graders passed`.
With --json, stdout carries only JSON Lines: each grader's result object, in the order of the
graders (name, passed, score, evidence, kind, metadata, details, message, exit_code, cpu_time,
wall_time, memory, stderr).

Exit status: 0 if every grader passed; 1 if any failed (a grader that timed out or could not
start included); 125 if segi-client or segid failed (connection, usage, a configuration segid
refuses: a sub_path leaving the workspace, a reserved variable in env); 130 if interrupted
(Ctrl-C cancels the grading).

Example:
  $ segi-client grade --workspace examples/graders/workspace \\
        --config examples/graders/graders.yaml --input examples/graders/input.json
  ✘ output-schema  score=0.80  Grader exited successfully
    evidence: 4 of 5 checks passed
    stderr: output-schema: failed count: count is an integer equal to the number of items
  ✔ unit-tests  score=1.00  Grader exited successfully
  ✔ trajectory-score  score=0.80  Grader exited successfully
    evidence: final message mentions 3 of 4 keywords (missing: count); 8 steps (max 20)
  ✔ status-check  score=1.00  Grader exited successfully
    evidence: status is 'active', expected 'active'
  segi: 3 of 4 graders passed

Example with one grader from the flags:
  $ segi-client grade --workspace . --program python3 --arg check.py
  ✔ python3  score=1.00  Grader exited successfully
  segi: 1 of 1 grader passed";

/// Talks to segid, the segi sandbox daemon.
#[derive(Debug, Parser)]
#[command(name = "segi-client", version, after_help = TOP_HELP)]
pub struct Cli {
    /// The daemon's socket [default: /run/segi/segid.sock for root, else
    /// $XDG_RUNTIME_DIR/segi/segid.sock]
    #[arg(long, global = true, env = "SEGID_SOCKET", value_name = "PATH")]
    pub socket: Option<PathBuf>,

    /// Print JSON Lines on stdout instead of readable text
    #[arg(long, global = true)]
    pub json: bool,

    #[command(subcommand)]
    pub command: Command,
}

// Parsed once per process: the size of the enum does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Checks that segid answers, and shows its version
    #[command(after_help = PING_HELP)]
    Ping,
    /// Shows what segid can enforce on this host
    #[command(after_help = CAPABILITIES_HELP)]
    Capabilities,
    /// Runs a program in a fresh sandbox
    #[command(after_help = RUN_HELP)]
    Run(RunArgs),
    /// Evaluates a submission with a SEGI evaluator in a fresh sandbox
    #[command(after_help = EVALUATE_HELP)]
    Evaluate(EvaluateArgs),
    /// Judges a submission on a problem package (a Sphere problem, or one with a strategy)
    #[command(after_help = JUDGE_HELP)]
    Judge(JudgeArgs),
    /// Grades a workspace with program graders (Microsoft Vally's "program" grader)
    #[command(after_help = GRADE_HELP)]
    Grade(GradeArgs),
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The policy to run under (default, compile, evaluator, ...)
    #[arg(long, value_name = "NAME", default_value = "default")]
    pub policy: String,

    #[command(flatten)]
    pub limits: LimitArgs,

    /// A host file to feed to the program's stdin [default: empty]
    #[arg(long, value_name = "PATH")]
    pub stdin: Option<PathBuf>,

    /// Put the host file HOSTPATH at BOXPATH in /box (repeatable)
    #[arg(long = "file", value_name = "BOXPATH=HOSTPATH", value_parser = mapping)]
    pub files: Vec<PathMapping>,

    /// Add a variable to the policy's environment (repeatable)
    #[arg(long = "env", value_name = "KEY=VALUE", value_parser = env_var)]
    pub env: Vec<(String, String)>,

    /// After the run, copy BOXPATH out of /box to the host file HOSTPATH (repeatable)
    #[arg(long = "collect", value_name = "BOXPATH=HOSTPATH", value_parser = mapping)]
    pub collect: Vec<PathMapping>,

    /// The program and its arguments (after `--`)
    #[arg(value_name = "PROGRAM", required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    pub command: Vec<String>,
}

#[derive(Debug, Args)]
pub struct EvaluateArgs {
    /// The policy the evaluator runs under
    #[arg(long, value_name = "NAME", default_value = "evaluator")]
    pub policy: String,

    /// The problem directory: its files go to /problem, the evaluator's working directory
    /// [default: none; the evaluator runs in /box]
    #[arg(long, value_name = "DIR")]
    pub problem: Option<PathBuf>,

    /// A field of the submission: the host file PATH, at $SUBMISSION_FILE_<FIELD> (repeatable)
    #[arg(long = "submission", value_name = "FIELD=PATH", value_parser = submission)]
    pub submissions: Vec<SubmissionArg>,

    #[command(flatten)]
    pub limits: LimitArgs,

    /// Add a variable to the policy's environment (repeatable)
    #[arg(long = "env", value_name = "KEY=VALUE", value_parser = env_var)]
    pub env: Vec<(String, String)>,

    /// The evaluator and its arguments (after `--`)
    #[arg(value_name = "EVALUATOR", required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    pub command: Vec<String>,
}

#[derive(Debug, Args)]
pub struct JudgeArgs {
    /// The problem package: problem.toml, tests/N.in, tests/N.out, judge or strategy sources
    #[arg(long, value_name = "DIR")]
    pub problem: PathBuf,

    /// The source file to judge
    #[arg(long, value_name = "FILE")]
    pub submission: PathBuf,

    /// The submission's language (c, cpp, python3, ...) [default: by FILE's extension]
    #[arg(long, value_name = "L")]
    pub language: Option<String>,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("graders").args(["config", "program"]).required(true)))]
pub struct GradeArgs {
    /// The workspace directory the graders inspect
    #[arg(long, value_name = "DIR")]
    pub workspace: PathBuf,

    /// The graders: a YAML (or JSON) file with a top-level `graders:` list of
    /// `{type: program, config: {...}}`
    #[arg(long, value_name = "FILE", conflicts_with = "program")]
    pub config: Option<PathBuf>,

    /// The GraderInput JSON file (trajectory, stimulus, ...) [default: {}]
    #[arg(long, value_name = "FILE")]
    pub input: Option<PathBuf>,

    /// The policy graders run under
    #[arg(long, value_name = "NAME", default_value = "evaluator")]
    pub policy: String,

    /// One grader: the program to run (python3, bash, ./check)
    #[arg(long, value_name = "P")]
    pub program: Option<String>,

    /// An argument of --program (repeatable)
    #[arg(long = "arg", value_name = "A", conflicts_with = "config", allow_hyphen_values = true)]
    pub args: Vec<String>,

    /// Run --program through /bin/sh -c, with its arguments joined by spaces
    #[arg(long, conflicts_with = "config")]
    pub shell: bool,

    /// The grader's working directory below the workspace root
    #[arg(long = "sub-path", value_name = "S", conflicts_with = "config")]
    pub sub_path: Option<String>,

    /// The grader's time limit [default: 60s]
    #[arg(long, value_name = "DUR", value_parser = duration, conflicts_with = "config")]
    pub timeout: Option<f64>,

    /// Add a variable to the grader's environment (repeatable)
    #[arg(long = "env", value_name = "KEY=VALUE", value_parser = env_var, conflicts_with = "config")]
    pub env: Vec<(String, String)>,

    /// The grader's name in the results [default: the program's]
    #[arg(long, value_name = "N", conflicts_with = "config")]
    pub name: Option<String>,
}

/// The limit flags `run` and `evaluate` share.
#[derive(Debug, Args)]
pub struct LimitArgs {
    /// CPU time of all the run's processes
    #[arg(long, value_name = "DUR", value_parser = duration)]
    pub time: Option<f64>,

    /// Wall-clock time
    #[arg(long = "wall-time", value_name = "DUR", value_parser = duration)]
    pub wall_time: Option<f64>,

    /// Peak memory of the run
    #[arg(long, value_name = "SIZE", value_parser = size)]
    pub memory: Option<u64>,

    /// Processes and threads alive at once
    #[arg(long, value_name = "N", value_parser = count)]
    pub processes: Option<u64>,

    /// Bytes of stdout plus stderr
    #[arg(long, value_name = "SIZE", value_parser = size)]
    pub output: Option<u64>,

    /// Largest file the program may write
    #[arg(long = "file-size", value_name = "SIZE", value_parser = size)]
    pub file_size: Option<u64>,
}

impl LimitArgs {
    /// The limits as the request carries them.
    pub fn to_limits(&self) -> Limits {
        Limits {
            cpu_time: self.time,
            wall_time: self.wall_time,
            memory: self.memory,
            processes: self.processes,
            output: self.output,
            file_size: self.file_size,
        }
    }
}

/// `FIELD=PATH` of `--submission`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubmissionArg {
    pub field: String,
    pub path: PathBuf,
}

/// `BOXPATH=HOSTPATH` of `--file` and `--collect`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathMapping {
    pub box_path: String,
    pub host_path: PathBuf,
}

fn duration(text: &str) -> Result<f64, String> {
    parse_duration(text).map_err(|e| e.to_string())
}

fn size(text: &str) -> Result<u64, String> {
    parse_size(text).map_err(|e| e.to_string())
}

fn count(text: &str) -> Result<u64, String> {
    text.trim().parse().map_err(|_| format!("expected a whole number, e.g. 16, not {text:?}"))
}

/// Splits on the first `=`: a host path may contain `=`, a box path should not.
fn mapping(text: &str) -> Result<PathMapping, String> {
    match text.split_once('=') {
        Some((box_path, host_path)) if !box_path.is_empty() && !host_path.is_empty() => {
            Ok(PathMapping { box_path: box_path.to_owned(), host_path: host_path.into() })
        }
        _ => Err(format!("expected BOXPATH=HOSTPATH, e.g. prog=./a.out, not {text:?}")),
    }
}

/// Splits on the first `=`; the field's name is segid's to check.
fn submission(text: &str) -> Result<SubmissionArg, String> {
    match text.split_once('=') {
        Some((field, path)) if !path.is_empty() => Ok(SubmissionArg { field: field.to_owned(), path: path.into() }),
        _ => Err(format!("expected FIELD=PATH, e.g. source=./solution.c, not {text:?}")),
    }
}

/// Splits on the first `=`: values may contain `=`, names may not.
fn env_var(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_owned(), value.to_owned())),
        _ => Err(format!("expected KEY=VALUE, e.g. LANG=C.UTF-8, not {text:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("segi-client").chain(args.iter().copied()))
    }

    fn run(args: &[&str]) -> RunArgs {
        match parse(args).unwrap().command {
            Command::Run(run) => run,
            other => panic!("parsed as {other:?}"),
        }
    }

    fn usage_error(args: &[&str]) -> String {
        parse(args).unwrap_err().to_string()
    }

    #[test]
    fn the_full_run_line() {
        let args = run(&[
            "run",
            "--policy",
            "compile",
            "--time",
            "500ms",
            "--wall-time",
            "2",
            "--memory",
            "256M",
            "--processes",
            "8",
            "--output",
            "64K",
            "--file-size",
            "1G",
            "--stdin",
            "in.txt",
            "--file",
            "prog=./a.out",
            "--env",
            "A=1",
            "--collect",
            "out=./out.txt",
            "--",
            "./prog",
            "-x",
            "--y",
        ]);
        assert_eq!(args.policy, "compile");
        assert_eq!(
            args.limits.to_limits(),
            Limits {
                cpu_time: Some(0.5),
                wall_time: Some(2.0),
                memory: Some(256 << 20),
                processes: Some(8),
                output: Some(64 << 10),
                file_size: Some(1 << 30),
            }
        );
        assert_eq!(args.stdin, Some("in.txt".into()));
        assert_eq!(args.env, vec![("A".into(), "1".into())]);
        assert_eq!(args.command, ["./prog", "-x", "--y"]);
    }

    #[test]
    fn defaults() {
        let args = run(&["run", "--", "true"]);
        assert_eq!(args.policy, "default");
        assert_eq!((args.limits.time, args.limits.memory, args.stdin), (None, None, None));
        assert!(args.files.is_empty() && args.collect.is_empty() && args.env.is_empty());
    }

    #[test]
    fn mappings_split_on_the_first_equals_sign() {
        let args = run(&["run", "--file", "a=b=c", "--collect", "out.txt=dir/x=y", "--env", "K=v=w", "--", "x"]);
        assert_eq!(args.files, [PathMapping { box_path: "a".into(), host_path: "b=c".into() }]);
        assert_eq!(args.collect, [PathMapping { box_path: "out.txt".into(), host_path: "dir/x=y".into() }]);
        assert_eq!(args.env, [("K".to_owned(), "v=w".to_owned())]);
    }

    #[test]
    fn repeated_flags_accumulate() {
        let args = run(&["run", "--file", "a=1", "--file", "b=2", "--", "x"]);
        assert_eq!(args.files.len(), 2);
    }

    #[test]
    fn malformed_mappings_are_usage_errors() {
        for bad in ["prog", "=./a.out", "prog="] {
            let message = usage_error(&["run", "--file", bad, "--", "x"]);
            assert!(message.contains("--file") && message.contains("BOXPATH=HOSTPATH"), "{message}");
        }
        let message = usage_error(&["run", "--collect", "out", "--", "x"]);
        assert!(message.contains("--collect"), "{message}");
        let message = usage_error(&["run", "--env", "=1", "--", "x"]);
        assert!(message.contains("--env") && message.contains("KEY=VALUE"), "{message}");
    }

    #[test]
    fn bad_sizes_name_the_flag_and_the_forms() {
        for flag in ["--memory", "--output", "--file-size"] {
            let message = usage_error(&["run", flag, "12X", "--", "x"]);
            assert!(message.contains(flag), "{message}");
            assert!(message.contains("256M"), "{message}");
        }
    }

    #[test]
    fn bad_durations_name_the_flag_and_the_forms() {
        for flag in ["--time", "--wall-time"] {
            let message = usage_error(&["run", flag, "soon", "--", "x"]);
            assert!(message.contains(flag), "{message}");
            assert!(message.contains("500ms"), "{message}");
        }
        let message = usage_error(&["run", "--processes", "many", "--", "x"]);
        assert!(message.contains("--processes") && message.contains("whole number"), "{message}");
    }

    #[test]
    fn program_is_required() {
        assert!(parse(&["run"]).is_err());
        assert!(parse(&["run", "--time", "1", "--"]).is_err());
    }

    #[test]
    fn program_without_the_double_dash() {
        let args = run(&["run", "--time", "1", "sh", "-c", "echo --time"]);
        assert_eq!(args.limits.time, Some(1.0));
        assert_eq!(args.command, ["sh", "-c", "echo --time"]);
    }

    #[test]
    fn global_options_go_anywhere() {
        let cli = parse(&["run", "--json", "--socket", "/tmp/s.sock", "--", "true"]).unwrap();
        assert!(cli.json);
        assert_eq!(cli.socket, Some("/tmp/s.sock".into()));
        let cli = parse(&["--json", "ping"]).unwrap();
        assert!(cli.json && matches!(cli.command, Command::Ping));
    }

    #[test]
    fn every_subcommand_has_an_example() {
        use clap::CommandFactory;
        let mut command = Cli::command();
        for name in ["ping", "capabilities", "run", "evaluate", "judge", "grade"] {
            let help = command.find_subcommand_mut(name).unwrap().render_long_help().to_string();
            assert!(help.contains("Example:") || help.contains("Examples:"), "{name}: {help}");
            assert!(help.contains(&format!("segi-client {name}")), "{name}: {help}");
        }
    }

    fn evaluate(args: &[&str]) -> EvaluateArgs {
        match parse(args).unwrap().command {
            Command::Evaluate(evaluate) => evaluate,
            other => panic!("parsed as {other:?}"),
        }
    }

    #[test]
    fn the_full_evaluate_line() {
        let args = evaluate(&[
            "evaluate",
            "--policy",
            "strict",
            "--problem",
            "examples/sum",
            "--submission",
            "source=sol.c",
            "--submission",
            "Bad=a=b.txt",
            "--time",
            "10s",
            "--memory",
            "1G",
            "--env",
            "K=v",
            "--",
            "python3",
            "evaluator.py",
            "--verbose",
        ]);
        assert_eq!(args.policy, "strict");
        assert_eq!(args.problem, Some("examples/sum".into()));
        assert_eq!(
            args.submissions,
            [
                SubmissionArg { field: "source".into(), path: "sol.c".into() },
                // Field names are segid's to judge.
                SubmissionArg { field: "Bad".into(), path: "a=b.txt".into() },
            ]
        );
        assert_eq!(
            args.limits.to_limits(),
            Limits { cpu_time: Some(10.0), memory: Some(1 << 30), ..Limits::default() }
        );
        assert_eq!(args.env, [("K".to_owned(), "v".to_owned())]);
        assert_eq!(args.command, ["python3", "evaluator.py", "--verbose"]);
    }

    #[test]
    fn evaluate_defaults_and_errors() {
        let args = evaluate(&["evaluate", "--", "./check"]);
        assert_eq!(args.policy, "evaluator");
        assert_eq!(args.problem, None);
        assert!(args.submissions.is_empty());
        for bad in ["source", "source="] {
            let message = usage_error(&["evaluate", "--submission", bad, "--", "x"]);
            assert!(message.contains("--submission") && message.contains("FIELD=PATH"), "{message}");
        }
        let message = usage_error(&["evaluate", "--wall-time", "later", "--", "x"]);
        assert!(message.contains("--wall-time") && message.contains("500ms"), "{message}");
        assert!(parse(&["evaluate", "--problem", "p"]).is_err());
    }

    #[test]
    fn judge_help_tells_both_kinds_of_problems() {
        use clap::CommandFactory;
        let help = Cli::command().find_subcommand_mut("judge").unwrap().render_long_help().to_string();
        for wanted in [
            "docs/problems.md",
            "Sphere problem",
            "problem with a strategy",
            "segi-client judge --problem examples/problems/sum",
            "segi-client judge --problem examples/pipelines/standard",
            "--submission examples/pipelines/standard/solutions/ac.cpp",
            "test 3: WA (expected 5, got 6)",
            "2 for IE or CF",
        ] {
            assert!(help.contains(wanted), "{wanted}: {help}");
        }
    }

    #[test]
    fn the_judge_line() {
        let cli = parse(&["judge", "--problem", "p", "--submission", "s.c", "--language", "c", "--json"]).unwrap();
        assert!(cli.json);
        match cli.command {
            Command::Judge(args) => {
                assert_eq!(args.problem, PathBuf::from("p"));
                assert_eq!(args.submission, PathBuf::from("s.c"));
                assert_eq!(args.language.as_deref(), Some("c"));
            }
            other => panic!("parsed as {other:?}"),
        }
        let message = usage_error(&["judge", "--problem", "p"]);
        assert!(message.contains("--submission"), "{message}");
        let message = usage_error(&["judge", "--submission", "s.c"]);
        assert!(message.contains("--problem"), "{message}");
    }

    fn grade(args: &[&str]) -> GradeArgs {
        match parse(args).unwrap().command {
            Command::Grade(grade) => grade,
            other => panic!("parsed as {other:?}"),
        }
    }

    #[test]
    fn the_grade_lines() {
        let args = grade(&["grade", "--workspace", "ws", "--config", "graders.yaml", "--input", "in.json"]);
        assert_eq!(args.workspace, PathBuf::from("ws"));
        assert_eq!(args.config, Some("graders.yaml".into()));
        assert_eq!(args.input, Some("in.json".into()));
        assert_eq!(args.policy, "evaluator");
        assert_eq!(args.program, None);

        let args = grade(&[
            "grade",
            "--workspace",
            ".",
            "--program",
            "python3",
            "--arg",
            "-m",
            "--arg",
            "my_checker",
            "--arg",
            "--verbose",
            "--shell",
            "--sub-path",
            "src/app",
            "--timeout",
            "2m",
            "--env",
            "API=https://x?a=b",
            "--name",
            "check",
            "--policy",
            "strict",
        ]);
        assert_eq!(args.program.as_deref(), Some("python3"));
        assert_eq!(args.args, ["-m", "my_checker", "--verbose"]);
        assert!(args.shell);
        assert_eq!(args.sub_path.as_deref(), Some("src/app"));
        assert_eq!(args.timeout, Some(120.0));
        assert_eq!(args.env, [("API".to_owned(), "https://x?a=b".to_owned())]);
        assert_eq!(args.name.as_deref(), Some("check"));
        assert_eq!(args.policy, "strict");
    }

    #[test]
    fn grade_usage_errors() {
        // One of --config and --program, never both.
        let message = usage_error(&["grade", "--workspace", "."]);
        assert!(message.contains("--config") && message.contains("--program"), "{message}");
        let message = usage_error(&["grade", "--workspace", ".", "--config", "g.yaml", "--program", "x"]);
        assert!(message.contains("cannot be used with"), "{message}");
        // A grader's flags describe the one grader of --program.
        let message = usage_error(&["grade", "--workspace", ".", "--config", "g.yaml", "--arg", "x"]);
        assert!(message.contains("cannot be used with") && message.contains("--config"), "{message}");
        let message = usage_error(&["grade", "--workspace", ".", "--shell"]);
        assert!(message.contains("--program"), "{message}");
        let message = usage_error(&["grade", "--config", "g.yaml"]);
        assert!(message.contains("--workspace"), "{message}");
        let message = usage_error(&["grade", "--workspace", ".", "--program", "x", "--timeout", "soon"]);
        assert!(message.contains("--timeout") && message.contains("500ms"), "{message}");
        let message = usage_error(&["grade", "--workspace", ".", "--program", "x", "--env", "novalue"]);
        assert!(message.contains("--env") && message.contains("KEY=VALUE"), "{message}");
    }
}
