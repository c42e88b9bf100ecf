//! Verdicts and figures: each run goes through `segi-client --json run` to the shared daemon,
//! and the result object must say exactly what happened.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use segi_tests::{compile_c, mapping, temp_dir, Daemon, LimitKind, Verdict};

const MIB: u64 = 1 << 20;

fn daemon() -> &'static Daemon {
    Daemon::shared()
}

/// `--file NAME=<compiled NAME.c>`, so that `./NAME` runs it.
fn program(name: &str) -> String {
    mapping(name, &compile_c(name))
}

#[test]
fn true_is_ok() {
    let run = daemon().run_json(&["--", "true"]);
    let r = &run.result;
    assert_eq!(r.verdict, Verdict::OK, "{}", run.describe());
    assert_eq!(r.exit_code, Some(0), "{}", run.describe());
    assert_eq!(r.signal, None, "{}", run.describe());
    assert_eq!(r.limit, None, "{}", run.describe());
    assert_eq!(r.message, None, "{}", run.describe());
    assert!(r.wall_time > 0.0 && r.wall_time < 1.0, "{}", run.describe());
    assert!(r.cpu_time >= 0.0 && r.cpu_time < 0.5, "{}", run.describe());
    assert!(r.memory > 0, "memory not measured: {}", run.describe());
    assert_eq!(run.status, Some(0), "{}", run.describe());
}

#[test]
fn result_has_every_documented_field() {
    let run = daemon().run_json(&["--", "true"]);
    for field in ["verdict", "exit_code", "signal", "cpu_time", "wall_time", "memory", "limit", "message"] {
        assert!(run.result_json.get(field).is_some(), "the result has no `{field}`: {}", run.result_json);
    }
    // The limits in force are the default policy's defaults (policies/default.toml).
    let limits = &run.result.limits;
    assert_eq!(limits.cpu_time, Some(1.0), "{}", run.result_json);
    assert_eq!(limits.wall_time, Some(5.0), "{}", run.result_json);
    assert_eq!(limits.memory, Some(256 * MIB), "{}", run.result_json);
    assert_eq!(limits.processes, Some(16), "{}", run.result_json);
}

#[test]
fn exit_3_is_re_with_exit_code_3() {
    let run = daemon().run_json(&["--", "sh", "-c", "exit 3"]);
    let r = &run.result;
    assert_eq!(r.verdict, Verdict::RE, "{}", run.describe());
    assert_eq!(r.exit_code, Some(3), "{}", run.describe());
    assert_eq!(r.signal, None, "{}", run.describe());
    assert_eq!(r.limit, None, "{}", run.describe());
    // interface.md: the client exits with the program's exit code.
    assert_eq!(run.status, Some(3), "{}", run.describe());
}

#[test]
fn segfault_is_re_with_signal_11() {
    let run = daemon().run_json(&["--file", &program("segfault"), "--", "./segfault"]);
    let r = &run.result;
    assert_eq!(r.verdict, Verdict::RE, "{}", run.describe());
    assert_eq!(r.signal, Some(11), "{}", run.describe());
    assert_eq!(r.exit_code, None, "{}", run.describe());
    assert_eq!(r.limit, None, "{}", run.describe());
    assert_eq!(run.stdout(), "about to crash\n", "{}", run.describe());
    // interface.md: 128+N when killed by signal N.
    assert_eq!(run.status, Some(128 + 11), "{}", run.describe());
}

#[test]
fn busy_loop_under_time_1_is_tle_on_cpu_time() {
    let run = daemon().run_json(&["--time", "1", "--", "sh", "-c", "while :; do :; done"]);
    let r = &run.result;
    assert_eq!(r.verdict, Verdict::TLE, "{}", run.describe());
    assert_eq!(r.limit, Some(LimitKind::CpuTime), "{}", run.describe());
    assert!(
        (1.0..=1.15).contains(&r.cpu_time),
        "cpu_time {} is not within [1.0, 1.15]: {}",
        r.cpu_time,
        run.describe()
    );
    assert_eq!(r.signal, Some(9), "a limit kills with SIGKILL: {}", run.describe());
    assert_eq!(run.status, Some(137), "{}", run.describe());
}

