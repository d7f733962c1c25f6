//! Matrix: every cell of the session in its grid, with its state and headline figure,
//! colour-coded; the running cell is marked `▶`, the selected one highlighted.

use super::super::app::App;
use super::super::grid::Grid;
use super::super::theme::{self, CellState};
use super::widgets::{fit, framed, panel};
use crate::cell::control::{CellId, Phase};
use crate::report::status::AttemptStatus;
use crate::report::text::format::{NOT_RUN, SKIPPED, fmt_error_suffix, fmt_errored, fmt_running_suffix, fmt_tps};
use crate::session::snapshot::{CellSummary, Headline};
use crate::session::state::{CellSpec, CellStatus};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;
use unicode_width::UnicodeWidthStr;

/// Marker of the running cell.
pub const RUNNING_MARK: &str = "▶";
/// Text of a cell skipped by the operator.
pub const OPERATOR_SKIP: &str = "skip";
/// Legend under the grids, when there is room.
pub const LEGEND: &str =
    "▶ running  · pending  ↻ queued again  ∅ no KV fit  skip by operator  (X/Y)* capacity-limited  (Ne) errors";

/// The colour state of a running cell in `phase`.
pub fn phase_state(phase: Phase) -> CellState {
    match phase {
        Phase::Idle | Phase::Warming | Phase::Priming => CellState::Warming,
        Phase::Measuring | Phase::Draining => CellState::Measuring,
        Phase::Paused => CellState::Paused,
    }
}

/// The headline text of a finished attempt: `146.7 (7/8)*`, `143.1 (2e)`, `68/96 184.9`.
pub fn headline_text(spec: &CellSpec, h: &Headline) -> String {
    match (spec, h.good) {
        (spec, Some((good, n))) if spec.is_phase() => format!("{good}/{n} {}", fmt_tps(h.tps)),
        _ => format!(
            "{}{}{}",
            fmt_tps(h.tps),
            fmt_running_suffix(h.running_avg, h.requested, h.capacity_limited),
            fmt_error_suffix(h.errors)
        ),
    }
}

fn running_view(app: &App, id: CellId, c: &CellSummary) -> (String, CellState) {
    if app.live.cell != Some(id) {
        return ("…".into(), CellState::Warming);
    }
    let l = &app.live;
    let text = match c.spec.is_phase() {
        true => format!("{}/{} {}", l.totals.completed, l.requested, fmt_tps(l.tps)),
        false => fmt_tps(l.tps),
    };
    (text, phase_state(l.phase))
}

/// What a cell shows and its colour state.
pub fn cell_view(app: &App, id: CellId) -> (String, CellState) {
    let Some(c) = app.session.cells.get(id) else { return (String::new(), CellState::Pending) };
    let h = c.headline.as_ref();
    match &c.status {
        CellStatus::Running => running_view(app, id, c),
        CellStatus::Pending => match h {
            None => (NOT_RUN.into(), CellState::Pending),
            Some(h) if h.status == AttemptStatus::Paused => ("paused".into(), CellState::Paused),
            Some(h) => (format!("↻ {}", headline_text(&c.spec, h)), CellState::Queued),
        },
        CellStatus::Measured => match h {
            Some(h) if h.capacity_limited => (headline_text(&c.spec, h), CellState::Limited),
            Some(h) => (headline_text(&c.spec, h), CellState::Done),
            None => ("done".into(), CellState::Done),
        },
        CellStatus::Errored => (fmt_errored(h.map_or(0, |h| h.errors)), CellState::Failed),
        CellStatus::Skipped(_) => (SKIPPED.into(), CellState::Skipped),
        CellStatus::SkippedByOperator => (OPERATOR_SKIP.into(), CellState::OperatorSkipped),
    }
}

/// `text` within `width`: whole, else its first word (`740.2`, `68/96`), else cut.
fn squeeze(text: &str, width: usize) -> String {
    if text.width() <= width {
        return text.to_string();
    }
    match text.split_once(' ') {
        Some((first, _)) if first.width() <= width && first != "↻" => first.to_string(),
        _ => fit(text, width),
    }
}

/// Lines a grid takes: its title (when there are several grids), the header and its rows.
fn grid_height(grid: &Grid, titled: bool) -> u16 {
    (grid.rows.len() + 1 + usize::from(titled)) as u16
}

/// Height the matrix panel would like, borders included (at most `max`).
pub fn height(app: &App, max: u16) -> u16 {
    let titled = app.model.grids.len() > 1;
    let rows: u16 = app.model.grids.iter().map(|g| grid_height(g, titled)).sum();
    (rows + 2).clamp(4, max.max(4))
}

