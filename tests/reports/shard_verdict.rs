//! A shard's capacity verdict end to end (issue 27): two shard processes (`run --shard i/2
//! --start-at ...`) of one decode cell at conc 8 against the simulator, each sending 4 streams
//! while the server's running count holds both shards'. Each shard compares that count with the
//! cell's 8 (`cell_requested`), not with its own 4: with room for every stream no shard reports
//! a cap, and with the simulator's `max_num_seqs` at 4 (half the cell's conc) both flag it
//! (`*seq`), where comparing with the slice (4 of 4) would have hidden it, and neither calls its
//! warmup timed out (`!`) for its own streams not all streaming.

use super::observe::{Proc, read};
use crate::common;
use common::{bin, cluster};
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Longest wait for a shard process to end.
const PATIENCE: Duration = Duration::from_secs(150);

/// Starts shard `i` of 2 of session `verdict-1` (one decode cell, ctx 0, conc 8; `turnover`:
/// requests of 48 tokens, else streams that outlast the window) against `target` (base URL,
/// metrics URL).
fn shard(i: u32, target: (&str, &str), start_at: u64, turnover: bool, out: &Path) -> Proc {
    let (base, metrics_url) = target;
    let mut cmd = bin();
    cmd.args(["run", "--headless", "--base-url", base, "--metrics-url", metrics_url, "--ctx", "0", "--conc", "8"])
        .args(["--window", "5s", "--warmup-timeout", "3s", "--poll-interval", "250ms"])
        .args(if turnover { &["--max-tokens", "48"][..] } else { &[] })
        .args(["--shard", &format!("{i}/2"), "--session-id", "verdict-1", "--start-at", &start_at.to_string()])
        .arg("--out")
        .arg(out);
    Proc::spawn(cmd)
}

/// Waits (bounded) for `p` to end; its exit code.
async fn exit_of(p: &mut Proc) -> Option<i32> {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        if let Some(status) = p.child.try_wait().expect("wait") {
            return status.code();
        }
        assert!(tokio::time::Instant::now() < deadline, "shard still running; stderr:\n{}", p.stderr());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Runs both shards against a simulator with `max_num_seqs`; each shard's one attempt and
/// its log (stderr).
async fn both_shards(max_num_seqs: usize, turnover: bool) -> Vec<(Value, String)> {
    let c = cluster(1, 25.0, |cfg| cfg.engine.max_num_seqs = max_num_seqs).await;
    let r = &c.info().replicas[0];
    let dir = tempfile::tempdir().unwrap();
    // Both shards' preflights end before the start (a loaded machine included), so their
    // windows open together and the server runs both slices in them.
    let start_at = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() + 12;
    let outs: Vec<_> = (0..2).map(|i| dir.path().join(format!("s{i}.json"))).collect();
    let mut procs: Vec<Proc> =
        (0..2).map(|i| shard(i, (&r.url, &r.metrics_url), start_at, turnover, &outs[i as usize])).collect();
    for p in &mut procs {
        assert_eq!(exit_of(p).await, Some(0), "stderr:\n{}", p.stderr());
    }
    for o in &outs {
        let slot = &read(o)["shard"]["timeline"][0];
        assert!(slot["late_ms"].as_f64().unwrap() < 1000.0, "a shard started its slot late: {slot}");
    }
    let attempt = |o: &std::path::PathBuf| read(o)["decode"]["cells"][0]["attempts"][0].clone();
    outs.iter().zip(&procs).map(|(o, p)| (attempt(o), p.stderr())).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shards_judge_the_servers_running_count_against_the_cells_conc() {
    for (i, (a, log)) in both_shards(16, true).await.iter().enumerate() {
        // The attempt's line reads running over the cell's 8 (it read `(8/4)`).
        assert!(log.contains("/8)") && !log.contains("/4)"), "shard {i}:\n{log}");
        assert_eq!((a["requested"].as_u64(), a["cell_requested"].as_u64()), (Some(4), Some(8)), "shard {i}: {a}");
        let running = a["running_avg"].as_f64().expect("Prometheus read");
        assert!(running > 4.5, "shard {i}: the server ran both shards' streams ({running}), more than its 4");
        assert_eq!(a["status"], "measured", "shard {i}");
        assert_eq!(a["capacity_limited"], false, "shard {i}: no false cap with room for all 8: {a}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_cap_below_the_cells_conc_is_flagged_on_every_shard() {
    // Streams that outlast the window: the server runs 4 of the 8 throughout, unevenly split
    // between the shards, and queues the rest; each shard's warmup sees the plateau (it is
    // not a timed-out warmup, `!`, though its own streams do not all stream).
    for (i, (a, log)) in both_shards(4, false).await.iter().enumerate() {
        assert!(log.contains("(4/8)*seq ") && !log.contains("*seq!"), "shard {i}:\n{log}");
        assert_eq!(a["warmup_timed_out"], false, "shard {i}");
        assert_eq!((a["requested"].as_u64(), a["cell_requested"].as_u64()), (Some(4), Some(8)), "shard {i}");
        let (running, waiting) = (a["running_avg"].as_f64().unwrap(), a["waiting_avg"].as_f64().unwrap());
        assert!(running <= 4.0 + 1e-9 && waiting >= 0.5, "shard {i}: running {running}, waiting {waiting}");
        assert_eq!(a["capacity_limited"], true, "shard {i}: 4 of the cell's 8 ran: {a}");
        assert_eq!(a["capacity_limit"], "max_num_seqs", "shard {i}");
    }
}
