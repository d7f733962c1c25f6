//! Statistics of a figure over repeated runs of one cell (`run --num-runs N`): the mean, the
//! sample standard deviation, the coefficient of variation and a Student-t confidence interval
//! of the mean; and whether two such figures differ beyond their noise (the interval of the
//! difference of their means, Welch's). Pure.

use super::student_t::two_sided;
use serde::{Deserialize, Serialize};

/// The confidence level of the intervals unless said otherwise.
pub const DEFAULT_LEVEL: f64 = 0.95;

/// One figure over the runs of a cell.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RunStats {
    /// Runs that had a value.
    pub n: u32,
    /// Arithmetic mean of the runs' values.
    pub mean: f64,
    /// Sample standard deviation (n − 1 in the denominator); null for a single run.
    pub sd: Option<f64>,
    /// Coefficient of variation, sd / |mean|; null for a single run or a mean of 0.
    pub cv: Option<f64>,
    /// Lower end of the confidence interval of the mean (Student t, n − 1 degrees of
    /// freedom); null for a single run.
    pub ci_low: Option<f64>,
    /// Upper end of that interval.
    pub ci_high: Option<f64>,
    /// Confidence level of the interval (0.95).
    pub level: f64,
}

impl RunStats {
    /// The figure over `values` (one per run) at confidence `level`; None without a value, or
    /// when one is not finite.
    pub fn of(values: &[f64], level: f64) -> Option<Self> {
        if values.is_empty() || values.iter().any(|v| !v.is_finite()) {
            return None;
        }
        let n = values.len() as f64;
        // Summed as offsets from the first run, so identical runs give exactly their value
        // (and an sd of exactly 0) and large values lose no precision to their common part.
        let first = values[0];
        let mean = first + values.iter().map(|v| v - first).sum::<f64>() / n;
        let sd =
            (values.len() > 1).then(|| (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt());
        let cv = sd.filter(|_| mean != 0.0).map(|sd| sd / mean.abs());
        let half = sd.and_then(|sd| Some(two_sided(level, n - 1.0)? * sd / n.sqrt()));
        Some(Self {
            n: values.len() as u32,
            mean,
            sd,
            cv,
            ci_low: half.map(|h| mean - h),
            ci_high: half.map(|h| mean + h),
            level,
        })
    }

    /// Half the width of the interval (the `±` of `mean ± half`); None for a single run.
    pub fn half_width(&self) -> Option<f64> {
        Some((self.ci_high? - self.ci_low?) / 2.0)
    }

    /// The half-width relative to |mean|; None for a single run or a mean of 0.
    pub fn relative_half_width(&self) -> Option<f64> {
        self.half_width().filter(|_| self.mean != 0.0).map(|h| h / self.mean.abs())
    }
}

/// The interval of the difference of two figures' means.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DiffInterval {
    /// Half its width, in the figures' unit.
    pub half: f64,
    /// Degrees of freedom of its t quantile (Welch–Satterthwaite, or n − 1 of the repeated
    /// side when the other had one run).
    pub df: f64,
    /// Its confidence level.
    pub level: f64,
    /// True when one side had a single run and was given the other side's spread.
    pub borrowed: bool,
}

impl DiffInterval {
    /// True when `difference` (b − a) lies inside the interval: a change within the noise.
    pub fn contains(&self, difference: f64) -> bool {
        difference.abs() <= self.half
    }
}

/// The `level` interval of `b.mean − a.mean`: Welch's when both sides have two runs or more;
/// when one side has a single run, its spread is unknown and taken to be the other side's
/// (the same cell measured the same way), with that side's n − 1 degrees of freedom; None when
/// neither side was repeated.
pub fn difference(a: &RunStats, b: &RunStats, level: f64) -> Option<DiffInterval> {
    let (na, nb) = (f64::from(a.n), f64::from(b.n));
    let (interval, df, borrowed) = match (a.sd, b.sd) {
        (Some(sa), Some(sb)) => {
            let (va, vb) = (sa * sa / na, sb * sb / nb);
            let se2 = va + vb;
            let denom = va * va / (na - 1.0) + vb * vb / (nb - 1.0);
            // Two spreads of 0: no noise at all; the df only has to be valid.
            let df = if denom > 0.0 { se2 * se2 / denom } else { na + nb - 2.0 };
            (se2.sqrt(), df, false)
        }
        (Some(s), None) => (s * (1.0 / na + 1.0 / nb).sqrt(), na - 1.0, true),
        (None, Some(s)) => (s * (1.0 / na + 1.0 / nb).sqrt(), nb - 1.0, true),
        (None, None) => return None,
    };
    let t = two_sided(level, df)?;
    Some(DiffInterval { half: t * interval, df, level, borrowed })
}

#[cfg(test)]
#[path = "repeats_tests.rs"]
mod tests;
