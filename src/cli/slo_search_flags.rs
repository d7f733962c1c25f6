//! The flags of the SLO search (`run --plan serve --slo-search concurrency|rate`, issue 25):
//! the load it varies, the attainment it holds the session SLO to, its lowest and highest
//! load, its resolution and its repeats, checked against the rest of the run before any load.

use crate::config::slo_search::{Resolution, SearchMode, SloSearchConfig};
use crate::config::{PlanKind, SloSource};
use clap::Args;

/// `--slo-search`, `--slo-attainment`, `--slo-start-load`, `--slo-max-load`,
/// `--slo-resolution`, `--slo-repeats`.
#[derive(Debug, Clone, Default, Args)]
pub struct SloSearchFlags {
    /// Find the largest load whose requests meet the session SLO (--goodput) at
    /// --slo-attainment: `concurrency` (requests in flight) or `rate` (requests/s). Needs
    /// --plan serve: each probe is a serve cell of --num-prompts requests, and the search
    /// replaces the serve plan's fixed --max-concurrency / --request-rate cells.
    #[arg(long, value_enum, value_name = "MODE")]
    pub slo_search: Option<SearchMode>,
    /// Percent of a load's requests that must meet every bound of the SLO [default: 99].
    #[arg(long, value_name = "PERCENT")]
    pub slo_attainment: Option<f64>,
    /// First load the search probes, streams or requests/s [default: 1].
    #[arg(long, value_name = "LOAD")]
    pub slo_start_load: Option<f64>,
    /// Highest load the search probes [default: --num-prompts streams; 256 requests/s].
    #[arg(long, value_name = "LOAD")]
    pub slo_max_load: Option<f64>,
    /// How close the search closes the bracket [last pass, first fail]: a share of the last
    /// pass (`5%`) or a load (`2`: streams or requests/s) [default: 1 stream; 5% of a rate].
    #[arg(long, value_name = "STEP")]
    pub slo_resolution: Option<Resolution>,
    /// Most probes at one load while the 95% interval of its attainment holds the target;
    /// the load is judged on all of them pooled [default: 3].
    #[arg(long, value_name = "N")]
    pub slo_repeats: Option<u32>,
}

/// What the search is checked against: the rest of the run.
#[derive(Debug, Clone, Copy)]
pub struct RunShape<'a> {
    /// `--plan`.
    pub plans: &'a [PlanKind],
    /// Which flag named the session SLO.
    pub slo: SloSource,
    /// Requests per probe (`--num-prompts`).
    pub num_prompts: u32,
    /// `--request-rate` given.
    pub rates_given: bool,
    /// The `--dataset-name` trace, if one.
    pub trace: Option<&'a str>,
}

impl SloSearchFlags {
    /// The first of the search's shaping flags given, by its name, if any.
    fn any_given(&self) -> Option<&'static str> {
        [
            (self.slo_attainment.is_some(), "--slo-attainment"),
            (self.slo_start_load.is_some(), "--slo-start-load"),
            (self.slo_max_load.is_some(), "--slo-max-load"),
            (self.slo_resolution.is_some(), "--slo-resolution"),
            (self.slo_repeats.is_some(), "--slo-repeats"),
        ]
        .into_iter()
        .find_map(|(given, name)| given.then_some(name))
    }

    /// The search's settings, None without `--slo-search`; a one-line error for flags that
    /// do not fit together.
    pub fn config(&self, run: RunShape<'_>) -> Result<Option<SloSearchConfig>, String> {
        let Some(mode) = self.slo_search else {
            return match self.any_given() {
                Some(flag) => Err(format!("{flag} shapes the SLO search: add --slo-search concurrency|rate")),
                None => Ok(None),
            };
        };
        if !run.slo.is_chosen() || run.slo == SloSource::Demo {
            return Err(
                "--slo-search needs the SLO it searches under: add --goodput (e.g. --goodput ttft:500 tpot:50)".into(),
            );
        }
        if !run.plans.contains(&PlanKind::Serve) {
            return Err("--slo-search probes the serve workload: add --plan serve".into());
        }
        if run.rates_given {
            return Err("--request-rate sets the serve plan's fixed cells: --slo-search sets each probe's load".into());
        }
        if let Some(name) = run.trace {
            return Err(format!(
                "--dataset-name {name} replays on its own schedule: --slo-search sets each probe's load"
            ));
        }
        let cfg = self.settings(mode, run.num_prompts);
        check(&cfg)?;
        Ok(Some(cfg))
    }

    /// The settings with their defaults, unchecked.
    fn settings(&self, mode: SearchMode, num_prompts: u32) -> SloSearchConfig {
        let (max, resolution) = match mode {
            SearchMode::Concurrency => (f64::from(num_prompts), Resolution::Absolute(1.0)),
            SearchMode::Rate => (SloSearchConfig::MAX_RATE, SloSearchConfig::RATE_RESOLUTION),
        };
        SloSearchConfig {
            mode,
            target: self.slo_attainment.unwrap_or(SloSearchConfig::ATTAINMENT) / 100.0,
            start: self.slo_start_load.unwrap_or(SloSearchConfig::START),
            max: self.slo_max_load.unwrap_or(max),
            resolution: self.slo_resolution.unwrap_or(resolution),
            repeats: self.slo_repeats.unwrap_or(SloSearchConfig::REPEATS),
        }
    }
}

/// The settings' ranges, each refusal naming its flag.
fn check(c: &SloSearchConfig) -> Result<(), String> {
    let pct = c.target * 100.0;
    if !(pct.is_finite() && pct > 0.0 && pct <= 100.0) {
        return Err(format!("--slo-attainment {pct}: a percentage above 0 and at most 100"));
    }
    if !(1..=100).contains(&c.repeats) {
        return Err(format!("--slo-repeats {}: from 1 to 100 probes at one load", c.repeats));
    }
    let (low, high, what) = match c.mode {
        SearchMode::Concurrency => (1.0, f64::from(super::run_bounds::MAX_CONC), "a whole number of streams"),
        SearchMode::Rate => (crate::config::rate::MIN_RATE, crate::config::rate::MAX_RATE, "requests/s"),
    };
    for (flag, v) in [("--slo-start-load", c.start), ("--slo-max-load", c.max)] {
        let whole = c.mode == SearchMode::Rate || v.fract() == 0.0;
        if !(v.is_finite() && (low..=high).contains(&v) && whole) {
            return Err(format!("{flag} {v}: {what} from {low} to {high}"));
        }
    }
    if c.max < c.start {
        return Err(format!("--slo-max-load {} is below --slo-start-load {}", c.max, c.start));
    }
    if let (SearchMode::Concurrency, Resolution::Absolute(a)) = (c.mode, c.resolution)
        && a < 1.0
    {
        return Err(format!("--slo-resolution {a}: a concurrency search steps by whole streams (at least 1)"));
    }
    Ok(())
}

#[cfg(test)]
#[path = "slo_search_flags_tests.rs"]
mod tests;
