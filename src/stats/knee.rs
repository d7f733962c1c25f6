//! The knee of a load sweep: along a row of cells ordered by load (concurrency for closed
//! loop, arrival rate for open loop), the first cell where throughput stops rising while TTFT
//! or the engine queue keeps rising. Pure: callers turn their cells into [`LoadPoint`]s (the
//! decode matrix in `experiment::decode::knee`; any experiment with rows of loads can do the
//! same) and keep the [`Knee`] with its evidence.

use serde::{Deserialize, Serialize};

/// One cell of a row, as the knee test sees it.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct LoadPoint {
    /// The cell's load label on the row's axis (`8`, `4/s`, `inf`).
    pub label: String,
    /// Throughput, tok/s.
    pub tps: f64,
    /// Standard error of `tps`, tok/s (None: not known).
    pub tps_se: Option<f64>,
    /// TTFT p50, ms.
    pub ttft_p50_ms: Option<f64>,
    /// TTFT p90, ms.
    pub ttft_p90_ms: Option<f64>,
    /// Mean engine queue (`num_requests_waiting`, summed over replicas), requests.
    pub waiting: Option<f64>,
}

/// Thresholds of the test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct KneeRules {
    /// Throughput is flat when its relative gain over the previous cell is below this ...
    pub flat_gain: f64,
    /// ... and the gain is within this many standard errors of the difference.
    pub z: f64,
    /// TTFT rises when it grows by more than this fraction ...
    pub ttft_rise: f64,
    /// ... and by at least this many ms.
    pub ttft_min_ms: f64,
    /// The queue rises when it grows by at least this many requests ...
    pub queue_min: f64,
    /// ... and by more than this fraction of its previous value.
    pub queue_rise: f64,
}

impl Default for KneeRules {
    fn default() -> Self {
        Self { flat_gain: 0.05, z: 2.0, ttft_rise: 0.25, ttft_min_ms: 1.0, queue_min: 1.0, queue_rise: 0.25 }
    }
}

/// A latency or queue figure that rose into the knee.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rise {
    /// `ttft_p50_ms`, `ttft_p90_ms` or `waiting`.
    pub metric: String,
    /// At the previous cell.
    pub before: f64,
    /// At the knee cell.
    pub after: f64,
}

impl Rise {
    /// `TTFT p50 +240%`, `queue 0.0→12.0`.
    pub fn describe(&self) -> String {
        match self.metric.as_str() {
            "waiting" => format!("queue {:.1}→{:.1}", self.before, self.after),
            m => {
                let name = if m == "ttft_p90_ms" { "TTFT p90" } else { "TTFT p50" };
                format!("{name} {}", signed_pct(relative(self.before, self.after)))
            }
        }
    }
}

/// The knee of a row, with the numbers and the test that found it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Knee {
    /// Load label of the knee cell (`8`, `4/s`).
    pub at: String,
    /// Position of the knee cell among the row's points.
    pub index: usize,
    /// Load label of the cell before it.
    pub previous: String,
    /// Throughput of the previous cell, tok/s.
    pub tps_before: f64,
    /// Throughput of the knee cell, tok/s.
    pub tps_after: f64,
    /// Relative throughput gain, (after - before) / before.
    pub tps_gain: f64,
    /// Noise of the difference (z standard errors), relative to `tps_before`; None: unknown.
    pub tps_noise: Option<f64>,
    /// What kept rising.
    pub rising: Vec<Rise>,
    /// The test used, in words.
    pub test: String,
}

impl Knee {
    /// `tok/s +1.8% (noise ±3%), TTFT p50 +240%`.
    pub fn evidence(&self) -> String {
        let noise = self.tps_noise.map_or("noise n/a".to_string(), |n| format!("noise ±{}", pct(n)));
        let mut parts = vec![format!("tok/s {} ({noise})", signed_pct(self.tps_gain))];
        parts.extend(self.rising.iter().map(Rise::describe));
        parts.join(", ")
    }
}

fn relative(before: f64, after: f64) -> f64 {
    if before.abs() > 0.0 { (after - before) / before.abs() } else { f64::INFINITY }
}

fn pct(x: f64) -> String {
    let p = x * 100.0;
    if p.abs() < 10.0 { format!("{p:.1}%") } else { format!("{p:.0}%") }
}

fn signed_pct(x: f64) -> String {
    if x.is_infinite() {
        return "+∞".into();
    }
    if x >= 0.0 { format!("+{}", pct(x)) } else { format!("-{}", pct(-x)) }
}

/// The test's description, as the report records it.
pub(crate) fn describe_rules(r: &KneeRules) -> String {
    format!(
        "tok/s gain over the previous cell below {}, with its {}x standard-error band below it too \
         (when known), while TTFT p50 or p90 rose by over {} (and {} ms) or the queue by {} request(s) and over {}",
        pct(r.flat_gain),
        r.z,
        pct(r.ttft_rise),
        r.ttft_min_ms,
        r.queue_min,
        pct(r.queue_rise)
    )
}

/// Whether throughput stopped rising from `a` to `b`; the relative noise when known.
fn flat(a: &LoadPoint, b: &LoadPoint, r: &KneeRules) -> (bool, Option<f64>) {
    let gain = relative(a.tps, b.tps);
    let noise = match (a.tps_se, b.tps_se) {
        (Some(x), Some(y)) => Some(r.z * (x * x + y * y).sqrt()),
        _ => None,
    };
    // Flat: a gain confidently under the threshold. A precise +1% is flat (more load bought
    // almost nothing); -3% with a noise band of ±20% is not (the gain may well be large).
    let within = noise.is_none_or(|n| b.tps - a.tps + n < r.flat_gain * a.tps);
    (a.tps > 0.0 && gain < r.flat_gain && within, noise.map(|n| n / a.tps))
}

/// What rose significantly from `a` to `b`.
fn rises(a: &LoadPoint, b: &LoadPoint, r: &KneeRules) -> Vec<Rise> {
    let mut out = Vec::new();
    let ttft = [("ttft_p50_ms", a.ttft_p50_ms, b.ttft_p50_ms), ("ttft_p90_ms", a.ttft_p90_ms, b.ttft_p90_ms)];
    for (metric, x, y) in ttft {
        if let (Some(x), Some(y)) = (x, y)
            && y > x * (1.0 + r.ttft_rise)
            && y - x >= r.ttft_min_ms
        {
            out.push(Rise { metric: metric.into(), before: x, after: y });
        }
    }
    if let (Some(x), Some(y)) = (a.waiting, b.waiting)
        && y - x >= r.queue_min
        && y > x * (1.0 + r.queue_rise)
    {
        out.push(Rise { metric: "waiting".into(), before: x, after: y });
    }
    out
}

/// The knee of `row` (ordered by load), if it has one.
pub(crate) fn find_knee(row: &[LoadPoint], rules: &KneeRules) -> Option<Knee> {
    row.windows(2).enumerate().find_map(|(i, w)| {
        let (a, b) = (&w[0], &w[1]);
        let (is_flat, noise) = flat(a, b, rules);
        let rising = rises(a, b, rules);
        (is_flat && !rising.is_empty()).then(|| Knee {
            at: b.label.clone(),
            index: i + 1,
            previous: a.label.clone(),
            tps_before: a.tps,
            tps_after: b.tps,
            tps_gain: relative(a.tps, b.tps),
            tps_noise: noise,
            rising,
            test: describe_rules(rules),
        })
    })
}

#[cfg(test)]
#[path = "knee_tests.rs"]
mod tests;
