//! The CI ratio smoke of issue 26: the tool's CPU per token and bytes per stream as ratios to the
//! raw client measured in the same run (64 firehose streams, seven interleaved raw/tool pairs of
//! 1 s windows, one bench server), medians against the committed baseline
//! (tests/fixtures/bench_ratio_baseline.json) times 1.25; the decision is
//! `llm_decode_bench::bench::smoke::check`. `LLM_DECODE_BENCH_RECORD_BASELINE=1` re-records it
//! from three such runs (the medians over all their pairs).

use crate::common;
use llm_decode_bench::bench::smoke::{self, Baseline, Pair, Ratios};
use std::path::{Path, PathBuf};

/// Interleaved raw/tool pairs per smoke.
const REPEATS: usize = 7;

fn baseline_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bench_ratio_baseline.json")
}

fn profile() -> &'static str {
    if cfg!(debug_assertions) { "debug" } else { "release" }
}

/// Runs the pairs (with `burn_ns` of extra work per token in the tool when set); every
/// repeat's ratios.
async fn measure(burn_ns: Option<u64>) -> Vec<Ratios> {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("smoke.json");
    let streams = ["64"; REPEATS].join(",");
    let mut cmd = common::bin();
    cmd.args(["bench", "--streams", &streams, "--modes", "firehose", "--monitor", "off", "--long-tokens", "0"]);
    cmd.args(["--window", "1s", "--json"]).arg(&json);
    if let Some(ns) = burn_ns {
        cmd.env("LLM_DECODE_BENCH_TEST_BURN_NS", ns.to_string());
    }
    let out = common::output(cmd).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "bench failed: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).expect("JSON written")).unwrap();
    let rows = v["rows"].as_array().expect("rows");
    let of = |client: &str| -> Vec<(f64, f64)> {
        let rows = rows.iter().filter(|r| r["client"] == client);
        rows.map(|r| (r["cpu_us_per_token"].as_f64().unwrap(), r["rss_kib_per_stream"].as_f64().unwrap())).collect()
    };
    let (tool, raw) = (of("tool"), of("raw"));
    assert_eq!((tool.len(), raw.len()), (REPEATS, REPEATS), "{stdout}");
    let pairs: Vec<Pair> =
        tool.iter().zip(&raw).map(|(t, r)| Pair { tool_us: t.0, raw_us: r.0, tool_kib: t.1, raw_kib: r.1 }).collect();
    smoke::ratios_of(&pairs)
}

#[tokio::test]
async fn bench_smoke_ratios_to_the_raw_client_hold_against_the_baseline() {
    let recording = std::env::var_os("LLM_DECODE_BENCH_RECORD_BASELINE").is_some();
    let mut repeats = measure(None).await;
    if recording {
        repeats.extend(measure(None).await);
        repeats.extend(measure(None).await);
    }
    let got = smoke::medians(&repeats);
    eprintln!("bench smoke ({} build): medians {got:?} over {repeats:?}", profile());
    if recording {
        let b = Baseline { ratios: got, profile: profile().into(), repeats };
        std::fs::write(baseline_path(), serde_json::to_string_pretty(&b).unwrap() + "\n").expect("baseline written");
        return;
    }
    let baseline: Baseline =
        serde_json::from_slice(&std::fs::read(baseline_path()).expect("baseline committed")).unwrap();
    if baseline.profile != profile() {
        eprintln!(
            "bench smoke: baseline recorded with the {} build, this is {}: not compared",
            baseline.profile,
            profile()
        );
        return;
    }
    if let Err(e) = smoke::check(got, &baseline) {
        panic!("bench smoke: a ratio to the raw client regressed by more than 25%:\n{e}");
    }
}

/// Shows the smoke fails when the tool does more work per token (5 us of spinning on every
/// event through the bench's test-only knob). Manual: `cargo test --test cli bench_smoke -- --ignored`.
#[tokio::test]
#[ignore = "manual: shows the smoke failing; a minute of CPU"]
async fn bench_smoke_fails_when_the_tool_does_more_work_per_token() {
    let baseline: Baseline =
        serde_json::from_slice(&std::fs::read(baseline_path()).expect("baseline committed")).unwrap();
    let got = smoke::medians(&measure(Some(5_000)).await);
    let e = smoke::check(got, &baseline).expect_err("5 us more per token is caught");
    eprintln!("bench smoke with 5 us more per token fails as it should:\n{e}");
    assert!(e.contains("CPU per token, tool / raw"), "{e}");
}
