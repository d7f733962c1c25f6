//! Per-request latency formulas (ITL, TPOT, throughput) and SLO checks.

use std::time::Duration;

const NANOS_PER_SEC: u128 = 1_000_000_000;

/// Mean inter-token latency: `(last_token - first_token) / (output_tokens - 1)`.
///
/// `first_token` and `last_token` are arrival times of the first and last output token,
/// measured from the same origin. Returns `None` with fewer than two tokens (there is no
/// gap to measure) or when `last_token` precedes `first_token`.
pub fn itl(first_token: Duration, last_token: Duration, output_tokens: u64) -> Option<Duration> {
    if output_tokens < 2 {
        return None;
    }
    let span = last_token.checked_sub(first_token)?;
    divide(span, output_tokens - 1)
}

/// Time per output token as vLLM's benchmark defines it:
/// `(e2e - ttft) / (output_tokens - 1)`.
///
/// `e2e` is the whole request latency and `ttft` the time to first token. Returns `None`
/// with fewer than two tokens, or when `e2e` is shorter than `ttft` (inconsistent input).
pub fn tpot(e2e: Duration, ttft: Duration, output_tokens: u64) -> Option<Duration> {
    if output_tokens < 2 {
        return None;
    }
    let decode = e2e.checked_sub(ttft)?;
    divide(decode, output_tokens - 1)
}

/// Throughput in tokens per second of `tokens` produced over the span `over`.
///
/// Returns `None` when `over` is zero.
pub fn tokens_per_second(tokens: u64, over: Duration) -> Option<f64> {
    if over.is_zero() {
        return None;
    }
    Some(tokens as f64 / over.as_secs_f64())
}

/// `span / by` with nanosecond resolution; `None` when `by` is zero.
fn divide(span: Duration, by: u64) -> Option<Duration> {
    if by == 0 {
        return None;
    }
    let nanos = span.as_nanos() / u128::from(by);
    let secs = u64::try_from(nanos / NANOS_PER_SEC).ok()?;
    // The remainder is below 1e9 and so always fits a u32.
    let sub = u32::try_from(nanos % NANOS_PER_SEC).ok()?;
    Some(Duration::new(secs, sub))
}

pub use crate::load::slo::Slo;

/// The largest `--goodput` bound, milliseconds (a day).
pub(crate) const MAX_BOUND_MS: f64 = 86_400_000.0;

// What a bound means lives with the type (`load::slo`, where the workers judge running
// streams); how the session reads and prints it, here.
impl Slo {
    /// Parses `vllm bench serve --goodput` pairs, `KEY:MS` with KEY one of `ttft`, `tpot`,
    /// `e2el` and MS milliseconds (`ttft:2000 tpot:50`); bounds not named are unset.
    pub fn from_goodput(pairs: &[String]) -> Result<Slo, String> {
        let mut slo = Slo { ttft: None, tpot: None, e2e: None };
        for pair in pairs.iter().flat_map(|p| p.split_whitespace()) {
            let (key, ms) = pair.split_once(':').ok_or_else(|| format!("`{pair}` is not KEY:MS (e.g. ttft:2000)"))?;
            let ms: f64 = ms.trim().parse().map_err(|_| format!("`{pair}`: `{ms}` is not milliseconds"))?;
            if !(ms.is_finite() && ms > 0.0 && ms <= MAX_BOUND_MS) {
                return Err(format!(
                    "`{pair}`: the bound must be a positive number of milliseconds, at most 86400000 (a day)"
                ));
            }
            let bound = Some(Duration::from_secs_f64(ms / 1000.0));
            match key.trim().to_ascii_lowercase().as_str() {
                "ttft" => slo.ttft = bound,
                "tpot" => slo.tpot = bound,
                "e2el" => slo.e2e = bound,
                other => return Err(format!("`{other}` is not a goodput key (ttft, tpot, e2el)")),
            }
        }
        Ok(slo)
    }
}

impl Slo {
    /// The bounds as `(name, vLLM key, bound)`, in the order TTFT, TPOT, E2EL.
    fn bounds(&self) -> [(&'static str, &'static str, Option<Duration>); 3] {
        [("TTFT", "ttft", self.ttft), ("TPOT", "tpot", self.tpot), ("E2EL", "e2el", self.e2e)]
    }

    /// The bounds set, for people: `TTFT ≤ 2000 ms, TPOT ≤ 50 ms` (`none` when unbounded).
    pub fn describe(&self) -> String {
        let parts: Vec<String> =
            self.bounds().iter().filter_map(|(name, _, b)| b.map(|b| format!("{name} ≤ {} ms", fmt_ms(b)))).collect();
        if parts.is_empty() { "none".into() } else { parts.join(", ") }
    }

    /// The bounds set as `--goodput` takes them back: `ttft:2000 tpot:50` (empty when unbounded).
    pub fn goodput_arg(&self) -> String {
        let parts: Vec<String> =
            self.bounds().iter().filter_map(|(_, key, b)| b.map(|b| format!("{key}:{}", fmt_ms(b)))).collect();
        parts.join(" ")
    }
}

