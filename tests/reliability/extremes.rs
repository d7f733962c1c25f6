//! Issue 21 item 4, end to end: the extreme numbers that made the binary panic (exit 101) are
//! usage errors (exit 2, one line naming the flag's range) before any load is sent; the
//! in-process property test over every numeric flag is `src/cli/extreme_tests.rs`.

use std::process::{Command, Stdio};

/// Runs the binary with `args`; its exit code and stderr.
fn binary(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_llm-decode-bench"))
        .args(args)
        .env_remove("OPENAI_API_KEY")
        .stdin(Stdio::null())
        .output()
        .expect("binary runs");
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// `run` against a port nobody listens on: every case must fail before connecting.
fn run(args: &[&str]) -> (Option<i32>, String) {
    binary(&[&["run", "--base-url", "http://127.0.0.1:9", "--headless"], args].concat())
}

/// The message's first line; the rest may only be clap's usage hint.
fn first_line(stderr: &str) -> &str {
    let mut lines = stderr.lines().filter(|l| !l.trim().is_empty());
    let first = lines.next().unwrap_or_default();
    assert!(lines.all(|l| l.starts_with("For more information")), "one line: {stderr:?}");
    first
}

#[test]
fn extreme_rates_goodput_and_windows_are_usage_errors() {
    let cases: [(&[&str], &str); 6] = [
        (&["--plan", "serve", "--request-rate", "1e-300"], "from 0.001 to 1000000 requests/s"),
        (&["--plan", "serve", "--request-rate", "1e300"], "from 0.001 to 1000000 requests/s"),
        (&["--goodput", "ttft:1e300"], "at most 86400000 (a day)"),
        (&["--window", "1ms"], "--window 1ms is shorter than 4 metric polls (1s at --poll-interval 250ms)"),
        (&["--burstiness", "1e-300"], "--burstiness must be between 0.001 and 1000 (got 1e-300)"),
        (&["--warmup-timeout", "1000000000days"], "longer than 365 days"),
    ];
    for (args, names) in cases {
        let (code, err) = run(args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        let line = first_line(&err);
        assert!(line.starts_with("error: ") && line.contains(names), "{args:?}: {line}");
    }
}

#[test]
fn extreme_demo_and_sim_numbers_do_not_panic() {
    let (code, err) = binary(&["--headless", "--demo-speed", "1e-300"]);
    assert_eq!((code, first_line(&err)), (Some(2), "error: --demo-speed must be between 0.01 and 1000 (got 1e-300)"));
    for args in [
        ["sim", "--speed", "1e-300"],
        ["sim", "--step-base-ms", "1e300"],
        ["sim", "--kv-blocks", "18446744073709551615"],
    ] {
        let (code, err) = binary(&args);
        assert!(!matches!(code, Some(0) | Some(101)), "{args:?}: exit {code:?}: {err}");
        assert!(first_line(&err).starts_with("error: ") && !err.contains("panicked"), "{args:?}: {err}");
    }
}
