//! The shape of the matrix panel: which cell sits where, and how the selection moves.
//!
//! Decode cells form a ctx x conc grid (rows and columns in order of first appearance), burst
//! cells a second grid, and routing phases one scenario x route grid per round.

use crate::cell::control::CellId;
use crate::cell::spec::CellKey;
use crate::report::kind::ExperimentKind;
use crate::session::snapshot::CellSummary;
use crate::units::format_size;

/// One grid of cells.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grid {
    /// Title line above the grid.
    pub title: String,
    /// Header of the row-label column (`ctx`, `scenario`).
    pub corner: String,
    /// Row labels, top to bottom.
    pub rows: Vec<String>,
    /// Column labels, left to right.
    pub cols: Vec<String>,
    /// `cells[row][col]`: the cell at that place, if any.
    pub cells: Vec<Vec<Option<CellId>>>,
}

/// A place in the matrix: grid, row, column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    /// Grid index.
    pub grid: usize,
    /// Row in the grid.
    pub row: usize,
    /// Column in the grid.
    pub col: usize,
}

/// A direction of selection movement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    /// Previous row (or the previous grid's last row).
    Up,
    /// Next row (or the next grid's first row).
    Down,
    /// Previous column.
    Left,
    /// Next column.
    Right,
}

/// Every grid of the session, built once from the cells' specs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MatrixModel {
    /// Grids in display order.
    pub grids: Vec<Grid>,
    /// Number of cells the model was built from.
    pub cells: usize,
}

#[derive(Default)]
struct Builder {
    rows: Vec<String>,
    cols: Vec<String>,
    entries: Vec<(usize, usize, CellId)>,
}

impl Builder {
    fn add(&mut self, row: String, col: String, id: CellId) {
        let r = index_of(&mut self.rows, row);
        let c = index_of(&mut self.cols, col);
        self.entries.push((r, c, id));
    }

    fn finish(self, title: String, corner: &str, cols: Option<&[String]>) -> Grid {
        let cols = cols.map(<[String]>::to_vec).unwrap_or(self.cols.clone());
        let mut cells = vec![vec![None; cols.len()]; self.rows.len()];
        for (r, c, id) in self.entries {
            let col = cols.iter().position(|x| *x == self.cols[c]).unwrap_or(c);
            if let Some(slot) = cells.get_mut(r).and_then(|row| row.get_mut(col)) {
                *slot = Some(id);
            }
        }
        Grid { title, corner: corner.into(), rows: self.rows, cols, cells }
    }
}

fn index_of(list: &mut Vec<String>, item: String) -> usize {
    match list.iter().position(|x| *x == item) {
        Some(i) => i,
        None => {
            list.push(item);
            list.len() - 1
        }
    }
}

/// The experiments whose open-loop cells have more than one concurrency: their columns name
/// both (`8@4/s`).
fn many_open_loop_conc(cells: &[CellSummary]) -> Vec<ExperimentKind> {
    let mut seen: Vec<(ExperimentKind, u32)> = Vec::new();
    let mut many = Vec::new();
    for c in cells {
        if let CellKey::Grid { conc, rate: Some(_), .. } = c.spec.key {
            match seen.iter().find(|(k, _)| *k == c.spec.kind) {
                Some((_, first)) if *first != conc && !many.contains(&c.spec.kind) => many.push(c.spec.kind),
                Some(_) => {}
                None => seen.push((c.spec.kind, conc)),
            }
        }
    }
    many
}

/// The title of a ctx x conc matrix of experiment `kind`.
fn grid_title(kind: ExperimentKind) -> String {
    match kind {
        ExperimentKind::Decode => "Sustained decode: aggregate tok/s (ctx x conc)".into(),
        ExperimentKind::Burst => "Burst: output tok/s (ctx x requests)".into(),
        ExperimentKind::Serve => "Serve: output tok/s (input len x load)".into(),
        // Routing cells are phases, laid out by round below, never in a matrix.
        ExperimentKind::Routing => "Routing: tok/s (ctx x conc)".into(),
        ExperimentKind::Extension(name) => format!("{name}: output tok/s (ctx x load)"),
    }
}

impl MatrixModel {
    /// The grids of `cells`, in plan order.
    pub fn build(cells: &[CellSummary]) -> Self {
        Self::build_for(cells, None)
    }

