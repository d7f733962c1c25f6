//! Pure value formatters for report cells (tok/s, ms, running/requested, error counts).

/// Header of the first column of every matrix.
pub(crate) const CORNER: &str = "ctx \\ conc";

/// Cell skipped because it does not fit in the KV cache.
pub(crate) const SKIPPED: &str = "∅";
/// Value not applicable to this cell (e.g. per-request tok/s of an errored cell).
pub(crate) const NOT_APPLICABLE: &str = "-";
/// Value that applies but was not observed (e.g. no stream produced two tokens).
pub(crate) const MISSING: &str = "—";
/// Cell that was never run (skipped by the operator or the session was interrupted).
pub(crate) const NOT_RUN: &str = "·";

/// Legend line explaining [`SKIPPED`], shown when a matrix contains it.
pub(crate) const SKIPPED_LEGEND: &str = "∅ = skipped/hidden because the cell does not fit in KV cache; \
    exact deficit is kept in JSON timeout_reason";
/// Legend line explaining [`NOT_RUN`], shown when a matrix contains it.
pub(crate) const NOT_RUN_LEGEND: &str = "· = not run: skipped by the operator or the session ended before this cell";

/// Throughput in tok/s with one decimal: `146.7`; non-finite values are [`MISSING`].
pub(crate) fn fmt_tps(tok_per_s: f64) -> String {
    if tok_per_s.is_finite() { format!("{tok_per_s:.1}") } else { MISSING.to_string() }
}

/// Optional throughput in tok/s: `146.7`, or [`MISSING`] when absent.
pub(crate) fn fmt_opt_tps(tok_per_s: Option<f64>) -> String {
    tok_per_s.map_or_else(|| MISSING.to_string(), fmt_tps)
}

/// Average running requests rounded to an integer (negative or non-finite gives 0).
pub(crate) fn running_rounded(running_avg: f64) -> u64 {
    if running_avg.is_finite() && running_avg > 0.0 {
        // Saturating float-to-int conversion; values are small request counts.
        running_avg.round() as u64
    } else {
        0
    }
}

/// The running average as `(X/Y)` shows it: whole requests, as the reference report, except
/// below one, where a whole number would read `0` on a busy server: `0.4`.
pub(crate) fn running_text(running_avg: f64) -> String {
    match running_avg {
        r if r.is_finite() && r > 0.0 && r < 0.95 => format!("{r:.1}"),
        r => running_rounded(r).to_string(),
    }
}

/// What held a cell back, as the matrices mark it after `(X/Y)`: `*kv` (the KV cache),
/// `*seq` (the sequence cap, `max_num_seqs`), `*?` (an unknown limit), `*` (limited, cause not
/// recorded: reports that predate it), and `!` for a warmup that timed out (a measurement
/// failure, not a server limit; a warmup timeout whose limit is unknown shows `!` alone).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LimitMark {
    /// The report's `capacity_limited`.
    pub capacity_limited: bool,
    /// The report's `capacity_limit`.
    pub limit: Option<crate::report::status::CapacityLimit>,
    /// The report's `warmup_timed_out`.
    pub warmup_timed_out: bool,
}

impl LimitMark {
    /// The mark of a decode attempt.
    pub fn of(a: &crate::report::json::DecodeAttempt) -> Self {
        Self { capacity_limited: a.capacity_limited, limit: a.capacity_limit, warmup_timed_out: a.warmup_timed_out }
    }

    /// True when the cell carries a mark.
    pub fn any(self) -> bool {
        self.capacity_limited || self.warmup_timed_out
    }

    /// `*kv`, `*seq`, `*?`, `*`, `!`, `*kv!` or ``.
    pub fn text(self) -> String {
        use crate::report::status::CapacityLimit as L;
        let star = match (self.capacity_limited, self.limit) {
            (false, _) => "",
            (true, Some(L::Unknown)) if self.warmup_timed_out => "",
            (true, Some(L::Kv)) => "*kv",
            (true, Some(L::MaxNumSeqs)) => "*seq",
            (true, Some(L::Unknown)) => "*?",
            (true, None) => "*",
        };
        format!("{star}{}", if self.warmup_timed_out { "!" } else { "" })
    }