#[test]
fn sleep_under_wall_time_1_is_tle_on_wall_time() {
    // `sleep 101`: an argv no other test uses, so that a leftover can be found by it.
    let run = daemon().run_json(&["--wall-time", "1", "--", "sleep", "101"]);
    let r = &run.result;
    assert_eq!(r.verdict, Verdict::TLE, "{}", run.describe());
    assert_eq!(r.limit, Some(LimitKind::WallTime), "{}", run.describe());
    assert!((1.0..2.0).contains(&r.wall_time), "wall_time {}: {}", r.wall_time, run.describe());
    assert!(r.cpu_time < 0.5, "a sleeper used cpu_time {}: {}", r.cpu_time, run.describe());
    assert_eq!(run.status, Some(128 + 9), "{}", run.describe());
    assert!(run.elapsed < Duration::from_secs(4), "the client took {:?}", run.elapsed);
    // The run is over when its result arrives: the sleeper is gone.
    assert!(
        segi_tests::poll_until(Duration::from_secs(1), || segi_tests::host::processes_with_argv(&["sleep", "101"])
            .is_empty()),
        "the sleeper outlived its result: {:?}",
        segi_tests::host::processes_with_argv(&["sleep", "101"])
    );
}

#[test]
fn touching_300m_under_memory_256m_is_mle() {
    let run =
        daemon().run_json(&["--memory", "256M", "--file", &program("memory_touch"), "--", "./memory_touch", "300"]);
    let r = &run.result;
    assert_eq!(r.verdict, Verdict::MLE, "{}", run.describe());
    assert_eq!(r.limit, Some(LimitKind::Memory), "{}", run.describe());
    assert!(
        r.memory >= 200 * MIB && r.memory <= 257 * MIB,
        "peak memory {} should be close to (and not above) the 256 MiB limit: {}",
        r.memory,
        run.describe()
    );
    assert!(!run.stdout().contains("touched"), "the program finished: {}", run.describe());
    assert_ne!(run.status, Some(0), "{}", run.describe());
}

#[test]
fn touching_100m_reports_100m_of_memory() {
    let run = daemon().run_json(&["--file", &program("memory_touch"), "--", "./memory_touch", "100"]);
    let r = &run.result;
    assert_eq!(r.verdict, Verdict::OK, "{}", run.describe());
    assert_eq!(run.stdout(), "touched 100 MiB\n", "{}", run.describe());
    let expected = 104_857_600.0;
    let error = (r.memory as f64 - expected).abs() / expected;
    assert!(error <= 0.10, "memory {} is {:.1}% away from 100 MiB: {}", r.memory, error * 100.0, run.describe());
}

#[test]
fn a_1g_output_under_output_1m_is_ole() {
    let run = daemon().run_json(&["--output", "1M", "--file", &program("flood"), "--", "./flood", "1024"]);
    let r = &run.result;
    let streamed = run.stream("stdout").len() as u64 + run.stream("stderr").len() as u64;
    let context = format!("{} bytes streamed, client took {:?}\n{}", streamed, run.elapsed, run.describe());
    assert_eq!(r.verdict, Verdict::OLE, "{context}");
    assert_eq!(r.limit, Some(LimitKind::Output), "{context}");
    assert!(r.output_bytes <= MIB, "output_bytes above the 1 MiB limit: {context}");
    assert!(streamed <= MIB, "more output events than the 1 MiB limit: {context}");
    assert!(streamed >= MIB / 2, "less than half the allowed output reached the client: {context}");
    // Stopped at its limit, not after writing the whole GiB.
    assert!(run.elapsed < Duration::from_secs(5), "the flood was not stopped quickly: {context}");
    assert!(r.wall_time < 2.0, "{context}");
}

