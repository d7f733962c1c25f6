//! Recording the baseline in a report: `plan.baseline` names the saved session, and every
//! cell both sessions measured gets its `baseline` figures, from `compare` of the baseline
//! against the report as it stands (its matching, figures, deltas and noise band).

use super::{Baseline, BaselineFigure, kept, percentiles};
use crate::report::compare::{self, CellDiff, CellKey, Options};
use crate::report::json::SessionReport;
use crate::report::kind::ExperimentKind;
use crate::report::serve::ServeCellReport;

/// The name the comparison gives the session being written.
const THIS_SESSION: &str = "this session";

/// Sets `plan.baseline` and the `baseline` figures of every cell of `report` matched in
/// `baseline`; cells without a match keep none.
pub fn annotate(report: &mut SessionReport, baseline: &Baseline) {
    report.plan.baseline = Some(baseline.info());
    let opts = Options { threshold_pct: 0.0, percentiles: percentiles() };
    let diff = compare::compare((&baseline.path, &baseline.report), (THIS_SESSION, report), &opts);
    for cell in &diff.cells {
        let figures = figures_of(cell);
        if let Some(slot) = slot(report, &cell.key) {
            *slot = figures;
        }
    }
}

/// The kept figures of one compared cell.
fn figures_of(cell: &CellDiff) -> Vec<BaselineFigure> {
    cell.figures
        .iter()
        .filter(|f| kept(&f.name, f.headline))
        .map(|f| BaselineFigure {
            name: f.name.clone(),
            better: f.better,
            base: f.base,
            new: f.new,
            delta_pct: f.delta_pct,
            change: f.change,
        })
        .collect()
}

/// The `baseline` list of the report's cell matched by `key`.
fn slot<'a>(report: &'a mut SessionReport, key: &CellKey) -> Option<&'a mut Vec<BaselineFigure>> {
    let at = |ctx: u64, conc: u32| key.ctx == Some(ctx) && key.conc == Some(conc);
    // The whole key: in a `--request-rate` sweep, cells of one ctx and conc differ by rate.
    let rate_is = |rate: Option<crate::load::rate::Rate>| key.rate == rate.map(|r| r.to_string());
    match key.kind {
        ExperimentKind::Decode => {
            let cells = &mut report.decode.as_mut()?.cells;
            cells.iter_mut().find(|c| at(c.ctx, c.conc) && rate_is(c.rate)).map(|c| &mut c.baseline)
        }
        ExperimentKind::Burst => {
            report.burst.as_mut()?.cells.iter_mut().find(|c| at(c.ctx, c.conc)).map(|c| &mut c.baseline)
        }
        ExperimentKind::Routing => {
            let name = key.phase.as_deref()?;
            report.phases.iter_mut().find(|p| p.phase == name).map(|p| &mut p.baseline)
        }
        ExperimentKind::Serve => {
            let cells = &mut report.serve.as_mut()?.cells;
            let here = |c: &&mut ServeCellReport| {
                at(c.input_len, c.max_concurrency) && key.rate.as_deref() == Some(c.request_rate.as_str())
            };
            cells.iter_mut().find(here).map(|c| &mut c.baseline)
        }
        ExperimentKind::Extension(name) => {
            let section = report.extensions.iter_mut().find(|s| s.kind == name.as_str())?;
            section.cells.iter_mut().find(|c| at(c.ctx, c.conc) && key.rate == c.rate).map(|c| &mut c.baseline)
        }
    }
}

/// The baseline figure `name` of a cell's `baseline` list.
pub fn figure<'a>(list: &'a [BaselineFigure], name: &str) -> Option<&'a BaselineFigure> {
    list.iter().find(|f| f.name == name)
}
