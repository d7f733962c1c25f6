//! Detail of the selected cell: one status line for its state, then its latest attempt's
//! distributions and per-replica view.

use super::super::app::App;
use super::super::theme;
use super::widgets::{lines, panel, pct, popup};
use crate::cell::headline::ErrorReason;
use crate::report::json::{BurstAttempt, DecodeAttempt};
use crate::report::phase::{PhaseLatency, RoutingPhase};
use crate::report::status::AttemptStatus;
use crate::report::text::format::{fmt_latency_ms, fmt_tps};
use crate::session::snapshot::CellSummary;
use crate::session::state::{Attempt, CellStatus};
use crate::stats::Summary;
use ratatui::buffer::Buffer;
use ratatui::layout::{Margin, Rect};
use ratatui::text::{Line, Span};
use std::collections::BTreeMap;

type Lines = Vec<Line<'static>>;

fn dist_header() -> Line<'static> {
    let s = format!("{:<14}{:>7}{:>8}{:>8}{:>8}{:>8}{:>8}", "", "n", "p50", "p90", "p95", "p99", "max");
    Line::styled(s, theme::dim())
}

/// A distribution's figure, ms: one decimal below 10 ms (a 0.4 ms TPOT is not `0`), else
/// whole milliseconds (`812`, `2873`: the row says ms, so no `2.9k` to read as seconds).
fn ms(v: f64) -> String {
    match v.is_finite() {
        true if v.abs() < 9.95 => format!("{v:.1}"),
        true => format!("{v:.0}"),
        false => fmt_latency_ms(None),
    }
}

fn dist(name: &str, s: Option<&Summary>) -> Line<'static> {
    let text = match s {
        Some(s) => {
            format!("{:>7}{:>8}{:>8}{:>8}{:>8}{:>8}", s.count, ms(s.p50), ms(s.p90), ms(s.p95), ms(s.p99), ms(s.max))
        }
        None => format!("{:>7}", "—"),
    };
    Line::from(vec![Span::styled(format!("{name:<14}"), theme::label()), Span::styled(text, theme::value())])
}

fn served_by(samples: &[crate::report::json::RequestRecord]) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for s in samples {
        *out.entry(s.served_by.clone().unwrap_or_else(|| "unknown".into())).or_insert(0) += 1;
    }
    out
}

/// Longest server reason the popup quotes, characters.
const REASON_CHARS: usize = 80;

/// `errors none`, or one line per error kind: its count and the first request's reason.
fn errors_lines(reasons: &[ErrorReason]) -> Lines {
    if reasons.is_empty() {
        return vec![Line::from(vec![Span::styled("errors ", theme::label()), Span::styled("none", theme::dim())])];
    }
    let line = |(i, r): (usize, &ErrorReason)| {
        let mut spans = vec![
            Span::styled(if i == 0 { "errors " } else { "       " }, theme::label()),
            Span::styled(format!("{} {}", r.kind.as_str(), r.count), theme::error()),
        ];
        if let Some(e) = &r.example {
            spans.push(Span::styled(format!(" — {}", crate::text_safe::clipped(e, REASON_CHARS)), theme::value()));
        }
        Line::from(spans)
    };
    reasons.iter().enumerate().map(line).collect()
}

