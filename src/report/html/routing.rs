//! Routing phases: the per-replica split of each phase's requests (stacked bars) and a table of
//! each phase's headline figures.

use super::page::{escape, table};
use super::svg::{self, Area, Drawn, GRID, HPos, INK, MUTED, VPos};
use crate::report::json::SessionReport;
use crate::report::phase::{Attribution, PhaseLatency, RoutingPhase};
use plotters::prelude::*;

/// Every replica name of the phases, sorted: its index picks its colour on every chart.
pub(super) fn replica_names(report: &SessionReport) -> Vec<String> {
    let mut names: Vec<String> = report.phases.iter().flat_map(|p| p.replicas.keys().cloned()).collect();
    names.extend(report.replica_series.keys().cloned());
    names.extend(report.target.replica_info.iter().map(|r| r.name.clone()));
    names.sort();
    names.dedup();
    names
}

/// The routing section's content: the split chart and the phase table; empty without phases.
pub(super) fn routing(report: &SessionReport) -> String {
    if report.phases.is_empty() {
        return String::new();
    }
    let names = replica_names(report);
    let split: Vec<(&RoutingPhase, Vec<(usize, u64)>)> = report
        .phases
        .iter()
        .map(|p| {
            let counts =
                p.replicas.iter().filter_map(|(name, r)| Some((names.iter().position(|n| n == name)?, r.requests?)));
            (p, counts.collect())
        })
        .collect();
    let mut out = String::from("<h3>Requests per replica</h3>\n");
    if split.iter().all(|(_, c)| c.is_empty()) {
        out.push_str(
            "<p class=\"note\">No per-replica request counts (no attribution header and no engine counters).</p>\n",
        );
    } else {
        let height = 80 + 34 * split.len() as u32;
        let label = "Requests per replica, one bar per routing phase";
        out.push_str(&svg::chart(label, svg::WIDTH, height, |area| draw_split(area, &split)));
        out.push('\n');
        let legend: Vec<String> = names.iter().enumerate().map(|(i, n)| swatch(i, n)).collect();
        out.push_str(&format!("<p class=\"legend\">{} · counts from the response header, else the engines' finished counters (see the table).</p>\n", legend.join(" ")));
    }
    out.push_str("<h3>Phases</h3>\n");
    // With repetitions each phase's figures are the mean of its runs.
    out.push_str(&phase_table(&crate::report::runs::shown_phases(report)));
    out
}

/// A coloured square and the replica's name, for legends outside the charts.
pub(super) fn swatch(i: usize, name: &str) -> String {
    let c = svg::series(i);
    format!(
        "<span style=\"display:inline-block;width:10px;height:10px;background:#{:02x}{:02x}{:02x};margin:0 4px 0 8px\"></span>{}",
        c.0,
        c.1,
        c.2,
        escape(name)
    )
}

/// Draws one stacked bar per phase, segments coloured by replica index.
fn draw_split(area: &Area, split: &[(&RoutingPhase, Vec<(usize, u64)>)]) -> Drawn {
    let top = split.iter().map(|(_, c)| c.iter().map(|x| x.1).sum::<u64>()).max().unwrap_or(1).max(1);
    let n = split.len() as u32;
    let mut chart = ChartBuilder::on(area)
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(210)
        .build_cartesian_2d(svg::padded(0.0, top as f64), svg::slots(n))?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .light_line_style(WHITE)
        .bold_line_style(GRID)
        .y_labels(0)
        .x_label_formatter(&|v| svg::compact(*v))
        .x_desc("requests")
        .label_style(svg::text(12, INK))
        .axis_desc_style(svg::text(13, MUTED))
        .draw()?;
    let y_at = |r: usize| chart.backend_coord(&(0.0, svg::mid((n - 1) as usize - r)));
    svg::y_slot_labels(area, split.iter().enumerate().map(|(r, (p, _))| (p.phase.clone(), y_at(r))))?;
    for (row, (_, counts)) in split.iter().enumerate() {
        let y = svg::mid((n - 1) as usize - row);
        let mut from = 0_u64;
        for &(replica, count) in counts {
            let (x0, yc) = chart.backend_coord(&(from as f64, y));
            let (x1, _) = chart.backend_coord(&((from + count) as f64, y));
            area.draw(&Rectangle::new([(x0, yc - 11), (x1, yc + 11)], svg::series(replica).filled()))?;
            if x1 - x0 > 34 {
                let white = svg::anchored(12, WHITE, HPos::Center, VPos::Center);
                area.draw(&Text::new(count.to_string(), ((x0 + x1) / 2, yc), white))?;
            }
            from += count;
        }
    }
    Ok(())
}

