//! A request rate as `--request-rate` takes it: requests per second, or `inf` (all at once).

use std::fmt;
use std::str::FromStr;

/// The lowest finite rate taken, requests/s (one request every 1000 s).
pub const MIN_RATE: f64 = 0.001;
/// The highest finite rate taken, requests/s (`inf` sends at once).
pub const MAX_RATE: f64 = 1e6;

/// Mean arrival rate of an open-loop cell.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Rate {
    /// A finite mean rate, requests/s, from [`MIN_RATE`] to [`MAX_RATE`].
    PerSecond(f64),
    /// Every request at once (bounded only by the cell's concurrency).
    Inf,
}

impl Rate {
    /// Requests/s; `f64::INFINITY` for [`Rate::Inf`].
    pub fn per_second(self) -> f64 {
        match self {
            Self::PerSecond(r) => r,
            Self::Inf => f64::INFINITY,
        }
    }

    /// True for a finite rate.
    pub fn is_finite(self) -> bool {
        matches!(self, Self::PerSecond(_))
    }

    /// This rate scaled by `factor` (> 0); `inf` stays `inf`.
    pub fn scaled(self, factor: f64) -> Self {
        match self {
            Self::PerSecond(r) => Self::PerSecond(r * factor),
            Self::Inf => Self::Inf,
        }
    }
}

impl FromStr for Rate {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let t = s.trim().to_ascii_lowercase();
        if t == "inf" || t == "infinity" {
            return Ok(Self::Inf);
        }
        match t.trim_end_matches("/s").parse::<f64>() {
            Ok(r) if r.is_infinite() && r > 0.0 => Ok(Self::Inf),
            Ok(r) if (MIN_RATE..=MAX_RATE).contains(&r) => Ok(Self::PerSecond(r)),
            Ok(_) => Err(format!("`{s}`: a request rate must be positive, from 0.001 to 1000000 requests/s (or inf)")),
            Err(_) => Err(format!("`{s}` is not a request rate (requests/s, e.g. 4 or 0.5, or inf)")),
        }
    }
}

impl fmt::Display for Rate {
    /// `inf`, or the rate as given (`4`, `0.5`): it parses back to the same value.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::PerSecond(r) => write!(f, "{r}"),
            Self::Inf => f.write_str("inf"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn rates_parse_and_bad_ones_are_named() {
        assert_eq!("inf".parse::<Rate>(), Ok(Rate::Inf));
        assert_eq!(" 4 ".parse::<Rate>(), Ok(Rate::PerSecond(4.0)));
        assert_eq!("2.5/s".parse::<Rate>(), Ok(Rate::PerSecond(2.5)));
        assert!("0".parse::<Rate>().unwrap_err().contains("positive"));
        assert!("-1".parse::<Rate>().unwrap_err().contains("positive"));
        assert!("nan".parse::<Rate>().is_err());
        for extreme in ["1e-300", "0.0009", "1e300", "1000001"] {
            let e = extreme.parse::<Rate>().unwrap_err();
            assert!(e.contains("from 0.001 to 1000000 requests/s"), "{e}");
        }
        assert_eq!("1e6".parse::<Rate>(), Ok(Rate::PerSecond(1e6)));
        assert!("fast".parse::<Rate>().unwrap_err().contains("`fast` is not a request rate"));
        assert_eq!(Rate::Inf.per_second(), f64::INFINITY);
        assert_eq!(Rate::PerSecond(2.0).scaled(1.5), Rate::PerSecond(3.0));
    }

    proptest! {
        #[test]
        fn a_rate_prints_back_to_itself(r in 0.001f64..1e6) {
            let rate = Rate::PerSecond(r);
            prop_assert_eq!(rate.to_string().parse::<Rate>(), Ok(rate));
        }
    }
}
