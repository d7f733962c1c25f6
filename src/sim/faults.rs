//! Fault injection for the simulated replicas (`--faults SPEC`).
//!
//! SPEC is a comma-separated list of `kind=rate` pairs, rates in 0..1, e.g.
//! `reset=0.02,http500=0.01,stall=0.01,metrics-fail=0.1`. Request faults are drawn once per
//! completion request from one uniform draw, so their rates add up (and must not exceed 1);
//! metrics faults are drawn once per `/metrics` scrape.
//!
//! [`Power`] takes one replica down and brings it back mid-session, as a killed and restarted
//! engine process: while down every endpoint fails (the in-process backend refuses the
//! connection, a served replica answers 503), and it comes back with its counters at 0.

use rand::Rng;
use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Whether one simulated replica is up (the default) or down.
#[derive(Debug, Default)]
pub struct Power {
    down: AtomicBool,
}

impl Power {
    /// True while the replica is down.
    pub fn is_down(&self) -> bool {
        self.down.load(Ordering::SeqCst)
    }

    /// Sets the state; true if it changed.
    pub fn set_down(&self, down: bool) -> bool {
        self.down.swap(down, Ordering::SeqCst) != down
    }
}

/// A fault that can happen to one completion request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RequestFault {
    /// The connection is reset after some tokens were streamed.
    Reset,
    /// HTTP 500 before streaming.
    Http500,
    /// HTTP 503 (overload) before streaming.
    Http503,
    /// HTTP 429 (rate limited) before streaming.
    Http429,
    /// The stream stops sending after some tokens but stays open.
    Stall,
    /// One chunk of the stream is not valid JSON.
    Malformed,
}

/// A fault that can happen to one `/metrics` scrape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricsFault {
    /// `/metrics` answers HTTP 500.
    Fail,
    /// `/metrics` answers after a long delay.
    Slow,
}

/// Parsed `--faults` specification: a rate per fault kind.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FaultSpec {
    /// Request faults with their rates (per request, 0..1).
    pub request: Vec<(RequestFault, f64)>,
    /// Rate of failing `/metrics` scrapes, 0..1.
    pub metrics_fail: f64,
    /// Rate of slow `/metrics` scrapes, 0..1.
    pub metrics_slow: f64,
}

const REQUEST_KINDS: [(&str, RequestFault); 6] = [
    ("reset", RequestFault::Reset),
    ("http500", RequestFault::Http500),
    ("http503", RequestFault::Http503),
    ("http429", RequestFault::Http429),
    ("stall", RequestFault::Stall),
    ("malformed", RequestFault::Malformed),
];

impl FromStr for FaultSpec {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let mut spec = FaultSpec::default();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (kind, rate) = part.split_once('=').ok_or_else(|| format!("fault `{part}` must be KIND=RATE"))?;
            let rate: f64 = rate.trim().parse().map_err(|_| format!("fault rate `{rate}` is not a number"))?;
            if !(0.0..=1.0).contains(&rate) {
                return Err(format!("fault rate {rate} for `{kind}` must be within 0..1"));
            }
            match kind.trim() {
                "metrics-fail" => spec.metrics_fail = rate,
                "metrics-slow" => spec.metrics_slow = rate,
                k => {
                    let fault = REQUEST_KINDS.iter().find(|(n, _)| *n == k).map(|(_, f)| *f).ok_or_else(|| {
                        format!("unknown fault `{k}` (known: reset, http500, http503, http429, stall, malformed, metrics-fail, metrics-slow)")
                    })?;
                    spec.request.push((fault, rate));
                }
            }
        }
        let total: f64 = spec.request.iter().map(|(_, r)| r).sum();
        if total > 1.0 + 1e-9 {
            return Err(format!("request fault rates add up to {total}, more than 1"));
        }
        if spec.metrics_fail + spec.metrics_slow > 1.0 + 1e-9 {
            return Err("metrics-fail + metrics-slow must not exceed 1".into());
        }
        Ok(spec)
    }
}

impl fmt::Display for RequestFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = REQUEST_KINDS.iter().find(|(_, k)| k == self).map_or("?", |(n, _)| n);
        f.write_str(name)
    }
}

impl FaultSpec {
    /// True when no fault is configured.
    pub fn is_empty(&self) -> bool {
        self.request.is_empty() && self.metrics_fail == 0.0 && self.metrics_slow == 0.0
    }

    /// Draws the fault (if any) for one request.
    pub fn draw_request(&self, rng: &mut impl Rng) -> Option<RequestFault> {
        if self.request.is_empty() {
            return None;
        }
        let u: f64 = rng.random();
        let mut acc = 0.0;
        for (fault, rate) in &self.request {
            acc += rate;
            if u < acc {
                return Some(*fault);
            }
        }
        None
    }