    /// The grids of `cells`, in plan order; routing grids name the TTFT/TPOT/E2EL bounds of
    /// `slo` that make a request good.
    pub fn build_for(cells: &[CellSummary], slo: Option<&crate::report::goodput::PlanSlo>) -> Self {
        // One matrix per grid experiment, in order of first appearance.
        let mut matrices: Vec<(ExperimentKind, Builder)> = Vec::new();
        let mut rounds: Vec<(u32, Builder)> = Vec::new();
        let mut routes: Vec<String> = Vec::new();
        let many = many_open_loop_conc(cells);
        for (id, c) in cells.iter().enumerate() {
            match &c.spec.key {
                CellKey::Grid { ctx, .. } => {
                    let i = match matrices.iter().position(|(k, _)| *k == c.spec.kind) {
                        Some(i) => i,
                        None => {
                            matrices.push((c.spec.kind, Builder::default()));
                            matrices.len() - 1
                        }
                    };
                    let col = c.spec.load_label(many.contains(&c.spec.kind)).unwrap_or_default();
                    matrices[i].1.add(format_size(*ctx), col, id);
                }
                CellKey::Phase { round, scenario, route } => {
                    index_of(&mut routes, route.clone());
                    let i = match rounds.iter().position(|(r, _)| r == round) {
                        Some(i) => i,
                        None => {
                            rounds.push((*round, Builder::default()));
                            rounds.len() - 1
                        }
                    };
                    rounds[i].1.add(scenario.clone(), route.clone(), id);
                }
            }
        }
        let mut grids: Vec<Grid> =
            matrices.into_iter().map(|(kind, b)| b.finish(grid_title(kind), "ctx", None)).collect();
        for (round, b) in rounds {
            let good = slo.map_or_else(|| "good".to_string(), |s| format!("good ({})", s.slo().describe()));
            let title = format!("Routing round {round}: {good}/requests tok/s (scenario x route)");
            grids.push(b.finish(title, "scenario", Some(&routes)));
        }
        Self { grids, cells: cells.len() }
    }

    /// Where a cell sits.
    pub fn place(&self, id: CellId) -> Option<Place> {
        for (g, grid) in self.grids.iter().enumerate() {
            for (r, row) in grid.cells.iter().enumerate() {
                if let Some(c) = row.iter().position(|x| *x == Some(id)) {
                    return Some(Place { grid: g, row: r, col: c });
                }
            }
        }
        None
    }

    /// The cell at a place, if any.
    pub fn at(&self, p: Place) -> Option<CellId> {
        *self.grids.get(p.grid)?.cells.get(p.row)?.get(p.col)?
    }

    /// The first cell in display order.
    pub fn first(&self) -> Option<CellId> {
        self.grids.iter().flat_map(|g| g.cells.iter().flatten()).find_map(|c| *c)
    }

    /// The cell one step from `from` in `dir`, skipping empty places; `from` when at an edge.
    pub fn step(&self, from: CellId, dir: Dir) -> CellId {
        let Some(p) = self.place(from) else { return self.first().unwrap_or(from) };
        let found = match dir {
            Dir::Left => (0..p.col).rev().find_map(|c| self.at(Place { col: c, ..p })),
            Dir::Right => (p.col + 1..self.width(p.grid)).find_map(|c| self.at(Place { col: c, ..p })),
            Dir::Up => self.rows_before(p).into_iter().find_map(|(g, r)| self.near(g, r, p.col)),
            Dir::Down => self.rows_after(p).into_iter().find_map(|(g, r)| self.near(g, r, p.col)),
        };
        found.unwrap_or(from)
    }

    fn width(&self, grid: usize) -> usize {
        self.grids.get(grid).map_or(0, |g| g.cols.len())
    }

    /// Rows above `p`, nearest first, crossing into earlier grids.
    fn rows_before(&self, p: Place) -> Vec<(usize, usize)> {
        let mut out: Vec<(usize, usize)> = (0..p.row).rev().map(|r| (p.grid, r)).collect();
        for g in (0..p.grid).rev() {
            out.extend((0..self.grids[g].rows.len()).rev().map(|r| (g, r)));
        }
        out
    }

