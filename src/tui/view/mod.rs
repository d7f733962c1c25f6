//! Drawing the monitor: one file per panel, laid out for the terminal size. Views read the
//! [`App`] only; elapsed times come from `App::now`, never from the wall clock.

pub(crate) mod baseline;
pub(crate) mod detail;
pub(crate) mod fleet;
pub(crate) mod header;
pub(crate) mod help;
pub(crate) mod keybar;
pub(crate) mod live;
pub(crate) mod log;
pub(crate) mod matrix;
pub(crate) mod owners;
pub(crate) mod replicas;
pub(crate) mod routing;
pub(crate) mod serve_detail;
pub(crate) mod slo_search;
pub(crate) mod sweep;
pub(crate) mod turns;
pub(crate) mod widgets;

use super::app::{App, Mode};
use super::theme;
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

/// Smallest terminal the dashboard is drawn on.
pub(crate) const MIN_WIDTH: u16 = 80;
/// Smallest terminal height the dashboard is drawn on.
pub(crate) const MIN_HEIGHT: u16 = 24;

/// Where each panel goes on this frame.
#[derive(Debug, Default, Clone, Copy)]
struct Areas {
    matrix: Rect,
    live: Rect,
    replicas: Rect,
    owners: Option<Rect>,
    routing: Option<Rect>,
    /// The experiment's own panel (an SLO search's, or a conversation's Turns).
    side: Option<Rect>,
    log: Rect,
}

/// The width and height of the experiment's own panel, when the shown attempt has one: an SLO
/// search's, else a conversation's Turns.
fn side(app: &App) -> Option<(u16, u16)> {
    if slo_search::live(app).is_some() {
        return Some((slo_search::WIDTH, slo_search::height(app)));
    }
    turns::live(app).is_some().then(|| (turns::WIDTH, turns::height(app)))
}

fn is_routing(app: &App, cell: Option<usize>) -> bool {
    cell.and_then(|c| app.session.cells.get(c)).is_some_and(|c| c.spec.is_phase())
}

/// True when the routing panels have something to show: the running cell routes across
/// replicas, or the running or selected cell is a routing phase.
pub(crate) fn routing_context(app: &App) -> bool {
    !app.live.families.is_empty()
        || !app.live.routing.is_empty()
        || is_routing(app, app.session.current)
        || is_routing(app, app.selected)
}

/// True when the session has routing phases (the wide layout keeps their panels in place).
pub(crate) fn routing_session(app: &App) -> bool {
    routing_context(app) || app.session.cells.iter().any(|c| c.spec.is_phase())
}

/// Splits `area` into a left and right part, the left `pct` percent wide.
fn split(area: Rect, pct: u16) -> [Rect; 2] {
    Layout::horizontal([Constraint::Percentage(pct), Constraint::Min(0)]).areas(area)
}

/// Up to 80x?: matrix (| owners) / live | replicas / (routing |) log.
fn compact(app: &App, body: Rect) -> Areas {
    let routing = routing_context(app);
    let owners_h = if routing { owners::height(app) } else { 0 };
    let top_h = matrix::height(app, body.height).max(owners_h).min(body.height * 45 / 100).max(5);
    let mid_h = replicas::height(app).max(live::HEIGHT).min(body.height.saturating_sub(top_h + 3)).max(5);
    let [top, mid, bottom] =
        Layout::vertical([Constraint::Length(top_h), Constraint::Length(mid_h), Constraint::Min(0)]).areas(body);
    let [live, replicas] = split(mid, 45);
    let mut a = Areas { matrix: top, live, replicas, log: bottom, ..Areas::default() };
    if routing {
        let [m, o] = Layout::horizontal([Constraint::Min(40), Constraint::Length(owners::width(app))]).areas(top);
        let [r, l] = split(bottom, 50);
        (a.matrix, a.owners, a.routing, a.log) = (m, Some(o), Some(r), l);
    } else if let Some((width, _)) = side(app) {
        let [m, t] = Layout::horizontal([Constraint::Min(40), Constraint::Length(width)]).areas(top);
        (a.matrix, a.side) = (m, Some(t));
    }
    a
}