fn decode(d: &DecodeAttempt) -> Lines {
    let run = d.running_avg.map_or_else(|| "—".into(), |r| format!("{r:.1}"));
    let mut out = vec![
        Line::from(format!(
            "window {:.1}s · {} tokens · aggregate {} tok/s ({}) · user {} tok/s",
            d.window_s,
            d.window_tokens,
            fmt_tps(d.aggregate_tps),
            d.aggregate_source.as_str(),
            d.user_tps.map_or_else(|| "—".into(), fmt_tps)
        )),
        Line::from(format!(
            "running {run}/{}{} · warmup {:.1}s{} · capacity-limited {}",
            d.running_requested(),
            // A shard: the server runs every shard's streams; this one sends its slice.
            d.cell_requested.map_or_else(String::new, |_| format!(" (this shard sends {})", d.requested)),
            d.warmup_s,
            if d.warmup_timed_out { " (timed out)" } else { "" },
            match (d.capacity_limit, d.capacity_limited, d.turnover) {
                (Some(l), _, _) => format!("yes ({})", l.as_str()),
                (None, true, _) => "yes".into(),
                (None, false, true) => "no (turnover)".into(),
                (None, false, false) => "no".into(),
            }
        )),
    ];
    let rows = [
        ("TTFT ms", d.ttft_ms.as_ref()),
        // vLLM's names (docs/reports.md §1.2): TPOT per stream over the window, ITL per gap.
        ("TPOT ms", d.itl_ms.as_ref()),
        ("ITL/token ms", d.itl_token_ms.as_ref()),
        ("ITL/chunk ms", d.itl_chunk_ms.as_ref()),
        ("TPOT done ms", d.tpot_ms.as_ref()),
        ("latency ms", d.latency_ms.as_ref()),
    ];
    // Only what the attempt measured: an errored cell has no latency rows to show.
    let measured: Vec<_> = rows.into_iter().filter(|(_, s)| s.is_some()).collect();
    if !measured.is_empty() {
        out.push(dist_header());
        out.extend(measured.into_iter().map(|(name, s)| dist(name, s)));
        out.push(dist("client lag ms", d.client_lag_ms.as_ref()));
    }
    if let Some(p) = &d.prometheus {
        let mut ratio = p.client_over_server.map_or_else(|| "—".into(), |r| format!("{r:.3}"));
        if p.counts_disagree {
            ratio += " (disagree >5%)";
        }
        let hits = p.prefix_hits_delta.zip(p.prefix_queries_delta).filter(|(_, q)| *q > 0.0).map(|(h, q)| h / q);
        out.push(Line::from(format!(
            "server {} tok/s · client/server {ratio} · prefix hits {} · preemptions {} · KV peak {}",
            p.generation_tps.map_or_else(|| "—".into(), fmt_tps),
            pct(hits),
            p.preemptions_delta.map_or_else(|| "—".into(), |v| format!("{v:.0}")),
            pct(p.kv_usage_peak)
        )));
    }
    out.extend(d.prefix_cache.as_ref().map(super::serve_detail::prefix_line));
    let split = served_by(&d.request_samples);
    if !split.is_empty() {
        let parts: Vec<String> = split.iter().map(|(k, n)| format!("{k} {n}")).collect();
        out.push(Line::from(format!("requests per replica: {}", parts.join(" · "))));
    }
    out
}

fn burst(b: &BurstAttempt) -> Lines {
    vec![
        Line::from(format!(
            "{} requests · {} ok · {} failed · {} tok/s · makespan {:.1}s",
            b.requests,
            b.success,
            b.error_count,
            fmt_tps(b.output_tps),
            b.makespan_s
        )),
        dist_header(),
        dist("TTFT ms", b.ttft_ms.as_ref()),
        dist("ITL ms", b.itl_token_ms.as_ref()),
        dist("TPOT ms", b.tpot_ms.as_ref()),
        dist("E2E ms", b.e2e_ms.as_ref()),
    ]
}

fn secs_ms(key: &str, l: &PhaseLatency) -> String {
    let p = |q: Option<f64>| fmt_latency_ms(q.map(|s| s * 1e3));
    format!("{:<6} p50 {:>6}  p95 {:>6}  p99 {:>6} ms", key.to_uppercase(), p(l.p50), p(l.p95), p(l.p99))
}

