//! Sharded routing end to end (`run --plan routing --shard i/2 --start-at`, issue 27): two shard
//! processes against one simulated cluster and its gateway, shard 0 priming, both sending their
//! slice of one seeded schedule from the same instant, then `report merge`. The merged phases
//! account for exactly what the simulator's gateway forwarded, per replica; the same flags in
//! one process give the same traffic (families) and an owner hit ratio as high.

use crate::common;
use common::{bin, cluster};
use serde_json::Value;
use std::path::Path;
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

/// The plan: one primed scenario under two routes, small and fast on the simulator's clock.
const PLAN: &[&str] = &[
    "run",
    "--headless",
    "--plan",
    "routing",
    "--scenarios",
    "hot90",
    "--routes",
    "prefix-cache,random",
    "--rounds",
    "1",
    "--count",
    "40",
    "--rps",
    "25",
    "--output",
    "32",
    "--prompt-tokens",
    "1500",
    "--seed",
    "7",
];

/// `run` with [`PLAN`] against the cluster whose gateway is `gateway` and replicas `reps`.
fn run_cmd(gateway: &str, reps: &[(String, String)], out: &Path) -> Command {
    let mut cmd = bin();
    cmd.args(PLAN).args(["--base-url", gateway, "--gateway-metrics", &format!("{gateway}/metrics")]);
    for (name, url) in reps {
        cmd.args(["--replica", &format!("{name}={url}")]);
    }
    cmd.arg("--out").arg(out);
    cmd
}

fn replicas(c: &llm_decode_bench::sim::Cluster) -> Vec<(String, String)> {
    c.info().replicas.iter().map(|r| (r.name.clone(), r.metrics_url.clone())).collect()
}

fn read(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("report written")).expect("JSON")
}

fn phase<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["phases"].as_array().unwrap().iter().find(|p| p["phase"] == name).unwrap_or_else(|| panic!("no {name}"))
}

/// The simulator gateway's own count of requests it forwarded to `pod` under `strategy`.
fn forwarded(page: &str, strategy: &str, pod: &str) -> u64 {
    let (s, p) = (format!("routing_strategy=\"{strategy}\""), format!("target_pod=\"{pod}\""));
    page.lines()
        .filter(|l| l.starts_with("gateway_request_total{") && l.contains(&s) && l.contains(&p))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_shards_prime_once_and_merge_to_the_gateways_own_counts() {
    let (sharded, single) = (cluster(2, 25.0, |_| {}).await, cluster(2, 25.0, |_| {}).await);
    let dir = tempfile::tempdir().unwrap();
    let gateway = sharded.info().gateway.url.clone();
    let start_at = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() + 8;
    let shard = |i: u32| {
        let mut cmd = run_cmd(&gateway, &replicas(&sharded), &dir.path().join(format!("shard{i}.json")));
        cmd.args(["--shard", &format!("{i}/2"), "--start-at", &start_at.to_string(), "--priming-slot", "6s"]);
        common::output(cmd)
    };
    let one = run_cmd(&single.info().gateway.url, &replicas(&single), &dir.path().join("single.json"));
    let (a, b, s) = tokio::join!(shard(0), shard(1), common::output(one));
    for (o, what) in [(&a, "shard 0"), (&b, "shard 1"), (&s, "single")] {
        assert!(o.status.success(), "{what}: {}", String::from_utf8_lossy(&o.stderr));
    }
    let shard1_log = String::from_utf8_lossy(&b.stderr);
    assert!(shard1_log.contains("the family owner map is on shard 0"), "{shard1_log}");
    let merged = dir.path().join("merged.json");
    let mut merge = bin();
    merge.args(["report", "merge"]).arg(dir.path().join("shard0.json")).arg(dir.path().join("shard1.json"));
    merge.arg("--out").arg(&merged);
    let done = common::output(merge).await;
    assert!(done.status.success(), "{}", String::from_utf8_lossy(&done.stderr));
    let (m, one) = (read(&merged), read(&dir.path().join("single.json")));
    let (s0, s1) = (read(&dir.path().join("shard0.json")), read(&dir.path().join("shard1.json")));
    let page = reqwest::get(format!("{gateway}/metrics")).await.unwrap().text().await.unwrap();
    for (route, name) in [("prefix-cache", "r1-hot90-prefix-cache"), ("random", "r1-hot90-random")] {
        let (p, p0, p1, q) = (phase(&m, name), phase(&s0, name), phase(&s1, name), phase(&one, name));
        let n = |v: &Value, k: &str| v[k].as_u64().unwrap();
        assert_eq!((n(p0, "planned"), n(p1, "planned"), n(p, "planned")), (20, 20, 40), "{name}: k mod 2");
        assert_eq!((n(p, "requests"), n(p, "success")), (40, 40), "{name}");
        // Shard 0 alone primed, each family once: its initial owners are the priming requests.
        assert_eq!(p1["config"].get("initial_owners"), None, "{name}: shard 1 primes nothing");
        let primed = &p0["config"]["initial_owners"];
        let mut served = 0;
        for pod in ["sim-a", "sim-b"] {
            let measured = p["replicas"][pod]["requests"].as_u64().unwrap();
            let priming = primed[pod].as_array().map_or(0, Vec::len) as u64;
            assert_eq!(measured + priming, forwarded(&page, route, pod), "{name} {pod}: the gateway's own count");
            served += measured;
        }
        assert_eq!(served, 40, "{name}: every request attributed to a replica");
        // One seeded schedule: the same families, request for request, as the single process.
        assert_eq!(p["families"].as_object().map(|f| f.len()), q["families"].as_object().map(|f| f.len()));
        for (f, rec) in q["families"].as_object().unwrap() {
            assert_eq!(p["families"][f]["requests"], rec["requests"], "{name} family {f}");
        }
        let both = (p["ttft"]["p50"].as_f64(), p["ttft"]["p99"].as_f64());
        assert!(both.0.is_some() && both.1.is_some(), "{name}: percentiles from both shards' values");
    }
    // Under prefix-cache routing on two pods the gateway sends a primed family's request to the
    // pod holding its prefix unless its load shortcut fires: the owner serves nearly all, in one
    // process as across shards. Shard 1's prompts must carry shard 0's primed prefixes for that.
    let (hit, hit_one) = (owner_hit(&m), owner_hit(&one));
    eprintln!("prefix-cache owner hit ratio: sharded {hit}, single process {hit_one}");
    assert!(hit >= 0.9 && hit_one >= 0.9, "owner hit ratio sharded {hit} vs single {hit_one}");
    assert!((hit - hit_one).abs() <= 0.1, "sharded {hit} vs single {hit_one}");
    assert_eq!(phase(&s1, "r1-hot90-prefix-cache").get("owner_hit_ratio"), None, "no map on shard 1");
}

fn owner_hit(report: &Value) -> f64 {
    phase(report, "r1-hot90-prefix-cache")["owner_hit_ratio"].as_f64().expect("owner hit ratio")
}
