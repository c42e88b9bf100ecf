//! What a finished run means to a shell: the client's exit status and the one-line summary.

use segi_proto::run::LimitKind;
use segi_proto::units::HumanSize;
use segi_proto::{RunResult, Verdict};

/// segi-client or the daemon failed (connection, usage, internal error), not the program.
pub const CLIENT_FAILURE: u8 = 125;
/// The user interrupted the client (Ctrl-C or SIGTERM), as a shell reports SIGINT.
pub const INTERRUPTED: u8 = 130;
/// The status of a run stopped by a limit that reported no signal: as if SIGKILLed.
pub const STOPPED_BY_LIMIT: u8 = 128 + 9;

/// The exit status `segi-client run` ends with: the program's exit code if it exited,
/// 128+N if it was killed by signal N, [`CLIENT_FAILURE`] if the sandbox failed.
///
/// A run whose verdict is not OK never maps to 0, even if the program exited 0 (an `OLE`
/// whose output was cut short, say): scripts test `$?` and must not take it for success.
pub fn exit_status(result: &RunResult) -> u8 {
    if result.verdict == Verdict::IE {
        return CLIENT_FAILURE;
    }
    if let Some(signal) = result.signal {
        return u8::try_from(128 + signal.clamp(1, 127)).unwrap_or(CLIENT_FAILURE);
    }
    if let Some(code) = result.exit_code.filter(|code| (1..=255).contains(code)) {
        return code as u8;
    }
    match result.verdict {
        Verdict::OK => 0,
        // RE without a non-zero exit code or a signal: a failure all the same.
        Verdict::RE => 1,
        Verdict::TLE | Verdict::MLE | Verdict::OLE | Verdict::SV => STOPPED_BY_LIMIT,
        Verdict::IE => CLIENT_FAILURE,
    }
}

/// The line printed on stderr after a run, e.g.
/// `segi: TLE cpu=1.003s wall=1.004s memory=1.2MiB signal=9 limit=cpu_time`.
pub fn summary_line(result: &RunResult) -> String {
    let mut line = format!(
        "segi: {} cpu={:.3}s wall={:.3}s memory={}",
        result.verdict,
        result.cpu_time,
        result.wall_time,
        HumanSize(result.memory)
    );
    if let Some(code) = result.exit_code {
        line += &format!(" exit={code}");
    }
    if let Some(signal) = result.signal {
        line += &format!(" signal={signal}");
    }
    if let Some(limit) = result.limit {
        line += &format!(" limit={}", limit_name(limit));
    }
    if let Some(message) = result.message.as_deref().filter(|m| !m.is_empty()) {
        line += &format!(" ({message})");
    }
    line
}

/// The limit's name as on the wire (`cpu_time`, `file_size`, ...).
pub fn limit_name(limit: LimitKind) -> &'static str {
    match limit {
        LimitKind::CpuTime => "cpu_time",
        LimitKind::WallTime => "wall_time",
        LimitKind::Memory => "memory",
        LimitKind::Output => "output",
        LimitKind::FileSize => "file_size",
        LimitKind::Processes => "processes",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(verdict: Verdict, exit_code: Option<i32>, signal: Option<i32>) -> RunResult {
        RunResult {
            verdict,
            exit_code,
            signal,
            cpu_time: 1.0034,
            wall_time: 1.0041,
            memory: 1_258_291,
            limit: None,
            message: None,
            output_bytes: 0,
            limits: Default::default(),
            measured_by: "cgroup-v2".into(),
            collected: Vec::new(),
            warnings: Vec::new(),
        }
    }

    #[test]
    fn exit_status_follows_the_program() {
        assert_eq!(exit_status(&result(Verdict::OK, Some(0), None)), 0);
        assert_eq!(exit_status(&result(Verdict::RE, Some(3), None)), 3);
        assert_eq!(exit_status(&result(Verdict::RE, None, Some(11))), 139);
        assert_eq!(exit_status(&result(Verdict::TLE, None, Some(9))), 137);
        assert_eq!(exit_status(&result(Verdict::SV, None, Some(31))), 159);
    }

    #[test]
    fn limits_without_a_signal_look_killed() {
        assert_eq!(exit_status(&result(Verdict::TLE, None, None)), 137);
        assert_eq!(exit_status(&result(Verdict::MLE, None, None)), 137);
        // Exited 0 but its output was cut: not a success.
        assert_eq!(exit_status(&result(Verdict::OLE, Some(0), None)), 137);
        // Exited non-zero after hitting the file size limit: the program's own code.
        assert_eq!(exit_status(&result(Verdict::OLE, Some(2), None)), 2);
        assert_eq!(exit_status(&result(Verdict::RE, None, None)), 1);
    }

    #[test]
    fn internal_errors_are_client_failures() {
        assert_eq!(exit_status(&result(Verdict::IE, None, None)), 125);
        assert_eq!(exit_status(&result(Verdict::IE, Some(0), Some(9))), 125);
    }

    #[test]
    fn summary_of_a_time_limit() {
        let mut tle = result(Verdict::TLE, None, Some(9));
        tle.limit = Some(LimitKind::CpuTime);
        assert_eq!(summary_line(&tle), "segi: TLE cpu=1.003s wall=1.004s memory=1.2MiB signal=9 limit=cpu_time");
    }

    #[test]
    fn summary_of_an_exit_and_a_message() {
        let mut re = result(Verdict::RE, Some(3), None);
        re.memory = 512;
        assert_eq!(summary_line(&re), "segi: RE cpu=1.003s wall=1.004s memory=512B exit=3");
        let mut ie = result(Verdict::IE, None, None);
        ie.message = Some("cannot create the cgroup".into());
        assert_eq!(summary_line(&ie), "segi: IE cpu=1.003s wall=1.004s memory=1.2MiB (cannot create the cgroup)");
    }
}
