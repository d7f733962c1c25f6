//! `--percentiles 50,90,99,99.9`: which percentiles a report shows, as `vllm bench serve`'s
//! `--metric-percentiles` takes them, and how a percentile is named in a key (`p99.9`, `p50`).

use std::fmt;

/// An ordered list of percentiles, each in `[0, 100]`, none listed twice.
#[derive(Debug, Clone, PartialEq)]
pub struct PercentileList(Vec<f64>);

/// Why a `--percentiles` value was refused; `Display` is one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PercentileListError {
    /// Nothing between the commas.
    #[error("empty percentile list (write e.g. 50,90,99)")]
    Empty,
    /// An entry that is not a number.
    #[error("`{0}` is not a percentile (write e.g. 50,90,99.9)")]
    NotANumber(String),
    /// A number outside `[0, 100]`.
    #[error("percentile {0} is outside 0..100")]
    OutOfRange(String),
    /// The same percentile twice.
    #[error("percentile {0} is listed twice")]
    Repeated(String),
}

/// Parses a comma-separated list such as `50,90,99,99.9` (spaces around entries allowed).
/// Usable as a clap `value_parser` by every subcommand that takes `--percentiles`.
pub fn percentile_list(s: &str) -> Result<PercentileList, PercentileListError> {
    let mut out: Vec<f64> = Vec::new();
    for entry in s.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let q: f64 = entry.parse().map_err(|_| PercentileListError::NotANumber(entry.to_string()))?;
        if !q.is_finite() {
            return Err(PercentileListError::NotANumber(entry.to_string()));
        }
        if !(0.0..=100.0).contains(&q) {
            return Err(PercentileListError::OutOfRange(entry.to_string()));
        }
        if out.contains(&q) {
            return Err(PercentileListError::Repeated(entry.to_string()));
        }
        out.push(q);
    }
    if out.is_empty() {
        return Err(PercentileListError::Empty);
    }
    Ok(PercentileList(out))
}

impl PercentileList {
    /// `vllm bench serve`'s default `--metric-percentiles`: the 99th.
    pub fn vllm_default() -> Self {
        Self(vec![99.0])
    }

    /// A list of known-good values (each in `[0, 100]`, no repeats); `None` otherwise.
    pub fn new(values: &[f64]) -> Option<Self> {
        let text: Vec<String> = values.iter().map(f64::to_string).collect();
        percentile_list(&text.join(",")).ok()
    }

    /// The percentiles, in the order given.
    pub fn values(&self) -> &[f64] {
        &self.0
    }
}

impl fmt::Display for PercentileList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let words: Vec<String> = self.0.iter().map(|&q| percentile_word(q)).collect();
        f.write_str(&words.join(","))
    }
}

/// The number as a key spells it: `99` for a whole percentile, `99.9` otherwise (the spelling
/// `vllm bench serve` uses in `p99.9_ttft_ms`).
pub(crate) fn percentile_word(q: f64) -> String {
    if q.fract() == 0.0 { format!("{}", q as u64) } else { format!("{q}") }
}

/// The key prefix of a percentile: `p50`, `p99.9`.
pub(crate) fn percentile_key(q: f64) -> String {
    format!("p{}", percentile_word(q))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_lists_vllm_takes() {
        let l = percentile_list("50,90,99,99.9").unwrap();
        assert_eq!(l.values(), &[50.0, 90.0, 99.0, 99.9]);
        assert_eq!(l.to_string(), "50,90,99,99.9");
        assert_eq!(percentile_list(" 99 , 25.5 ").unwrap().values(), &[99.0, 25.5]);
        assert_eq!(percentile_list("0,100").unwrap().values(), &[0.0, 100.0]);
        assert_eq!(PercentileList::new(&[50.0, 99.0]), percentile_list("50,99").ok());
        assert_eq!(PercentileList::new(&[101.0]), None);
    }

    #[test]
    fn keys_are_spelled_as_vllm_spells_them() {
        assert_eq!(percentile_key(99.9), "p99.9");
        assert_eq!(percentile_key(50.0), "p50");
        assert_eq!(percentile_key(99.99), "p99.99");
        assert_eq!(percentile_key(0.5), "p0.5");
        assert_eq!(percentile_key(100.0), "p100");
    }

    #[test]
    fn each_bad_list_is_named_in_one_line() {
        use PercentileListError as E;
        assert_eq!(percentile_list(""), Err(E::Empty));
        assert_eq!(percentile_list(" , "), Err(E::Empty));
        assert_eq!(percentile_list("50,x"), Err(E::NotANumber("x".into())));
        assert_eq!(percentile_list("nan"), Err(E::NotANumber("nan".into())));
        assert_eq!(percentile_list("inf"), Err(E::NotANumber("inf".into())));
        assert_eq!(percentile_list("101"), Err(E::OutOfRange("101".into())));
        assert_eq!(percentile_list("-1"), Err(E::OutOfRange("-1".into())));
        assert_eq!(percentile_list("99,99.0"), Err(E::Repeated("99.0".into())));
        for e in [E::Empty, E::NotANumber("x".into()), E::OutOfRange("1".into()), E::Repeated("9".into())] {
            assert!(!e.to_string().contains('\n'));
        }
    }
}
