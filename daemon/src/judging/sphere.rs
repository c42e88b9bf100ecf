//! The Sphere Engine flow (sphere-judges.txt, decisions 15 to 17) on the [`engine`]: compile
//! the submission and the custom judges, run every test (in parallel, up to the daemon's run
//! slots) and judge it, then let the master judge decide.
//!
//! Descriptors, as the handbook numbers them:
//! - test case judge: 0 test input, 3 the user's output, 4 the model output, 5 the source;
//!   it writes 1 its score, 6 debug, 7 information for the user, and in an interactive
//!   problem 8 the program's input (the program's stdout is then its 3, live);
//! - master judge: 0 one line per test, 5 the source; it writes 1 the verdict, 6 debug.

use std::os::fd::OwnedFd;
use std::sync::Arc;

use futures_util::stream::{FuturesOrdered, StreamExt};
use segi_proto::judge::{JudgeResult, Status, TestResult};
use segi_proto::{Event, Limits, RunResult, Verdict};
use tokio::sync::mpsc;

use super::builtin::{MasterJudge, TestJudge};
use super::engine::{self, CompileError, Engine, Launch, Program};
use super::languages::Languages;
use super::problem::{CustomJudge, Judge, Problem, Test};
use super::streams::{self, Final};
use crate::run::request::Wiring;

/// What a judge may say to the user (fd 7) or in a failure's message (fd 6), at most.
const JUDGE_TEXT: usize = 4096;
/// The policy submissions and judges run under.
const POLICY: &str = "default";

/// One submission to judge.
pub struct Submission {
    pub filename: String,
    pub source: Arc<Vec<u8>>,
    /// The language's name in `languages.toml`.
    pub language: String,
}

/// A test case judge ready to use.
enum TestJudgeProgram {
    Builtin(TestJudge),
    Custom(Program),
}

/// A master judge ready to use.
enum MasterJudgeProgram {
    Builtin(MasterJudge),
    Custom(Program),
}

/// Judges `submission` on `problem`; each test's result goes to `events` in test order as soon
/// as it and the ones before it are known.
pub async fn judge(
    engine: Engine,
    problem: Arc<Problem>,
    languages: &Languages,
    submission: Submission,
    events: mpsc::Sender<Event>,
) -> JudgeResult {
    let mut result = JudgeResult {
        status: Status::IE,
        score: 0.0,
        signal: 0,
        time: 0.0,
        memory: 0,
        language: submission.language.clone(),
        tests: Vec::new(),
        message: None,
        compilation: None,
    };
    let internal = |mut result: JudgeResult, why: String| {
        result.message = Some(why);
        result
    };
    let Some(language) = languages.by_name.get(&submission.language) else {
        return internal(result, format!("language {:?} vanished in a reload", submission.language));
    };
    let program = match engine.compile(language, &submission.source).await {
        Ok(program) => program,
        Err(CompileError::Rejected { output, result: compiled }) => {
            result.status = Status::CE;
            result.message = Some(output);
            result.compilation = Some(*compiled);
            return result;
        }
        Err(CompileError::Failed(why)) => return internal(result, format!("compiling the submission: {why}")),
    };
    let test_judge = match &problem.test_judge {
        Judge::Builtin(judge) => TestJudgeProgram::Builtin(*judge),
        Judge::Custom(custom) => match compile_judge(&engine, languages, custom, "test case judge").await {
            Ok(program) => TestJudgeProgram::Custom(program),
            Err(why) => return internal(result, why),
        },
    };
    let master_judge = match &problem.master_judge {
        Judge::Builtin(judge) => MasterJudgeProgram::Builtin(*judge),
        Judge::Custom(custom) => match compile_judge(&engine, languages, custom, "master judge").await {
            Ok(program) => MasterJudgeProgram::Custom(program),
            Err(why) => return internal(result, why),
        },
    };

    // Every test at once: each waits for a run slot, first come first served; results come
    // back in test order.
    let context = Arc::new(TestContext {
        engine: engine.clone(),
        problem: problem.clone(),
        program,
        test_judge,
        source: submission.source.clone(),
    });
    let mut running: FuturesOrdered<_> = (0..problem.tests.len()).map(|n| run_test(context.clone(), n)).collect();
    while let Some(test) = running.next().await {
        let _ = events.send(Event::Test(test.clone())).await;
        result.tests.push(test);
    }
    if engine.cancel.is_cancelled() {
        return internal(result, "cancelled".into());
    }
    let verdict = match master_judge {
        MasterJudgeProgram::Builtin(master) => master.summarize(&result.tests, problem.weights.as_deref()),
        MasterJudgeProgram::Custom(program) => {
            run_master(&engine, &problem, &program, &result.tests, &submission.source).await
        }
    };
    match verdict {
        Ok(Final { status, score, signal, time, memory }) => {
            (result.status, result.score, result.signal, result.time, result.memory) =
                (status, score, signal, time, memory);
            result
        }
        Err(why) => internal(result, why),
    }
}