fn routing(v: &RoutingPhase) -> Lines {
    let mut out = vec![Line::from(format!(
        "good {}/{} · {} tok/s · errors {} · prefix hits {}",
        v.good,
        v.requests,
        fmt_tps(v.output_tokens_per_second),
        v.errors,
        pct(v.cache_hit_ratio)
    ))];
    // ITL per token and TPOT per request, as `vllm bench serve` names them.
    let rows = [("ttft", &v.ttft), ("itl", &v.itl), ("tpot", &v.tpot), ("e2e", &v.e2e)];
    out.extend(rows.map(|(k, l)| Line::from(secs_ms(k, l))));
    out.extend(v.prefix_cache.as_ref().map(super::serve_detail::prefix_line));
    let head =
        format!("{:<12}{:>6}{:>6}{:>6}{:>6}{:>7}{:>6}  families", "replica", "reqs", "hit", "wait", "run", "KV", "pre");
    out.push(Line::styled(head, theme::dim()));
    for (name, r) in &v.replicas {
        // Families by requests served, most first, then by name (as strings, like the report keys).
        let mut fams: Vec<(String, u64)> = r.family_counts.iter().flatten().map(|(f, c)| (f.to_string(), *c)).collect();
        fams.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let fams: Vec<String> = fams.iter().take(4).map(|(f, c)| format!("f{f}:{c}")).collect();
        let count = |x: Option<f64>| x.map_or_else(|| "—".into(), |x| format!("{x:.0}"));
        out.push(Line::from(format!(
            "{name:<12}{:>6}{:>6}{:>6}{:>6}{:>7}{:>6}  {}",
            count(r.requests.map(|n| n as f64)),
            pct(r.cache_hit_ratio),
            count(r.waiting_peak),
            count(r.running_peak),
            pct(r.kv_usage_peak),
            count(r.preemptions),
            fams.join(" ")
        )));
    }
    out
}

/// How many attempts are kept and which is shown: `2 attempts, the latest shown below`.
fn kept(n: usize) -> String {
    match n {
        0 => "no attempt kept".into(),
        1 => "1 attempt, shown below".into(),
        n => format!("{n} attempts, the latest shown below"),
    }
}

/// The one status line of a cell: its state and what the rest of the view shows.
fn status_line(c: &CellSummary) -> Line<'static> {
    let n = c.attempts;
    let paused = c.headline.as_ref().is_some_and(|h| h.status == AttemptStatus::Paused);
    let (state, note) = match &c.status {
        CellStatus::Running if n == 0 => ("running", "first attempt, shown in the live panels".to_string()),
        CellStatus::Running => ("running", format!("attempt {} in the live panels; the previous one below", n + 1)),
        CellStatus::Pending if n == 0 => ("pending", "not run yet".to_string()),
        CellStatus::Pending if paused => ("paused", format!("runs again from warmup on resume · {}", kept(n))),
        CellStatus::Pending => ("queued again", kept(n)),
        CellStatus::Skipped(reason) => ("skipped", format!("not run: {reason}")),
        CellStatus::SkippedByOperator => ("skipped by the operator", kept(n)),
        CellStatus::Measured => ("measured", kept(n)),
        CellStatus::Errored => ("errored", kept(n)),
    };
    Line::from(vec![
        Span::styled("status ", theme::label()),
        Span::styled(state, theme::value()),
        Span::styled(format!(" · {note}"), theme::label()),
    ])
}

/// `vs baseline FILE: tok/s +3.2% TTFT -11%` for the latest measured attempt, when overlaid.
fn baseline_line(app: &App, c: &CellSummary) -> Option<Line<'static>> {
    let b = app.session.baseline.as_deref()?;
    let deltas = super::baseline::finished(app, c);
    let mut spans = vec![Span::styled(format!("vs baseline {}: ", b.path), theme::label())];
    match deltas.is_empty() {
        true if b.cell(&c.spec.compare_key()).is_none() => spans.push(Span::styled("no such cell", theme::dim())),
        true => spans.push(Span::styled("no measured attempt to compare", theme::dim())),
        false => spans.extend(super::baseline::spans(&deltas)),
    }
    Some(Line::from(spans))
}

