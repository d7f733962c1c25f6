//! End-to-end against a real Prometheus (Debian's `prometheus` package, `/usr/bin/prometheus`
//! or `$PROMETHEUS_BIN`) scraping 8 simulated replicas every second: a decode session whose
//! replicas come from the server (`--prometheus`) agrees with direct scraping of the same
//! replicas during the same session; a replica that goes down leaves and rejoins; a bad server
//! or selector is one line on stderr before any load.

use crate::common;

use common::{bin, cluster, output, validate};
use llm_decode_bench::config::{PlanKind, RunConfig};
use llm_decode_bench::load::backend::HttpBackend;
use llm_decode_bench::metrics::engine::EngineSample;
use llm_decode_bench::metrics::poller::{MetricsSnapshot, MetricsTarget, Poller, PollerConfig, ReplicaHistory};
use llm_decode_bench::metrics::prom_poller::{self, PromPollerConfig};
use llm_decode_bench::metrics::promql::PromServer;
use llm_decode_bench::sim::Cluster;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The server's scrape interval in the generated configuration, seconds.
const SCRAPE_S: f64 = 1.0;
/// Longest wait for the server to be ready and its targets scraped a few times.
const READY_WITHIN: Duration = Duration::from_secs(90);
/// How far around a bracket of direct polls a gauge's range is taken: gauges move between polls
/// (a stream ends and the next starts), so a few polls either side bound what a scrape saw.
const GAUGE_SPAN: Duration = Duration::from_millis(300);

/// The least allowance either side gets: Prometheus stamps a sample with the wall clock in ms,
/// which the reader maps onto the monotonic clock, so a stamp is only known to tens of ms.
const STAMP_FLOOR: Duration = Duration::from_millis(300);

/// How long reading a page took, as measured on both sides (never under [`STAMP_FLOOR`]): a
/// reading stamped `t` shows the state of some instant in `[t, t + took]`.
#[derive(Clone, Copy, Debug)]
struct Slack {
    /// The direct poller's slowest scrape (its own `scrape_latency`).
    direct: Duration,
    /// Prometheus's slowest scrape of the job (its `scrape_duration_seconds`).
    prometheus: Duration,
}

/// A Prometheus server started for the test; killed when dropped.
pub(crate) struct PromProc {
    pub(crate) child: Child,
    pub(crate) url: String,
    pub(crate) dir: tempfile::TempDir,
}

impl Drop for PromProc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl PromProc {
    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("prometheus.log")).unwrap_or_default()
    }
}

pub(crate) fn prometheus_bin() -> PathBuf {
    let bin = std::env::var_os("PROMETHEUS_BIN").map_or_else(|| PathBuf::from("/usr/bin/prometheus"), PathBuf::from);
    assert!(
        bin.is_file(),
        "the prometheus binary is missing at {} (install Debian's `prometheus` package: apt-get install -y \
         prometheus, or set PROMETHEUS_BIN); this test needs a real Prometheus server",
        bin.display()
    );
    bin
}

/// A configuration scraping each replica's `/metrics` every second, with its name as `pod`.
fn config_yaml(c: &Cluster) -> String {
    let mut yaml = format!(
        "global:\n  scrape_interval: {SCRAPE_S}s\n  scrape_timeout: {SCRAPE_S}s\nscrape_configs:\n  - job_name: sim\n    static_configs:\n"
    );
    for r in &c.info().replicas {
        let authority = r.url.trim_start_matches("http://");
        yaml.push_str(&format!("      - targets: ['{authority}']\n        labels: {{pod: '{}'}}\n", r.name));
    }
    yaml
}

/// Starts a server on a loopback port it picks itself (`127.0.0.1:0`, read back from its log:
/// a port picked free here and released could be taken by another process first).
async fn start_prometheus(c: &Cluster) -> PromProc {
    let p = start_with_config(&config_yaml(c)).await;
    wait_ready(&p, c.info().replicas.len()).await;
    p
}

/// A Prometheus server with configuration `yaml`, on a loopback port it picks itself (read
/// back from its log), its data and log in a directory of its own.
pub(crate) async fn start_with_config(yaml: &str) -> PromProc {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("prometheus.yml");
    std::fs::write(&cfg, yaml).unwrap();
    let log = std::fs::File::create(dir.path().join("prometheus.log")).unwrap();
    let child = std::process::Command::new(prometheus_bin())
        .arg(format!("--config.file={}", cfg.display()))
        .arg(format!("--storage.tsdb.path={}", dir.path().join("data").display()))
        .arg("--web.listen-address=127.0.0.1:0")
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("prometheus starts");
    let mut p = PromProc { child, url: String::new(), dir };
    p.url = format!("http://{}", listening_on(&mut p).await);
    p
}