async fn compile_judge(
    engine: &Engine,
    languages: &Languages,
    custom: &CustomJudge,
    what: &str,
) -> Result<Program, String> {
    let (_, language) = languages
        .choose(custom.language.as_deref(), &custom.path)
        .map_err(|e| format!("the {what} {}: {e}", custom.path))?;
    engine.compile(language, &custom.source).await.map_err(|e| match e {
        CompileError::Rejected { output, .. } => format!("the {what} {} does not compile:\n{output}", custom.path),
        CompileError::Failed(why) => format!("compiling the {what} {}: {why}", custom.path),
    })
}

/// What every test shares.
struct TestContext {
    engine: Engine,
    problem: Arc<Problem>,
    program: Program,
    test_judge: TestJudgeProgram,
    source: Arc<Vec<u8>>,
}

/// Runs test `n` and judges it; never fails: a failure is the test's IE.
async fn run_test(context: Arc<TestContext>, n: usize) -> TestResult {
    let mut result = TestResult {
        test: n,
        status: Status::IE,
        score: 0.0,
        signal: 0,
        time: 0.0,
        memory: 0,
        info: None,
        message: None,
    };
    let outcome = match context.problem.interactive {
        false => batch_test(&context, &context.problem.tests[n]).await,
        true => interactive_test(&context, &context.problem.tests[n]).await,
    };
    match outcome {
        Ok(outcome) => {
            let run = &outcome.program;
            result.signal = run.signal.unwrap_or(0);
            result.time = run.cpu_time;
            result.memory = run.memory / 1024;
            (result.status, result.score, result.info, result.message) =
                (outcome.status, outcome.score, outcome.info, outcome.message);
        }
        Err(why) => result.message = Some(why),
    }
    result
}

/// A judged test: the submission's run and the judge's decision.
struct Outcome {
    program: RunResult,
    status: Status,
    score: f64,
    info: Option<String>,
    message: Option<String>,
}

/// The submission's limits on a test.
fn program_limits(problem: &Problem) -> Limits {
    Limits {
        cpu_time: Some(problem.time_limit),
        wall_time: Some(problem.wall_time_limit),
        memory: Some(problem.memory_limit),
        processes: None,
        output: Some(problem.output_limit),
        file_size: None,
    }
}

fn judge_limits(problem: &Problem, wall_time: f64) -> Limits {
    Limits {
        cpu_time: Some(problem.judge_time_limit),
        wall_time: Some(wall_time),
        memory: Some(problem.judge_memory_limit),
        processes: None,
        output: None,
        file_size: Some(problem.output_limit.max(16 << 20)),
    }
}

/// The status the submission earned by how its run ended, if not by the judge.
fn program_status(run: &RunResult) -> Option<(Status, Option<String>)> {
    match run.verdict {
        Verdict::OK => None,
        Verdict::TLE => Some((Status::TLE, run.message.clone())),
        Verdict::MLE => Some((Status::MLE, run.message.clone())),
        Verdict::OLE => Some((Status::OLE, run.message.clone())),
        Verdict::RE | Verdict::SV => Some((Status::RE, run.message.clone())),
        Verdict::IE => Some((Status::IE, run.message.clone())),
    }
}

