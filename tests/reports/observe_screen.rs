//! `run --observe` end to end, its give-up and its file: two shards against the simulator, a
//! real Prometheus scraping them every second, the observer headless with `--observe-give-up
//! 3s`. A shard killed mid-cell goes stale and, once the other has finished, the observer ends
//! by itself 3 s later (`all_shards_done`, no signal); the file it writes validates against
//! assets/observer-report.schema.json and a mutation of it does not. Bad `--observe-give-up`
//! input is one line and exit 2 before any query.

use super::observe::{ShardArgs, observer, prometheus, read, shard_of};
use crate::common;
use common::{bin, cluster};
use serde_json::{Value, json};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::time::Instant;

/// The schema's violations of `v`, one line each.
fn violations(v: &Value) -> Vec<String> {
    let schema: Value = serde_json::from_str(include_str!("../../assets/observer-report.schema.json")).unwrap();
    let validator = jsonschema::draft202012::new(&schema).expect("schema compiles");
    validator.iter_errors(v).map(|e| format!("{e} at {}", e.instance_path)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_shard_is_given_up_after_observe_give_up_and_the_file_fits_its_schema() {
    let c = cluster(1, 25.0, |_| {}).await;
    let r = &c.info().replicas[0];
    let dir = tempfile::tempdir().unwrap();
    let start_at = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() + 6;
    let outs = [dir.path().join("s0.json"), dir.path().join("s1.json")];
    let target = (r.url.as_str(), r.metrics_url.as_str());
    let args = |i: u32| ShardArgs { session: "obs-1", spec: format!("{i}/2"), conc: "2", target, start_at, extra: &[] };
    let (mut s0, a0) = shard_of(&args(0), &outs[0]).await;
    let (mut s1, a1) = shard_of(&args(1), &outs[1]).await;
    let prom = prometheus(&[a0, a1]).await;
    let obs_out = dir.path().join("observer.json");
    let mut obs = observer(&prom.url, "obs-1", &obs_out, &["--observe-give-up", "3s"]);
    let title = obs.line("observing ").await;
    assert!(title.contains("given up on after 3 s stale"), "{title}");
    obs.line("shard 1 reporting (session obs-1)").await;
    s1.line("ctx=0 conc=2").await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    s1.child.kill().unwrap();
    obs.line("shard 1 stale").await;
    s0.line("serving the final counts").await;
    obs.line("shard 0 finished its session").await;
    // No signal: the observer ends once shard 1 has been stale for 3 s.
    let finished = Instant::now();
    let deadline = finished + Duration::from_secs(30);
    let status = loop {
        if let Some(s) = obs.child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "the observer still runs; stderr:\n{}", obs.stderr());
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(status.success(), "{status:?}; stderr:\n{}", obs.stderr());
    let o = read(&obs_out);
    assert_eq!((o["ended_by"].as_str(), o["give_up_s"].as_f64()), (Some("all_shards_done"), Some(3.0)));
    let stale_at = o["events"].as_array().unwrap().iter().find(|e| e["event"] == "stale" && e["shard"] == "1");
    let stale_at = stale_at.and_then(|e| e["at_unix"].as_f64()).expect("shard 1 went stale");
    let held = o["ended_unix"].as_f64().unwrap() - stale_at;
    assert!(held >= 3.0, "the stale shard held the observer {held:.2} s, at least --observe-give-up");
    assert_eq!(violations(&o), Vec::<String>::new(), "a real observer file fits its schema");
    assert!(o["cells"]["ctx=0 conc=2"].as_array().is_some_and(|p| !p.is_empty()), "{o}");
    let mut bad = o.clone();
    bad["shards"]["0"]["finished"] = json!("yes");
    assert!(!violations(&bad).is_empty(), "a mutation fails it");
}

#[tokio::test]
async fn bad_observe_give_up_input_exits_2_before_any_query() {
    let base = ["--observe", "--prometheus", "http://127.0.0.1:9", "--client-selector", r#"{job="x"}"#];
    let cases: [(&[&str], &str); 4] = [
        (&["--observe-give-up", "soon"], "`soon` is not a duration"),
        (&["--observe-give-up", "400d"], "longer than 365 days"),
        (&["--observe-give-up", "-5s"], "unexpected argument '-5'"),
        (&["--observe-give-up", ""], "is not a duration"),
    ];
    for (extra, want) in cases {
        let mut cmd = bin();
        cmd.args(["run", "--headless"]).args(base).args(extra);
        let out = common::output(cmd).await;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {stderr}");
        assert!(stderr.contains(want), "{extra:?}: {stderr}");
        assert!(!stderr.contains("does not answer"), "refused before any query: {stderr}");
    }
    let mut alone = bin();
    alone.args(["run", "--headless", "--base-url", "http://127.0.0.1:9", "--observe-give-up", "5s"]);
    let out = common::output(alone).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("go with --observe") && !stderr.contains("preflight"), "{stderr}");
}
