//! The SLO search as a pure state machine: it says which load to probe next, takes each probe's
//! tally (requests that met the SLO of those sent) and keeps the bracket [last pass, first
//! fail]. It starts at the lowest load and doubles it until a load fails or the highest load
//! passes, then bisects the bracket until it is as narrow as the resolution. A load is judged
//! on every request probed at it so far, pooled: when the 95% Wilson interval of that
//! attainment holds the target, the load is probed again (up to `repeats` probes in all), and
//! after the last one it passes when the pooled attainment reaches the target.

use crate::config::slo_search::{Resolution, SearchMode, SloSearchConfig};
use crate::stats::Proportion;
use crate::stats::proportion::Z95;

/// What to probe next: a load, and which probe at that load it is (1-based).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Step {
    /// Streams or requests/s.
    pub load: f64,
    /// 1 for the first probe at the load, 2 for its first repeat, ...
    pub repeat: u32,
}

/// What the search made of a probe.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Judged {
    /// Every request probed at the load so far.
    pub pooled: Proportion,
    /// The 95% Wilson interval of the pooled attainment.
    pub interval: (f64, f64),
    /// Pass (`Some(true)`), fail, or None: the interval holds the target, probed again.
    pub verdict: Option<bool>,
}

/// How a finished search ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// A load passed and a higher one failed, within the resolution of each other.
    Bracketed,
    /// Every load passed up to the highest (`--slo-max-load`): the capacity is at least that.
    AllPassed,
    /// The lowest load (`--slo-start-load`) failed: the capacity is below it.
    NonePassed,
}

impl Ending {
    /// How the report words it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Bracketed => "bracketed",
            Self::AllPassed => "every load passed up to the highest",
            Self::NonePassed => "even the lowest load failed",
        }
    }
}

/// The search and where it stands.
#[derive(Debug, Clone)]
pub struct Search {
    cfg: SloSearchConfig,
    last_pass: Option<f64>,
    first_fail: Option<f64>,
    /// The load under probe and what its probes gave so far; None once ended.
    current: Option<(Step, Proportion)>,
    ended: Option<Ending>,
}

impl Search {
    /// A search under `cfg`, about to probe its first load.
    pub fn new(cfg: SloSearchConfig) -> Self {
        let start = Step { load: cfg.start, repeat: 1 };
        Self { cfg, last_pass: None, first_fail: None, current: Some((start, Proportion::default())), ended: None }
    }

    /// The next probe; None once the search ended.
    pub fn next(&self) -> Option<Step> {
        self.current.map(|(s, _)| s)
    }

    /// The bracket so far: (last pass, first fail).
    pub fn bracket(&self) -> (Option<f64>, Option<f64>) {
        (self.last_pass, self.first_fail)
    }

    /// How it ended; None while it runs.
    pub fn ending(&self) -> Option<Ending> {
        self.ended
    }

    /// Takes the tally of the probe [`Search::next`] named and moves on.
    pub fn record(&mut self, probe: Proportion) -> Judged {
        let Some((step, pooled)) = self.current else {
            return Judged { pooled: probe, interval: probe.wilson(Z95), verdict: None };
        };
        let pooled = pooled.pooled(probe);
        let interval = pooled.wilson(Z95);
        let target = self.cfg.target;
        let unsure = interval.0 < target && target <= interval.1;
        if unsure && step.repeat < self.cfg.repeats {
            self.current = Some((Step { repeat: step.repeat + 1, ..step }, pooled));
            return Judged { pooled, interval, verdict: None };
        }
        let pass = pooled.share().is_some_and(|a| a >= target);
        self.advance(step.load, pass);
        Judged { pooled, interval, verdict: Some(pass) }
    }

    /// Files `load` as passed or failed and picks the next load (or ends).
    fn advance(&mut self, load: f64, pass: bool) {
        match pass {
            true => self.last_pass = Some(load),
            false => self.first_fail = Some(load),
        }
        let next = match (self.last_pass, self.first_fail) {
            (_, None) if load >= self.cfg.max => Err(Ending::AllPassed),
            (_, None) => Ok(self.grow(load)),
            (None, Some(_)) => Err(Ending::NonePassed),
            (Some(p), Some(f)) => self.between(p, f).ok_or(Ending::Bracketed),
        };
        match next {
            Ok(load) => self.current = Some((Step { load, repeat: 1 }, Proportion::default())),
            Err(ending) => (self.current, self.ended) = (None, Some(ending)),
        }
    }

    /// The load after `load` while everything passed: doubled (at least one stream more),
    /// never above the highest.
    fn grow(&self, load: f64) -> f64 {
        let doubled = match self.cfg.mode {
            SearchMode::Concurrency => (load * 2.0).round().max(load + 1.0),
            SearchMode::Rate => load * 2.0,
        };
        doubled.min(self.cfg.max)
    }

    /// The load to probe inside the bracket (`pass`, `fail`), or None when it is as narrow as
    /// the resolution (or no whole number of streams lies inside it).
    fn between(&self, pass: f64, fail: f64) -> Option<f64> {
        let narrow = match self.cfg.resolution {
            Resolution::Relative(r) => fail <= pass * (1.0 + r) * (1.0 + 1e-12),
            Resolution::Absolute(a) => fail - pass <= a * (1.0 + 1e-12),
        };
        if narrow {
            return None;
        }
        let middle = match (self.cfg.mode, self.cfg.resolution) {
            (SearchMode::Concurrency, _) => ((pass + fail) / 2.0).floor(),
            // Relative: the geometric middle halves the bracket's ratio, as the resolution measures it.
            (SearchMode::Rate, Resolution::Relative(_)) => (pass * fail).sqrt(),
            (SearchMode::Rate, Resolution::Absolute(_)) => (pass + fail) / 2.0,
        };
        // Strictly inside, or the bracket is as narrow as the numbers go.
        Some(middle).filter(|m| *m > pass && *m < fail)
    }
}

/// The most probes a search under `cfg` can take: the doubling ladder from the lowest load to
/// the highest, then the bisections of the widest bracket it can leave (a doubling), each load
/// probed at most `repeats` times. A dataset is sized for this many probes.
pub fn most_probes(cfg: &SloSearchConfig) -> usize {
    let search = Search::new(cfg.clone());
    let mut ladder = 1usize;
    let mut load = cfg.start;
    while load < cfg.max && ladder < 10_000 {
        load = search.grow(load);
        ladder += 1;
    }
    // The widest bracket the ladder leaves: a doubling, at most from max / 2 to max.
    let (pass, fail) = ((cfg.max / 2.0).max(cfg.start), cfg.max);
    let halvings = match (cfg.mode, cfg.resolution) {
        (_, Resolution::Absolute(a)) => ((fail - pass) / a.max(1e-9)).max(1.0).log2().ceil(),
        (SearchMode::Concurrency, Resolution::Relative(_)) => (fail - pass).max(1.0).log2().ceil(),
        (SearchMode::Rate, Resolution::Relative(r)) => ((fail / pass).ln() / r.ln_1p()).max(1.0).log2().ceil(),
    };
    let bisections = (halvings.min(64.0) as usize) + 1;
    (ladder + bisections).saturating_mul(cfg.repeats.max(1) as usize)
}

#[cfg(test)]
#[path = "search_tests.rs"]
mod tests;