/// With repetitions: `runs 2/3 done · mean tok/s 180.6 ±13.9 (CV 3.1%)`, the headline the
/// matrix shows; the attempt below is the latest run.
fn runs_line(c: &CellSummary) -> Option<Line<'static>> {
    use crate::report::runs::render::{COLUMNS, cv_text, mean_pm};
    let run = c.run?;
    let mut text = format!("runs {}/{} done", run.done.min(run.planned), run.planned);
    if let Some((name, s)) = COLUMNS[0].1.iter().find_map(|n| c.run_stats.get(*n).map(|s| (*n, s))) {
        let cv = cv_text(s);
        let cv = if cv.is_empty() { String::new() } else { format!(" ({cv})") };
        text.push_str(&format!(" · mean tok/s {}{cv}", mean_pm(name, s)));
    }
    Some(Line::styled(text, theme::label()))
}

fn body(app: &App, id: usize) -> Lines {
    let Some(c) = app.session.cells.get(id) else { return vec![] };
    let mut out = vec![status_line(c)];
    out.extend(runs_line(c));
    out.extend(baseline_line(app, c));
    if let Some(a) = c.latest.as_deref() {
        let which = if c.status == CellStatus::Running { "previous" } else { "latest" };
        let status = c.headline.as_ref().map_or("", |h| h.status.as_str());
        out.push(Line::styled(format!("{which} attempt: {status}"), theme::title()));
        // Why requests failed comes first: an errored cell has little else to show.
        out.extend(errors_lines(&a.error_reasons()));
        out.extend(match a {
            Attempt::Decode(d) => decode(d),
            Attempt::Burst(b) => burst(b),
            Attempt::Routing(p) => routing(p),
            Attempt::Serve(s) => super::serve_detail::serve(s),
            Attempt::Extension(e) => super::serve_detail::extension(e),
        });
    }
    out
}

/// Draws the detail popup of the selected cell over `area`.
pub(crate) fn render(app: &App, area: Rect, buf: &mut Buffer) {
    let Some(id) = app.selected else { return };
    let label = app.session.cells.get(id).map_or("?", |c| c.label.as_str());
    let out = body(app, id);
    let h = (out.len() as u16 + 2).max(6);
    let inner = popup(area, 100, h, panel(format!("Detail: {label}  (Esc closes)")), buf);
    lines(inner.inner(Margin::new(1, 0)), buf, &out);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::fixtures;

    fn text(app: &App, id: usize) -> Vec<String> {
        body(app, id).iter().map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect()).collect()
    }

    #[test]
    fn one_status_line_per_state_and_nothing_contradicts_it() {
        let running = fixtures::measuring();
        let cases = [
            (text(&running, 6), "status running · first attempt, shown in the live panels"),
            (text(&running, 7), "status pending · not run yet"),
            (text(&fixtures::paused(), 6), "status paused · runs again from warmup on resume · 1 attempt, shown below"),
            (text(&fixtures::done_with_skips(), 3), "status measured · 1 attempt, shown below"),
            (text(&fixtures::done_with_skips(), 10), "status skipped by the operator · 1 attempt, shown below"),
            (text(&fixtures::done_with_skips(), 11), "status skipped · not run: deficit 655360 tokens"),
        ];
        for (lines, want) in cases {
            assert_eq!(lines[0], want);
            let statuses = lines.iter().filter(|l| l.starts_with("status ") || l.contains("not run yet")).count();
            assert_eq!(statuses, 1, "{lines:?}");
            assert!(!lines.iter().any(|l| l.contains("running now") || l.contains("attempt(s)")), "{lines:?}");
        }
        assert_eq!(text(&running, 7).len(), 1, "a cell never run shows no attempt");
    }

    #[test]
    fn a_repeated_cell_names_its_runs_and_their_mean() {
        let app = fixtures::repeated_runs();
        assert_eq!(text(&app, 5)[1], "runs 3/3 done · mean tok/s 180.6 ±13.9 (CV 3.1%)");
        assert_eq!(text(&app, 6)[1], "runs 1/3 done");
        assert!(!text(&fixtures::measuring(), 5).iter().any(|l| l.starts_with("runs ")), "no repetitions");
    }
}
