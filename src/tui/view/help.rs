//! Help: every key, the matrix notation and each panel's legend, scrolled with ↑↓ PgUp PgDn.

use super::super::app::App;
use super::super::theme;
use super::widgets::{lines, panel, popup};
use ratatui::buffer::Buffer;
use ratatui::layout::{Margin, Rect};
use ratatui::text::{Line, Span};

/// Keys and what they do.
pub(crate) const KEYS: [(&str, &str); 16] = [
    ("p", "pause the load now (the attempt is kept as paused) / resume"),
    ("s", "skip the running cell, or the selected pending cell"),
    ("r", "re-run the selected finished cell next (attempts are kept)"),
    ("w", "write the report now"),
    ("+ / -", "turn the running decode cell's load up / down (--knob-step)"),
    ("x", "skip the running parameter set of a sweep (--server-cmd)"),
    ("←↓↑→ hjkl", "select a cell"),
    ("f", "let the selection follow the running cell again"),
    ("PgDn PgUp", "next / previous page of replicas (many replicas)"),
    ("o", "order replicas by name / by load (busiest first)"),
    ("Enter", "open / close the selected cell's detail"),
    ("q", "stop the session, write the report and quit (asks first)"),
    ("Ctrl-C", "the same without asking; twice leaves at once"),
    ("?", "open / close this help"),
    ("Esc", "close help or detail"),
    ("", "every action goes into the report with its time"),
];

/// Matrix notation.
pub(crate) const NOTATION: [(&str, &str); 15] = [
    ("146.7", "aggregate tok/s of the window (routing: good/req tok/s)"),
    ("(X/Y)", "avg running / requested concurrency (Prometheus)"),
    ("", "no mark: fewer ran, no limit seen (errors, turnover)"),
    ("*kv *seq", "held back by the KV cache / by max_num_seqs"),
    ("*?", "held back by a limit the metrics do not name"),
    ("!", "warmup timed out: a measurement failure, not a server limit"),
    ("0.0 (Ne)", "N requests errored"),
    ("W", "warm cache: the prefix cache served more than the cell's prompts share"),
    ("∅", "skipped: does not fit the KV cache or max_model_len"),
    ("»", "not run: past its row's knee (--stop-at-knee)"),
    ("⌃", "the row's knee: tok/s stopped rising as TTFT or queue rose"),
    ("skip", "skipped by the operator"),
    ("·", "pending; ↻ queued again (previous result shown)"),
    ("▶", "running (yellow: warming, cyan: measuring)"),
    ("~", "stale replica metrics"),
];

/// What each panel's short labels mean.
pub(crate) const PANELS: [(&str, &[(&str, &str)]); 6] = [
    (
        "Live panel (the running cell)",
        &[
            ("measuring", "the phase, its elapsed / planned length"),
            ("tok/s", "output tokens/s over the last tick, and its history"),
            ("TTFT p50/90", "time to first token of the attempt so far"),
            ("TPOT", "per stream now: ms per token, decoding streams / tok/s"),
            ("run/req 5/192", "running on the server / requested (routing: planned)"),
            (
                "good 3/4 (4 running)",
                "within the SLO / judged so far: ended requests, and running streams on their tokens so far",
            ),
            ("errors", "failed requests by kind; the commonest kind's last reason"),
        ],
    ),
    (
        "Replicas panel",
        &[
            ("run wait", "requests running / waiting on the replica now"),
            ("KV", "KV-cache usage now"),
            ("hit pre", "prefix-cache hit ratio / preemptions in this cell"),
            ("reqs share", "requests it answered in this cell, and their share"),
            ("~ stale 12s", "its polls fail: seconds since the last good one"),
            ("(final: …)", "after the session: the last cell's figures, as it ended"),
        ],
    ),
    (
        "Prefix owners panel (routing)",
        &[
            ("owner", "the replica holding the family's prompt prefix now"),
            ("★", "the hot family (the scenario sends it most)"),
            ("●", "the owner's column; counts are requests per replica"),
        ],
    ),
    (
        "Turns panel (conversation)",
        &[
            ("sessions 5/16", "conversations of the cell whose last turn ended (or that a failed turn ended)"),
            ("done fail", "requests of the turn index that completed / failed"),
            ("hist", "mean prompt tokens the turn sent: the history so far"),
            ("TTFT50 cached", "median TTFT, ms; prompt tokens served from cache (usage; — unknown)"),
        ],
    ),
    (
        "SLO search panel (--slo-search)",
        &[
            ("bracket [8, 16]", "the highest load that passed and the lowest that failed so far"),
            ("reqs met", "requests probed at the load (repeats pooled), the share meeting the SLO"),
            ("interval", "that share's 95% interval; pass or fail is judged on the share"),
            ("again", "the interval holds the target: the load is probed again"),
        ],
    ),
    (
        "Routing panel (gateway counters)",
        &[
            ("decisions 76-100", "a gateway counter and its labels (prefix-match bucket)"),
            ("95", "its increase in this phase; ↺ the counter reset"),
        ],
    ),
];

