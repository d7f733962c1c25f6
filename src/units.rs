//! Parsers for human-friendly CLI values: token sizes (`16k`), durations (`30s`), lists.

use std::time::Duration;

/// Parses a token count such as `0`, `512`, `16k` (16384) or `1m` (1048576). `k` and `m` are
/// binary multiples, as context lengths are usually quoted (`128k` = 131072).
pub fn parse_size(s: &str) -> Result<u64, String> {
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
pub fn format_size(n: u64) -> String {
    if n >= 1024 * 1024 && n.is_multiple_of(1024 * 1024) {
        format!("{}m", n / (1024 * 1024))
    } else if n >= 1024 && n.is_multiple_of(1024) {
        format!("{}k", n / 1024)
    } else {
        n.to_string()
    }
}

/// Parses a duration such as `30s`, `500ms`, `2m` or `1h 30m`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    humantime::parse_duration(s.trim()).map_err(|e| format!("`{s}` is not a duration ({e}); examples: 30s, 500ms, 2m"))
}

/// Parses a comma-separated list with `item`, rejecting empty lists.
pub fn parse_list<T>(s: &str, item: impl Fn(&str) -> Result<T, String>) -> Result<Vec<T>, String> {
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
    }
}