    /// Draws the fault (if any) for one `/metrics` scrape.
    pub fn draw_metrics(&self, rng: &mut impl Rng) -> Option<MetricsFault> {
        if self.metrics_fail == 0.0 && self.metrics_slow == 0.0 {
            return None;
        }
        let u: f64 = rng.random();
        if u < self.metrics_fail {
            Some(MetricsFault::Fail)
        } else if u < self.metrics_fail + self.metrics_slow {
            Some(MetricsFault::Slow)
        } else {
            None
        }
    }
}

/// What one replica's fault injection did: completion requests accepted and faults injected
/// by kind, shown on `/metrics` as `sim:completion_requests_total` and
/// `sim:injected_faults_total{kind}` while `--faults` names a request fault, so a soak can
/// check the client's error counts against the server's own record.
#[derive(Debug, Default)]
pub(crate) struct FaultTally {
    requests: AtomicU64,
    injected: [AtomicU64; REQUEST_KINDS.len()],
}

impl FaultTally {
    /// Counts one completion request and the fault drawn for it, if any.
    pub(crate) fn record(&self, fault: Option<RequestFault>) {
        self.requests.fetch_add(1, Ordering::Relaxed);
        if let Some(i) = fault.and_then(|f| REQUEST_KINDS.iter().position(|(_, k)| *k == f)) {
            self.injected[i].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Completion requests accepted (past validation).
    pub(crate) fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// Faults injected per kind, in the order `--faults` lists the kinds.
    pub(crate) fn injected(&self) -> Vec<(RequestFault, u64)> {
        REQUEST_KINDS.iter().zip(&self.injected).map(|((_, k), n)| (*k, n.load(Ordering::Relaxed))).collect()
    }

    /// The two `sim:*` counter families in Prometheus text.
    pub(crate) fn exposition(&self) -> String {
        let mut out = String::from(
            "# HELP sim:completion_requests_total Completion requests accepted (a fault drawn for each; simulator only).\n\
             # TYPE sim:completion_requests_total counter\n",
        );
        out.push_str(&format!("sim:completion_requests_total {}\n", self.requests()));
        out.push_str(
            "# HELP sim:injected_faults_total Request faults injected by --faults (simulator only).\n\
             # TYPE sim:injected_faults_total counter\n",
        );
        for (kind, n) in self.injected() {
            out.push_str(&format!("sim:injected_faults_total{{kind=\"{kind}\"}} {n}\n"));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    #[test]
    fn parses_and_rejects() {
        let s: FaultSpec = "reset=0.1, http503=0.2,metrics-slow=0.5".parse().unwrap();
        assert_eq!(s.request, vec![(RequestFault::Reset, 0.1), (RequestFault::Http503, 0.2)]);
        assert_eq!(s.metrics_slow, 0.5);
        assert!("bogus=0.1".parse::<FaultSpec>().is_err());
        assert!("reset=2".parse::<FaultSpec>().is_err());
        assert!("reset".parse::<FaultSpec>().is_err());
        assert!("reset=0.6,stall=0.6".parse::<FaultSpec>().is_err());
        assert!("".parse::<FaultSpec>().unwrap().is_empty());
    }

    #[test]
    fn draws_follow_rates() {
        let s: FaultSpec = "reset=0.1,http500=0.3".parse().unwrap();
        let mut rng = StdRng::seed_from_u64(1);
        let n = 20_000;
        let draws: Vec<_> = (0..n).map(|_| s.draw_request(&mut rng)).collect();
        let frac = |f| draws.iter().filter(|d| **d == Some(f)).count() as f64 / n as f64;
        assert!((frac(RequestFault::Reset) - 0.1).abs() < 0.01);
        assert!((frac(RequestFault::Http500) - 0.3).abs() < 0.015);
    }

    #[test]
    fn the_tally_counts_requests_and_faults_by_kind() {
        let t = FaultTally::default();
        for f in [None, Some(RequestFault::Reset), Some(RequestFault::Reset), Some(RequestFault::Http429)] {
            t.record(f);
        }
        assert_eq!(t.requests(), 4);
        let by: std::collections::HashMap<_, _> = t.injected().into_iter().collect();
        assert_eq!((by[&RequestFault::Reset], by[&RequestFault::Http429], by[&RequestFault::Stall]), (2, 1, 0));
        let text = t.exposition();
        assert!(text.contains("sim:completion_requests_total 4\n"), "{text}");
        assert!(text.contains("sim:injected_faults_total{kind=\"reset\"} 2\n"), "{text}");
        assert!(text.contains("sim:injected_faults_total{kind=\"malformed\"} 0\n"), "{text}");
    }
}