async fn batch_test(context: &TestContext, test: &Test) -> Result<Outcome, String> {
    let engine = &context.engine;
    let problem = &context.problem;
    // stdout through the daemon's pipe, not a memfd: memfd pages would count against the
    // submission's memory, and the output limit would then show as MLE.
    let wiring = Wiring { stdin: Some(engine::input(&test.input)?), stdout: None, extra: Vec::new() };
    let slot = engine.slots(1).await.ok_or("cancelled")?;
    let launch = Launch {
        program: &context.program,
        policy: POLICY,
        limits: program_limits(problem),
        wiring,
        collect: Vec::new(),
        keep_stdout: problem.output_limit as usize,
    };
    let ran = engine.run(launch, slot).await?;
    let (run, user) = (ran.result, ran.stdout);
    if let Some((status, message)) = program_status(&run) {
        return Ok(Outcome { program: run, status, score: 0.0, info: None, message });
    }
    let decided = match &context.test_judge {
        TestJudgeProgram::Builtin(judge) => {
            let (judge, input, model, source) =
                (*judge, test.input.clone(), test.output.clone(), context.source.clone());
            let verdict = tokio::task::spawn_blocking(move || judge.judge(&input, &user, &model, &source))
                .await
                .map_err(|e| format!("the built-in judge failed: {e}"))?;
            Decided { status: verdict.status, score: verdict.score, info: verdict.info, message: None }
        }
        TestJudgeProgram::Custom(judge) => {
            let user = engine::input(&user)?;
            let wall = 3.0 * problem.judge_time_limit + 1.0;
            run_test_judge(context, judge, test, user, None, judge_limits(problem, wall)).await?
        }
    };
    Ok(Outcome {
        program: run,
        status: decided.status,
        score: decided.score,
        info: decided.info,
        message: decided.message,
    })
}

/// An interactive test: the program and the judge run at once, the judge's fd 8 the program's
/// stdin and the program's stdout the judge's fd 3. A deadlock ends when the program's wall
/// time does (TLE); the judge's wall time is longer, so the program's limit shows.
async fn interactive_test(context: &TestContext, test: &Test) -> Result<Outcome, String> {
    let engine = &context.engine;
    let problem = &context.problem;
    let TestJudgeProgram::Custom(judge) = &context.test_judge else {
        return Err("an interactive problem needs a custom test case judge".into());
    };
    let (to_program, from_judge) = {
        let (read, write) = engine::pipe()?;
        (read, write)
    };
    let (to_judge, from_program) = {
        let (read, write) = engine::pipe()?;
        (read, write)
    };
    let slot = engine.slots(2).await.ok_or("cancelled")?;
    let wiring = Wiring { stdin: Some(to_program), stdout: Some(from_program), extra: Vec::new() };
    let launch = Launch {
        program: &context.program,
        policy: POLICY,
        limits: program_limits(problem),
        wiring,
        collect: Vec::new(),
        keep_stdout: 0,
    };
    let program_run = engine.run(launch, slot.clone());
    let wall = problem.wall_time_limit + 2.0;
    let judge_run =
        run_test_judge_with(context, judge, test, to_judge, Some(from_judge), judge_limits(problem, wall), slot);
    let (program_run, decided) = tokio::join!(program_run, judge_run);
    let run = program_run?.result;
    // The program's limits first (TLE, MLE, OLE). A runtime error after the judge has decided
    // WA is that WA: the judge stopped talking (the program then dies of SIGPIPE, or of its
    // language's broken-pipe error), and which of the two ends first is a race.
    let decided = decided?;
    let lost_its_reader =
        run.verdict == Verdict::RE && (run.signal == Some(libc::SIGPIPE) || decided.status == Status::WA);
    if let Some((status, message)) = program_status(&run).filter(|_| !lost_its_reader) {
        return Ok(Outcome { program: run, status, score: 0.0, info: None, message });
    }
    Ok(Outcome {
        program: run,
        status: decided.status,
        score: decided.score,
        info: decided.info,
        message: decided.message,
    })
}

/// A test case judge's decision.
struct Decided {
    status: Status,
    score: f64,
    info: Option<String>,
    message: Option<String>,
}

async fn run_test_judge(
    context: &TestContext,
    judge: &Program,
    test: &Test,
    user: OwnedFd,
    program_input: Option<OwnedFd>,
    limits: Limits,
) -> Result<Decided, String> {
    let slot = context.engine.slots(1).await.ok_or("cancelled")?;
    run_test_judge_with(context, judge, test, user, program_input, limits, slot).await
}