/// Seconds as milliseconds with no decimals, `—` when absent.
fn ms(v: Option<f64>) -> String {
    v.filter(|x| x.is_finite()).map_or_else(|| "—".to_string(), |s| format!("{:.0}", s * 1000.0))
}

/// `p50 / p99` of a phase latency in ms, as the text tables print it.
fn pair(l: &PhaseLatency) -> String {
    format!("{} / {}", ms(l.p50), ms(l.p99))
}

/// One row per phase: what it achieved and how its requests were attributed.
fn phase_table(phases: &[RoutingPhase]) -> String {
    let head = [
        "phase",
        "status",
        "good/ok/sent",
        "out tok/s",
        "TTFT p50/p99 ms",
        "TPOT p50/p99 ms",
        "hit ratio",
        "attribution",
        "note",
    ];
    let numeric = ["good/ok/sent", "out tok/s", "TTFT p50/p99 ms", "TPOT p50/p99 ms", "hit ratio"];
    let rows: Vec<Vec<String>> = phases
        .iter()
        .map(|p| {
            let attribution = match p.attribution {
                Attribution::ResponseHeader => "response header",
                Attribution::CounterDeltas => "engine counters",
                Attribution::Unavailable => "unavailable",
            };
            let note = p.error.clone().unwrap_or_else(|| {
                p.errors_by_kind.iter().map(|(k, n)| format!("{n} {}", k.as_str())).collect::<Vec<_>>().join(", ")
            });
            let status = match p.prefix_cache.filter(|c| c.warm) {
                Some(c) => format!("{}, {}", p.status.as_str(), c.warm_note()),
                None => p.status.as_str().to_string(),
            };
            vec![
                escape(&p.phase),
                escape(&status),
                format!("{}/{}/{}", p.good, p.success, p.requests),
                format!("{:.1}", p.output_tokens_per_second),
                pair(&p.ttft),
                pair(&p.tpot),
                p.cache_hit_ratio.map_or_else(|| "—".to_string(), |r| format!("{r:.3}")),
                attribution.to_string(),
                escape(&note),
            ]
        })
        .collect();
    table(&head, &numeric, &rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests_schema::{full_report, minimal_report};

    #[test]
    fn phases_show_their_split_and_figures() {
        let out = routing(&full_report());
        assert!(out.contains("aria-label=\"Requests per replica, one bar per routing phase\""), "{out}");
        assert!(out.contains("\n69\n") && out.contains("\n27\n"), "segment counts: {out}");
        assert!(
            out.contains("r1-hot90-prefix-cache") && out.contains("61/95/96") && out.contains("2125 / 12000"),
            "{out}"
        );
        assert!(out.contains("L20-A") && out.contains("1 overloaded"), "{out}");
        assert!(!out.contains("warm cache"), "a primed phase's hits are its design: {out}");
        assert_eq!(routing(&minimal_report()), "");
        let mut report = full_report();
        report.phases[0].prefix_cache = crate::report::prefix_cache::PrefixCacheCheck::judge(99.0, 100.0, Some(0.5));
        let warm = "<td>measured, warm cache: 99.0% of prompt tokens came from the prefix cache, the workload shares at most 50.0%</td>";
        assert!(routing(&report).contains(warm), "a warm phase says so in its status");
    }

    #[test]
    fn a_phase_that_could_not_run_is_listed_with_its_reason() {
        let report =
            SessionReport { phases: vec![RoutingPhase::not_run("r9-x", "no such phase <here>")], ..minimal_report() };
        let out = routing(&report);
        assert!(out.contains("No per-replica request counts"), "{out}");
        assert!(out.contains("no such phase &lt;here&gt;") && out.contains("errored"), "{out}");
    }
}