    /// The legend of the marks in `marks`, in a fixed order (none for marks not used).
    pub fn legend<'a>(marks: impl IntoIterator<Item = &'a LimitMark>) -> Vec<&'static str> {
        let used: Vec<String> = marks.into_iter().map(|m| m.text()).collect();
        let has = |m: &str| used.iter().any(|u| u.trim_end_matches('!') == m);
        let mut out = Vec::new();
        for (mark, line) in LIMIT_LEGEND {
            let found = match mark {
                "!" => used.iter().any(|u| u.ends_with('!')),
                m => has(m),
            };
            if found {
                out.push(line);
            }
        }
        out
    }
}

/// Each mark of [`LimitMark::text`] and what it means.
const LIMIT_LEGEND: [(&str, &str); 5] = [
    ("*", "* = capacity-limited or warmup timed out"),
    ("*kv", "*kv = held back by the KV cache (usage at least 95% or preemptions in the window)"),
    ("*seq", "*seq = held back by the engine's sequence cap (max_num_seqs: requests waited while running stayed flat)"),
    ("*?", "*? = held back by a limit the metrics do not name"),
    (
        "!",
        "! = warmup timed out: the window began before every stream had its first token (a measurement failure, not a server limit)",
    ),
];

/// Whether the `(X/Y)` suffix is shown: running known (finite) and marked or X < Y.
pub(crate) fn shows_running(running_avg: Option<f64>, requested: u32, mark: LimitMark) -> bool {
    running_avg.is_some_and(|r| r.is_finite() && (mark.any() || running_rounded(r) < u64::from(requested)))
}

/// The running/requested suffix: ` (7/8)*kv`, ` (7/8)`, `*kv` (a mark without running data)
/// or ``; the marks are [`LimitMark::text`].
pub(crate) fn fmt_running_suffix(running_avg: Option<f64>, requested: u32, mark: LimitMark) -> String {
    let star = mark.text();
    match running_avg {
        Some(r) if shows_running(running_avg, requested, mark) => {
            format!(" ({}/{requested}){star}", running_text(r))
        }
        _ => star,
    }
}

/// The error-count suffix: ` (2e)` when `errors > 0`, otherwise empty.
pub(crate) fn fmt_error_suffix(errors: u64) -> String {
    if errors > 0 { format!(" ({errors}e)") } else { String::new() }
}

/// A cell where every request errored: `0.0 (1e)`.
pub(crate) fn fmt_errored(errors: u64) -> String {
    format!("0.0 ({errors}e)")
}

/// Compact milliseconds for the TTFT/TPOT detail: `76` below 1000, else `7k`, `10k`, `27k` (the
/// reference report's whole thousands); below 1 ms one decimal, `0.4`, where a whole number
/// would read 0.
pub(crate) fn fmt_ms_compact(ms: Option<f64>) -> String {
    match ms {
        Some(v) if v.is_finite() => {
            if v.abs() < 0.95 {
                format!("{v:.1}")
            } else if v.abs() < 999.5 {
                format!("{v:.0}")
            } else {
                format!("{:.0}k", v / 1000.0)
            }
        }
        _ => MISSING.to_string(),
    }
}

/// The dim TTFT/ITL detail in ms: `76/7`, `7k/11`; a missing part is `—`.
pub(crate) fn fmt_ttft_itl(ttft_ms: Option<f64>, itl_ms: Option<f64>) -> String {
    format!("{}/{}", fmt_ms_compact(ttft_ms), fmt_ms_compact(itl_ms))
}

/// Request latency in ms: `812` below 1000, else thousands with one decimal: `56.5k`.
pub(crate) fn fmt_latency_ms(ms: Option<f64>) -> String {
    match ms {
        Some(v) if v.is_finite() => {
            if v.abs() < 999.5 {
                format!("{v:.0}")
            } else {
                format!("{:.1}k", v / 1000.0)
            }
        }
        _ => MISSING.to_string(),
    }
}