/// 120x36 and up: matrix | live / replicas (| owners) / (routing |) log.
fn wide(app: &App, body: Rect) -> Areas {
    let routing = routing_session(app);
    let top_h =
        matrix::height(app, body.height).max(live::HEIGHT_WIDE).max(body.height / 3).min(body.height * 45 / 100);
    let mut mid_h = replicas::height(app);
    if routing {
        mid_h = mid_h.max(owners::height(app));
    }
    let own = side(app).filter(|_| !routing);
    if let Some((_, h)) = own {
        mid_h = mid_h.max(h);
    }
    let mid_h = mid_h.min(body.height.saturating_sub(top_h + 4));
    let [top, mid, bottom] =
        Layout::vertical([Constraint::Length(top_h), Constraint::Length(mid_h), Constraint::Min(0)]).areas(body);
    let [matrix, live] = split(top, 60);
    let mut a = Areas { matrix, live, replicas: mid, log: bottom, ..Areas::default() };
    if routing {
        let [r, o] = split(mid, 55);
        let [rt, l] = split(bottom, 45);
        (a.replicas, a.owners, a.routing, a.log) = (r, Some(o), Some(rt), l);
    } else if let Some((width, _)) = own {
        let [r, t] = Layout::horizontal([Constraint::Min(40), Constraint::Length(width)]).areas(mid);
        (a.replicas, a.side) = (r, Some(t));
    }
    a
}

fn too_small(area: Rect, buf: &mut Buffer) {
    let msg = [
        Line::styled("Terminal too small", theme::warn()),
        Line::from(format!("need at least {MIN_WIDTH}x{MIN_HEIGHT}, have {}x{}", area.width, area.height)),
        Line::styled("the session keeps running; q quits", theme::dim()),
    ];
    let y = area.y + area.height.saturating_sub(3) / 2;
    for (i, line) in msg.iter().enumerate() {
        let x = area.x + area.width.saturating_sub(line.width() as u16) / 2;
        if y + (i as u16) < area.bottom() {
            buf.set_line(x, y + i as u16, line, area.width);
        }
    }
}

fn confirm_quit(area: Rect, buf: &mut Buffer) {
    let inner = widgets::popup(area, 52, 5, widgets::panel("Quit"), buf);
    let lines = [
        Line::from("Stop the session and write the report?"),
        Line::from(vec![
            Span::styled(" y ", theme::key()),
            Span::raw(" stop and quit   "),
            Span::styled(" n ", theme::key()),
            Span::raw(" keep running"),
        ]),
    ];
    widgets::lines(inner.inner(ratatui::layout::Margin::new(1, 0)), buf, &lines);
}

impl Widget for &App {
    fn render(self, area: Rect, buf: &mut Buffer) {
        if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
            too_small(area, buf);
            return;
        }
        let head_h = if self.set_line.is_some() { 3 } else { 2 };
        let [head, body, keys] =
            Layout::vertical([Constraint::Length(head_h), Constraint::Min(0), Constraint::Length(1)]).areas(area);
        header::render(self, head, buf);
        if head.height > 2 {
            sweep::render(self, Rect { y: head.y + 2, height: 1, ..head }, buf);
        }
        keybar::render(self, keys, buf);
        let a = if area.width >= 120 && area.height >= 36 { wide(self, body) } else { compact(self, body) };
        matrix::render(self, a.matrix, buf);
        live::render(self, a.live, buf);
        replicas::render(self, a.replicas, buf);
        if let Some(o) = a.owners {
            owners::render(self, o, buf);
        }
        if let Some(r) = a.routing {
            routing::render(self, r, buf);
        }
        if let Some(t) = a.side {
            match slo_search::live(self) {
                Some(_) => slo_search::render(self, t, buf),
                None => turns::render(self, t, buf),
            }
        }
        log::render(self, a.log, buf);
        match self.mode {
            Mode::Normal => {}
            Mode::Help => help::render(self, area, buf),
            Mode::Detail => detail::render(self, body, buf),
            Mode::ConfirmQuit => confirm_quit(body, buf),
        }
        scrub(area, buf);
    }
}

/// The last guard before the terminal: no cell keeps a character `crate::text_safe` calls
/// unsafe (ratatui drops control characters itself, not bidi overrides); server text drawn
/// through the views' own escapes never gets here.
fn scrub(area: Rect, buf: &mut Buffer) {
    use crate::text_safe::is_unsafe;
    for y in area.top()..area.bottom() {
        for x in area.left()..area.right() {
            let cell = &mut buf[(x, y)];
            if cell.symbol().chars().any(is_unsafe) {
                let kept: String = cell.symbol().chars().filter(|c| !is_unsafe(*c)).collect();
                cell.set_symbol(if kept.is_empty() { " " } else { &kept });
            }
        }
    }
}
