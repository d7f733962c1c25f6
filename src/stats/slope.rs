//! A least-squares slope with its t statistic: is a series rising over time? Used by the
//! saturation tests (within a cell, over its window) of `stats::saturation`.

use serde::{Deserialize, Serialize};

/// Largest |t| written to a report: a perfect fit has an infinite t, which JSON cannot hold.
pub(crate) const T_CAP: f64 = 1e6;

/// The fitted slope of a series and its significance.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Trend {
    /// Points fitted.
    pub n: usize,
    /// Least-squares slope, units of the series per second.
    pub slope: f64,
    /// Student t of the slope (slope / its standard error), capped at ±[`T_CAP`].
    pub t: f64,
    /// One-sided critical t at the 2.5% level for n - 2 degrees of freedom.
    pub t_crit: f64,
    /// Fitted change over the span of the points (slope x span), units of the series.
    pub change: f64,
    /// Mean of the series.
    pub mean: f64,
}

impl Trend {
    /// True when the slope is significantly above zero (t > t_crit).
    pub fn rising(&self) -> bool {
        self.t > self.t_crit
    }
}

/// One-sided 2.5% critical values of Student's t for 1..=30 degrees of freedom, then coarser.
const T_TABLE: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120,
    2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
];

/// The one-sided 2.5% critical t for `df` degrees of freedom (conservative between table rows).
pub(crate) fn t_critical(df: usize) -> f64 {
    match df {
        0 => f64::INFINITY,
        1..=30 => T_TABLE[df - 1],
        31..=40 => 2.021,
        41..=60 => 2.000,
        61..=120 => 1.980,
        _ => 1.960,
    }
}

/// The least-squares trend of `points` (x seconds, y value); None with fewer than 3 points,
/// non-finite values, or all x equal.
pub(crate) fn trend(points: &[(f64, f64)]) -> Option<Trend> {
    let n = points.len();
    if n < 3 || points.iter().any(|(x, y)| !x.is_finite() || !y.is_finite()) {
        return None;
    }
    let nf = n as f64;
    let mx = points.iter().map(|p| p.0).sum::<f64>() / nf;
    let my = points.iter().map(|p| p.1).sum::<f64>() / nf;
    let sxx: f64 = points.iter().map(|(x, _)| (x - mx).powi(2)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let sxy: f64 = points.iter().map(|(x, y)| (x - mx) * (y - my)).sum();
    let slope = sxy / sxx;
    let sse: f64 = points.iter().map(|(x, y)| (y - my - slope * (x - mx)).powi(2)).sum();
    let se = (sse / (nf - 2.0) / sxx).sqrt();
    // A tolerance for rounding: a fit this close to exact counts as exact.
    let exact = se <= 1e-12 * (slope.abs() + my.abs()).max(1e-12);
    let t = match (exact, slope) {
        (true, s) if s.abs() <= 1e-12 => 0.0,
        (true, s) => T_CAP.copysign(s),
        (false, s) => (s / se).clamp(-T_CAP, T_CAP),
    };
    let (lo, hi) = points.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), p| (l.min(p.0), h.max(p.0)));
    Some(Trend { n, slope, t, t_crit: t_critical(n - 2), change: slope * (hi - lo), mean: my })
}

/// Mean and standard error of the mean of `xs`; None with fewer than 2 finite values.
pub(crate) fn mean_se(xs: &[f64]) -> Option<(f64, f64)> {
    let xs: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
    let n = xs.len();
    if n < 2 {
        return None;
    }
    let mean = xs.iter().sum::<f64>() / n as f64;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    Some((mean, (var / n as f64).sqrt()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clean_line_is_exact_and_a_flat_one_is_not_rising() {
        let line: Vec<_> = (0..10).map(|i| (f64::from(i), 2.0 * f64::from(i) + 1.0)).collect();
        let t = trend(&line).unwrap();
        assert!((t.slope - 2.0).abs() < 1e-9 && t.t == T_CAP && t.rising());
        assert!((t.change - 18.0).abs() < 1e-9);
        let flat: Vec<_> = (0..10).map(|i| (f64::from(i), 5.0)).collect();
        let f = trend(&flat).unwrap();
        assert_eq!((f.slope, f.t), (0.0, 0.0));
        assert!(!f.rising());
        assert!(trend(&line[..2]).is_none(), "two points fit any line");
    }

    #[test]
    fn noise_around_a_level_is_not_a_trend() {
        let wobble = [3.0, 5.0, 4.0, 6.0, 3.0, 5.0, 4.0, 6.0, 3.0, 5.0, 4.0, 3.0];
        let pts: Vec<_> = wobble.iter().enumerate().map(|(i, y)| (i as f64, *y)).collect();
        assert!(!trend(&pts).unwrap().rising());
        let rising: Vec<_> = pts.iter().map(|(x, y)| (*x, y + x)).collect();
        assert!(trend(&rising).unwrap().rising());
    }

    #[test]
    fn mean_and_standard_error() {
        let (m, se) = mean_se(&[1.0, 2.0, 3.0, 4.0]).unwrap();
        assert!((m - 2.5).abs() < 1e-12 && (se - (1.666_666_7f64 / 4.0).sqrt()).abs() < 1e-6);
        assert!(mean_se(&[1.0]).is_none());
        assert!(t_critical(1) > t_critical(10) && t_critical(10) > t_critical(1000));
    }
}