    /// Rows below `p`, nearest first, crossing into later grids.
    fn rows_after(&self, p: Place) -> Vec<(usize, usize)> {
        let mut out: Vec<(usize, usize)> = (p.row + 1..self.grids[p.grid].rows.len()).map(|r| (p.grid, r)).collect();
        for g in p.grid + 1..self.grids.len() {
            out.extend((0..self.grids[g].rows.len()).map(|r| (g, r)));
        }
        out
    }

    /// The cell of row `(grid, row)` closest to column `col`.
    fn near(&self, grid: usize, row: usize, col: usize) -> Option<CellId> {
        let cells = &self.grids.get(grid)?.cells.get(row)?;
        let mut best: Option<(usize, CellId)> = None;
        for (c, id) in cells.iter().enumerate() {
            if let Some(id) = id {
                let d = c.abs_diff(col);
                if best.is_none_or(|(bd, _)| d < bd) {
                    best = Some((d, *id));
                }
            }
        }
        best.map(|(_, id)| id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell::spec::CellSpec;
    use crate::session::state::CellStatus;

    fn summary(spec: CellSpec) -> CellSummary {
        CellSummary {
            label: String::new(),
            spec,
            status: CellStatus::Pending,
            attempts: 0,
            headline: None,
            latest: None,
            shown: None,
            run: None,
            run_stats: Default::default(),
        }
    }

    fn decode(ctx: &[u64], conc: &[u32]) -> Vec<CellSummary> {
        ctx.iter()
            .flat_map(|&ctx| conc.iter().map(move |&conc| summary(CellSpec::grid(ExperimentKind::Decode, ctx, conc))))
            .collect()
    }

    #[test]
    fn decode_cells_form_a_ctx_by_conc_grid() {
        let m = MatrixModel::build(&decode(&[0, 16384], &[1, 2, 4]));
        assert_eq!(m.grids.len(), 1);
        assert_eq!(m.grids[0].rows, ["0", "16k"]);
        assert_eq!(m.grids[0].cols, ["1", "2", "4"]);
        assert_eq!(m.place(4), Some(Place { grid: 0, row: 1, col: 1 }));
    }

    #[test]
    fn moves_stay_in_bounds_and_cross_grids() {
        let mut cells = decode(&[0, 1024], &[1, 2]);
        cells.push(summary(CellSpec::grid(ExperimentKind::Burst, 0, 1)));
        let m = MatrixModel::build(&cells);
        assert_eq!(m.step(0, Dir::Left), 0);
        assert_eq!(m.step(0, Dir::Up), 0);
        assert_eq!(m.step(0, Dir::Right), 1);
        assert_eq!(m.step(1, Dir::Right), 1);
        assert_eq!(m.step(1, Dir::Down), 3);
        assert_eq!(m.step(3, Dir::Down), 4, "into the burst grid, nearest column");
        assert_eq!(m.step(4, Dir::Down), 4);
        assert_eq!(m.step(4, Dir::Up), 2);
    }

    #[test]
    fn routing_rounds_share_route_columns() {
        let r = |round, scenario: &str, route: &str| {
            summary(CellSpec::phase(ExperimentKind::Routing, round, scenario, route))
        };
        let cells = vec![
            r(1, "hot90", "random"),
            r(1, "hot90", "prefix-cache"),
            r(2, "hot90", "prefix-cache"),
            r(2, "hot90", "random"),
        ];
        let m = MatrixModel::build(&cells);
        assert_eq!(m.grids.len(), 2);
        assert_eq!(m.grids[1].cols, ["random", "prefix-cache"]);
        assert_eq!(m.grids[1].cells[0], vec![Some(3), Some(2)]);
        assert_eq!(m.grids[0].title, "Routing round 1: good/requests tok/s (scenario x route)");
        let slo = crate::stats::Slo { ttft: Some(std::time::Duration::from_millis(500)), ..Default::default() };
        let slo = crate::report::goodput::PlanSlo::of(&slo, crate::report::goodput::SloSource::Demo);
        let named = MatrixModel::build_for(&cells, Some(&slo));
        assert_eq!(named.grids[0].title, "Routing round 1: good (TTFT ≤ 500 ms)/requests tok/s (scenario x route)");
    }
}
