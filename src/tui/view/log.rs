//! Log panel: the tui-logger widget in a live session, or the app's own lines (tests, benches).

use super::super::app::App;
use super::super::theme;
use super::widgets::{framed, panel};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;
use tui_logger::{TuiLoggerLevelOutput, TuiLoggerWidget};

/// Draws the log panel.
pub fn render(app: &App, area: Rect, buf: &mut Buffer) {
    if area.height < 3 {
        return;
    }
    if let Some(state) = &app.log_widget {
        TuiLoggerWidget::default()
            .block(panel("Log"))
            .style_error(theme::error())
            .style_warn(theme::warn())
            .style_info(theme::label())
            .output_timestamp(Some("%H:%M:%S".into()))
            .output_level(Some(TuiLoggerLevelOutput::Abbreviated))
            .output_target(false)
            .output_file(false)
            .output_line(false)
            .state(state)
            .render(area, buf);
        return;
    }
    let inner = framed(panel("Log"), area, buf);
    let rows = usize::from(inner.height);
    let skip = app.logs.len().saturating_sub(rows);
    for (i, l) in app.logs.iter().skip(skip).enumerate() {
        let style = if l.warn { theme::warn() } else { theme::label() };
        let line = Line::from(vec![
            Span::styled(format!("[{:7.1}s] ", l.at_s), theme::dim()),
            Span::styled(l.text.as_str(), style),
        ]);
        buf.set_line(inner.x, inner.y + i as u16, &line, inner.width);
    }
}
