//! The "Done when"'s last part (run from sharded.rs after its clean session): 4 shards of a
//! second session, one SIGKILLed mid-cell. The observer (reading the replica itself, once)
//! shows that shard stale live and in its JSON report while the others finish, its last
//! summed counts are the surviving shards' own, and `report merge` of what was written records
//! the killed shard (`incomplete` when its report was written before the kill, `missing` when
//! not) and the session as not complete.

use super::observe::{ShardArgs, observer, prometheus, read, shard_cells, shard_of};
use crate::common;
use common::{bin, cluster};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const SHARDS: usize = 4;
const KILLED: usize = 3;

pub(super) async fn four_shards_one_killed_mid_cell() {
    let c = cluster(1, 25.0, |_| {}).await;
    let r = &c.info().replicas[0];
    let dir = tempfile::tempdir().unwrap();
    let start_at = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() + 8;
    let outs: Vec<_> = (0..SHARDS).map(|i| dir.path().join(format!("s{i}.json"))).collect();
    let (mut procs, mut addrs) = (Vec::new(), Vec::new());
    for (i, out) in outs.iter().enumerate() {
        let spec = format!("{i}/{SHARDS}");
        let a = ShardArgs { session: "obs-2", spec, conc: "8", target: (&r.url, &r.metrics_url), start_at, extra: &[] };
        let (p, a) = shard_of(&a, out).await;
        procs.push(p);
        addrs.push(a);
    }
    let prom = prometheus(&addrs).await;
    let obs_out = dir.path().join("observer.json");
    // The replica is read once, by the observer (its own page here).
    let mut obs = observer(&prom.url, "obs-2", &obs_out, &["--metrics-url", &r.metrics_url]);
    for i in 0..SHARDS {
        obs.line(&format!("shard {i} reporting (session obs-2)")).await;
    }
    let replica = obs.line("replicas: ").await;
    assert!(replica.contains(" running "), "{replica}");
    // The killed shard goes once its cell has run a while; the others end cleanly.
    procs[KILLED].line("ctx=0 conc=8").await;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    procs[KILLED].child.kill().unwrap();
    let stale = obs.line(&format!("shard {KILLED} stale")).await;
    assert!(stale.contains("its series are gone from the server"), "{stale}");
    for i in (0..SHARDS).filter(|&i| i != KILLED) {
        procs[i].line("serving the final counts").await;
        obs.line(&format!("shard {i} finished its session")).await;
    }
    // A stale shard holds the observer open; a signal ends it and writes its report.
    unsafe { libc::kill(obs.child.id() as i32, libc::SIGINT) };
    let status = obs.child.wait().unwrap();
    assert!(status.success(), "{status:?}; stderr:\n{}", obs.stderr());
    let o = read(&obs_out);
    assert_eq!((o["kind"].as_str(), o["ended_by"].as_str()), (Some("observer"), Some("SIGINT")));
    let events: Vec<(String, String)> = o["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["event"].as_str().unwrap().to_string(), e["shard"].as_str().unwrap().to_string()))
        .collect();
    let has = |event: &str, i: usize| events.contains(&(event.to_string(), i.to_string()));
    for i in 0..SHARDS {
        assert!(has("joined", i), "shard {i} joined: {events:?}");
        assert_eq!(has("stale", i), i == KILLED, "shard {i} stale: {events:?}");
        assert_eq!(has("finished", i), i != KILLED, "shard {i} finished: {events:?}");
    }
    assert_eq!(o["shards"][KILLED.to_string()]["stale"].as_bool(), Some(true));
    // Long streams send their first tokens only as the cell starts: the observer's TTFT comes
    // from the rate of buckets whose first sample was 0 (the cell announced at the session's
    // start), else it would be null at every poll.
    let polls = o["cells"]["ctx=0 conc=8"].as_array().expect("polls of the cell");
    assert!(polls.iter().any(|p| p["ttft_p50_s"].is_number()), "no TTFT p50 in {polls:?}");

    // The survivors' final counts reached the observer (their pages lingered past their
    // reports); the killed shard's series are gone.
    let survivors: Vec<_> = outs.iter().enumerate().filter(|(i, _)| *i != KILLED).map(|(_, p)| read(p)).collect();
    let started: f64 = survivors.iter().flat_map(shard_cells).map(|(.., n)| n).sum();
    let totals: f64 = o["totals"].as_object().unwrap().values().map(|t| t["started"].as_f64().unwrap()).sum();
    assert_eq!(totals, started, "only the survivors' series remain");

    let merged = dir.path().join("merged.json");
    let given: Vec<&std::path::PathBuf> = outs.iter().filter(|p| p.exists()).collect();
    let mut merge = bin();
    merge.args(["report", "merge"]).args(&given).arg("--out").arg(&merged);
    let done = common::output(merge).await;
    assert!(done.status.success(), "{}", String::from_utf8_lossy(&done.stderr));
    let m = read(&merged);
    let status = |i: usize| {
        let shards = m["merge"]["shards"].as_array().unwrap();
        shards.iter().find(|s| s["index"] == i as u64).unwrap()["status"].as_str().unwrap().to_string()
    };
    for i in (0..SHARDS).filter(|&i| i != KILLED) {
        assert_eq!(status(i), "merged");
    }
    let want = if outs[KILLED].exists() { "incomplete" } else { "missing" };
    assert_eq!(status(KILLED), want);
    assert_eq!(m["complete"], false);
}
