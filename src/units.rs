//! Parsers for human-friendly CLI values: token sizes (`16k`), durations (`30s`), lists.

use std::time::Duration;

/// Parses a token count such as `0`, `512`, `16k` (16384) or `1m` (1048576). `k` and `m` are
/// binary multiples, as context lengths are usually quoted (`128k` = 131072).
pub(crate) fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim().to_ascii_lowercase();
    let (digits, mult) = match t.strip_suffix('k') {
        Some(d) => (d, 1024),
        None => match t.strip_suffix('m') {
            Some(d) => (d, 1024 * 1024),
            None => (t.as_str(), 1),
        },
    };
    let n: f64 = digits.trim().parse().map_err(|_| format!("`{s}` is not a size (examples: 0, 512, 16k, 1m)"))?;
    if !n.is_finite() || n < 0.0 {
        return Err(format!("`{s}` must be a non-negative size"));
    }
    let v = n * f64::from(mult);
    if v.fract() != 0.0 || v > 1e15 {
        return Err(format!("`{s}` is not a whole number of tokens"));
    }
    Ok(v as u64)
}

/// Formats a token count the way it was likely written: `16k` for 16384, `1000` for 1000.
pub(crate) fn format_size(n: u64) -> String {
    if n >= 1024 * 1024 && n.is_multiple_of(1024 * 1024) {
        format!("{}m", n / (1024 * 1024))
    } else if n >= 1024 && n.is_multiple_of(1024) {
        format!("{}k", n / 1024)
    } else {
        n.to_string()
    }
}

/// The longest duration a flag takes (365 days): a deadline computed from any flag stays far
/// from the limits of the clocks.
pub(crate) const LONGEST: Duration = Duration::from_secs(365 * 24 * 3600);

/// Parses a duration such as `30s`, `500ms`, `2m` or `1h 30m`, at most [`LONGEST`].
pub(crate) fn parse_duration(s: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(s.trim())
        .map_err(|e| format!("`{s}` is not a duration ({e}); examples: 30s, 500ms, 2m"))?;
    if d > LONGEST {
        return Err(format!("`{s}` is longer than 365 days, the longest duration taken"));
    }
    Ok(d)
}

/// `secs` seconds as a duration, saturating: NaN and negative values give zero, values past
/// [`LONGEST`] give [`LONGEST`]. For durations computed from figures (a count over a rate, a
/// measured millisecond value, a scaled estimate), where `Duration::from_secs_f64` would panic.
pub(crate) fn secs(secs: f64) -> Duration {
    match secs {
        s if s.is_nan() || s <= 0.0 => Duration::ZERO,
        s if s >= LONGEST.as_secs_f64() => LONGEST,
        s => Duration::from_secs_f64(s),
    }
}

/// `v` when it lies in `lo..=hi`, else an error naming `what` and the range (NaN is outside).
pub(crate) fn in_range(what: &str, v: f64, lo: f64, hi: f64) -> Result<f64, String> {
    match (lo..=hi).contains(&v) {
        true => Ok(v),
        false => Err(format!("{what} must be between {} and {} (got {})", short(lo), short(hi), short(v))),
    }
}

/// A number as people write it: `0.5`, `1000000`, and `1e-300` / `1e300` for the extremes
/// (Rust's plain `{}` prints those with hundreds of digits).
pub(crate) fn short(v: f64) -> String {
    match v.abs() {
        a if a != 0.0 && a.is_finite() && !(1e-4..1e9).contains(&a) => format!("{v:e}"),
        _ => format!("{v}"),
    }
}

/// Parses a comma-separated list with `item`, rejecting empty lists.
#[cfg(test)]
pub(crate) fn parse_list<T>(s: &str, item: impl Fn(&str) -> Result<T, String>) -> Result<Vec<T>, String> {
    let out: Vec<T> = s.split(',').map(str::trim).filter(|p| !p.is_empty()).map(item).collect::<Result<_, _>>()?;
    if out.is_empty() {
        return Err(format!("`{s}` is an empty list"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("0"), Ok(0));
        assert_eq!(parse_size("16k"), Ok(16_384));
        assert_eq!(parse_size("128K"), Ok(131_072));
        assert_eq!(parse_size("1m"), Ok(1_048_576));
        assert_eq!(parse_size("1.5k"), Ok(1536));
        assert!(parse_size("abc").is_err());
        assert!(parse_size("-1").is_err());
        assert!(parse_size("0.3").is_err());
    }

    #[test]
    fn durations_and_lists() {
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert!(parse_duration("soon").is_err());
        assert_eq!(parse_duration("365days"), Ok(LONGEST));
        assert!(parse_duration("366days").unwrap_err().contains("longer than 365 days"));
        assert!(parse_duration("99999999999999999999s").is_err());
        assert_eq!(
            (secs(f64::NAN), secs(-1.0), secs(1e300), secs(1.5)),
            (Duration::ZERO, Duration::ZERO, LONGEST, Duration::from_millis(1500))
        );
        assert_eq!(in_range("--rps", 2.0, 0.001, 1e6), Ok(2.0));
        assert_eq!(
            in_range("--rps", f64::NAN, 0.001, 1e6),
            Err("--rps must be between 0.001 and 1000000 (got NaN)".into())
        );
        assert_eq!(
            (short(1e-300), short(1e300), short(0.5), short(f64::INFINITY)),
            ("1e-300".into(), "1e300".into(), "0.5".into(), "inf".into())
        );
        assert_eq!(parse_list("1, 2,4", |s| s.parse::<u32>().map_err(|e| e.to_string())), Ok(vec![1, 2, 4]));
        assert!(parse_list(" , ", |s| Ok::<_, String>(s.to_string())).is_err());
    }

    proptest! {
        #[test]
        fn format_then_parse_roundtrips(n in 0u64..10_000_000) {
            prop_assert_eq!(parse_size(&format_size(n)), Ok(n));
        }

        #[test]
        fn parse_size_never_panics(s in ".{0,12}") {
            let _ = parse_size(&s);
        }

        #[test]
        fn secs_saturates_instead_of_panicking(v in proptest::num::f64::ANY) {
            let d = secs(v);
            prop_assert!(d <= LONGEST);
            if v.is_finite() && v > 0.0 && v < LONGEST.as_secs_f64() {
                prop_assert!((d.as_secs_f64() - v).abs() <= v * 1e-9 + 1e-9);
            }
        }
    }
}
