//! An SLO search as it runs (`run --plan serve --slo-search`), for the monitor's SLO search
//! panel: the bracket [last pass, first fail] narrowing, the probe running and the probes done.

/// The search published with each probe's live view.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SearchLive {
    /// The load it varies: `concurrency` or `rate`.
    pub mode: &'static str,
    /// The unit of its loads: `streams` or `req/s`.
    pub unit: &'static str,
    /// The SLO, as the flags write it (`ttft:500 tpot:50`).
    pub slo: String,
    /// Share of requests that must meet it, 0..=1.
    pub target: f64,
    /// The highest load passed so far.
    pub last_pass: Option<f64>,
    /// The lowest load failed so far.
    pub first_fail: Option<f64>,
    /// The probe running now: its 1-based index, load and repeat.
    pub running: Option<(usize, f64, u32)>,
    /// The probes done, oldest first.
    pub done: Vec<ProbeLive>,
    /// How the search ended, once it did.
    pub ended: Option<String>,
}

/// One finished probe as the panel lists it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ProbeLive {
    /// Streams or requests/s.
    pub load: f64,
    /// 1 for the first probe at the load.
    pub repeat: u32,
    /// Requests probed at the load so far (pooled over its repeats).
    pub requests: u64,
    /// Share of them that met the SLO.
    pub attainment: Option<f64>,
    /// The 95% interval of that share.
    pub interval: (f64, f64),
    /// Pass, fail, or None: probed again.
    pub verdict: Option<bool>,
}