/// A configuration scraping `targets` every second as job `job`.
pub(crate) fn scrape_every_second(job: &str, targets: &[String]) -> String {
    let list = targets.iter().map(|t| format!("'{t}'")).collect::<Vec<_>>().join(", ");
    format!(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: {job}\n    static_configs:\n      - targets: [{list}]\n"
    )
}

/// The address the server logged it listens on (`msg="Listening on" address=127.0.0.1:PORT`);
/// waits (bounded) for the line, and fails at once if the server exits first.
pub(crate) async fn listening_on(p: &mut PromProc) -> String {
    let deadline = Instant::now() + READY_WITHIN;
    loop {
        let log = p.log();
        let line = log.lines().find(|l| l.contains("msg=\"Listening on\""));
        if let Some(addr) = line.and_then(|l| l.split(" address=").nth(1)).and_then(|a| a.split_whitespace().next()) {
            return addr.to_string();
        }
        let exited = p.child.try_wait().expect("wait on prometheus");
        assert!(exited.is_none(), "prometheus exited ({exited:?}) before it listened; its log:\n{log}");
        assert!(Instant::now() < deadline, "prometheus never said where it listens; its log:\n{log}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The value of an instant query's single-sample answer.
pub(crate) async fn scalar(client: &reqwest::Client, url: &str, query: &str) -> Option<f64> {
    let url = reqwest::Url::parse_with_params(&format!("{url}/api/v1/query"), [("query", query)]).ok()?;
    let resp = client.get(url).send().await.ok()?;
    let body: serde_json::Value = resp.json().await.ok()?;
    body["data"]["result"][0]["value"][1].as_str()?.parse().ok()
}

/// Waits (bounded) for the server to answer and for every target to be up with 3 scrapes.
async fn wait_ready(p: &PromProc, targets: usize) {
    let client = common::client();
    let deadline = Instant::now() + READY_WITHIN;
    let query = "count(count_over_time(up{job=\"sim\"}[1m]) >= 3 and up{job=\"sim\"} == 1)";
    loop {
        if scalar(&client, &p.url, query).await == Some(targets as f64) {
            return;
        }
        assert!(Instant::now() < deadline, "prometheus not ready with {targets} targets up; its log:\n{}", p.log());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn server(p: &PromProc, selector: &str) -> PromServer {
    PromServer::new(&p.url, selector).unwrap()
}

/// A reading of one replica through Prometheus: when the server scraped it, and what.
type Reading = (Instant, EngineSample);

/// Every distinct reading of every replica in the snapshots the session published.
async fn collect(mut rx: tokio::sync::watch::Receiver<Arc<MetricsSnapshot>>) -> BTreeMap<String, Vec<Reading>> {
    let mut out: BTreeMap<String, Vec<Reading>> = BTreeMap::new();
    loop {
        for v in &rx.borrow_and_update().replicas {
            let (Some(at), Some(s)) = (v.last_ok, &v.sample) else { continue };
            let list = out.entry(v.name.clone()).or_default();
            if list.last().is_none_or(|(last, _)| *last < at) {
                list.push((at, s.clone()));
            }
        }
        if rx.changed().await.is_err() {
            return out;
        }
    }
}

/// Checks one Prometheus reading stamped `t` against the direct polls of the same replica.
/// A counter read at `t` lies between the last direct poll that had read its page before `t`
/// and the first sent after Prometheus had read its page; a gauge lies within the range the
/// direct polls saw around that bracket ([`GAUGE_SPAN`]).
fn agrees(direct: &ReplicaHistory, t: Instant, s: &EngineSample, slack: Slack) -> Result<(), String> {
    let points = &direct.points;
    let before = points.iter().rev().find(|p| p.at + slack.direct <= t).ok_or("no direct poll before")?;
    let after = points.iter().find(|p| p.at >= t + slack.prometheus).ok_or("no direct poll after")?;
    let g = s.generation_tokens.ok_or("no generation tokens")?;
    let (lo, hi) = (before.generation_tokens.unwrap(), after.generation_tokens.unwrap());
    if !(lo <= g && g <= hi) {
        return Err(format!("generation_tokens {g} outside the direct polls' [{lo}, {hi}] ({slack:?})"));
    }
    let near: Vec<_> =
        points.iter().filter(|p| p.at + GAUGE_SPAN >= before.at && p.at <= after.at + GAUGE_SPAN).collect();
    for (what, prom, field) in [
        ("running", s.running, (|p| p.running) as fn(&llm_decode_bench::metrics::poller::Point) -> Option<f64>),
        ("kv_usage", s.kv_usage, |p| p.kv_usage),
    ] {
        let v = prom.ok_or(format!("no {what}"))?;
        let seen: Vec<f64> = near.iter().filter_map(|p| field(p)).collect();
        let (min, max) = seen.iter().fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(*x), b.max(*x)));
        if !(min - 1e-9 <= v && v <= max + 1e-9) {
            return Err(format!("{what} {v} outside the direct polls' [{min}, {max}]"));
        }
    }
    Ok(())
}

/// The slowest scrape latency the direct poller published, until it stops.
async fn slowest(mut rx: tokio::sync::watch::Receiver<Arc<MetricsSnapshot>>) -> Duration {
    let mut worst = Duration::ZERO;
    loop {
        let snap = rx.borrow_and_update().clone();
        worst = snap.replicas.iter().filter_map(|r| r.scrape_latency).fold(worst, Duration::max);
        if rx.changed().await.is_err() {
            return worst;
        }
    }
}

fn direct_poller(c: &Cluster) -> llm_decode_bench::metrics::poller::PollerHandle {
    let targets = c.info().replicas.iter().map(|r| MetricsTarget::new(&r.name, &r.metrics_url)).collect();
    let cfg = PollerConfig::new(targets, None).with_timing(Duration::from_millis(100), Duration::from_secs(2));
    Poller::spawn(HttpBackend::shared(common::client()), cfg, CancellationToken::new())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_from_prometheus_agree_with_direct_scraping() {
    let c = cluster(8, 10.0, |_| {}).await;
    let prom = start_prometheus(&c).await;
    let direct = direct_poller(&c);
    let direct_slowest = tokio::spawn(slowest(direct.subscribe()));
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("prom.json");
    let cfg = RunConfig {
        prometheus: Some(server(&prom, "job=\"sim\"")),
        plans: vec![PlanKind::Decode],
        ctx: vec![0],
        conc: vec![16],
        window: Duration::from_secs(5),
        out: Some(out.clone()),
        decode: llm_decode_bench::config::decode::DecodeConfig {
            warmup_timeout: Duration::from_secs(20),
            settle: Duration::from_millis(500),
            min_stream_tokens: 1024,
            ..RunConfig::defaults(&c.info().gateway.url).decode
        },
        ..RunConfig::defaults(&c.info().gateway.url)
    };
    let h = llm_decode_bench::session::start(cfg).await.expect("preflight passes");
    let readings = tokio::spawn(collect(h.metrics.clone().expect("a metrics source")));
    let report = h.join.await.unwrap();
    let readings = readings.await.unwrap();
    let history = direct.history();
    direct.stop();
    let slowest_scrape = "max(max_over_time(scrape_duration_seconds{job=\"sim\"}[10m]))";
    let prom_slowest = scalar(&common::client(), &prom.url, slowest_scrape).await.expect("scrape durations");
    let slack = Slack {
        direct: direct_slowest.await.unwrap().max(STAMP_FLOOR),
        prometheus: Duration::from_secs_f64(prom_slowest).max(STAMP_FLOOR),
    };

    assert_eq!(validate(&out), report, "the file holds the final report and fits the schema");
    let src = report.metrics_source.as_ref().expect("metrics_source recorded");
    assert_eq!((src.kind.as_str(), src.selector.as_str()), ("prometheus", "job=\"sim\""));
    assert_eq!(src.scrape_interval_s, Some(SCRAPE_S), "read from the samples' spacing");
    assert_eq!(src.scrape_interval_from.as_deref(), Some("samples"));
    assert!(src.replica_changes.is_empty(), "{:?}", src.replica_changes);
    let names: Vec<&str> = c.info().replicas.iter().map(|r| r.name.as_str()).collect();
    let info: Vec<&str> = report.target.replica_info.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(info, names, "the pod labels name the replicas");
    assert_eq!(report.replicas, 8);
    assert_eq!(report.target.engine_dialect, "vllm-v1");
    assert!(report.target.kv_capacity_tokens.is_some(), "capacity from vllm:cache_config_info");
    assert_eq!(report.replica_series.len(), 8);

    let (mut checked, mut busy) = (0, 0);
    for name in &names {
        let direct = history.replica(name).expect("direct polls");
        let list = readings.get(*name).expect("readings through prometheus");
        assert!(list.len() >= 5, "{name}: only {} readings", list.len());
        let gaps: Vec<f64> = list.windows(2).map(|w| (w[1].0 - w[0].0).as_secs_f64()).collect();
        assert!(gaps.iter().all(|g| (g - SCRAPE_S).abs() < 0.25), "{name}: one reading per scrape: {gaps:?}");
        // Readings from before the direct poller started or after it stopped are not checked.
        let (first, last) = (direct.points.front().unwrap().at, direct.points.back().unwrap().at);
        let inside = |t: &Instant| *t >= first + slack.direct && *t + slack.prometheus <= last;
        for (t, s) in list.iter().filter(|(t, _)| inside(t)) {
            agrees(direct, *t, s, slack).unwrap_or_else(|e| panic!("{name} at {t:?}: {e}"));
            checked += 1;
        }
        let moved = list.last().unwrap().1.generation_tokens.unwrap() - list[0].1.generation_tokens.unwrap();
        busy += usize::from(moved > 0.0);
    }
    assert!(checked >= 8 * 3, "{checked} readings checked");
    // The gateway routes at random: most replicas, not necessarily all, get streams.
    assert!(busy >= 4, "only {busy} replicas generated tokens");

    // The cell's server-side figures come from readings up to one scrape away from the window
    // bounds: client and server counts agree within two scrapes' worth of the window.
    let cell = &report.decode.as_ref().unwrap().cells[0];
    let a = cell.attempts.last().unwrap();
    let ratio = a.prometheus.as_ref().and_then(|p| p.client_over_server).expect("server rate");
    let tolerance = 2.0 * SCRAPE_S / a.window_s + 0.05;
    assert!((ratio - 1.0).abs() <= tolerance, "client/server {ratio}, tolerance {tolerance}");
}

/// Waits (bounded) until `cond` holds on the reader's membership changes.
async fn until_changes(h: &llm_decode_bench::metrics::poller::PollerHandle, n: usize, prom: &PromProc) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while h.membership().len() < n {
        assert!(Instant::now() < deadline, "{n} changes expected, got {:?}; log:\n{}", h.membership(), prom.log());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_that_goes_down_leaves_and_rejoins() {
    let c = cluster(8, 10.0, |_| {}).await;
    let prom = start_prometheus(&c).await;
    let initial = c.info().replicas.iter().map(|r| MetricsTarget::new(&r.name, &r.metrics_url)).collect();
    let cfg = PromPollerConfig::new(server(&prom, "job=\"sim\""), initial, Some(SCRAPE_S), Duration::from_millis(250));
    let (tx, mut lines) = tokio::sync::mpsc::unbounded_channel();
    let tell = Box::new(move |line: String| drop(tx.send(line)));
    let h = prom_poller::spawn(HttpBackend::shared(common::client()), cfg, Some(tell), CancellationToken::new());
    let snap = h.scrape_now().await;
    assert_eq!(snap.replicas.len(), 8);
    assert!(snap.replicas.iter().all(|r| r.sample.is_some() && r.last_error.is_none()), "{:?}", snap.replicas);

    assert!(c.set_replica_down(7, true));
    until_changes(&h, 1, &prom).await;
    assert!(c.set_replica_down(7, false));
    until_changes(&h, 2, &prom).await;
    let changes: Vec<(String, bool)> = h.membership().into_iter().map(|m| (m.replica, m.joined)).collect();
    assert_eq!(changes, [("sim-h".to_string(), false), ("sim-h".to_string(), true)]);
    assert!(lines.recv().await.unwrap().starts_with("replica sim-h left"));
    assert!(lines.recv().await.unwrap().starts_with("replica sim-h joined"));
    let outage = &h.history().outages["sim-h"];
    assert!(outage.len() == 1 && outage[0].to.is_some(), "{outage:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_server_or_selector_is_one_line_before_any_load() {
    let c = cluster(1, 10.0, |_| {}).await;
    let prom = start_prometheus(&c).await;
    let gw = c.info().gateway.url.clone();
    let refused = common::refused_port();
    let closed = refused.base();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("never.json");
    let cases: [(Vec<&str>, &str); 5] = [
        (vec!["--prometheus", &closed], "--prometheus http://127.0.0.1:"),
        (
            vec!["--prometheus", &prom.url, "--replica-selector", "job=\"nope\""],
            "no engine series match {job=\"nope\"}",
        ),
        // Refused by the server (a bad regular expression): its answer, on one line.
        (vec!["--prometheus", &prom.url, "--replica-selector", "job=~\"(\""], "--prometheus http://127.0.0.1:"),
        // Not a matcher at all: refused before the server is asked.
        (vec!["--prometheus", &prom.url, "--replica-selector", "job=="], "is not a label matcher"),
        (vec!["--prometheus", &prom.url, "--replica", "http://127.0.0.1:1/metrics"], "exclusive"),
    ];
    for (args, needle) in cases {
        let mut cmd = bin();
        cmd.args(["run", "--base-url", &gw, "--headless", "--out"]).arg(&out).args(&args);
        let o = output(cmd).await;
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{args:?} must fail");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: one line: {err}");
    }
    assert!(!out.exists(), "no session ran");
    let stats = c.replica_stats(0).unwrap();
    assert_eq!((stats.prompt_tokens, stats.generation_tokens), (0, 0), "no load was sent");
}
