//! Colours and styles of the monitor, kept in one place so panels agree on what a colour means.

use ratatui::style::{Color, Modifier, Style};

/// What a matrix cell shows, as far as colour is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CellState {
    /// Not run yet.
    Pending,
    /// Queued again (re-run) or put back after a pause; its previous result is shown dimmed.
    Queued,
    /// Running, waiting for the engine to admit the streams (or priming caches).
    Warming,
    /// Running, inside the measurement window (or draining).
    Measuring,
    /// The latest attempt was paused by the operator.
    Paused,
    /// Measured.
    Done,
    /// Measured, but capacity-limited or the warmup timed out.
    Limited,
    /// Every request failed.
    Failed,
    /// Skipped because it cannot fit in the KV cache.
    Skipped,
    /// Skipped by the operator.
    OperatorSkipped,
}

/// Style of a cell in `state`.
pub(crate) fn cell(state: CellState) -> Style {
    let s = Style::new();
    match state {
        CellState::Pending => s.fg(Color::DarkGray),
        CellState::Queued => s.fg(Color::Gray).add_modifier(Modifier::DIM),
        CellState::Warming => s.fg(Color::Yellow).add_modifier(Modifier::BOLD),
        CellState::Measuring => s.fg(Color::Cyan).add_modifier(Modifier::BOLD),
        CellState::Paused => s.fg(Color::Magenta),
        CellState::Done => s.fg(Color::Green),
        CellState::Limited => s.fg(Color::LightYellow),
        CellState::Failed => s.fg(Color::Red),
        CellState::Skipped => s.fg(Color::DarkGray),
        CellState::OperatorSkipped => s.fg(Color::Gray).add_modifier(Modifier::ITALIC),
    }
}

/// The selected cell (drawn over its state colour).
pub(crate) fn selected() -> Style {
    Style::new().add_modifier(Modifier::REVERSED)
}

/// Panel borders.
pub(crate) fn border() -> Style {
    Style::new().fg(Color::DarkGray)
}

/// Panel titles.
pub(crate) fn title() -> Style {
    Style::new().fg(Color::White).add_modifier(Modifier::BOLD)
}

/// Labels in front of values.
pub(crate) fn label() -> Style {
    Style::new().fg(Color::Gray)
}

/// Secondary text.
pub(crate) fn dim() -> Style {
    Style::new().fg(Color::DarkGray)
}

/// Emphasised values.
pub(crate) fn value() -> Style {
    Style::new().fg(Color::White).add_modifier(Modifier::BOLD)
}

/// Warnings (client lag, stale metrics, dropped events).
pub(crate) fn warn() -> Style {
    Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD)
}

/// Errors.
pub(crate) fn error() -> Style {
    Style::new().fg(Color::Red).add_modifier(Modifier::BOLD)
}

/// The session state badge: running, paused, done, stopping.
pub(crate) fn badge(state: &str) -> Style {
    let fg = match state {
        "RUNNING" => Color::Green,
        "PAUSED" => Color::Magenta,
        "DONE" => Color::Blue,
        _ => Color::Yellow,
    };
    Style::new().fg(Color::Black).bg(fg).add_modifier(Modifier::BOLD)
}

/// Filled part of a bar gauge by fill ratio (green, then yellow, then red).
pub(crate) fn gauge(ratio: f64) -> Style {
    let fg = if ratio >= 0.9 {
        Color::Red
    } else if ratio >= 0.7 {
        Color::Yellow
    } else {
        Color::Green
    };
    Style::new().fg(fg)
}

/// Sparklines.
pub(crate) fn spark() -> Style {
    Style::new().fg(Color::Cyan)
}

/// The hot prompt family and the replica that owns a prefix.
pub(crate) fn hot() -> Style {
    Style::new().fg(Color::LightRed).add_modifier(Modifier::BOLD)
}

/// Key names in the key bar and help.
pub(crate) fn key() -> Style {
    Style::new().fg(Color::Black).bg(Color::Gray)
}