#[test]
fn a_file_above_file_size_is_ole() {
    let run =
        daemon().run_json(&["--file-size", "1M", "--file", &program("big_file"), "--", "./big_file", "big.out", "4"]);
    let r = &run.result;
    assert_eq!(r.verdict, Verdict::OLE, "{}", run.describe());
    assert_eq!(r.limit, Some(LimitKind::FileSize), "{}", run.describe());
    assert!(!run.stdout().contains("wrote"), "the whole file was written: {}", run.describe());
}

#[test]
fn a_file_within_file_size_is_ok() {
    let run =
        daemon().run_json(&["--file-size", "8M", "--file", &program("big_file"), "--", "./big_file", "big.out", "4"]);
    assert_eq!(run.result.verdict, Verdict::OK, "{}", run.describe());
    assert_eq!(run.stdout(), format!("wrote {} bytes\n", 4 * MIB), "{}", run.describe());
}

#[test]
fn stdin_reaches_the_program() {
    let dir = temp_dir("stdin");
    let input = dir.join("input.txt");
    fs::write(&input, "first line\nsecond line\n").unwrap();
    let run = daemon().run_json(&["--stdin", input.to_str().unwrap(), "--", "cat"]);
    assert_eq!(run.result.verdict, Verdict::OK, "{}", run.describe());
    assert_eq!(run.stdout(), "first line\nsecond line\n", "{}", run.describe());
}

#[test]
fn no_stdin_reads_as_empty() {
    let run = daemon().run_json(&["--", "sh", "-c", "wc -c"]);
    assert_eq!(run.result.verdict, Verdict::OK, "{}", run.describe());
    assert_eq!(run.stdout().trim(), "0", "{}", run.describe());
}

#[test]
fn file_keeps_the_exec_bit() {
    let dir = temp_dir("exec-bit");
    let script = dir.join("script.sh");
    fs::write(&script, "#!/bin/sh\necho script ran in \"$(pwd)\"\n").unwrap();
    fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
    let data = dir.join("data.sh");
    fs::write(&data, "#!/bin/sh\necho should not run\n").unwrap();
    fs::set_permissions(&data, fs::Permissions::from_mode(0o644)).unwrap();

    let run = daemon().run_json(&["--file", &mapping("s.sh", &script), "--", "./s.sh"]);
    assert_eq!(run.result.verdict, Verdict::OK, "{}", run.describe());
    assert_eq!(run.stdout(), "script ran in /box\n", "{}", run.describe());

    let run = daemon().run_json(&["--file", &program("hello"), "--", "./hello", "a b"]);
    assert_eq!(run.result.verdict, Verdict::OK, "{}", run.describe());
    assert_eq!(run.stdout(), "hello\na b\n", "{}", run.describe());

    // A file that was not executable on the host is not executable in the box.
    let run =
        daemon().run_json(&["--file", &mapping("d.sh", &data), "--", "sh", "-c", "test -x d.sh; echo $?; ./d.sh"]);
    assert_eq!(run.result.verdict, Verdict::RE, "{}", run.describe());
    assert_eq!(run.result.exit_code, Some(126), "{}", run.describe());
    assert!(run.stdout().starts_with("1\n"), "{}", run.describe());
}

#[test]
fn files_land_in_box_with_their_content() {
    let dir = temp_dir("files");
    let a = dir.join("a.txt");
    fs::write(&a, "alpha\n").unwrap();
    let binary = dir.join("bin.dat");
    fs::write(&binary, [0u8, 255, 1, 254, b'\n']).unwrap();
    let run = daemon().run_json(&[
        "--file",
        &mapping("a.txt", &a),
        "--file",
        &mapping("sub/dir/b.dat", &binary),
        "--",
        "sh",
        "-c",
        "cat /box/a.txt && od -An -tu1 sub/dir/b.dat",
    ]);
    assert_eq!(run.result.verdict, Verdict::OK, "{}", run.describe());
    let stdout = run.stdout();
    let mut lines = stdout.lines();
    assert_eq!(lines.next(), Some("alpha"), "{}", run.describe());
    let bytes: Vec<&str> = lines.next().unwrap_or("").split_whitespace().collect();
    assert_eq!(bytes, ["0", "255", "1", "254", "10"], "{}", run.describe());
}

