//! The load knob's step (`--knob-step`): a percentage of the current load, or an absolute
//! amount (streams closed loop, requests/s open loop).

use super::Rate;
use std::fmt;
use std::str::FromStr;

/// The largest percent step (x11 per press).
const MAX_PERCENT: f64 = 1000.0;
/// The largest absolute step, streams or requests/s.
const MAX_ABSOLUTE: f64 = 1e6;

/// How far one `+` / `-` turns the load.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum KnobStep {
    /// A share of the current load, percent: streams change by it rounded (at least one), a
    /// rate is multiplied (`+`) or divided (`-`) by `1 + p/100`.
    Percent(f64),
    /// An absolute amount: this many streams, or this many requests/s.
    Absolute(f64),
}

impl Default for KnobStep {
    fn default() -> Self {
        Self::Percent(25.0)
    }
}

impl KnobStep {
    /// The concurrency one step up (`up`) or down from `conc`; never below 1. A percent step
    /// down undoes one up (`/ (1 + p)`, rounded, at least one stream): 4 → 5 → 6 → 5 → 4.
    pub fn conc(self, conc: u32, up: bool) -> u32 {
        if let (Self::Percent(p), false) = (self, up) {
            let back = (f64::from(conc) / (1.0 + p / 100.0)).round() as u32;
            return back.min(conc.saturating_sub(1)).max(1);
        }
        let step = match self {
            Self::Percent(p) => (f64::from(conc) * p / 100.0).round().max(1.0) as u32,
            Self::Absolute(n) => (n.round() as u32).max(1),
        };
        if up { conc.saturating_add(step) } else { conc.saturating_sub(step).max(1) }
    }

    /// The rate one step up or down from `rate`; None when it cannot move (`inf`, or an
    /// absolute step that would reach zero).
    pub fn rate(self, rate: Rate, up: bool) -> Option<Rate> {
        let Rate::PerSecond(r) = rate else { return None };
        let next = match self {
            Self::Percent(p) if up => r * (1.0 + p / 100.0),
            Self::Percent(p) => r / (1.0 + p / 100.0),
            Self::Absolute(n) if up => r + n,
            Self::Absolute(n) => r - n,
        };
        (next.is_finite() && next > 0.0).then_some(Rate::PerSecond(next))
    }
}

impl FromStr for KnobStep {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let t = s.trim();
        let bad = || format!("`{s}` is not a knob step (a percentage such as 25%, or a number of streams)");
        let (num, pct) = match t.strip_suffix('%') {
            Some(n) => (n.trim(), true),
            None => (t, false),
        };
        let v: f64 = num.parse().map_err(|_| bad())?;
        let most = if pct { MAX_PERCENT } else { MAX_ABSOLUTE };
        if !(v.is_finite() && v > 0.0 && v <= most) {
            let range = if pct { "1000%" } else { "1000000 (streams or requests/s)" };
            return Err(format!("`{s}`: a knob step must be positive, at most {range}"));
        }
        Ok(if pct { Self::Percent(v) } else { Self::Absolute(v) })
    }
}

impl fmt::Display for KnobStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Percent(p) => write!(f, "{p}%"),
            Self::Absolute(n) => write!(f, "{n}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_parse_and_print_back() {
        assert_eq!("25%".parse::<KnobStep>(), Ok(KnobStep::Percent(25.0)));
        assert_eq!("4".parse::<KnobStep>(), Ok(KnobStep::Absolute(4.0)));
        assert_eq!(KnobStep::default().to_string(), "25%");
        assert!("0".parse::<KnobStep>().unwrap_err().contains("positive"));
        assert!("x%".parse::<KnobStep>().unwrap_err().contains("not a knob step"));
        assert!("1e300%".parse::<KnobStep>().unwrap_err().contains("at most 1000%"));
        assert!("1e300".parse::<KnobStep>().unwrap_err().contains("at most 1000000"));
        assert_eq!("1000%".parse::<KnobStep>(), Ok(KnobStep::Percent(1000.0)));
    }

    #[test]
    fn a_percent_step_is_at_least_one_stream() {
        let s = KnobStep::default();
        assert_eq!((s.conc(8, true), s.conc(8, false)), (10, 6));
        assert_eq!((s.conc(1, true), s.conc(1, false)), (2, 1), "at least one stream, never below one");
        assert_eq!(s.conc(16, true), 20);
        assert_eq!(KnobStep::Absolute(3.0).conc(2, false), 1);
        for start in 1..200 {
            let up = s.conc(start, true);
            assert_eq!(s.conc(up, false), start, "a step down undoes a step up from {start}");
        }
    }

    #[test]
    fn rates_scale_or_move_by_the_step() {
        let s = KnobStep::default();
        assert_eq!(s.rate(Rate::PerSecond(4.0), true), Some(Rate::PerSecond(5.0)));
        assert_eq!(s.rate(Rate::PerSecond(5.0), false), Some(Rate::PerSecond(4.0)));
        assert_eq!(s.rate(Rate::Inf, true), None);
        assert_eq!(KnobStep::Absolute(2.0).rate(Rate::PerSecond(3.0), true), Some(Rate::PerSecond(5.0)));
        assert_eq!(KnobStep::Absolute(4.0).rate(Rate::PerSecond(3.0), false), None);
    }
}
