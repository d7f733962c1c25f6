//! Matrix: every cell of the session in its grid, with its state and headline figure,
//! colour-coded; the running cell is marked `▶`, the selected one highlighted.

use super::super::app::App;
use super::super::grid::Grid;
use super::super::theme::{self, CellState};
use super::widgets::{fit, framed, panel};
use crate::cell::control::{CellId, Phase};
use crate::experiment::decode::knee::{GridKnee, row_knees};
use crate::experiment::record::Attempt;
use crate::report::skip::SkipKind;
use crate::report::status::AttemptStatus;
use crate::report::text::format::{NOT_RUN, SKIPPED, fmt_error_suffix, fmt_errored, fmt_running_suffix, fmt_tps};
use crate::session::snapshot::{CellSummary, Headline};
use crate::session::state::{CellSpec, CellStatus};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;
use unicode_width::UnicodeWidthStr;

/// Marker of the running cell.
pub(crate) const RUNNING_MARK: &str = "▶";
/// Text of a cell skipped by the operator.
pub(crate) const OPERATOR_SKIP: &str = "skip";
/// Marker of a row's knee cell (`experiment::decode::knee`), explained by a legend line.
pub(crate) const KNEE_MARK: &str = "⌃";
/// Legend under the grids, when there is room.
pub(crate) const LEGEND: &str =
    "▶ running  · pending  ↻ queued  ∅ no KV fit  *kv *seq *? limit  ! warmup timeout  (Ne) errors";

/// The colour state of a running cell in `phase`.
pub(crate) fn phase_state(phase: Phase) -> CellState {
    match phase {
        Phase::Idle | Phase::Warming | Phase::Priming => CellState::Warming,
        Phase::Measuring | Phase::Draining => CellState::Measuring,
        Phase::Paused => CellState::Paused,
    }
}

