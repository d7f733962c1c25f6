//! What a cell of the plan is and where it stands.

use crate::config::Rate;
use crate::report::kind::ExperimentKind;
use crate::report::levels::column_label;
use crate::report::skip::Skip;
use crate::report::status::CellOutcome;

/// What a cell measures: the experiment that owns it and where it sits in that experiment's
/// layout. The monitor lays cells out by [`CellKey`] alone, so a new experiment that reuses a
/// layout needs no change outside its own folder.
#[derive(Debug, Clone, PartialEq)]
pub struct CellSpec {
    /// The experiment that runs the cell.
    pub kind: ExperimentKind,
    /// Its place in the experiment's layout.
    pub key: CellKey,
}

impl CellSpec {
    /// A ctx x conc matrix cell of experiment `kind`.
    pub fn grid(kind: ExperimentKind, ctx: u64, conc: u32) -> Self {
        Self { kind, key: CellKey::Grid { ctx, conc, rate: None } }
    }

    /// A ctx x load matrix cell of experiment `kind`: `conc` streams closed loop when `rate` is
    /// None, else open-loop arrivals at `rate` with at most `conc` in flight.
    pub fn grid_at(kind: ExperimentKind, ctx: u64, conc: u32, rate: Option<Rate>) -> Self {
        Self { kind, key: CellKey::Grid { ctx, conc, rate } }
    }

    /// A phase of experiment `kind`.
    pub fn phase(kind: ExperimentKind, round: u32, scenario: &str, route: &str) -> Self {
        Self { kind, key: CellKey::Phase { round, scenario: scenario.to_string(), route: route.to_string() } }
    }

    /// The route of a phase cell.
    pub fn route(&self) -> Option<&str> {
        match &self.key {
            CellKey::Phase { route, .. } => Some(route),
            CellKey::Grid { .. } => None,
        }
    }

    /// The column label of a grid cell ([`column_label`]: `8`, `4/s`, `inf`, `8@4/s`); None
    /// for phases.
    pub fn load_label(&self, many_conc: bool) -> Option<String> {
        let CellKey::Grid { conc, rate, .. } = &self.key else { return None };
        Some(column_label(*conc, *rate, many_conc))
    }

    /// How `compare` and `--baseline` match the cell across reports: kind and ctx/conc, or
    /// the phase name (`r1-hot90-prefix-cache`).
    pub fn compare_key(&self) -> crate::report::compare::CellKey {
        use crate::report::compare::CellKey as Key;
        match &self.key {
            CellKey::Grid { ctx, conc, rate } => Key::cell_at(self.kind, *ctx, *conc, rate.map(|r| r.to_string())),
            CellKey::Phase { round, scenario, route } => Key::phase(&format!("r{round}-{scenario}-{route}")),
        }
    }

    /// True for a phase cell (round x scenario x route).
    pub fn is_phase(&self) -> bool {
        matches!(self.key, CellKey::Phase { .. })
    }
}

/// Where a cell sits in its experiment's layout.
#[derive(Debug, Clone, PartialEq)]
pub enum CellKey {
    /// A matrix cell: `ctx`-token prompts (rows) at a load (columns): `conc` streams or
    /// requests, or arrivals at `rate` with at most `conc` in flight.
    Grid {
        /// Context size, tokens.
        ctx: u64,
        /// Streams or requests (closed loop), or the in-flight cap (open loop).
        conc: u32,
        /// Open-loop arrival rate; None: closed loop.
        rate: Option<Rate>,
    },
    /// One phase of a round x scenario x route experiment; its label is the phase name, e.g.
    /// `r1-hot90-prefix-cache`.
    Phase {
        /// 1-based round.
        round: u32,
        /// Cache scenario (`cold-uniform`, `warm-uniform`, `hot50`, `hot90`).
        scenario: String,
        /// Routing strategy (`random`, `least-request`, `prefix-cache`).
        route: String,
    },
}

/// Where a cell stands.
#[derive(Debug, Clone, PartialEq)]
pub enum CellStatus {
    /// Not run yet (or queued again).
    Pending,
    /// Running now.
    Running,
    /// Measured (decode window ran, burst or phase finished).
    Measured,
    /// No measurement: every request failed.
    Errored,
    /// Skipped before it started, with the reason (e.g. the KV deficit).
    Skipped(Skip),
    /// Skipped by the operator.
    SkippedByOperator,
}

impl CellStatus {
    /// The report's outcome of the cell (a running cell is still pending there).
    pub fn outcome(&self) -> CellOutcome {
        match self {
            Self::Pending | Self::Running => CellOutcome::Pending,
            Self::Measured => CellOutcome::Measured,
            Self::Errored => CellOutcome::Errored,
            Self::Skipped(_) => CellOutcome::Skipped,
            Self::SkippedByOperator => CellOutcome::SkippedByOperator,
        }
    }

    /// The report name.
    pub fn as_str(&self) -> &'static str {
        self.outcome().as_str()
    }

    /// True once the cell has an outcome.
    pub fn is_final(&self) -> bool {
        !matches!(self, Self::Pending | Self::Running)
    }

    /// True when it was skipped without running (no fit), not by the operator.
    pub fn is_skipped(&self) -> bool {
        matches!(self, Self::Skipped(_))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_labels_name_the_loop() {
        assert_eq!(CellSpec::grid(ExperimentKind::Decode, 0, 8).load_label(false).as_deref(), Some("8"));
        let open = CellSpec::grid_at(ExperimentKind::Serve, 256, 8, Some(Rate::PerSecond(4.0)));
        assert_eq!(open.load_label(false).as_deref(), Some("4/s"));
        assert_eq!(open.load_label(true).as_deref(), Some("8@4/s"));
        let inf = CellSpec::grid_at(ExperimentKind::Serve, 256, 8, Some(Rate::Inf));
        assert_eq!(inf.load_label(false).as_deref(), Some("inf"));
        assert_eq!(CellSpec::phase(ExperimentKind::Routing, 1, "hot90", "random").load_label(false), None);
    }
}
