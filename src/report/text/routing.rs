//! Headless summary of a routing experiment: one table per scenario, the routes (per round)
//! side by side with goodput, TTFT, throughput, the per-replica request split and hit ratio.

use super::panel::{PANEL_WIDTH, Panel};
use super::table::{RenderOptions, Row, Table};
use serde_json::Value;

const HEAD: &str = "Prefix-Cache Routing";
const BODY: &str = "The same open-loop traffic sent through the gateway under each routing strategy. \
    good = requests meeting the SLO; split = requests served per replica (from the response \
    header, or the engines' counters when no header names the replica); hit = prefix-cache hit \
    tokens / queried tokens over all replicas.";

fn num(v: &Value, path: &str) -> Option<f64> {
    v.pointer(path).and_then(Value::as_f64)
}

fn secs(x: Option<f64>) -> String {
    match x {
        Some(s) if s >= 10.0 => format!("{s:.1}"),
        Some(s) => format!("{s:.2}"),
        None => "—".into(),
    }
}

/// `a 69 · b 27` from the phase's replicas (sorted by name).
fn split(phase: &Value) -> String {
    let Some(reps) = phase.get("replicas").and_then(Value::as_object) else { return "—".into() };
    let parts: Vec<String> = reps
        .iter()
        .map(|(name, r)| match r.get("requests").and_then(Value::as_u64) {
            Some(n) => format!("{name} {n}"),
            None => format!("{name} —"),
        })
        .collect();
    if parts.is_empty() { "—".into() } else { parts.join(" · ") }
}

fn row(phase: &Value, rounds: bool) -> Row {
    let route = phase.get("route").and_then(Value::as_str).unwrap_or("?");
    let round = phase.get("phase").and_then(Value::as_str).and_then(|p| p.split('-').next()).unwrap_or("");
    let name = if rounds { format!("{route} {round}") } else { route.to_string() };
    let good = format!("{}/{}", num(phase, "/good").unwrap_or(0.0), num(phase, "/requests").unwrap_or(0.0));
    let ttft = format!("{}/{}", secs(num(phase, "/ttft/p50")), secs(num(phase, "/ttft/p95")));
    let tps = format!("{:.1}", num(phase, "/output_tokens_per_second").unwrap_or(0.0));
    let hit = num(phase, "/cache_hit_ratio").map_or("—".into(), |h| format!("{h:.3}"));
    let status = phase.get("status").and_then(Value::as_str).unwrap_or("measured");
    let name = if status == "measured" { name } else { format!("{name} ({status})") };
    Row::new(vec![name, good, ttft, tps, split(phase), hit])
}

/// The routing summary of a report's phases (empty without phases).
pub fn render_routing(phases: &[Value], opts: RenderOptions) -> String {
    if phases.is_empty() {
        return String::new();
    }
    let rounds = phases.iter().filter_map(|p| p.get("phase").and_then(Value::as_str)).any(|p| !p.starts_with("r1-"));
    let mut scenarios: Vec<String> = Vec::new();
    for p in phases {
        if let Some(s) = p.get("scenario").and_then(Value::as_str).filter(|s| !scenarios.iter().any(|x| x == s)) {
            scenarios.push(s.to_string());
        }
    }
    let mut lines = Panel::new(HEAD, &[BODY]).render_lines(PANEL_WIDTH, opts.style);
    for sc in scenarios {
        let header = ["route", "good/req", "TTFT p50/p95 s", "tok/s", "split", "hit"].map(String::from).to_vec();
        let mut t = Table::new(format!("Scenario {sc}"), header);
        t.rows = phases
            .iter()
            .filter(|p| p.get("scenario").and_then(Value::as_str) == Some(&sc))
            .map(|p| row(p, rounds))
            .collect();
        lines.extend(t.render_lines(opts));
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn one_table_per_scenario_with_the_split() {
        let phase = |name: &str, sc: &str, route: &str, a: u64, b: u64| {
            json!({"phase": name, "scenario": sc, "route": route, "good": 38, "requests": 96,
                "ttft": {"p50": 2.1, "p95": 11.5, "p99": 12.0}, "output_tokens_per_second": 180.5,
                "cache_hit_ratio": 0.9327, "replicas": {"L20-A": {"requests": a}, "L20-B": {"requests": b}}})
        };
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
        assert!(text.contains("2.10/11.5"));
        assert!(text.contains("0.933"));
        assert!(!text.contains(" r1 "), "a single round needs no round suffix");
        assert!(render_routing(&[], RenderOptions::default()).is_empty());
    }
}
