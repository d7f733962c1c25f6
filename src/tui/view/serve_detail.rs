//! The detail popup's lines for a serve attempt: vLLM's figures, as `vllm bench serve`
//! prints them (mean, median, std, p99 per latency).

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
pub fn serve(a: &ServeAttempt) -> Vec<Line<'static>> {
    let m = &a.metrics;
    let goodput = m.request_goodput.map_or_else(String::new, |g| format!(" · goodput {g:.2} req/s"));
    vec![
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
    ]
}
