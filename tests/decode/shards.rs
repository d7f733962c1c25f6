//! Two shards of one session (`run --shard i/2 --start-at T`, issue 27) as two headless
//! processes against the simulator on loopback: both reports carry the shard section with the
//! same session id, the decode window opened on both at the timeline's instant (wall clock,
//! within a loaded machine's timer slack), the closed-loop streams split 2 + 1, and the serve
//! cell's requests split k mod 2 and add up to the plan's.

use crate::common;
use common::{cluster, validate};
use llm_decode_bench::report::json::SessionReport;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Starts shard `index` of 2 against `url` at `start_at` (unix s): a closed-loop decode cell
/// of 3 streams, then a serve cell of 9 requests at once, at most 3 in flight.
fn shard(url: &str, metrics: &str, index: u32, start_at: u64, out: &Path) -> std::process::Child {
    let mut cmd = common::bin();
    cmd.args(["run", "--headless", "--base-url", url, "--metrics-url", metrics, "--plan", "decode,serve"]);
    cmd.args(["--ctx", "64", "--conc", "3", "--window", "2s", "--warmup-timeout", "2s", "--num-prompts", "9"]);
    cmd.args(["--shard", &format!("{index}/2"), "--start-at", &start_at.to_string()]);
    cmd.arg("--out").arg(out);
    cmd.spawn().expect("the binary starts")
}

fn finish(child: std::process::Child) -> String {
    let out = child.wait_with_output().expect("the shard ends");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "exit {:?}: {err}", out.status);
    err
}

/// How a test starts a shard: base URL, metrics URL, index, `--start-at`, report path.
type Start = fn(&str, &str, u32, u64, &Path) -> std::process::Child;

