//! The CI ratio smoke's decision (tests/cli/bench_smoke.rs): the tool's CPU per token and bytes
//! per stream as ratios to the raw client measured in the same run, the median over interleaved
//! repeats, against a committed baseline of the same ratios (same build profile) times a slack.
//! Ratios, not times: a busy CI machine slows both clients alike.

use serde::{Deserialize, Serialize};

/// Allowed growth over the baseline before the smoke fails (25%).
pub const SLACK: f64 = 1.25;

/// The command that re-records the baseline (debug build, as CI runs it).
pub const RECORD_COMMAND: &str = "LLM_DECODE_BENCH_RECORD_BASELINE=1 cargo test --test cli bench_smoke";

/// One repeat: the tool's and the raw client's figures from the same run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pair {
    /// Tool CPU per token, us.
    pub tool_us: f64,
    /// Raw client CPU per token, us.
    pub raw_us: f64,
    /// Tool RSS per stream, KiB.
    pub tool_kib: f64,
    /// Raw client RSS per stream, KiB.
    pub raw_kib: f64,
}

/// The two ratios the smoke guards (tool / raw), medians over the repeats.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Ratios {
    /// CPU per token, tool / raw.
    pub cpu_per_token: f64,
    /// Bytes (RSS) per stream, tool / raw.
    pub bytes_per_stream: f64,
}

/// The committed baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Baseline {
    /// The ratios recorded.
    pub ratios: Ratios,
    /// The build profile they were recorded with (`debug`, as `cargo test`).
    pub profile: String,
    /// Every repeat's ratios when recorded, for the record.
    #[serde(default)]
    pub repeats: Vec<Ratios>,
}

/// The median of `v` (mean of the middle two for an even count); NaN when empty.
pub fn median(v: &[f64]) -> f64 {
    let mut v: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 { v[m] } else { (v[m - 1] + v[m]) / 2.0 }
}

/// Each repeat's ratios (NaN where the raw figure is 0).
pub fn ratios_of(pairs: &[Pair]) -> Vec<Ratios> {
    let r = |a: f64, b: f64| if b > 0.0 { a / b } else { f64::NAN };
    pairs
        .iter()
        .map(|p| Ratios { cpu_per_token: r(p.tool_us, p.raw_us), bytes_per_stream: r(p.tool_kib, p.raw_kib) })
        .collect()
}

/// The medians of the repeats' ratios.
pub fn medians(repeats: &[Ratios]) -> Ratios {
    Ratios {
        cpu_per_token: median(&repeats.iter().map(|r| r.cpu_per_token).collect::<Vec<_>>()),
        bytes_per_stream: median(&repeats.iter().map(|r| r.bytes_per_stream).collect::<Vec<_>>()),
    }
}

/// Ok when neither median ratio exceeds the baseline's by more than [`SLACK`]; else one line per
/// regressed ratio naming the ratio, the baseline, the measured value and the command that
/// re-records the baseline. A ratio that could not be measured (NaN) fails too.
pub fn check(measured: Ratios, baseline: &Baseline) -> Result<(), String> {
    let mut fails = Vec::new();
    let guarded = [
        ("CPU per token, tool / raw", measured.cpu_per_token, baseline.ratios.cpu_per_token),
        ("bytes per stream, tool / raw", measured.bytes_per_stream, baseline.ratios.bytes_per_stream),
    ];
    for (name, got, base) in guarded {
        let limit = base * SLACK;
        if got.is_nan() || got > limit {
            fails.push(format!(
                "{name}: measured {got:.3}, baseline {base:.3} ({} build), limit {limit:.3} (+25%); \
                 if the change is intended, re-record with `{RECORD_COMMAND}`",
                baseline.profile
            ));
        }
    }
    if fails.is_empty() { Ok(()) } else { Err(fails.join("\n")) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base(cpu: f64, bytes: f64) -> Baseline {
        Baseline {
            ratios: Ratios { cpu_per_token: cpu, bytes_per_stream: bytes },
            profile: "debug".into(),
            repeats: vec![],
        }
    }

    #[test]
    fn passes_within_25_percent_and_fails_beyond_naming_what_regressed() {
        let b = base(4.0, 30.0);
        assert!(check(Ratios { cpu_per_token: 5.0, bytes_per_stream: 37.5 }, &b).is_ok(), "exactly +25% passes");
        assert!(check(Ratios { cpu_per_token: 1.0, bytes_per_stream: 3.0 }, &b).is_ok(), "improvements pass");
        let e = check(Ratios { cpu_per_token: 5.01, bytes_per_stream: 10.0 }, &b).unwrap_err();
        assert!(
            e.contains("CPU per token") && e.contains("5.010") && e.contains("4.000") && e.contains(RECORD_COMMAND)
        );
        assert!(!e.contains("bytes per stream"), "{e}");
        let e = check(Ratios { cpu_per_token: 4.0, bytes_per_stream: 40.0 }, &b).unwrap_err();
        assert!(e.starts_with("bytes per stream") && e.contains("40.000"), "{e}");
        let e = check(Ratios { cpu_per_token: f64::NAN, bytes_per_stream: 1.0 }, &b).unwrap_err();
        assert!(e.contains("measured NaN"), "an unmeasured ratio fails: {e}");
    }

    #[test]
    fn medians_of_interleaved_repeats() {
        let p = |t: f64, r: f64| Pair { tool_us: t, raw_us: r, tool_kib: t * 10.0, raw_kib: r };
        let rs = ratios_of(&[p(4.0, 1.0), p(9.0, 1.0), p(3.0, 1.0), p(1.0, 0.0)]);
        assert!(rs[3].cpu_per_token.is_nan(), "a raw figure of 0 gives no ratio");
        let m = medians(&rs);
        assert_eq!((m.cpu_per_token, m.bytes_per_stream), (4.0, 40.0), "NaN left out, median of 3");
        assert_eq!(median(&[1.0, 3.0]), 2.0);
        assert!(median(&[]).is_nan());
    }
}
