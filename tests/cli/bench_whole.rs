//! Issue 26's bench figures end to end: the `run` row (a `run --headless` process, CPU over the
//! whole streaming window), timing fidelity against the server's send times, and `--targets`
//! refusing the flags it sets itself.

use crate::common;

#[tokio::test]
async fn run_rows_and_fidelity_are_measured_against_the_server_s_own_figures() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("bench.json");
    let mut cmd = common::bin();
    cmd.args(["bench", "--streams", "32", "--modes", "paced", "--interval-us", "10000", "--tokens", "50"]);
    cmd.args(["--window", "1s", "--monitor", "on", "--whole-window", "--long-tokens", "0", "--json"]).arg(&json);
    let out = common::output(cmd).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "bench failed: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("  fidelity: ITL p99") && stdout.contains(" run "), "{stdout}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).expect("JSON written")).unwrap();
    let rows = v["rows"].as_array().expect("rows");
    let row = |c: &str| rows.iter().find(|r| r["client"] == c).unwrap_or_else(|| panic!("a {c} row: {stdout}"));
    let run = row("run");
    let w = &run["whole"];
    let (server, client) = (w["server_tokens"].as_u64().unwrap(), w["client_tokens"].as_u64().expect("whole samples"));
    assert!(client > 0 && client <= server, "the run read what the server wrote: {w}");
    assert_eq!(run["tokens"].as_u64(), Some(client), "tokens are the ones the run process read");
    let window_s = (w["last_unix_ns"].as_u64().unwrap() - w["first_unix_ns"].as_u64().unwrap()) as f64 / 1e9;
    assert!((run["window_s"].as_f64().unwrap() - window_s).abs() < 1e-6 && window_s >= 1.0, "{run}");
    assert!(window_s <= w["process_wall_s"].as_f64().unwrap(), "the streaming window lies inside the process's life");
    let cpu_s = run["cpu_us_per_token"].as_f64().unwrap() * client as f64 / 1e6;
    assert!(cpu_s > 0.0 && cpu_s <= w["process_cpu_s"].as_f64().unwrap() + 0.02, "{run}");
    assert!(run["vs_raw"]["cpu_us_per_token"].as_f64().unwrap() > 0.0 && run["errors"] == 0, "{run}");
    let f = &row("tool-monitor")["fidelity"];
    assert!(f["intervals"].as_u64().unwrap() > 100 && f["ttft_count"].as_u64().unwrap() > 0, "{f}");
    let (c, s) = (f["client_itl_p99_ms"].as_f64().unwrap(), f["server_itl_p99_ms"].as_f64().unwrap());
    assert!(s >= 9.0 && c >= 9.0, "10 ms apart on both sides: {f}");
    assert!((f["itl_p99_error_ms"].as_f64().unwrap() - (c - s)).abs() < 1e-9, "{f}");
    assert!(f["server_late"]["count"].as_u64().unwrap() > 0, "the server's lateness in the window: {f}");
    assert!(f["ttft_error_p50_ms"].as_f64().unwrap() >= 0.0, "the client's TTFT holds the server's: {f}");
    if cfg!(target_os = "linux") {
        // Every request carries the kernel's arrival stamp; the wake-up (arrival to handler) is
        // never negative, so the error against the handler's start is never the smaller one.
        assert_eq!(f["arrival_stamped"], f["ttft_count"], "{f}");
        let num = |k: &str| f[k].as_f64().unwrap_or_else(|| panic!("{k} in {f}"));
        assert!(num("server_wake_p50_ms") >= 0.0 && num("server_wake_p99_ms") >= num("server_wake_p50_ms"), "{f}");
        assert!(num("ttft_error_from_handler_p50_ms") >= num("ttft_error_p50_ms"), "{f}");
        assert!(num("ttft_error_from_handler_p99_ms") >= num("ttft_error_p99_ms"), "{f}");
    }
    let raw = &row("raw")["fidelity"];
    assert!(raw["intervals"].as_u64().unwrap() > 100 && raw["ttft_count"] == 0, "{raw}");
}

#[tokio::test]
async fn targets_refuse_the_flags_they_set_themselves() {
    let mut cmd = common::bin();
    cmd.args(["bench", "--targets", "--streams", "64"]);
    let out = common::output(cmd).await;
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--targets"));
}
