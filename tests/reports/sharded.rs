//! Issue 27's "Done when", end to end: 4 shard processes (`run --shard i/4 --start-at ...
//! --metrics-listen`) against the simulator, a real Prometheus scraping their pages every
//! second, and the observer headless. (a) The observer's summed tok/s of each cell agrees with
//! the sum of the shards' own window rates: its rate window of 4 scrapes has edges known only to
//! one scrape interval, so they agree within scrape / window = 1/4 of the sum (the median of
//! the polls whose rate window lies inside the shards' common measuring window). (b) `report
//! merge` of the four reports counts exactly the requests and the output tokens the simulator
//! served during the cells (its counters read before the start and after the end; the shards
//! `--drain` their windows, so no stream is cut with tokens on the way), exactly the
//! observer's last summed requests and tokens, and its TTFT p50/p99 equal numpy's linear
//! percentiles of every shard's per-request TTFT together. (c) Then a second session of 4
//! shards, one killed mid-cell (sharded_kill.rs): stale live, recorded in the merged report.

use super::observe::{ShardArgs, observed_median, observer, prometheus, read, shard_cells, shard_of, window_of};
use crate::common;
use common::{bin, cluster};
use serde_json::Value;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const SHARDS: usize = 4;

/// numpy's default percentile (`method="linear"`) of `v`, `q` in [0, 100], with numpy's own
/// interpolation (`_lerp`: from the lower neighbour below a fraction of one half, from the
/// upper one above), so the figure is numpy's to the last bit.
fn np_percentile(v: &mut [f64], q: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    let rank = (v.len() - 1) as f64 * (q / 100.0);
    let lo = rank.floor() as usize;
    let (a, b, t) = (v[lo], v[(lo + 1).min(v.len() - 1)], rank - rank.floor());
    let diff = b - a;
    if t >= 0.5 { b - diff * (1.0 - t) } else { a + diff * t }
}