/// Milliseconds without a trailing `.0` (`2000`, `1500.5`).
fn fmt_ms(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1e3;
    let rounded = (ms * 1e3).round() / 1e3;
    format!("{rounded}")
}

#[cfg(test)]
mod unit {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn goodput_pairs_parse_as_vllm_writes_them() {
        let slo = Slo::from_goodput(&["ttft:2000".into(), "tpot:50".into()]).unwrap();
        assert_eq!((slo.ttft, slo.tpot, slo.e2e), (Some(ms(2000)), Some(ms(50)), None));
        let slo = Slo::from_goodput(&["e2el:1500.5".into()]).unwrap();
        assert_eq!((slo.ttft, slo.e2e), (None, Some(Duration::from_secs_f64(1.5005))));
        for bad in ["ttft", "ttft:fast", "itl:5", "tpot:-1", "tpot:0"] {
            assert!(Slo::from_goodput(&[bad.into()]).is_err(), "{bad}");
        }
    }

    #[test]
    fn an_slo_reads_back_as_it_was_given() {
        let slo = Slo::from_goodput(&["ttft:2000 tpot:50".into(), "e2el:1500.5".into()]).unwrap();
        assert_eq!(slo.describe(), "TTFT ≤ 2000 ms, TPOT ≤ 50 ms, E2EL ≤ 1500.5 ms");
        assert_eq!(slo.goodput_arg(), "ttft:2000 tpot:50 e2el:1500.5");
        assert_eq!(Slo::from_goodput(&[slo.goodput_arg()]).unwrap(), slo);
        assert_eq!(Slo::default().describe(), "none");
        assert_eq!(Slo { tpot: Some(Duration::from_micros(12_345)), ..Slo::default() }.describe(), "TPOT ≤ 12.345 ms");
    }

    #[test]
    fn itl_formula_and_none_cases() {
        assert_eq!(itl(ms(100), ms(1100), 11), Some(ms(100)));
        assert_eq!(itl(ms(100), ms(100), 2), Some(Duration::ZERO));
        assert_eq!(itl(ms(100), ms(400), 4), Some(ms(100)));
        assert_eq!(itl(ms(0), ms(1000), 4), Some(Duration::from_nanos(333_333_333)));
        assert_eq!(itl(ms(100), ms(1100), 1), None);
        assert_eq!(itl(ms(100), ms(1100), 0), None);
        assert_eq!(itl(ms(200), ms(100), 5), None);
    }

    #[test]
    fn tpot_formula_and_none_cases() {
        // e2e 2.5 s, ttft 0.5 s, 101 tokens: 2 s over 100 gaps = 20 ms.
        assert_eq!(tpot(ms(2500), ms(500), 101), Some(ms(20)));
        assert_eq!(tpot(ms(2500), ms(500), 2), Some(ms(2000)));
        assert_eq!(tpot(ms(2500), ms(500), 1), None);
        assert_eq!(tpot(ms(2500), ms(500), 0), None);
        assert_eq!(tpot(ms(400), ms(500), 10), None);
    }

    #[test]
    fn extreme_durations_do_not_panic() {
        assert_eq!(itl(Duration::ZERO, Duration::MAX, 2), Some(Duration::MAX));
        assert!(tpot(Duration::MAX, Duration::ZERO, u64::MAX).is_some());
    }

    #[test]
    fn throughput() {
        assert_eq!(tokens_per_second(100, ms(500)), Some(200.0));
        assert_eq!(tokens_per_second(0, ms(500)), Some(0.0));
        assert_eq!(tokens_per_second(100, Duration::ZERO), None);
    }

    #[test]
    fn slo_cases() {
        let none = Slo::default();
        assert!(none.is_unbounded());
        assert!(none.is_met(None, None, None));
        assert!(none.is_met(Some(ms(9_999)), None, Some(ms(1))));

        let slo = Slo { ttft: Some(ms(200)), tpot: Some(ms(50)), e2e: None };
        assert!(!slo.is_unbounded());
        assert!(slo.is_met(Some(ms(200)), Some(ms(50)), None), "bounds are inclusive");
        assert!(slo.is_met(Some(ms(10)), Some(ms(10)), Some(ms(99_999))));
        assert!(!slo.is_met(Some(ms(201)), Some(ms(10)), None));
        assert!(!slo.is_met(Some(ms(10)), Some(ms(51)), None));
        assert!(!slo.is_met(Some(ms(10)), None, None), "missing tpot fails its bound");
        assert!(!slo.is_met(None, Some(ms(10)), None), "missing ttft fails its bound");

        let e2e_only = Slo { e2e: Some(ms(1000)), ..Slo::default() };
        assert!(e2e_only.is_met(None, None, Some(ms(1000))));
        assert!(!e2e_only.is_met(Some(ms(1)), Some(ms(1)), None));
        assert!(!e2e_only.is_met(None, None, Some(ms(1001))));
    }
}