async fn run_test_judge_with(
    context: &TestContext,
    judge: &Program,
    test: &Test,
    user: OwnedFd,
    program_input: Option<OwnedFd>,
    limits: Limits,
    slot: Arc<tokio::sync::OwnedSemaphorePermit>,
) -> Result<Decided, String> {
    let (score, debug, info) = (engine::output()?, engine::output()?, engine::output()?);
    let mut extra = vec![
        (3, user),
        (4, engine::input(&test.output)?),
        (5, engine::input(&context.source)?),
        (6, debug.try_clone().map_err(|e| e.to_string())?),
        (7, info.try_clone().map_err(|e| e.to_string())?),
    ];
    extra.extend(program_input.map(|fd| (8, fd)));
    let wiring = Wiring {
        stdin: Some(engine::input(&test.input)?),
        stdout: Some(score.try_clone().map_err(|e| e.to_string())?),
        extra,
    };
    let launch = Launch { program: judge, policy: POLICY, limits, wiring, collect: Vec::new(), keep_stdout: 0 };
    let ran = context.engine.run(launch, slot).await?;
    let info_text = engine::read_back(&info, JUDGE_TEXT);
    let info = (!info_text.is_empty()).then(|| streams::bounded_text(&info_text, JUDGE_TEXT));
    let failed = |why: String| {
        let debug = engine::read_back(&debug, JUDGE_TEXT);
        let mut message = format!("the test case judge {why}");
        if !debug.is_empty() {
            message += &format!("; its debug output: {}", streams::bounded_text(&debug, JUDGE_TEXT));
        }
        if !ran.stderr.is_empty() {
            message += &format!("; its stderr: {}", streams::bounded_text(&ran.stderr, JUDGE_TEXT));
        }
        Decided { status: Status::IE, score: 0.0, info: None, message: Some(message) }
    };
    let status = match (ran.result.verdict, ran.result.exit_code) {
        (Verdict::OK, _) => Status::AC,
        (Verdict::RE, Some(1)) => Status::WA,
        (Verdict::RE, Some(2)) => return Ok(failed("exited with 2 (internal error)".into())),
        (verdict, _) => {
            let what = ran.result.message.clone().unwrap_or_else(|| format!("ended with {verdict}"));
            return Ok(failed(format!("failed: {what}")));
        }
    };
    match streams::parse_score(&engine::read_back(&score, JUDGE_TEXT)) {
        Ok(score) => Ok(Decided { status, score, info, message: None }),
        Err(why) => Ok(failed(why)),
    }
}

/// Runs a custom master judge on the tests' lines; its fd 1 line is validated.
async fn run_master(
    engine: &Engine,
    problem: &Problem,
    program: &Program,
    tests: &[TestResult],
    source: &[u8],
) -> Result<Final, String> {
    let lines: String = tests.iter().map(streams::master_input_line).collect();
    let (verdict, debug) = (engine::output()?, engine::output()?);
    let wiring = Wiring {
        stdin: Some(engine::input(lines.as_bytes())?),
        stdout: Some(verdict.try_clone().map_err(|e| e.to_string())?),
        extra: vec![(5, engine::input(source)?), (6, debug.try_clone().map_err(|e| e.to_string())?)],
    };
    let slot = engine.slots(1).await.ok_or("cancelled")?;
    let wall = 3.0 * problem.judge_time_limit + 1.0;
    let launch = Launch {
        program,
        policy: POLICY,
        limits: judge_limits(problem, wall),
        wiring,
        collect: Vec::new(),
        keep_stdout: 0,
    };
    let ran = engine.run(launch, slot).await?;
    if ran.result.verdict != Verdict::OK {
        let mut why = format!(
            "the master judge failed: {}",
            ran.result.message.clone().unwrap_or_else(|| format!("{}", ran.result.verdict))
        );
        if !ran.stderr.is_empty() {
            why += &format!("; its stderr: {}", streams::bounded_text(&ran.stderr, JUDGE_TEXT));
        }
        return Err(why);
    }
    streams::parse_master_output(&engine::read_back(&verdict, JUDGE_TEXT))
}