/// The headline text of a finished attempt: `146.7 (7/8)*kv`, `143.1 (2e)`, `68/96 184.9`.
pub(crate) fn headline_text(spec: &CellSpec, h: &Headline) -> String {
    match (spec, h.good) {
        (spec, Some((good, n))) if spec.is_phase() => {
            format!("{good}/{n} {}{}", fmt_tps(h.tps), if h.warm_cache { " W" } else { "" })
        }
        _ => format!(
            "{}{}{}{}",
            fmt_tps(h.tps),
            fmt_running_suffix(h.running_avg, h.requested, h.limit),
            fmt_error_suffix(h.errors),
            if h.warm_cache { " W" } else { "" }
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
pub(crate) fn cell_view(app: &App, id: CellId) -> (String, CellState) {
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
            Some(h) if h.limit.any() => (headline_text(&c.spec, h), CellState::Limited),
            Some(h) => (headline_text(&c.spec, h), CellState::Done),
            None => ("done".into(), CellState::Done),
        },
        CellStatus::Errored => (fmt_errored(h.map_or(0, |h| h.errors)), CellState::Failed),
        CellStatus::Skipped(s) => match s.kind {
            SkipKind::PastKnee => (crate::report::knee::PAST_KNEE.into(), CellState::Skipped),
            SkipKind::KvCache | SkipKind::ContextLength | SkipKind::Plan => (SKIPPED.into(), CellState::Skipped),
        },
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
pub(crate) fn height(app: &App, max: u16) -> u16 {
    let titled = app.model.grids.len() > 1;
    let rows: u16 = app.model.grids.iter().map(|g| grid_height(g, titled)).sum();
    (rows + 2).clamp(4, max.max(4))
}

/// Column widths of a grid: the row-label column, then one per column. When the whole texts do
/// not fit, each column keeps at least its header and the first word of its cells (`68/96`).
fn widths(app: &App, grid: &Grid, avail: u16) -> (u16, Vec<u16>) {
    let label_w = grid.rows.iter().map(|r| r.width()).chain([grid.corner.width()]).max().unwrap_or(3) as u16 + 1;
    let mut cols: Vec<u16> = grid.cols.iter().map(|c| c.width() as u16 + 2).collect();
    let mut least: Vec<u16> = grid.cols.iter().map(|c| c.width() as u16 + 1).collect();
    for row in &grid.cells {
        for (c, id) in row.iter().enumerate() {
            if let Some(id) = id {
                let text = cell_view(app, *id).0;
                let delta = super::baseline::matrix_delta(app, *id).map_or(0, |d| d.text().width() + 1);
                cols[c] = cols[c].max((text.width() + delta) as u16 + 2);
                let first = text.split(' ').find(|w| *w != "↻").unwrap_or("");
                least[c] = least[c].max(first.width() as u16 + 2);
            }
        }
    }
    // Room for the longest headline, `10595.0 (16/32)*seq (12e)`, whole when the width allows.
    let max = if app.session.baseline.is_some() { 32 } else { 26 };
    let cols: Vec<u16> = cols.into_iter().map(|w| w.clamp(6, max)).collect();
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
    let least: Vec<u16> = least.iter().zip(&cols).map(|(l, w)| (*l).clamp(5, *w)).collect();
    let least_total: u16 = least.iter().sum();
    if least_total > room {
        let each = (room / cols.len() as u16).max(5);
        return (label_w, cols.iter().map(|w| (*w).min(each)).collect());
    }
    let (mut out, mut spare) = (least, room - least_total);
    for (w, full) in out.iter_mut().zip(&cols) {
        let more = (full - *w).min(spare);
        (*w, spare) = (*w + more, spare - more);
    }
    (label_w, out)
}

/// The knee of every decode and serve row of the session that has one.
pub(crate) fn knees(app: &App) -> Vec<GridKnee> {
    use crate::report::kind::ExperimentKind;
    let (mut decode, mut serve) = (Vec::new(), Vec::new());
    for (id, c) in app.session.cells.iter().enumerate() {
        // As the headline reads the cell: with repetitions the mean of its runs.
        let shown = c.shown.as_deref();
        match c.spec.kind {
            ExperimentKind::Decode => {
                decode.push((id, &c.spec, shown.and_then(Attempt::as_decode), c.run_stats.get("aggregate_tok_s")))
            }
            ExperimentKind::Serve => {
                serve.push((id, &c.spec, shown.and_then(Attempt::as_serve), c.run_stats.get("output_tok_s")))
            }
            // Bursts and routing phases are not swept along a load axis; an extension has no
            // knee rule: no knee.
            ExperimentKind::Burst | ExperimentKind::Routing | ExperimentKind::Extension(_) => {}
        }
    }
    let mut out = row_knees(decode);
    out.extend(crate::experiment::serve::knee::serve_knees(serve));
    out
}

fn draw_cell(app: &App, id: CellId, knee: bool, (x, y, w): (u16, u16, u16), buf: &mut Buffer) {
    let (text, state) = cell_view(app, id);
    let running = app.session.current == Some(id);
    let mark = match (running, knee) {
        (true, _) => RUNNING_MARK,
        (false, true) => KNEE_MARK,
        (false, false) => " ",
    };
    let body = squeeze(&text, usize::from(w.saturating_sub(2)));
    buf.set_stringn(x, y, mark, 1, theme::cell(state));
    buf.set_stringn(x + 1, y, &body, usize::from(w.saturating_sub(1)), theme::cell(state));
    if app.selected == Some(id) {
        let area = Rect { x, y, width: (body.width() as u16 + 1).min(w.saturating_sub(1)).max(2), height: 1 };
        buf.set_style(area, theme::selected());
    }
    // The delta against --baseline, after the figure, when the whole text was drawn and fits.
    if let Some(d) = super::baseline::matrix_delta(app, id).filter(|_| body == text) {
        let (dx, t) = (x + 1 + body.width() as u16 + 1, d.text());
        if dx + (t.width() as u16) < x + w {
            buf.set_stringn(dx, y, &t, t.width(), super::baseline::style(d.change));
        }
    }
}

/// Draws one grid from `y`; returns the next free line.
fn draw_grid(
    app: &App,
    grid: &Grid,
    titled: bool,
    knees: &[GridKnee],
    area: Rect,
    mut y: u16,
    buf: &mut Buffer,
) -> u16 {
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
                draw_cell(app, id, knees.iter().any(|k| k.id == id), (x, y, w), buf);
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

/// What the panel shows at this size and what it leaves out.
struct Fit {
    /// Grids before the first drawn.
    above: usize,
    /// Grids drawn (the last may be cut).
    shown: usize,
    /// Grids after the last drawn.
    below: usize,
    /// Rows of the last drawn grid cut off at the bottom.
    cut_rows: usize,
    /// The legend, wrapped to the width, when it has room (after a blank line).
    legend: Vec<String>,
}

fn fit_grids(app: &App, rows: u16, width: u16, knees: &[GridKnee]) -> Fit {
    let grids = &app.model.grids;
    let titled = grids.len() > 1;
    let above = first_grid(app, rows);
    let (mut used, mut shown, mut cut_rows) = (0, 0, 0);
    for g in &grids[above..] {
        let h = grid_height(g, titled);
        if used + h > rows {
            if shown == 0 {
                (shown, cut_rows, used) = (1, usize::from(h - rows), rows);
            }
            break;
        }
        (used, shown) = (used + h, shown + 1);
    }
    let mut legend = crate::report::text::wrap(LEGEND, usize::from(width.max(1)));
    for k in knees {
        legend
            .extend(crate::report::text::wrap(&format!("{KNEE_MARK} {}", k.row.footnote()), usize::from(width.max(1))));
    }
    let legend = if used + (legend.len() as u16) < rows { legend } else { Vec::new() };
    Fit { above, shown, below: grids.len() - above - shown, cut_rows, legend }
}

/// The bottom-border note of what is hidden: ` ▲ 1 grid above (select to show) · ? legend `.
fn hidden_note(f: &Fit) -> Option<String> {
    let grids = |n: usize| if n == 1 { "1 grid".to_string() } else { format!("{n} grids") };
    let mut parts = Vec::new();
    if f.above > 0 {
        parts.push(format!("▲ {} above", grids(f.above)));
    }
    if f.cut_rows > 0 {
        parts.push(format!("▼ {} more rows", f.cut_rows));
    }
    if f.below > 0 {
        parts.push(format!("▼ {} below", grids(f.below)));
    }
    if let Some(last) = parts.last_mut().filter(|_| f.above + f.below + f.cut_rows > 0) {
        last.push_str(" (select to show)");
    }
    if f.legend.is_empty() {
        parts.push("? legend".to_string());
    }
    (!parts.is_empty()).then(|| format!(" {} ", parts.join(" · ")))
}

/// Draws the matrix panel. What does not fit is named on the bottom border.
pub(crate) fn render(app: &App, area: Rect, buf: &mut Buffer) {
    let grids = &app.model.grids;
    let mut title = match grids.as_slice() {
        [only] => only.title.clone(),
        _ => "Matrix".to_string(),
    };
    if let Some(slo) = &app.session.slo {
        // The SLO as `--goodput` takes it when the sentence does not fit the border.
        let full = format!("{title} · {}", slo.describe());
        title = match full.chars().count() + 4 > usize::from(area.width) {
            true => format!("{title} · SLO {}", slo.slo().goodput_arg()),
            false => full,
        };
    }
    let knees = knees(app);
    let f = fit_grids(app, area.height.saturating_sub(2), area.width.saturating_sub(2), &knees);
    let mut block = panel(title);
    if let Some(note) = hidden_note(&f).filter(|_| !grids.is_empty()) {
        let note = fit(&note, usize::from(area.width.saturating_sub(4)));
        block = block.title_bottom(Line::styled(note, theme::dim()));
    }
    let inner = framed(block, area, buf);
    if grids.is_empty() {
        buf.set_line(inner.x, inner.y, &Line::styled("no cells planned", theme::dim()), inner.width);
        return;
    }
    let titled = grids.len() > 1;
    let mut y = inner.y;
    for grid in &grids[f.above..f.above + f.shown] {
        y = draw_grid(app, grid, titled, &knees, inner, y, buf);
    }
    let top = inner.bottom().saturating_sub(f.legend.len() as u16);
    for (i, line) in f.legend.iter().enumerate() {
        buf.set_stringn(inner.x, top + i as u16, line.trim_end(), usize::from(inner.width), theme::dim());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::kind::ExperimentKind;

    #[test]
    fn a_warm_cell_or_phase_is_marked_w() {
        let cell = CellSpec::grid(ExperimentKind::Decode, 16_384, 4);
        let phase = CellSpec::phase(ExperimentKind::Routing, 1, "cold-uniform", "random");
        let cold = Headline { tps: 146.7, requested: 4, ..Headline::default() };
        let warm = Headline { warm_cache: true, ..cold.clone() };
        assert_eq!((headline_text(&cell, &cold), headline_text(&cell, &warm)), ("146.7".into(), "146.7 W".into()));
        let (cold, warm) = (Headline { good: Some((68, 96)), ..cold }, Headline { good: Some((68, 96)), ..warm });
        assert_eq!(
            (headline_text(&phase, &cold), headline_text(&phase, &warm)),
            ("68/96 146.7".into(), "68/96 146.7 W".into())
        );
    }
}