/// Per cell label: requests (every outcome), output tokens and the TTFTs of the report's
/// first attempt of each decode cell. A cell's TTFT figures are those of first tokens before
/// its window closed (a drained request may start just before the end and see its first token
/// after), so only those samples are kept: sent + TTFT before warmup + window.
fn cell_samples(r: &Value) -> Vec<(String, f64, f64, Vec<f64>)> {
    let cells = r["decode"]["cells"].as_array().unwrap();
    let one = |c: &Value| {
        let label = format!("ctx={} conc={}", c["ctx_label"].as_str().unwrap(), c["conc"]);
        let a = &c["attempts"][0];
        let requests = a["request_outcomes"].as_object().unwrap().values().map(|v| v.as_f64().unwrap()).sum();
        let samples = a["request_samples"].as_array().unwrap();
        let tokens = samples.iter().map(|s| s["output_tokens"].as_f64().unwrap()).sum();
        let closed_ms = (a["warmup_s"].as_f64().unwrap() + a["window_s"].as_f64().unwrap()) * 1e3;
        let first_token = |s: &Value| Some((s["sent_ms"].as_f64()?, s["ttft_ms"].as_f64()?));
        let ttft =
            samples.iter().filter_map(first_token).filter(|(at, t)| at + t < closed_ms).map(|(_, t)| t).collect();
        (label, requests, tokens, ttft)
    };
    cells.iter().map(one).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_shards_observed_live_merged_exactly_and_a_killed_one_recorded() {
    four_shards_observed_live_and_merged_exactly().await;
    super::sharded_kill::four_shards_one_killed_mid_cell().await;
}

async fn four_shards_observed_live_and_merged_exactly() {
    let c = cluster(1, 25.0, |_| {}).await;
    let r = &c.info().replicas[0];
    let dir = tempfile::tempdir().unwrap();
    let start_at = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() + 10;
    let outs: Vec<_> = (0..SHARDS).map(|i| dir.path().join(format!("s{i}.json"))).collect();
    let (mut procs, mut addrs) = (Vec::new(), Vec::new());
    // Requests of 2,048 tokens (under a second here) end on their own when the windows drain.
    let extra = ["--drain", "--max-tokens", "2048"];
    for (i, out) in outs.iter().enumerate() {
        let spec = format!("{i}/{SHARDS}");
        let a = ShardArgs {
            session: "obs-1",
            spec,
            conc: "4,8",
            target: (&r.url, &r.metrics_url),
            start_at,
            extra: &extra,
        };
        let (p, a) = shard_of(&a, out).await;
        procs.push(p);
        addrs.push(a);
    }
    let prom = prometheus(&addrs).await;
    // Every shard's preflight is over before the start: the simulator's counters from here on
    // are the cells' load.
    let wait = UNIX_EPOCH + Duration::from_secs(start_at) - Duration::from_millis(500);
    tokio::time::sleep(wait.duration_since(SystemTime::now()).unwrap_or_default()).await;
    let served = |c: &llm_decode_bench::sim::Cluster| {
        let s = c.replica_stats(0).unwrap();
        ((s.finished_stop + s.finished_length + s.finished_abort) as f64, s.generation_tokens as f64)
    };
    let before = served(&c);
    let obs_out = dir.path().join("observer.json");
    let mut obs = observer(&prom.url, "obs-1", &obs_out, &[]);
    for p in &mut procs {
        p.line("serving the final counts").await;
    }
    obs.line("observer ended (all_shards_done)").await;
    assert!(obs.child.wait().unwrap().success(), "{}", obs.stderr());
    let after = served(&c);
    let o = read(&obs_out);
    let reports: Vec<Value> = outs.iter().map(|p| read(p)).collect();

    // (a) live summed tok/s against the shards' own window rates.
    let tolerance = o["scrape_interval_s"].as_f64().unwrap() / o["rate_window_s"].as_f64().unwrap();
    for (cell, ..) in shard_cells(&reports[0]) {
        let want: f64 = reports.iter().flat_map(shard_cells).filter(|(l, ..)| *l == cell).map(|(_, tps, _)| tps).sum();
        let seen = observed_median(&o, &cell, SHARDS as f64, window_of(&reports[0], &cell, 8.0)).expect("polls inside");
        assert!((seen - want).abs() <= tolerance * want, "{cell}: observer {seen} tok/s, shards {want} tok/s");
        // Its TTFT quantile from the summed buckets too: the shards put every cell on their
        // pages at zero before its first request, so `rate()` of the buckets sees them all.
        let (from, to) = window_of(&reports[0], &cell, 8.0);
        let polls = o["cells"][cell.as_str()].as_array().unwrap();
        let inside = |p: &&Value| p["at_unix"].as_f64().is_some_and(|t| t >= from && t <= to + 4.0);
        assert!(polls.iter().filter(inside).any(|p| p["ttft_p50_s"].is_number()), "{cell}: no TTFT p50 in {polls:?}");
    }

    // (b) the merge against the simulator, the observer and all samples together.
    let merged = dir.path().join("merged.json");
    let mut merge = bin();
    merge.args(["report", "merge"]).args(&outs).arg("--out").arg(&merged);
    let done = common::output(merge).await;
    assert!(done.status.success(), "{}", String::from_utf8_lossy(&done.stderr));
    let m = read(&merged);
    assert_eq!(m["complete"], true);
    let cells = cell_samples(&m);
    let (requests, tokens) = cells.iter().fold((0.0, 0.0), |(r, t), c| (r + c.1, t + c.2));
    let total =
        |key: &str| -> f64 { o["totals"].as_object().unwrap().values().map(|t| t[key].as_f64().unwrap()).sum() };
    assert_eq!((total("started"), total("output_tokens")), (requests, tokens), "the observer's last summed counts");
    assert_eq!((requests, tokens), (after.0 - before.0, after.1 - before.1), "merged vs the simulator's");
    let cut: f64 = reports
        .iter()
        .flat_map(|r| r["decode"]["cells"].as_array().unwrap())
        .map(|c| c["attempts"][0]["request_outcomes"]["cut"].as_f64().unwrap_or(0.0))
        .sum();
    assert_eq!(cut, 0.0, "drained windows cut no stream");
    for (i, (cell, _, _, ttft)) in cells.iter().enumerate() {
        let mut all: Vec<f64> =
            reports.iter().flat_map(cell_samples).filter(|c| c.0 == *cell).flat_map(|c| c.3).collect();
        assert_eq!(all.len(), ttft.len(), "{cell}: the merge holds every shard's samples");
        let got = &m["decode"]["cells"][i]["attempts"][0]["ttft_ms"];
        for (q, key) in [(50.0, "p50"), (99.0, "p99")] {
            let want = np_percentile(&mut all, q);
            assert_eq!(got[key].as_f64(), Some(want), "{cell}: TTFT {key}");
        }
    }
}
