//! The prefix cache in routing phases against the simulator as stock vLLM runs it: no
//! `/reset_prefix_cache` without `VLLM_SERVER_DEV_MODE=1` (docs/protocol.md §8). A cold phase's
//! requests share their family prefixes by design, which is not warm; the same phase run again
//! finds its prefixes still cached and is flagged warm (the trap §8 saw: "cold" phases at hit
//! ratios of 0.9), unless the caches can be reset (dev mode); a session run again with the
//! same `--seed` sends prefix sets of its own and stays cold. In process, on the paused clock.

use crate::common;

use common::{inproc_cluster, routing_base, validate};
use llm_decode_bench::cell::control::{Command, RunnerEvent};
use llm_decode_bench::config::RunConfig;
use llm_decode_bench::experiment::routing::{Arrival, RoutingConfig};
use llm_decode_bench::report::formats::{RenderSettings, ReportFormat};
use llm_decode_bench::report::json::SessionReport;
use llm_decode_bench::report::phase::RoutingPhase;
use llm_decode_bench::report::prefix_cache::PrefixCacheCheck;
use llm_decode_bench::session::start_with;
use llm_decode_bench::sim::inproc::InProcCluster;
use std::path::Path;

const FIRST: &str = "r1-cold-uniform-random";

/// Cold phases of 32 requests over 8 families (3 of 4 requests repeat a family's prefix),
/// through the random and least-request routes, with `seed` as `--seed`.
fn routing_config(c: &InProcCluster, out: &Path, seed: u64) -> RunConfig {
    let mut cfg = routing_base(c, out);
    cfg.routing = RoutingConfig {
        scenarios: vec!["cold-uniform".parse().unwrap()],
        routes: vec!["random".into(), "least-request".into()],
        rounds: 1,
        count: 32,
        rps: 8.0,
        arrival: Arrival::Poisson,
        output: 16,
        prompt_tokens: 1500,
        seed,
        gateway_metrics: Some(c.info().gateway.metrics_url.clone()),
        ..RoutingConfig::default()
    };
    cfg
}

/// Runs `cfg`, re-running the first phase once it finished when `rerun`.
async fn run(c: &InProcCluster, cfg: RunConfig, rerun: bool) -> SessionReport {
    let out = cfg.out.clone().unwrap();
    let mut h = start_with(cfg, c.backend()).await.expect("preflight");
    if rerun {
        while let Some(ev) = h.events.recv().await {
            if matches!(ev, RunnerEvent::CellFinished { cell: 0, .. }) {
                h.commands.send(Command::Rerun(0)).expect("the runner reads commands");
                break;
            }
        }
    }
    let report = h.join.await.unwrap();
    assert!(report.complete);
    assert_eq!(validate(&out), report, "the report file reads back unchanged");
    report
}

fn check(p: &RoutingPhase) -> PrefixCacheCheck {
    p.prefix_cache.unwrap_or_else(|| panic!("{}: the replicas count prefix-cache lookups", p.phase))
}

/// Every attempt of phase `name`, oldest first.
fn attempts<'a>(r: &'a SessionReport, name: &str) -> Vec<&'a RoutingPhase> {
    r.phase_history.iter().filter(|p| p.phase == name).collect()
}

fn text(r: &SessionReport) -> String {
    ReportFormat::Text.render(r, RenderSettings { ascii: true, dim_ansi: false, width: Some(200) })
}

/// A cold phase is judged against its design: about 3 in 4 of its prompt tokens are shared.
fn assert_cold(p: &RoutingPhase) {
    let c = check(p);
    let designed = c.expected_max_ratio.expect("every request has its prompt tokens");
    assert!((0.6..0.9).contains(&designed), "{}: 8 families over 32 requests: {designed}", p.phase);
    assert!(c.hit_ratio > 0.4 && !c.warm, "{}: repeats served their family prefixes, no more: {c:?}", p.phase);
}

#[tokio::test(start_paused = true)]
async fn a_cold_phase_run_again_on_a_cache_that_cannot_be_reset_is_flagged_warm() {
    let c = inproc_cluster(2, 1.0, |_| {});
    let dir = tempfile::tempdir().unwrap();
    let report = run(&c, routing_config(&c, &dir.path().join("rerun.json"), 11), true).await;
    let [first, again] = attempts(&report, FIRST)[..] else { panic!("{FIRST} ran twice") };
    assert_eq!(first.caches_reset, Some(false));
    assert_cold(first);
    assert_cold(&report.phases[1]);
    let (cold, warm) = (check(first), check(again));
    assert!(warm.warm && warm.hit_ratio > cold.hit_ratio + 0.1, "its prefixes were still cached: {warm:?}");
    let line = report.warnings.iter().find(|w| w.starts_with(&format!("{FIRST}: warm cache: ")));
    let line = line.unwrap_or_else(|| panic!("a warning names the phase: {:?}", report.warnings));
    assert!(line.contains("could not be reset"), "{line}");
    let text = text(&report);
    let rows: Vec<&str> = text.lines().filter(|l| l.contains(" W ")).collect();
    assert!(rows.len() == 1 && rows[0].starts_with("| random "), "only the re-run phase is marked: {text}");
    assert!(text.contains("W = warm cache") && text.contains(&format!("W {FIRST}: warm cache: ")), "{text}");
}

#[tokio::test(start_paused = true)]
async fn with_a_cache_reset_the_phase_run_again_stays_cold() {
    let c = inproc_cluster(2, 1.0, |c| c.dev_mode = true);
    let dir = tempfile::tempdir().unwrap();
    let report = run(&c, routing_config(&c, &dir.path().join("dev.json"), 11), true).await;
    let [first, again] = attempts(&report, FIRST)[..] else { panic!("{FIRST} ran twice") };
    assert_eq!(again.caches_reset, Some(true));
    assert_cold(first);
    assert_cold(again);
    assert!(!text(&report).contains("W = warm cache"));
}

#[tokio::test(start_paused = true)]
async fn a_session_run_again_with_its_seed_sends_its_own_prefixes_and_stays_cold() {
    let c = inproc_cluster(2, 1.0, |_| {});
    let dir = tempfile::tempdir().unwrap();
    let first = run(&c, routing_config(&c, &dir.path().join("first.json"), 11), false).await;
    let again = run(&c, routing_config(&c, &dir.path().join("again.json"), 11), false).await;
    assert_eq!(first.plan.settings["seed"], again.plan.settings["seed"], "one seed, one traffic");
    for (a, b) in first.phases.iter().zip(&again.phases) {
        assert_ne!(a.prefix_set, b.prefix_set, "each session its own prefixes");
        assert_cold(a);
        assert_cold(b);
    }
    assert!(!again.warnings.iter().any(|w| w.contains("warm cache")), "{:?}", again.warnings);
}
