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
    /// With repeated runs (`--num-runs`), `tps` over them (`tps` is then their mean): the
    /// knee judges a step against the interval of the difference of two cells' means.
    pub tps_runs: Option<super::RunStats>,
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
    /// Noise of the difference (z standard errors, or with repeated runs the half-width of the
    /// interval of the difference of the means), relative to `tps_before`; None: unknown.
    pub tps_noise: Option<f64>,
    /// With repeated runs: the throughput step lay inside the interval of the difference of
    /// the two cells' run means, so it counted as no gain (absent otherwise).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub within_noise: bool,
    /// With repeated runs: the interval the noise is, e.g. `95% CI of the difference of the
    /// means of 3 and 3 runs (Welch)` (absent without repetitions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise_interval: Option<String>,
    /// What kept rising.
    pub rising: Vec<Rise>,
    /// The test used, in words.
    pub test: String,
}

impl Knee {
    /// `tok/s +1.8% (noise ±3%), TTFT p50 +240%`; with repeated runs `tok/s +6.0% (within
    /// noise ±8.1%, 95% CI of 3 runs each)`.
    pub fn evidence(&self) -> String {
        let word = if self.within_noise { "within noise" } else { "noise" };
        let of = self.noise_interval.as_deref().map(|i| format!(", {i}")).unwrap_or_default();
        let noise = self.tps_noise.map_or("noise n/a".to_string(), |n| format!("{word} ±{}{of}", pct(n)));
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

/// The test's description, as the report records it; `runs` adds the rule of repeated runs.
pub(crate) fn describe_rules(r: &KneeRules, runs: bool) -> String {
    let base = format!(
        "tok/s gain over the previous cell below {}, with its {}x standard-error band below it too \
         (when known), while TTFT p50 or p90 rose by over {} (and {} ms) or the queue by {} request(s) and over {}",
        pct(r.flat_gain),
        r.z,
        pct(r.ttft_rise),
        r.ttft_min_ms,
        r.queue_min,
        pct(r.queue_rise)
    );
    match runs {
        true => format!(
            "{base}; with repeated runs the band is the 95% interval of the difference of the two cells' run means (Welch), and a step inside it is no gain whatever its size"
        ),
        false => base,
    }
}

/// Whether throughput stopped rising from `a` to `b`.
#[derive(Debug, Clone, PartialEq)]
struct Flatness {
    /// It did.
    flat: bool,
    /// The noise of the difference relative to `a.tps`, when known.
    noise: Option<f64>,
    /// The step lay inside the interval of the runs' means (repetitions only).
    within_noise: bool,
    /// The interval used, in words (repetitions only).
    interval: Option<String>,
}

/// Whether throughput stopped rising from `a` to `b`.
///
/// Without repetitions: the gain is under `flat_gain` and so is its upper noise band (the
/// within-window standard errors, when known). With repeated runs on both cells (`tps_runs`):
/// the band is the 95% interval of the difference of their means (`stats::repeats::difference`),
/// and a step that lies inside it is **no gain**, flat whatever its size: the runs cannot tell
/// it from noise. A step outside the interval is flat only when it and its band stay under
/// `flat_gain`, as without repetitions.
fn flat(a: &LoadPoint, b: &LoadPoint, r: &KneeRules) -> Flatness {
    let gain = relative(a.tps, b.tps);
    let step = b.tps - a.tps;
    let runs = a.tps_runs.zip(b.tps_runs).and_then(|(x, y)| {
        let d = super::repeats::difference(&x, &y, x.level)?;
        let words = match x.n == y.n {
            true => format!("{:.0}% CI of {} runs each", d.level * 100.0, x.n),
            false => format!("{:.0}% CI of {} and {} runs", d.level * 100.0, x.n, y.n),
        };
        Some((d, words))
    });
    if let Some((d, words)) = runs {
        let within = d.contains(step);
        let flat = a.tps > 0.0 && (within || (gain < r.flat_gain && step + d.half < r.flat_gain * a.tps));
        let noise = (a.tps > 0.0).then(|| d.half / a.tps);
        return Flatness { flat, noise, within_noise: within, interval: Some(words) };
    }
    let noise = match (a.tps_se, b.tps_se) {
        (Some(x), Some(y)) => Some(r.z * (x * x + y * y).sqrt()),
        _ => None,
    };
    // Flat: a gain confidently under the threshold. A precise +1% is flat (more load bought
    // almost nothing); -3% with a noise band of ±20% is not (the gain may well be large).
    let within = noise.is_none_or(|n| step + n < r.flat_gain * a.tps);
    let flat = a.tps > 0.0 && gain < r.flat_gain && within;
    Flatness { flat, noise: noise.map(|n| n / a.tps), within_noise: false, interval: None }
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
    let runs = row.iter().any(|p| p.tps_runs.is_some());
    row.windows(2).enumerate().find_map(|(i, w)| {
        let (a, b) = (&w[0], &w[1]);
        let f = flat(a, b, rules);
        let rising = rises(a, b, rules);
        (f.flat && !rising.is_empty()).then(|| Knee {
            at: b.label.clone(),
            index: i + 1,
            previous: a.label.clone(),
            tps_before: a.tps,
            tps_after: b.tps,
            tps_gain: relative(a.tps, b.tps),
            tps_noise: f.noise,
            within_noise: f.within_noise,
            noise_interval: f.interval,
            rising,
            test: describe_rules(rules, runs),
        })
    })
}

#[cfg(test)]
#[path = "knee_tests.rs"]
mod tests;
