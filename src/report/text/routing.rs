//! Headless summary of a routing experiment: one table per scenario, the routes (per round)
//! side by side with goodput, TTFT (ms), the per-replica request split, hit ratio and
//! throughput, in that order: what routing changes first.

use super::blocks::Block;
use super::panel::Panel;
use super::table::{Row, Table};
use crate::report::phase::RoutingPhase;
use crate::report::status::AttemptStatus;

const HEAD: &str = "Prefix-Cache Routing";
const BODY: &str = "The same open-loop traffic sent through the gateway under each routing strategy. \
    good = requests meeting the SLO; split = requests served per replica (from the response \
    header, or the engines' counters when no header names the replica); hit = prefix-cache hit \
    tokens / queried tokens over all replicas.";

/// Why tok/s barely moves between routes, under the tables.
const TPS_LEGEND: &str = "Columns lead with what routing changes: good/req, TTFT p50/p99, the \
    split and the hit ratio. tok/s is output tokens over the phase: every route is sent the same \
    requests on the same open-loop schedule, so it moves little between routes.";

/// What `W` means in a routing phase (docs/reports.md §3).
const WARM_LEGEND: &str = "W = warm cache: the replicas' prefix caches served more of the phase's \
    prompt tokens than its scenario shares (requests repeating a family, or all of them when \
    primed): they held its prefixes before it began (a phase run again on a server whose cache \
    could not be reset, docs/protocol.md §8); its figures are not the scenario's.";

/// A latency in seconds as ms, the way every other table prints latency (`310`, `2.1k`).
fn ms(x: Option<f64>) -> String {
    crate::report::text::format::fmt_latency_ms(x.map(|s| s * 1e3))
}

/// `a 69 · b 27` from the phase's replicas (sorted by name).
fn split(phase: &RoutingPhase) -> String {
    let parts: Vec<String> = phase
        .replicas
        .iter()
        .map(|(name, r)| match r.requests {
            Some(n) => format!("{name} {n}"),
            None => format!("{name} —"),
        })
        .collect();
    if parts.is_empty() { "—".into() } else { parts.join(" · ") }
}

fn row(phase: &RoutingPhase, rounds: bool) -> Row {
    let route = &phase.route;
    let name = if rounds { format!("{route} {}", phase.round()) } else { route.clone() };
    let good = format!("{}/{}", phase.good, phase.requests);
    let ttft = format!("{}/{}", ms(phase.ttft.p50), ms(phase.ttft.p99));
    let tps = format!("{:.1}", phase.output_tokens_per_second);
    let mut hit = phase.cache_hit_ratio.map_or("—".into(), |h| format!("{h:.3}"));
    if phase.prefix_cache.is_some_and(|p| p.warm) {
        hit.push_str(" W");
    }
    let status = phase.status;
    let name = if status == AttemptStatus::Measured { name } else { format!("{name} ({status})") };
    Row::new(vec![name, good, ttft, split(phase), hit, tps])
}

/// The routing summary of a report's phases (empty without phases).
#[cfg(test)]
pub(crate) fn render_routing(phases: &[RoutingPhase], opts: super::table::RenderOptions) -> String {
    super::blocks::render_text_blocks(&routing_blocks(phases), opts)
}

/// The routing summary as blocks: its panel, then one table per scenario (none without phases).
pub(crate) fn routing_blocks(phases: &[RoutingPhase]) -> Vec<Block> {
    if phases.is_empty() {
        return Vec::new();
    }
    let rounds = phases.iter().any(|p| !p.phase.starts_with("r1-"));
    let mut scenarios: Vec<&str> = Vec::new();
    for p in phases {
        if !scenarios.contains(&p.scenario.as_str()) {
            scenarios.push(&p.scenario);
        }
    }
    let mut blocks = vec![Block::Panel(Panel::new(HEAD, &[BODY]))];
    for sc in scenarios {
        let header = ["route", "good/req", "TTFT p50/p99 ms", "split", "hit", "tok/s"].map(String::from).to_vec();
        let mut t = Table::new(format!("Scenario {sc}"), header);
        t.rows = phases.iter().filter(|p| p.scenario == sc).map(|p| row(p, rounds)).collect();
        blocks.push(Block::Table(t));
    }
    let mut legend = vec![TPS_LEGEND.to_string()];
    legend.extend(warm_notes(phases));
    let legend: Vec<&str> = legend.iter().map(String::as_str).collect();
    blocks.push(Block::legend(&legend));
    blocks
}

