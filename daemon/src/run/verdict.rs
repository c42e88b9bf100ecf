//! From what happened to the result object: one pure function, so every rule of the verdict
//! table in interface.md is a unit test.

use segi_proto::run::LimitKind;
use segi_proto::{RunResult, Verdict};

use crate::policy::Effective;
use crate::sandbox::cgroup::Usage;
use crate::sandbox::messages::ExitStatus;

/// Why the daemon ended a run early.
#[derive(Debug, Clone, PartialEq)]
pub enum Stop {
    CpuTime,
    WallTime,
    Output,
    Syscall(String),
    Cancelled,
}

/// How init's part ended.
#[derive(Debug, Clone, PartialEq)]
pub enum End {
    Exited {
        status: ExitStatus,
        wall: f64,
        rusage_cpu: f64,
        max_rss: u64,
    },
    ExecFailed {
        program: String,
        errno: i32,
    },
    SetupFailed(String),
    /// Init vanished or misbehaved; a sandbox failure.
    Lost(String),
}

pub struct Outcome {
    pub end: End,
    pub stop: Option<Stop>,
    pub usage: Option<Usage>,
    pub limits: Effective,
    pub output_bytes: u64,
    /// Measured by the daemon, for when init could not report.
    pub daemon_wall: f64,
    pub measured_by: &'static str,
}

const SIGXCPU: i32 = libc::SIGXCPU;
const SIGXFSZ: i32 = libc::SIGXFSZ;
const SIGSYS: i32 = libc::SIGSYS;

pub fn decide(o: &Outcome) -> RunResult {
    let (exit_code, signal, wall, rusage_cpu, max_rss) = match &o.end {
        End::Exited { status: ExitStatus::Exited(c), wall, rusage_cpu, max_rss } => {
            (Some(*c), None, *wall, *rusage_cpu, *max_rss)
        }
        End::Exited { status: ExitStatus::Signaled(s), wall, rusage_cpu, max_rss } => {
            (None, Some(*s), *wall, *rusage_cpu, *max_rss)
        }
        End::ExecFailed { errno, .. } => (Some(if *errno == libc::ENOENT { 127 } else { 126 }), None, 0.0, 0.0, 0),
        _ => (None, None, o.daemon_wall, 0.0, 0),
    };
    let cpu_time = o.usage.map(|u| u.cpu_ns as f64 / 1e9).unwrap_or(rusage_cpu);
    let memory = o.usage.map(|u| u.memory_peak).unwrap_or(max_rss);
    let mut result = RunResult {
        verdict: Verdict::OK,
        exit_code,
        signal,
        cpu_time,
        wall_time: wall,
        memory,
        limit: None,
        message: None,
        output_bytes: o.output_bytes,
        limits: o.limits.to_limits(),
        measured_by: o.measured_by.to_string(),
        collected: Vec::new(),
        warnings: Vec::new(),
    };
    let set = |r: &mut RunResult, v: Verdict, limit: Option<LimitKind>, message: String| {
        r.verdict = v;
        r.limit = limit;
        r.message = Some(message);
    };
    let l = &o.limits;
    match &o.end {
        End::SetupFailed(why) => return with(result, Verdict::IE, None, format!("sandbox setup failed: {why}")),
        // The memory cgroup's OOM killer may pick init itself (memory held by tmpfs or memfd
        // pages belongs to no process, and init's own RSS can be the largest): that is the
        // program's memory limit, not a sandbox failure.
        End::Lost(why) if o.stop.is_none() && !o.usage.is_some_and(|u| u.oom_killed) => {
            return with(result, Verdict::IE, None, why.clone())
        }
        _ => {}
    }
    match &o.stop {
        Some(Stop::Syscall(name)) => set(&mut result, Verdict::SV, None, format!("forbidden system call: {name}")),
        Some(Stop::CpuTime) => set(
            &mut result,
            Verdict::TLE,
            Some(LimitKind::CpuTime),
            format!("cpu time limit of {}s exceeded", l.cpu_time),
        ),
        Some(Stop::WallTime) => set(
            &mut result,
            Verdict::TLE,
            Some(LimitKind::WallTime),
            format!("wall time limit of {}s exceeded", l.wall_time),
        ),
        Some(Stop::Output) => set(
            &mut result,
            Verdict::OLE,
            Some(LimitKind::Output),
            format!("output limit of {} bytes exceeded", l.output),
        ),
        Some(Stop::Cancelled) => set(&mut result, Verdict::IE, None, "the run was cancelled".into()),
        None => {}
    }
    if result.message.is_some() {
        return result;
    }
    if o.usage.is_some_and(|u| u.oom_killed) {
        set(&mut result, Verdict::MLE, Some(LimitKind::Memory), format!("memory limit of {} bytes exceeded", l.memory));
    } else if signal == Some(SIGXCPU) || cpu_time > l.cpu_time {
        set(&mut result, Verdict::TLE, Some(LimitKind::CpuTime), format!("cpu time limit of {}s exceeded", l.cpu_time));
    } else if wall > l.wall_time {
        set(
            &mut result,
            Verdict::TLE,
            Some(LimitKind::WallTime),
            format!("wall time limit of {}s exceeded", l.wall_time),
        );
    } else if signal == Some(SIGXFSZ) {
        set(
            &mut result,
            Verdict::OLE,
            Some(LimitKind::FileSize),
            format!("file size limit of {} bytes exceeded", l.file_size),
        );
    } else if signal == Some(SIGSYS) {
        set(&mut result, Verdict::SV, None, "killed by seccomp: a system call of a non-native architecture".into());
    } else if let End::ExecFailed { program, errno } = &o.end {
        let why = std::io::Error::from_raw_os_error(*errno);
        set(&mut result, Verdict::RE, None, format!("{program}: cannot execute: {why}"));
    } else if let Some(s) = signal {
        let name = nix::sys::signal::Signal::try_from(s).map(|s| s.as_str()).unwrap_or("unknown signal");
        set(&mut result, Verdict::RE, None, format!("killed by signal {s} ({name})"));
    } else if let Some(code) = exit_code.filter(|c| *c != 0) {
        result.verdict = Verdict::RE;
        result.message = Some(format!("exited with status {code}"));
    }
    if result.verdict == Verdict::RE && o.usage.is_some_and(|u| u.pids_limit_hit) {
        result.limit = Some(LimitKind::Processes);
        let prior = result.message.take().unwrap_or_default();
        result.message = Some(format!("{prior}; the process limit of {} was reached", l.processes));
    }
    result
}

