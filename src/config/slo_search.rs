//! Settings of the SLO search (`run --plan serve --slo-search concurrency|rate`, issue 25): which
//! load it varies, the attainment a load must reach, where it starts and stops, how close it
//! closes the bracket and how often it repeats a probe it cannot tell.

use std::fmt;
use std::str::FromStr;

/// The load the search varies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SearchMode {
    /// Requests in flight: each probe sends its prompts at once, at most this many at a time.
    Concurrency,
    /// Mean arrival rate, requests/s (the serve schedule's gamma arrivals, `--burstiness`).
    Rate,
}

impl SearchMode {
    /// Its name, as the flag and the report write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Concurrency => "concurrency",
            Self::Rate => "rate",
        }
    }

    /// The unit of its loads, as the report's tables write it.
    pub fn unit(self) -> &'static str {
        match self {
            Self::Concurrency => "streams",
            Self::Rate => "req/s",
        }
    }
}

/// How close the bracket [last pass, first fail] must close before the search stops.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Resolution {
    /// The first fail at most this share above the last pass (`5%`: 0.05).
    Relative(f64),
    /// The first fail at most this much above the last pass (streams or requests/s).
    Absolute(f64),
}

impl FromStr for Resolution {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let t = s.trim();
        let (num, pct) = match t.strip_suffix('%') {
            Some(n) => (n.trim(), true),
            None => (t, false),
        };
        let bad = || format!("`{s}` is not a resolution (a percentage such as 5%, or a load such as 1)");
        let v: f64 = num.parse().map_err(|_| bad())?;
        match (pct, v) {
            (true, v) if v.is_finite() && v > 0.0 && v <= 100.0 => Ok(Self::Relative(v / 100.0)),
            (false, v) if v.is_finite() && v > 0.0 && v <= 1e6 => Ok(Self::Absolute(v)),
            (true, _) => Err(format!("`{s}`: a relative resolution is above 0% and at most 100%")),
            (false, _) => Err(format!("`{s}`: a resolution is above 0 and at most 1000000")),
        }
    }
}

impl fmt::Display for Resolution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Relative(r) => write!(f, "{}%", percent(*r)),
            Self::Absolute(a) => write!(f, "{a}"),
        }
    }
}

/// A share as a percentage, rounded to a millionth of a percent so that it reads back as
/// written (0.07 is 7, not 7.000000000000001): `--resume` compares the settings as text.
fn percent(share: f64) -> f64 {
    (share * 1e8).round() / 1e6
}

/// What the search runs under, checked (`cli::slo_search_flags`).
#[derive(Debug, Clone, PartialEq)]
pub struct SloSearchConfig {
    /// The load it varies (`--slo-search`).
    pub mode: SearchMode,
    /// Share of a load's requests that must meet every bound of the SLO, 0..=1
    /// (`--slo-attainment`, percent).
    pub target: f64,
    /// The first load probed (`--slo-start-load`).
    pub start: f64,
    /// The highest load probed (`--slo-max-load`).
    pub max: f64,
    /// How close the bracket closes (`--slo-resolution`).
    pub resolution: Resolution,
    /// Most probes at one load while its attainment's interval holds the target (`--slo-repeats`).
    pub repeats: u32,
}

impl SloSearchConfig {
    /// The default attainment, percent: the share of requests the SLO holds for.
    pub const ATTAINMENT: f64 = 99.0;
    /// The default first load (1 stream, 1 request/s).
    pub const START: f64 = 1.0;
    /// The default highest rate, requests/s (concurrency's is `--num-prompts`: a probe of n
    /// requests never has more than n in flight).
    pub const MAX_RATE: f64 = 256.0;
    /// The default resolution of a rate search (a concurrency search's is 1 stream).
    pub const RATE_RESOLUTION: Resolution = Resolution::Relative(0.05);
    /// The default most probes at one load.
    pub const REPEATS: u32 = 3;

    /// Its settings by flag name, for `plan.settings` (`--resume` restores and checks them).
    pub fn settings(&self, put: &mut impl FnMut(&str, String)) {
        put("slo-search", self.mode.as_str().into());
        put("slo-attainment", percent(self.target).to_string());
        put("slo-start-load", self.start.to_string());
        put("slo-max-load", self.max.to_string());
        put("slo-resolution", self.resolution.to_string());
        put("slo-repeats", self.repeats.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolutions_parse_and_print_back() {
        assert_eq!("5%".parse(), Ok(Resolution::Relative(0.05)));
        assert_eq!("2".parse(), Ok(Resolution::Absolute(2.0)));
        assert_eq!(Resolution::Relative(0.05).to_string(), "5%");
        assert_eq!(Resolution::Absolute(0.5).to_string(), "0.5");
        for bad in ["0", "0%", "-1", "101%", "nan", "inf", "x%", ""] {
            assert!(bad.parse::<Resolution>().is_err(), "{bad}");
        }
        assert!("x".parse::<Resolution>().unwrap_err().contains("not a resolution"));
        // Percentages read back as written, whatever the binary fractions do.
        for p in ["7%", "0.1%", "33.3%", "12.5%"] {
            assert_eq!(p.parse::<Resolution>().unwrap().to_string(), p);
        }
        assert_eq!(percent(0.07), 7.0);
        assert_ne!(0.07 * 100.0, 7.0, "the rounding is needed");
    }
}