/// Starts shards 0 and 1 of 2 with `start` against a simulated replica, 4 s ahead, and waits
/// for both to end; their reports' paths (in `dir`), their logs and the start instant.
async fn run_two(start: Start, dir: &Path) -> ([std::path::PathBuf; 2], Vec<String>, u64) {
    let c = cluster(1, 25.0, |_| {}).await;
    let r = &c.info().replicas[0];
    // Far enough ahead that both shards wait for it even when they start slowly (loaded machine).
    let start_at = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() + 8;
    let outs = [dir.join("s0.json"), dir.join("s1.json")];
    let kids: Vec<_> = (0..2).map(|i| start(&r.url, &r.metrics_url, i, start_at, &outs[i as usize])).collect();
    let logs = tokio::task::spawn_blocking(move || kids.into_iter().map(finish).collect::<Vec<_>>());
    let logs = tokio::time::timeout(Duration::from_secs(120), logs).await.expect("both shards end").unwrap();
    (outs, logs, start_at)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_shards_open_their_windows_together_and_split_the_load() {
    let dir = tempfile::tempdir().unwrap();
    let (outs, logs, start_at) = run_two(shard, dir.path()).await;
    assert!(logs[0].contains("waiting for --start-at"), "{}", logs[0]);
    let reports: Vec<SessionReport> = outs.iter().map(|o| validate(o)).collect();
    let shards: Vec<_> = reports.iter().map(|r| r.shard.clone().expect("a shard section")).collect();
    assert_eq!((shards[0].index, shards[1].index, shards[0].count), (0, 1, 2));
    assert_eq!(shards[0].session_id, shards[1].session_id);
    assert!(shards[0].session_id.starts_with("s-"));
    assert_eq!(shards[0].start_at_unix_s, Some(start_at as f64));
    for r in &reports {
        let s = &r.plan.settings;
        assert_eq!(s.get("session-id"), Some(&shards[0].session_id));
        assert_eq!(s.get("seed"), reports[0].plan.settings.get("seed"), "the derived seed is the same");
    }
    // The decode cell's windows opened at the timeline's instant on both shards.
    let opened: Vec<f64> = shards
        .iter()
        .map(|s| {
            let slot = s.timeline.iter().find(|t| t.cell.contains("conc=3")).expect("the decode cell's slot");
            assert_eq!(slot.window_due_unix_s, Some(start_at as f64 + 2.0));
            slot.window_opened_unix_s.expect("its window opened")
        })
        .collect();
    assert!((opened[0] - opened[1]).abs() < 0.1, "windows opened {opened:?}");
    assert!(opened.iter().all(|o| (o - (start_at as f64 + 2.0)).abs() < 0.25), "{opened:?} vs {start_at} + 2 s");
    // Streams 2 + 1 of conc 3; the serve cell's 9 requests as 5 + 4, each answered.
    let requested: Vec<u32> =
        reports.iter().map(|r| r.decode.as_ref().unwrap().cells[0].attempts[0].requested).collect();
    assert_eq!(requested, [2, 1]);
    let serve: Vec<_> = reports.iter().map(|r| r.serve.as_ref().unwrap().cells[0].attempts[0].clone()).collect();
    assert_eq!(serve.iter().map(|a| a.num_prompts).collect::<Vec<_>>(), [5, 4]);
    assert_eq!(serve.iter().map(|a| a.metrics.completed).sum::<u64>(), 9, "every request of the plan, once");
    assert_eq!(reports[0].serve.as_ref().unwrap().num_prompts, 9, "the plan's figure stays global");
}

#[tokio::test]
async fn bad_shard_flags_are_one_line_and_exit_2_before_any_load() {
    // A refused port: a run that got past its flags would fail preflight with another code.
    let port = common::refused_port();
    let base = port.base();
    let past = (SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() - 60).to_string();
    let soon = (SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() + 60).to_string();
    let routing = ["--shard", "1/2", "--plan", "routing", "--start-at", &soon];
    let conversation = [&routing[..], &["--scenarios", "hot90,conversation"]].concat();
    let zero = [&routing[..], &["--priming-slot", "0s"]].concat();
    let cases: [(&[&str], &str); 10] = [
        (&["--shard", "0/2", "--shards", "2"], "not both"),
        (&["--shard", "0/2", "--start-at", &past], "passed"),
        (&["--shard", "1/2", "--plan", "routing"], "needs --start-at"),
        (&conversation, "`conversation` cannot be sharded"),
        (&zero, "longer than 0 s (shard 0 primes in it) and at most 1 h"),
        (&["--plan", "routing", "--priming-slot", "5s"], "--priming-slot is for sharded routing"),
        (&["--start-at", "2999999999"], "at most 24 h ahead"),
        (&["--shard", "0/2", "--run-burst"], "--run-burst sharded needs --start-at and --request-timeout"),
        (
            &["--shard", "0/2", "--plan", "serve", "--ctx", "32", "--slo-search", "rate", "--goodput", "ttft:500"],
            "--slo-search cannot be sharded",
        ),
        (&["--request-timeout", "0s"], "--request-timeout must be longer than 0"),
    ];
    for (flags, want) in cases {
        let mut args: Vec<String> = ["run", "--headless", "--base-url", base.as_str()].map(String::from).to_vec();
        args.extend(flags.iter().map(|f| f.to_string()));
        let out = common::run_bin(args).await;
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {err}");
        assert!(err.contains(want) && err.trim().lines().count() == 1, "{flags:?}: {err}");
    }
}

/// Starts shard `index` of 2: a decode cell of 3 streams, then a burst of 3 requests of 16
/// tokens on the timeline (`--request-timeout` bounds its slot).
fn burst_shard(url: &str, metrics: &str, index: u32, start_at: u64, out: &Path) -> std::process::Child {
    let mut cmd = common::bin();
    cmd.args(["run", "--headless", "--base-url", url, "--metrics-url", metrics, "--run-burst", "--burst-tokens", "16"]);
    cmd.args(["--ctx", "64", "--conc", "3", "--window", "2s", "--warmup-timeout", "2s", "--request-timeout", "5s"]);
    cmd.args(["--shard", &format!("{index}/2"), "--start-at", &start_at.to_string(), "--session-id", "burst-2"]);
    cmd.arg("--out").arg(out);
    cmd.spawn().expect("the binary starts")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_shards_send_their_shares_of_a_burst_together_and_merge_to_the_whole_burst() {
    let dir = tempfile::tempdir().unwrap();
    let (outs, _, start_at) = run_two(burst_shard, dir.path()).await;
    let reports: Vec<SessionReport> = outs.iter().map(|o| validate(o)).collect();
    // The burst's slot follows the decode cell's (2 s + 2 s + 14 s); both shards sent at 3 s in.
    let sent: Vec<f64> = reports
        .iter()
        .map(|r| {
            let t = &r.shard.as_ref().unwrap().timeline;
            let slot = t.iter().find(|s| s.cell.starts_with("burst")).expect("the burst's slot");
            assert_eq!(slot.slot_start_unix_s, start_at as f64 + 18.0);
            assert_eq!(slot.window_due_unix_s, Some(start_at as f64 + 21.0));
            slot.window_opened_unix_s.expect("the burst was sent")
        })
        .collect();
    assert!((sent[0] - sent[1]).abs() < 0.1, "bursts sent at {sent:?}");
    let shares: Vec<u64> = reports.iter().map(|r| r.burst.as_ref().unwrap().cells[0].attempts[0].requests).collect();
    assert_eq!(shares, [2, 1], "3 requests split as streams are");
    let m = common::merge_validated(&outs, &dir.path().join("m.json")).await;
    let a = &m.burst.as_ref().expect("a merged burst section").cells[0].attempts[0];
    assert_eq!((a.requests, a.success, a.output_tokens), (3, 3, 48));
    assert_eq!(a.ttft_ms.map(|t| t.count), Some(3), "TTFT from every shard's values");
}