#[test]
fn env_is_visible() {
    let run = daemon().run_json(&[
        "--env",
        "SEGI_TEST_VAR=hello world",
        "--env",
        "OTHER=x=y",
        "--",
        "sh",
        "-c",
        "echo \"$SEGI_TEST_VAR|$OTHER|$HOME|$PATH\"",
    ]);
    assert_eq!(run.result.verdict, Verdict::OK, "{}", run.describe());
    // HOME and PATH come from the policy (policies/default.toml).
    assert_eq!(run.stdout(), "hello world|x=y|/box|/usr/local/bin:/usr/bin:/bin\n", "{}", run.describe());
}

#[test]
fn environment_is_only_the_policy_and_the_request() {
    let run = daemon().run_json(&["--env", "MINE=1", "--", "env"]);
    assert_eq!(run.result.verdict, Verdict::OK, "{}", run.describe());
    let names: Vec<String> =
        run.stdout().lines().filter_map(|l| l.split_once('=')).map(|(k, _)| k.to_owned()).collect();
    for wanted in ["HOME", "LANG", "MINE", "PATH"] {
        assert!(names.iter().any(|n| n == wanted), "{wanted} missing: {}", run.describe());
    }
    // Nothing of the daemon's own environment (it was started with RUST_LOG) leaks in.
    let allowed = ["HOME", "LANG", "MINE", "PATH", "PWD", "TMPDIR", "SHLVL", "_"];
    let extra: Vec<&String> = names.iter().filter(|n| !allowed.contains(&n.as_str())).collect();
    assert!(extra.is_empty(), "variables neither the policy nor the request set: {extra:?}\n{}", run.describe());
}

#[test]
fn collect_copies_a_regular_file_out() {
    let dir = temp_dir("collect");
    let out = dir.join("out.txt");
    let run = daemon().run_json(&[
        "--collect",
        &mapping("out.txt", &out),
        "--",
        "sh",
        "-c",
        "printf 'collected\\n' > out.txt",
    ]);
    assert_eq!(run.result.verdict, Verdict::OK, "{}", run.describe());
    assert_eq!(fs::read_to_string(&out).ok().as_deref(), Some("collected\n"), "{}", run.describe());
}

#[test]
fn working_directory_is_box() {
    let run = daemon().run_json(&["--", "pwd"]);
    assert_eq!(run.result.verdict, Verdict::OK, "{}", run.describe());
    assert_eq!(run.stdout(), "/box\n", "{}", run.describe());
}

#[test]
fn box_and_tmp_are_writable() {
    let run = daemon().run_json(&["--", "sh", "-c", "echo a > /box/a && echo b > /tmp/b && cat /box/a /tmp/b"]);
    assert_eq!(run.result.verdict, Verdict::OK, "{}", run.describe());
    assert_eq!(run.stdout(), "a\nb\n", "{}", run.describe());
}

#[test]
fn stdout_and_stderr_are_separate_events() {
    let run = daemon().run_json(&["--", "sh", "-c", "echo out; echo err >&2"]);
    assert_eq!(run.result.verdict, Verdict::OK, "{}", run.describe());
    assert_eq!(run.stdout(), "out\n", "{}", run.describe());
    assert_eq!(run.stderr_events(), "err\n", "{}", run.describe());
}

