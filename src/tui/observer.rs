//! The observer's monitor screen (`run --observe` on a terminal): a header with the note that
//! nothing is sent to the shards, a per-shard health strip, the cells table summed over shards,
//! the summed tok/s of the busiest active cell over time, and the latest health changes.

use std::collections::{BTreeMap, VecDeque};

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Row, Sparkline, Table};

use crate::metrics::observe::health::ShardState;
use crate::metrics::observe::{CellFigures, Latency, View};

/// Polls of summed tok/s kept per cell for the sparkline.
const HISTORY: usize = 240;
/// Log lines kept.
const LOG_LINES: usize = 50;

/// The note the header always shows.
pub const NOT_SENT: &str = "observer: sends nothing to the shards; pause, skip and knob do not cross shards";

/// What the screen shows.
#[derive(Debug, Clone, Default)]
pub struct ObserverScreen {
    /// The header's first line (server, selector, scrape interval).
    pub title: String,
    /// The replicas' line (`replicas: NAME running N, waiting N, KV P%; ...`), empty when not read.
    pub replicas: String,
    /// The last poll's cells.
    pub cells: BTreeMap<String, CellFigures>,
    /// Summed tok/s per cell, one value per poll while it was active, oldest first.
    pub history: BTreeMap<String, VecDeque<u64>>,
    /// Every shard seen.
    pub shards: BTreeMap<String, ShardState>,
    /// Health changes and notes, oldest first.
    pub log: VecDeque<String>,
}

impl ObserverScreen {
    /// Takes one poll's view and the shards' states after it.
    pub fn take(&mut self, view: &View, shards: &BTreeMap<String, ShardState>) {
        self.cells.clone_from(&view.cells);
        self.shards.clone_from(shards);
        for (cell, c) in view.cells.iter().filter(|(_, c)| c.is_active()) {
            let h = self.history.entry(cell.clone()).or_default();
            h.push_back(c.tok_s.unwrap_or(0.0).max(0.0).round() as u64);
            if h.len() > HISTORY {
                h.pop_front();
            }
        }
    }

    /// Adds a line to the log panel.
    pub fn note(&mut self, line: String) {
        self.log.push_back(line);
        if self.log.len() > LOG_LINES {
            self.log.pop_front();
        }
    }
}

/// What a key does on the observer's screen: `Some(true)` quits, `Some(false)` is a key the
/// session monitor acts on but the observer cannot (a note is logged), `None` nothing.
pub fn key_action(c: char) -> Option<bool> {
    match c {
        'q' => Some(true),
        'p' | 's' | 'k' | 'r' | '+' | '-' | ' ' => Some(false),
        _ => None,
    }
}

/// The note logged for a control key the observer does not send.
pub fn not_sent_note(c: char) -> String {
    format!(
        "`{c}`: not sent: the observer does not control the shards (each runs its own plan); use the shards' own monitors"
    )
}

fn ms(s: Option<f64>) -> String {
    s.map_or_else(|| "-".into(), |s| format!("{:.1}", s * 1e3))
}

fn shard_span(name: &str, s: &ShardState) -> Span<'static> {
    let (text, color) = match (s.finished, s.stale) {
        (true, _) => (format!(" {name} done "), Color::Blue),
        (_, true) => (format!(" {name} ~stale "), Color::Red),
        _ => (format!(" {name} up "), Color::Green),
    };
    Span::styled(text, Style::default().fg(color).add_modifier(Modifier::BOLD))
}

fn cell_row<'a>(cell: &'a str, c: &CellFigures) -> Row<'a> {
    let errors: f64 = c.errors.values().fold(0.0, |a, b| a + b);
    let q = |l, q| ms(c.quantile(l, q));
    let style = if c.is_active() { Style::default() } else { Style::default().add_modifier(Modifier::DIM) };
    Row::new(vec![
        cell.to_string(),
        c.tok_s.map_or_else(|| "-".into(), |t| format!("{t:.1}")),
        format!("{}", c.running),
        format!("{}", c.active_shards),
        format!("{}", c.started),
        format!("{}", c.completed),
        format!("{errors}"),
        format!("{} / {}", q(Latency::Ttft, 0.5), q(Latency::Ttft, 0.99)),
        format!("{} / {}", q(Latency::Itl, 0.5), q(Latency::Itl, 0.99)),
        format!("{} / {}", q(Latency::Tpot, 0.5), q(Latency::Tpot, 0.99)),
    ])
    .style(style)
}

/// Draws the whole screen.
pub fn draw(f: &mut Frame, s: &ObserverScreen) {
    let [head, strip, table, spark, log] = Layout::vertical([
        Constraint::Length(3),
        Constraint::Length(3),
        Constraint::Min(5),
        Constraint::Length(5),
        Constraint::Length(6),
    ])
    .areas(f.area());
    let note = Line::styled(NOT_SENT, Style::default().fg(Color::Yellow));
    let replicas = Line::raw(if s.replicas.is_empty() {
        "replicas: not read (--metrics-url or --replica-selector)"
    } else {
        s.replicas.as_str()
    });
    f.render_widget(Paragraph::new(vec![Line::raw(s.title.clone()), note, replicas]), head);
    let mut spans: Vec<Span> = s.shards.iter().map(|(n, st)| shard_span(n, st)).collect();
    if spans.is_empty() {
        spans.push(Span::raw(" no shard seen yet"));
    }
    let strip_block = Block::default().borders(Borders::ALL).title(" shards ");
    f.render_widget(Paragraph::new(Line::from(spans)).block(strip_block), strip);
    let header = Row::new([
        "cell",
        "tok/s",
        "running",
        "shards",
        "sent",
        "done",
        "errors",
        "TTFT ms p50/p99",
        "ITL ms p50/p99",
        "TPOT ms p50/p99",
    ])
    .style(Style::default().add_modifier(Modifier::BOLD));
    let widths = [18, 10, 8, 7, 8, 8, 7, 16, 15, 16].map(Constraint::Length);
    let rows = s.cells.iter().map(|(cell, c)| cell_row(cell, c));
    let title = " cells, summed over shards (quantiles from summed buckets over the rate window) ";
    f.render_widget(
        Table::new(rows, widths).header(header).block(Block::default().borders(Borders::ALL).title(title)),
        table,
    );
    let busiest = s
        .cells
        .iter()
        .filter(|(_, c)| c.is_active())
        .max_by(|a, b| a.1.tok_s.partial_cmp(&b.1.tok_s).unwrap_or(std::cmp::Ordering::Equal));
    let (name, data) = match busiest.and_then(|(n, _)| Some((n.as_str(), s.history.get(n)?))) {
        Some((n, h)) => (n, h.iter().copied().collect::<Vec<u64>>()),
        None => ("no active cell", Vec::new()),
    };
    let spark_block = Block::default().borders(Borders::ALL).title(format!(" tok/s summed: {name} "));
    f.render_widget(Sparkline::default().block(spark_block).data(&data), spark);
    let lines: Vec<Line> = s
        .log
        .iter()
        .rev()
        .take(usize::from(log.height.saturating_sub(2)))
        .rev()
        .map(|l| Line::raw(l.clone()))
        .collect();
    let log_block = Block::default().borders(Borders::ALL).title(" shard health (q quits) ");
    f.render_widget(Paragraph::new(lines).block(log_block), log);
}

#[cfg(test)]
#[path = "observer_tests.rs"]
mod tests;