/// The `W` legend and one line per warm phase (`W r1-cold-uniform-random: warm cache: …`).
fn warm_notes(phases: &[RoutingPhase]) -> Vec<String> {
    let warm = phases.iter().filter_map(|p| Some((p, p.prefix_cache.filter(|c| c.warm)?)));
    let mut notes: Vec<String> = warm.map(|(p, c)| format!("W {}: {}.", p.phase, c.warm_note())).collect();
    if !notes.is_empty() {
        notes.insert(0, WARM_LEGEND.to_string());
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::phase::{PhaseLatency, ReplicaRecord};
    use crate::report::text::table::RenderOptions;

    fn phase(name: &str, sc: &str, route: &str, a: u64, b: u64) -> RoutingPhase {
        let replica = |n| ReplicaRecord { requests: Some(n), ..ReplicaRecord::default() };
        RoutingPhase {
            phase: name.into(),
            scenario: sc.into(),
            route: route.into(),
            good: 38,
            requests: 96,
            ttft: PhaseLatency { p50: Some(2.1), p95: Some(11.5), p99: Some(12.0) },
            output_tokens_per_second: 180.5,
            cache_hit_ratio: Some(0.9327),
            replicas: [("L20-A".to_string(), replica(a)), ("L20-B".to_string(), replica(b))].into(),
            ..RoutingPhase::default()
        }
    }

    #[test]
    fn one_table_per_scenario_with_the_split() {
        let phases = vec![
            phase("r1-hot90-prefix-cache", "hot90", "prefix-cache", 27, 69),
            phase("r1-hot90-least-request", "hot90", "least-request", 48, 48),
            phase("r1-cold-uniform-random", "cold-uniform", "random", 45, 51),
        ];
        let text = render_routing(&phases, RenderOptions::default());
        assert!(text.contains("Scenario hot90"));
        assert!(text.contains("Scenario cold-uniform"));
        assert!(text.contains("L20-A 27 · L20-B 69"));
        assert!(text.contains("38/96"));
        assert!(text.contains("2.1k/12.0k"), "TTFT p50/p99 in ms: {text}");
        assert!(text.contains("tok/s moves little") || text.contains("so it moves little"), "{text}");
        assert!(text.contains("0.933") && !text.contains("0.933 W") && !text.contains("W = warm"), "{text}");
        assert!(!text.contains(" r1 "), "a single round needs no round suffix");
        assert!(render_routing(&[], RenderOptions::default()).is_empty());
    }

    #[test]
    fn later_rounds_and_unmeasured_phases_are_named() {
        let mut paused = phase("r2-hot90-random", "hot90", "random", 3, 4);
        paused.status = AttemptStatus::Paused;
        if let Some(r) = paused.replicas.get_mut("L20-B") {
            r.requests = None;
        }
        paused.ttft = PhaseLatency::default();
        let phases = vec![phase("r1-hot90-random", "hot90", "random", 45, 51), paused];
        let text = render_routing(&phases, RenderOptions::default());
        assert!(text.contains("random r1 "), "{text}");
        assert!(text.contains("random r2 (paused)"), "{text}");
        assert!(text.contains("L20-A 3 · L20-B —"), "{text}");
        assert!(text.contains("—/—"), "no TTFT: {text}");
    }

    #[test]
    fn a_warm_phase_is_marked_and_its_note_says_how_warm() {
        let mut warm = phase("r1-cold-uniform-random", "cold-uniform", "random", 45, 51);
        warm.prefix_cache = crate::report::prefix_cache::PrefixCacheCheck::judge(990.0, 1000.0, Some(0.75));
        let cold = phase("r1-cold-uniform-least-request", "cold-uniform", "least-request", 48, 48);
        let text = render_routing(&[warm, cold], RenderOptions::default());
        assert_eq!(text.matches("0.933 W").count(), 1, "{text}");
        let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
        let note = "W r1-cold-uniform-random: warm cache: 99.0% of prompt tokens came from the prefix cache, \
                    the workload shares at most 75.0%.";
        assert!(flat.contains("W = warm cache: the replicas' prefix caches") && flat.contains(note), "{text}");
    }
}