#[test]
fn non_utf8_output_comes_as_base64() {
    let run = daemon().run_json(&["--", "printf", "\\377\\376"]);
    assert_eq!(run.result.verdict, Verdict::OK, "{}", run.describe());
    assert_eq!(run.stream("stdout"), [0xff, 0xfe], "{}", run.describe());
    assert!(run.events.iter().any(|e| e.get("base64").is_some()), "no base64 event: {:?}", run.events);
}

#[test]
fn human_mode_forwards_output_and_prints_a_summary() {
    let output = daemon().client(&["run", "--", "sh", "-c", "echo out; echo err >&2; exit 4"]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stdout, "out\n", "stderr: {stderr}");
    assert!(stderr.starts_with("err\n"), "stderr: {stderr}");
    let summary = stderr.lines().last().unwrap_or("");
    assert!(summary.starts_with("segi: RE"), "summary line: {summary:?}");
    assert_eq!(output.status.code(), Some(4), "stderr: {stderr}");
}

#[test]
fn missing_program_is_re_127_naming_it() {
    let run = daemon().run_json(&["--", "no-such-program-segi"]);
    let r = &run.result;
    assert_eq!(r.verdict, Verdict::RE, "{}", run.describe());
    assert_eq!(r.exit_code, Some(127), "{}", run.describe());
    let message = r.message.clone().unwrap_or_default();
    assert!(message.contains("no-such-program-segi"), "message {message:?} does not name the program");
    assert_eq!(run.status, Some(127), "{}", run.describe());
}

#[test]
fn other_policies_run() {
    for policy in ["compile", "evaluator"] {
        let run = daemon().run_json(&["--policy", policy, "--", "sh", "-c", "echo $TMPDIR"]);
        assert_eq!(run.result.verdict, Verdict::OK, "{policy}: {}", run.describe());
        assert_eq!(run.stdout(), "/tmp\n", "{policy}: {}", run.describe());
    }
    let run = daemon().run_json(&["--policy", "compile", "--", "true"]);
    assert_eq!(run.result.limits.processes, Some(64), "{}", run.describe());
}

/// segid keeps one init warm with the last policy's root already built; a run of another
/// policy must get its own root, never the warm one.
#[test]
fn alternating_policies_each_get_their_own_root() {
    let host_has_cargo = std::path::Path::new("/root/.cargo").is_dir();
    for policy in ["default", "compile", "default", "compile", "evaluator", "default"] {
        let run = daemon().run_json(&[
            "--policy",
            policy,
            "--",
            "sh",
            "-c",
            "test -d /root/.cargo && echo cargo || echo none",
        ]);
        assert_eq!(run.result.verdict, Verdict::OK, "{policy}: {}", run.describe());
        let expected = if policy != "default" && host_has_cargo { "cargo\n" } else { "none\n" };
        assert_eq!(run.stdout(), expected, "{policy}: {}", run.describe());
    }
}

#[test]
fn a_c_program_compiles_in_the_compile_policy() {
    let dir = temp_dir("gcc");
    let source = dir.join("main.c");
    fs::write(&source, "#include <stdio.h>\nint main(void){puts(\"built inside\");return 0;}\n").unwrap();
    let binary = dir.join("main");
    let run = daemon().run_json(&[
        "--policy",
        "compile",
        "--file",
        &mapping("main.c", &source),
        "--collect",
        &mapping("main", &binary),
        "--",
        "gcc",
        "-O2",
        "-o",
        "main",
        "main.c",
    ]);
    assert_eq!(run.result.verdict, Verdict::OK, "{}", run.describe());
    // Whether a collected file keeps its exec bit is not specified; this test is about gcc.
    fs::set_permissions(&binary, fs::Permissions::from_mode(0o755)).expect("collected binary");
    let run = daemon().run_json(&["--file", &mapping("main", &binary), "--", "./main"]);
    assert_eq!(run.result.verdict, Verdict::OK, "{}", run.describe());
    assert_eq!(run.stdout(), "built inside\n", "{}", run.describe());
}