fn with(mut r: RunResult, v: Verdict, limit: Option<LimitKind>, message: String) -> RunResult {
    r.verdict = v;
    r.limit = limit;
    r.message = Some(message);
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> Effective {
        Effective { cpu_time: 1.0, wall_time: 2.0, memory: 64 << 20, processes: 8, output: 1000, file_size: 1000 }
    }

    fn outcome(end: End) -> Outcome {
        Outcome {
            end,
            stop: None,
            usage: Some(Usage::default()),
            limits: limits(),
            output_bytes: 0,
            daemon_wall: 0.1,
            measured_by: "cgroup-v1",
        }
    }

    fn exited(status: ExitStatus) -> End {
        End::Exited { status, wall: 0.1, rusage_cpu: 0.05, max_rss: 1 << 20 }
    }

    #[test]
    fn exit_codes_and_signals() {
        let ok = decide(&outcome(exited(ExitStatus::Exited(0))));
        assert_eq!((ok.verdict, ok.exit_code, ok.message), (Verdict::OK, Some(0), None));
        let re = decide(&outcome(exited(ExitStatus::Exited(3))));
        assert_eq!((re.verdict, re.exit_code), (Verdict::RE, Some(3)));
        let segv = decide(&outcome(exited(ExitStatus::Signaled(11))));
        assert_eq!((segv.verdict, segv.signal, segv.exit_code), (Verdict::RE, Some(11), None));
        assert!(segv.message.unwrap().contains("SIGSEGV"));
    }

    #[test]
    fn limits_decide_before_the_signal() {
        let mut o = outcome(exited(ExitStatus::Signaled(9)));
        o.stop = Some(Stop::CpuTime);
        let r = decide(&o);
        assert_eq!((r.verdict, r.limit, r.signal), (Verdict::TLE, Some(LimitKind::CpuTime), Some(9)));
        o.stop = Some(Stop::Syscall("ptrace".into()));
        let r = decide(&o);
        assert_eq!(r.verdict, Verdict::SV);
        assert!(r.message.unwrap().contains("ptrace"));
        o.stop = None;
        o.usage = Some(Usage { oom_killed: true, ..Usage::default() });
        assert_eq!(decide(&o).verdict, Verdict::MLE);
    }

    #[test]
    fn rlimit_signals() {
        assert_eq!(decide(&outcome(exited(ExitStatus::Signaled(SIGXFSZ)))).limit, Some(LimitKind::FileSize));
        assert_eq!(decide(&outcome(exited(ExitStatus::Signaled(SIGXCPU)))).verdict, Verdict::TLE);
        assert_eq!(decide(&outcome(exited(ExitStatus::Signaled(SIGSYS)))).verdict, Verdict::SV);
    }

    #[test]
    fn finishing_over_the_cpu_limit_is_tle() {
        let mut o = outcome(exited(ExitStatus::Exited(0)));
        o.usage = Some(Usage { cpu_ns: 1_200_000_000, ..Usage::default() });
        assert_eq!(decide(&o).verdict, Verdict::TLE);
    }

    #[test]
    fn missing_program_is_re_127() {
        let r = decide(&outcome(End::ExecFailed { program: "nope".into(), errno: libc::ENOENT }));
        assert_eq!((r.verdict, r.exit_code), (Verdict::RE, Some(127)));
        assert!(r.message.unwrap().contains("nope"));
    }

    #[test]
    fn sandbox_failures_are_ie() {
        let r = decide(&outcome(End::SetupFailed("rootfs: mount /proc: EPERM".into())));
        assert_eq!(r.verdict, Verdict::IE);
    }

    #[test]
    fn process_limit_is_named() {
        let mut o = outcome(exited(ExitStatus::Exited(1)));
        o.usage = Some(Usage { pids_limit_hit: true, ..Usage::default() });
        assert_eq!(decide(&o).limit, Some(LimitKind::Processes));
    }
}