fn rows_of(items: &[(&'static str, &'static str)]) -> impl Iterator<Item = Line<'static>> {
    items.iter().map(|(k, what)| {
        Line::from(vec![Span::styled(format!("{k:>16} "), theme::value()), Span::styled(*what, theme::label())])
    })
}

/// What the keys are in a shard's monitor (`run --shard i/N`), above the rest.
pub(crate) const SHARD_KEYS: [(&str, &str); 2] = [
    ("p s r + -", "not applied in a sharded run: they would put this shard out of step"),
    ("", "with the others (the timeline); q stops this shard and writes its report"),
];

/// Every help line: the keys (in a `sharded` run, first what they are there), the matrix
/// notation, then each panel's legend under its title.
pub(crate) fn help_lines(sharded: bool) -> Vec<Line<'static>> {
    let mut out: Vec<Line<'static>> = vec![Line::styled("Keys", theme::title())];
    if sharded {
        out.extend(rows_of(&SHARD_KEYS));
    }
    out.extend(rows_of(&KEYS));
    out.push(Line::default());
    out.push(Line::styled("Matrix", theme::title()));
    out.extend(rows_of(&NOTATION));
    for (title, rows) in PANELS {
        out.push(Line::default());
        out.push(Line::styled(title, theme::title()));
        out.extend(rows_of(rows));
    }
    out
}

/// The first line shown for a scroll of `scroll` lines with `rows` lines of room, of `all`.
pub(crate) fn first_line(scroll: usize, rows: usize, all: usize) -> usize {
    scroll.min(all.saturating_sub(rows))
}

/// Draws the help popup over `area` (the whole screen), scrolled by the app's help scroll.
pub(crate) fn render(app: &App, area: Rect, buf: &mut Buffer) {
    let all = help_lines(app.session.shard.is_some());
    let h = (all.len() + 2) as u16;
    let rows = usize::from(h.min(area.height).saturating_sub(2));
    app.help_rows.set(rows);
    let first = first_line(app.help_scroll, rows, all.len());
    // `bench` finds the help by this title's start (src/bench/screen.rs).
    let title = match all.len() > rows {
        true => format!(
            "Help: keys and notation · {}-{} of {} · ↑↓ PgUp PgDn",
            first + 1,
            (first + rows).min(all.len()),
            all.len()
        ),
        false => "Help: keys and notation · Esc closes".to_string(),
    };
    let inner = popup(area, 92, h, panel(title), buf);
    let inner = inner.inner(Margin::new(1, 0));
    lines(inner, buf, &all[first..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_panel_has_a_legend_and_the_scroll_stops_at_the_end() {
        let text = |l: &Line<'_>| l.spans.iter().map(|s| s.content.as_ref()).collect::<String>();
        let all: Vec<String> = help_lines(false).iter().map(text).collect();
        for label in ["run wait", "hit pre", "reqs share", "★", "●", "decisions 76-100", "run/req 5/192", "good 3/4"]
        {
            assert!(all.iter().any(|l| l.trim_start().starts_with(label)), "{label} has no legend: {all:#?}");
        }
        let n = all.len();
        assert_eq!(first_line(0, 20, n), 0);
        assert_eq!(first_line(5, 20, n), 5);
        assert_eq!(first_line(1000, 20, n), n - 20, "the last page ends on the last line");
        assert_eq!(first_line(7, n + 5, n), 0, "everything fits: no scroll");
        let sharded: Vec<String> = help_lines(true).iter().map(text).collect();
        assert_eq!(sharded.len(), n + SHARD_KEYS.len());
        assert!(sharded[1].contains("not applied in a sharded run"), "{sharded:#?}");
    }
}