/// Column widths of a grid: the row-label column, then one per column.
fn widths(app: &App, grid: &Grid, avail: u16) -> (u16, Vec<u16>) {
    let label_w = grid.rows.iter().map(|r| r.width()).chain([grid.corner.width()]).max().unwrap_or(3) as u16 + 1;
    let mut cols: Vec<u16> = grid.cols.iter().map(|c| c.width() as u16 + 2).collect();
    for row in &grid.cells {
        for (c, id) in row.iter().enumerate() {
            if let Some(id) = id {
                cols[c] = cols[c].max(cell_view(app, *id).0.width() as u16 + 2);
            }
        }
    }
    let cols: Vec<u16> = cols.into_iter().map(|w| w.clamp(6, 18)).collect();
    let total: u16 = cols.iter().sum();
    let room = avail.saturating_sub(label_w);
    if cols.is_empty() {
        return (label_w, cols);
    }
    if total <= room {
        // Spread spare room over the columns, up to a comfortable width.
        let even = (room / cols.len() as u16).min(16);
        return (label_w, cols.into_iter().map(|w| w.max(even)).collect());
    }
    let each = (room / cols.len() as u16).max(5);
    (label_w, cols.iter().map(|w| (*w).min(each)).collect())
}

fn draw_cell(app: &App, id: CellId, x: u16, y: u16, w: u16, buf: &mut Buffer) {
    let (text, state) = cell_view(app, id);
    let running = app.session.current == Some(id);
    let mark = if running { RUNNING_MARK } else { " " };
    let body = squeeze(&text, usize::from(w.saturating_sub(2)));
    buf.set_stringn(x, y, mark, 1, theme::cell(state));
    buf.set_stringn(x + 1, y, &body, usize::from(w.saturating_sub(1)), theme::cell(state));
    if app.selected == Some(id) {
        let area = Rect { x, y, width: (body.width() as u16 + 1).min(w.saturating_sub(1)).max(2), height: 1 };
        buf.set_style(area, theme::selected());
    }
}

/// Draws one grid from `y`; returns the next free line.
fn draw_grid(app: &App, grid: &Grid, titled: bool, area: Rect, mut y: u16, buf: &mut Buffer) -> u16 {
    if titled && y < area.bottom() {
        buf.set_stringn(area.x, y, &grid.title, usize::from(area.width), theme::label());
        y += 1;
    }
    let (label_w, cols) = widths(app, grid, area.width);
    if y < area.bottom() {
        buf.set_stringn(area.x, y, &grid.corner, usize::from(label_w), theme::dim());
        let mut x = area.x + label_w;
        for (c, w) in grid.cols.iter().zip(&cols) {
            let room = usize::from(w.saturating_sub(1)).min(usize::from(area.right().saturating_sub(x + 1)));
            buf.set_stringn(x + 1, y, fit(c, room), room, theme::title());
            x += w;
        }
        y += 1;
    }
    for (r, label) in grid.rows.iter().enumerate() {
        if y >= area.bottom() {
            break;
        }
        buf.set_stringn(area.x, y, label, usize::from(label_w), theme::label());
        let mut x = area.x + label_w;
        for (c, w) in cols.iter().enumerate() {
            let w = (*w).min(area.right().saturating_sub(x));
            if let Some(id) = grid.cells[r][c].filter(|_| w > 1) {
                draw_cell(app, id, x, y, w, buf);
            }
            x += w;
        }
        y += 1;
    }
    y
}

/// The first grid to draw: everything when it fits, else from the selected cell's grid.
fn first_grid(app: &App, rows: u16) -> usize {
    let titled = app.model.grids.len() > 1;
    let total: u16 = app.model.grids.iter().map(|g| grid_height(g, titled)).sum();
    if total <= rows {
        return 0;
    }
    let focus = app.selected.or(app.session.current);
    focus.and_then(|id| app.model.place(id)).map_or(0, |p| p.grid)
}

/// Draws the matrix panel.
pub fn render(app: &App, area: Rect, buf: &mut Buffer) {
    let grids = &app.model.grids;
    let title = match grids.as_slice() {
        [only] => only.title.clone(),
        _ => "Matrix".to_string(),
    };
    let inner = framed(panel(title), area, buf);
    if grids.is_empty() {
        buf.set_line(inner.x, inner.y, &Line::styled("no cells planned", theme::dim()), inner.width);
        return;
    }
    let titled = grids.len() > 1;
    let mut y = inner.y;
    for grid in &grids[first_grid(app, inner.height)..] {
        if y >= inner.bottom() {
            break;
        }
        y = draw_grid(app, grid, titled, inner, y, buf);
    }
    if y + 1 < inner.bottom() {
        buf.set_stringn(inner.x, inner.bottom() - 1, LEGEND, usize::from(inner.width), theme::dim());
    }
}