/// A latency with its unit, for prose (log lines, the live panel) rather than tables: `812 ms`
/// below a second, then seconds: `2.94 s`, `12.3 s`, `1234 s`; `—` without data. Tables keep
/// the reference report's compact ms (`7k/11`, [`fmt_ms_compact`]).
pub(crate) fn fmt_ms_unit(ms: Option<f64>) -> String {
    match ms {
        Some(v) if v.is_finite() && v.abs() < 999.5 => format!("{v:.0} ms"),
        Some(v) if v.is_finite() && v.abs() < 9_995.0 => format!("{:.2} s", v / 1e3),
        Some(v) if v.is_finite() && v.abs() < 999_500.0 => format!("{:.1} s", v / 1e3),
        Some(v) if v.is_finite() => format!("{:.0} s", v / 1e3),
        _ => MISSING.to_string(),
    }
}

/// Latency p50/p90 in ms: `56.5k/57.6k`; `—/—` when no request completed.
pub(crate) fn fmt_latency_pair(p50_ms: Option<f64>, p90_ms: Option<f64>) -> String {
    format!("{}/{}", fmt_latency_ms(p50_ms), fmt_latency_ms(p90_ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tps() {
        assert_eq!(fmt_tps(146.66), "146.7");
        assert_eq!(fmt_tps(395.0), "395.0");
        assert_eq!(fmt_tps(0.0), "0.0");
        assert_eq!(fmt_tps(f64::NAN), "—");
        assert_eq!(fmt_tps(f64::INFINITY), "—");
        assert_eq!(fmt_opt_tps(None), "—");
        assert_eq!(fmt_opt_tps(Some(2.1)), "2.1");
    }

    #[test]
    fn running_suffix() {
        let star = LimitMark { capacity_limited: true, ..LimitMark::default() };
        let none = LimitMark::default();
        assert_eq!(fmt_running_suffix(Some(6.9), 8, star), " (7/8)*");
        assert_eq!(fmt_running_suffix(Some(7.2), 16, star), " (7/16)*");
        assert_eq!(fmt_running_suffix(Some(3.6), 4, none), "");
        assert_eq!(fmt_running_suffix(Some(2.6), 4, none), " (3/4)");
        assert_eq!(fmt_running_suffix(Some(8.0), 8, none), "");
        assert_eq!(fmt_running_suffix(Some(8.0), 8, star), " (8/8)*");
        assert_eq!(fmt_running_suffix(None, 8, star), "*");
        assert_eq!(fmt_running_suffix(None, 8, none), "");
        assert_eq!(fmt_running_suffix(Some(f64::NAN), 8, none), "");
        assert_eq!(fmt_running_suffix(Some(f64::NAN), 8, star), "*");
    }

    #[test]
    fn each_limit_has_its_mark_and_a_warmup_timeout_its_own() {
        use crate::report::status::CapacityLimit as L;
        let m = |limit: Option<L>, warm: bool| LimitMark {
            capacity_limited: limit.is_some() || warm,
            limit,
            warmup_timed_out: warm,
        };
        assert_eq!(m(Some(L::Kv), false).text(), "*kv");
        assert_eq!(m(Some(L::MaxNumSeqs), false).text(), "*seq");
        assert_eq!(m(Some(L::Unknown), false).text(), "*?");
        assert_eq!(m(Some(L::Unknown), true).text(), "!", "a warmup timeout without evidence is no server limit");
        assert_eq!(m(Some(L::Kv), true).text(), "*kv!");
        assert_eq!(fmt_running_suffix(Some(3.1), 4, m(Some(L::Unknown), true)), " (3/4)!");
        let used = [m(Some(L::Kv), false), m(Some(L::Unknown), true)];
        let legend = LimitMark::legend(&used);
        assert_eq!(legend.len(), 2, "{legend:?}");
        assert!(legend[0].starts_with("*kv = ") && legend[1].starts_with("! = warmup timed out"), "{legend:?}");
        assert!(LimitMark::legend(&[LimitMark::default()]).is_empty());
    }

    #[test]
    fn running_rounding() {
        assert_eq!(running_rounded(6.5), 7);
        assert_eq!(running_rounded(6.49), 6);
        assert_eq!(running_rounded(-1.0), 0);
        assert_eq!(running_rounded(f64::INFINITY), 0);
        assert_eq!(
            (running_text(0.376), running_text(0.96), running_text(0.0), running_text(7.6)),
            ("0.4".into(), "1".into(), "0".into(), "8".into())
        );
        assert!(!shows_running(None, 8, LimitMark { capacity_limited: true, ..LimitMark::default() }));
        assert!(shows_running(Some(5.0), 8, LimitMark::default()));
    }

    #[test]
    fn errors() {
        assert_eq!(fmt_errored(1), "0.0 (1e)");
        assert_eq!(fmt_errored(8), "0.0 (8e)");
        assert_eq!(fmt_error_suffix(0), "");
        assert_eq!(fmt_error_suffix(2), " (2e)");
        assert_eq!(format!("{}{}", fmt_tps(143.1), fmt_error_suffix(2)), "143.1 (2e)");
    }

    #[test]
    fn latencies_in_prose_carry_their_unit() {
        let f = |v: f64| fmt_ms_unit(Some(v));
        assert_eq!([f(3.2), f(812.0), f(999.4)], ["3 ms", "812 ms", "999 ms"]);
        assert_eq!([f(999.6), f(2_940.0), f(12_340.0), f(1_234_000.0)], ["1.00 s", "2.94 s", "12.3 s", "1234 s"]);
        assert_eq!(fmt_ms_unit(None), MISSING);
        assert_eq!(fmt_ms_unit(Some(f64::NAN)), MISSING);
    }

    #[test]
    fn ttft_itl() {
        assert_eq!(fmt_ttft_itl(Some(76.2), Some(7.4)), "76/7");
        assert_eq!(fmt_ttft_itl(Some(119.0), Some(8.0)), "119/8");
        assert_eq!(fmt_ttft_itl(Some(7_012.0), Some(11.0)), "7k/11");
        assert_eq!(fmt_ttft_itl(Some(10_400.0), Some(15.0)), "10k/15");
        assert_eq!(fmt_ttft_itl(Some(27_300.0), Some(13.0)), "27k/13");
        assert_eq!(fmt_ttft_itl(Some(999.7), None), "1k/—");
        assert_eq!(fmt_ttft_itl(None, None), "—/—");
        assert_eq!(fmt_ms_compact(Some(f64::NAN)), "—");
        assert_eq!(fmt_ms_compact(Some(0.4)), "0.4", "a sub-millisecond TPOT is not 0");
        assert_eq!((fmt_ms_compact(Some(0.04)), fmt_ms_compact(Some(0.97))), ("0.0".into(), "1".into()));
    }

    #[test]
    fn latency() {
        assert_eq!(fmt_latency_pair(Some(56_500.0), Some(57_600.0)), "56.5k/57.6k");
        assert_eq!(fmt_latency_pair(Some(106_100.0), Some(110_900.0)), "106.1k/110.9k");
        assert_eq!(fmt_latency_pair(Some(812.3), Some(1_000.0)), "812/1.0k");
        assert_eq!(fmt_latency_pair(None, None), "—/—");
        assert_eq!(fmt_latency_pair(Some(5.0), None), "5/—");
        assert_eq!(fmt_latency_ms(Some(f64::NEG_INFINITY)), "—");
    }

    #[test]
    fn notation_constants() {
        assert_eq!(SKIPPED, "∅");
        assert_eq!(NOT_APPLICABLE, "-");
        assert_eq!(MISSING, "—");
        assert_eq!(NOT_RUN, "·");
    }
}
