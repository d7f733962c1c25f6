//! The detail popup's lines for a serve attempt (vLLM's figures, as `vllm bench serve`
//! prints them: mean, median, std, p99 per latency) and for an extension attempt, and the
//! prefix-cache line serve, decode and routing details share.

use crate::report::extension::ExtensionAttempt;
use crate::report::prefix_cache::PrefixCacheCheck;
use crate::report::serve::ServeAttempt;
use crate::report::text::format::{fmt_latency_ms, fmt_tps};
use ratatui::text::Line;

fn stat_line(name: &str, [mean, median, std, p99]: [Option<f64>; 4]) -> Line<'static> {
    let f = |v: Option<f64>| fmt_latency_ms(v);
    Line::from(format!(
        "{name:<10} mean {:>6}  median {:>6}  std {:>6}  p99 {:>6} ms",
        f(mean),
        f(median),
        f(std),
        f(p99)
    ))
}

/// The lines of serve attempt `a`.
pub(crate) fn serve(a: &ServeAttempt) -> Vec<Line<'static>> {
    let m = &a.metrics;
    let goodput = m.request_goodput.map_or_else(String::new, |g| format!(" · goodput {g:.2} req/s"));
    let mut out = vec![
        Line::from(format!(
            "{} prompts · {} completed · {} failed · {:.1}s · {} tok/s out · {:.2} req/s{goodput}",
            a.num_prompts,
            m.completed,
            m.failed,
            m.duration_s,
            fmt_tps(m.output_throughput),
            m.request_throughput
        )),
        stat_line("TTFT", [m.mean_ttft_ms, m.median_ttft_ms, m.std_ttft_ms, m.p99_ttft_ms]),
        stat_line("TPOT", [m.mean_tpot_ms, m.median_tpot_ms, m.std_tpot_ms, m.p99_tpot_ms]),
        stat_line("ITL", [m.mean_itl_ms, m.median_itl_ms, m.std_itl_ms, m.p99_itl_ms]),
        stat_line("ITL/token", [m.mean_itl_token_ms, m.median_itl_token_ms, m.std_itl_token_ms, m.p99_itl_token_ms]),
        stat_line("E2EL", [m.mean_e2el_ms, m.median_e2el_ms, m.std_e2el_ms, m.p99_e2el_ms]),
    ];
    out.extend(a.prefix_cache.as_ref().map(prefix_line));
    out.extend(a.schedule_lag.map(|l| Line::from(lag_line(&l))));
    out
}

/// The schedule lag of an attempt: `sent late p50 0.2 · p99 1.1 · max 3 ms; on schedule`, or
/// how many late ones the cap held, or the client's falling behind.
fn lag_line(l: &crate::report::schedule_lag::ScheduleLag) -> String {
    let f = |v: f64| fmt_latency_ms(Some(v));
    let head = format!("sent late p50 {} · p99 {} · max {} ms", f(l.p50_ms), f(l.p99_ms), f(l.max_ms));
    match (l.late, l.behind_note()) {
        (0, _) => format!("{head}; on schedule"),
        (_, Some(note)) => format!("{head}; L {note}"),
        (n, None) => format!("{head}; {n} held by --max-concurrency"),
    }
}

/// An attempt's prefix-cache check: `W warm cache: …`, or its hit ratio within what its
/// workload shares (serve, decode and routing details).
pub(crate) fn prefix_line(p: &PrefixCacheCheck) -> Line<'static> {
    match p.warm {
        true => Line::from(format!("W {}", p.warm_note())),
        false => Line::from(format!(
            "prefix cache {:.1}% of prompt tokens (the workload's own sharing)",
            p.hit_ratio * 100.0
        )),
    }
}

/// The latest attempt of an extension cell: its common figures, then its own, one per line.
pub(crate) fn extension(a: &ExtensionAttempt) -> Vec<Line<'static>> {
    let ttft = fmt_latency_ms(a.ttft_p50_ms);
    let mut out = vec![Line::from(format!(
        "{} requests · {} failed · {:.1}s · {} tok/s out · TTFT p50 {ttft} ms",
        a.requests,
        a.error_count(),
        a.duration_s,
        fmt_tps(a.output_tps)
    ))];
    if !a.labels.is_empty() {
        let labels: Vec<String> = a.labels.iter().map(|(k, v)| format!("{k} {v}")).collect();
        out.push(Line::from(labels.join(" · ")));
    }
    for f in &a.figures {
        let v = f.value.map_or_else(|| "—".to_string(), |v| format!("{v:.3}"));
        out.push(Line::from(format!("{} {v} {}", f.name, f.unit)));
    }
    for (name, t) in &a.tables {
        out.push(Line::from(format!(
            "{name}: {} · {}",
            t.key,
            t.columns.iter().map(|c| c.name.as_str()).collect::<Vec<_>>().join(" · ")
        )));
        for r in &t.rows {
            let values = t.columns.iter().zip(&r.values);
            let cells: Vec<String> =
                values.map(|(c, v)| crate::report::text::extension::fmt_value(&c.unit, *v)).collect();
            out.push(Line::from(format!("  {} {}: {}", t.key, r.key, cells.join(" · "))));
        }
    }
    out
}
