//! Live cell: phase progress, aggregate tok/s sparkline, TTFT/ITL, running/requested gauge,
//! errors by kind, request counters.

use super::super::app::{App, RunState};
use super::super::theme;
use super::baseline;
use super::matrix::phase_state;
use super::widgets::{bar, framed, kv, lines, panel, secs, sparkline, tall_sparkline};
use crate::cell::control::{LiveAttempt, Phase};
use crate::cell::headline::fmt_token_ms;
use crate::report::baseline::Pick;
use crate::report::text::format::{fmt_ms_unit, fmt_tps};
use crate::session::state::CellStatus;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

/// Height of the panel in the compact layout, borders included.
pub(crate) const HEIGHT: u16 = 7;
/// Height of the panel in the wide layout, borders included.
pub(crate) const HEIGHT_WIDE: u16 = 10;

/// Running requests on the server: Prometheus, summed over fresh replicas (None without it).
fn server_running(live: &LiveAttempt) -> Option<f64> {
    let prom: Vec<f64> = live.replicas.iter().filter(|r| !r.stale).filter_map(|r| r.running).collect();
    (!prom.is_empty()).then(|| prom.iter().sum())
}

/// The gauge's running and requested: the server's running count against the cell's conc
/// over every shard (in a shard the server runs every shard's streams), or without Prometheus
/// the attempt's own streaming requests against its own requested count.
fn running_of(app: &App, l: &LiveAttempt) -> (f64, u32) {
    let Some(run) = server_running(l) else { return (l.totals.streaming.max(0) as f64, l.requested) };
    let cell = l.cell.and_then(|id| app.session.cells.get(id)).filter(|_| app.session.shard.is_some());
    match cell.map(|c| &c.spec.key) {
        Some(crate::cell::spec::CellKey::Grid { conc, .. }) => (run, *conc),
        _ => (run, l.requested),
    }
}

fn progress(app: &App, width: usize) -> Line<'static> {
    let l = &app.live;
    let elapsed = l.phase_started.map(|t| app.now.saturating_duration_since(t)).unwrap_or_default();
    let mut spans = vec![Span::styled(format!("{:<9} ", l.phase.as_str()), theme::cell(phase_state(l.phase)))];
    match l.phase_len {
        Some(len) if !len.is_zero() => {
            let ratio = elapsed.as_secs_f64() / len.as_secs_f64();
            let tail = format!(" {}/{}", secs(elapsed), secs(len));
            let w = width.saturating_sub(10 + tail.chars().count()).max(4);
            spans.push(Span::styled(bar(ratio, w), theme::cell(phase_state(l.phase))));
            spans.push(Span::styled(tail, theme::label()));
        }
        _ => spans.push(Span::styled(secs(elapsed), theme::label())),
    }
    Line::from(spans)
}

fn errors_line(l: &LiveAttempt, width: usize) -> Line<'static> {
    let mut spans = match l.errors.is_empty() {
        true => vec![Span::styled("errors ", theme::label()), Span::styled("none", theme::dim())],
        false => {
            let list: Vec<String> = l.errors.iter().map(|(k, n)| format!("{} {n}", k.as_str())).collect();
            vec![Span::styled("errors ", theme::label()), Span::styled(list.join(", "), theme::error())]
        }
    };
    // Good/judged of the requests ended so far, against the SLO the matrix title names.
    // Running streams count on their tokens so far, said when there is room.
    if let Some(g) = l.goodput {
        spans.push(Span::styled(" · good ", theme::label()));
        spans.push(Span::styled(format!("{}/{}", g.good, g.judged), theme::value()));
        let running = format!(" ({} running)", l.goodput_running);
        let used: usize = spans.iter().map(|s| s.content.chars().count()).sum();
        if l.goodput_running > 0 && used + running.len() <= width {
            spans.push(Span::styled(running, theme::dim()));
        }
    }
    // The latest reason of the most frequent kind, in what is left of the line.
    let top = l.errors.iter().max_by_key(|(_, n)| **n).and_then(|(k, _)| l.error_examples.get(k));
    let used: usize = spans.iter().map(|s| s.content.chars().count()).sum();
    if let Some(reason) = top.filter(|_| width > used + 8) {
        spans.push(Span::styled(format!(" — {}", crate::text_safe::clipped(reason, width - used - 3)), theme::value()));
    }
    Line::from(spans)
}

fn gauge_line(app: &App, l: &LiveAttempt, width: usize) -> Line<'static> {
    let (run, requested) = running_of(app, l);
    let req = f64::from(requested.max(1));
    let tail = format!(" {run:.0}/{requested}");
    let w = width.saturating_sub(8 + tail.len()).max(4);
    Line::from(vec![
        Span::styled("run/req ", theme::label()),
        Span::styled(bar(run / req, w), theme::gauge(1.0 - (run / req).min(1.0))),
        Span::styled(tail, theme::value()),
    ])
}

/// TTFT p50/p90 and the current TPOT (streams decoding / tok/s: each stream's time per output
/// token), each with its unit, in the first form that fits `width`.
fn latency_line(l: &LiveAttempt, width: usize) -> Line<'static> {
    let (p50, p90, tpot) = (fmt_ms_unit(l.ttft_p50_ms), fmt_ms_unit(l.ttft_p90_ms), fmt_token_ms(l.itl_now_ms));
    let forms = [
        ("TTFT p50/p90 ", format!("{p50} / {p90}"), " · TPOT "),
        ("TTFT p50/90 ", format!("{p50}/{p90}"), "  TPOT "),
        ("TTFT p50 ", p50, "  TPOT "),
    ];
    let fits = |(a, b, c): &(&str, String, &str)| a.len() + b.chars().count() + c.len() + tpot.chars().count();
    let last = forms.len() - 1;
    let pick = forms.iter().position(|f| fits(f) <= width).unwrap_or(last);
    let (ttft_label, ttft, tpot_label) = forms[pick].clone();
    let [a, b] = kv(ttft_label, ttft);
    let [c, d] = kv(tpot_label, tpot);
    Line::from(vec![a, b, c, d])
}

fn totals_line(l: &LiveAttempt) -> Line<'static> {
    let t = &l.totals;
    let sent = match l.planned_requests {
        Some(n) => format!("{}/{n}", t.started),
        None => t.started.to_string(),
    };
    let from = l.workload.as_deref().map(|w| format!(" · {w}")).unwrap_or_default();
    Line::styled(
        format!(
            "{sent} sent · {} done · {} in flight · {} failed · {} tok{from}",
            t.completed, t.in_flight, t.failed, t.tokens
        ),
        theme::dim(),
    )
}

/// The knob walk as a small tok/s-versus-load curve: `knob ▄▆█ 8→1000 10→1500 12→2000`,
/// the newest levels that fit in `width` (the current level last, so far).
fn levels_line(l: &LiveAttempt, width: usize) -> Line<'static> {
    let points: Vec<String> = l.levels.iter().map(|p| format!("{}→{:.0}", p.load, p.tps)).collect();
    let mut keep = points.len();
    let text = |n: usize| points[points.len() - n..].join(" ");
    while keep > 1 && 5 + 2 * keep + text(keep).chars().count() > width {
        keep -= 1;
    }
    let tps: Vec<f64> = l.levels.iter().map(|p| p.tps).collect();
    let curve = sparkline(&tps[tps.len() - keep..], keep, None);
    Line::from(vec![
        Span::styled("knob ", theme::label()),
        Span::styled(format!("{curve} "), theme::spark()),
        Span::styled(if keep == 0 { String::new() } else { text(keep) }, theme::value()),
    ])
}

/// Cells by outcome: `6 measured · 2 errored · 1 ∅ · 1 skip · 2 pending`.
fn tally(app: &App) -> Line<'static> {
    let mut counts: [(usize, &str); 6] =
        [(0, "measured"), (0, "errored"), (0, "∅"), (0, "skip"), (0, "running"), (0, "pending")];
    for c in &app.session.cells {
        let i = match c.status {
            CellStatus::Measured => 0,
            CellStatus::Errored => 1,
            CellStatus::Skipped(_) => 2,
            CellStatus::SkippedByOperator => 3,
            CellStatus::Running => 4,
            CellStatus::Pending => 5,
        };
        counts[i].0 += 1;
    }
    let parts: Vec<String> = counts.iter().filter(|(n, _)| *n > 0).map(|(n, what)| format!("{n} {what}")).collect();
    Line::styled(parts.join(" · "), theme::label())
}

/// What the runner waits for on the timeline, on one line or, narrow, two.
fn waiting_lines(w: &crate::session::shard_view::TimelineWait, app: &App, width: usize) -> Vec<Line<'static>> {
    let line = w.line(app.now);
    match line.chars().count() <= width {
        true => vec![Line::styled(line, theme::warn())],
        false => w.halves(app.now).into_iter().map(|h| Line::styled(h, theme::warn())).collect(),
    }
}

fn idle_text(app: &App, width: usize) -> Vec<Line<'static>> {
    match app.run_state() {
        RunState::Paused => vec![
            Line::styled("load paused", theme::warn()),
            Line::styled("p resumes: the paused cell runs", theme::label()),
            Line::styled("again from warmup", theme::label()),
            tally(app),
        ],
        RunState::Done => vec![Line::styled("session over", theme::dim()), tally(app)],
        RunState::Stopping => vec![Line::styled("stopping: writing the report…", theme::warn())],
        // On the `--start-at` timeline: what the runner waits for, and for how long.
        RunState::Running => match &app.session.waiting {
            Some(w) => [waiting_lines(w, app, width), vec![tally(app)]].concat(),
            None => vec![Line::styled("between cells", theme::dim()), tally(app)],
        },
    }
}

/// The tok/s line: the figure, its deltas against `--baseline` while measuring (`vs base tok/s
/// +3.2% TTFT -11%`; tok/s only in the compact layout), and the sparkline in the compact one.
fn tps_line(app: &App, tps: String, tall: bool, width: usize) -> Line<'static> {
    let l = &app.live;
    let deltas = app.session.cells.get(l.cell.unwrap_or(usize::MAX)).map(|c| baseline::live(app, c));
    let deltas = deltas.unwrap_or_default();
    let mut spans = match tall {
        true => vec![Span::styled("tok/s ", theme::label()), Span::styled(fmt_tps(l.tps), theme::value())],
        false => vec![Span::styled(tps, theme::value())],
    };
    if tall && !deltas.is_empty() {
        spans.push(Span::styled("  vs base ", theme::label()));
        spans.extend(baseline::spans(&deltas));
    } else if let Some((_, d)) = deltas.iter().find(|(p, _)| *p == Pick::Throughput) {
        spans.extend([baseline::span(d), Span::raw(" ")]);
    }
    if !tall {
        let used: usize = spans.iter().map(|s| s.content.chars().count()).sum();
        spans.push(Span::styled(sparkline(&l.tps_history, width.saturating_sub(used), None), theme::spark()));
    }
    Line::from(spans)
}

/// Draws the live panel.
pub(crate) fn render(app: &App, area: Rect, buf: &mut Buffer) {
    let l = &app.live;
    // With repetitions (`--num-runs`): which run of the cell's round this is.
    let run = l.cell.and_then(|id| app.session.cells.get(id)).and_then(|c| c.run);
    let title = match (l.cell, run) {
        (Some(_), Some(run)) => format!("Live: {} · {}", l.label, run.text()),
        (Some(_), None) => format!("Live: {}", l.label),
        (None, _) => "Live".into(),
    };
    let inner = framed(panel(title), area, buf);
    if l.cell.is_none() || l.phase == Phase::Idle {
        lines(inner, buf, &idle_text(app, usize::from(inner.width)));
        return;
    }
    let width = usize::from(inner.width);
    let tps = format!("tok/s {:>7} ", fmt_tps(l.tps));
    let tall = inner.height >= 8;
    let mut out = vec![progress(app, width)];
    out.push(tps_line(app, tps, tall, width));
    out.extend([latency_line(l, width), gauge_line(app, l, width)]);
    // Compact: the knob curve takes the errors line's place while there are none.
    match (tall, l.levels.is_empty()) {
        (false, false) if l.errors.is_empty() => out.push(levels_line(l, width)),
        _ => out.push(errors_line(l, width)),
    }
    if tall {
        out.push(totals_line(l));
        if !l.levels.is_empty() {
            out.push(levels_line(l, width));
        }
    }
    lines(inner, buf, &out);
    if tall {
        let y = inner.y + out.len() as u16;
        let spark = Rect { x: inner.x, y, width: inner.width, height: inner.bottom().saturating_sub(y) };
        tall_sparkline(&l.tps_history, spark, buf, theme::spark());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(line: &Line<'_>) -> String {
        line.spans.iter().map(|s| s.content.as_ref()).collect()
    }

    #[test]
    fn the_knob_curve_keeps_the_newest_levels_that_fit() {
        use crate::cell::control::LevelPoint;
        let p = |load: &str, tps: f64| LevelPoint { load: load.into(), tps };
        let l =
            LiveAttempt { levels: vec![p("8", 1000.0), p("10", 1500.4), p("12", 2000.0)], ..LiveAttempt::default() };
        assert_eq!(text(&levels_line(&l, 60)), "knob ▄▆█ 8→1000 10→1500 12→2000");
        assert_eq!(text(&levels_line(&l, 24)), "knob ▆█ 10→1500 12→2000", "the oldest level goes first");
        assert_eq!(text(&levels_line(&l, 5)), "knob █ 12→2000", "the current level always shows");
    }

    #[test]
    fn the_errors_line_quotes_the_latest_reason_of_the_most_frequent_kind() {
        use crate::load::sample::ErrorKind;
        let l = LiveAttempt {
            errors: [(ErrorKind::BadRequest, 3), (ErrorKind::Stalled, 1)].into(),
            error_examples: [
                (ErrorKind::BadRequest, "HTTP 400: prompt too long".into()),
                (ErrorKind::Stalled, "x".into()),
            ]
            .into(),
            ..LiveAttempt::default()
        };
        assert_eq!(text(&errors_line(&l, 80)), "errors bad_request 3, stalled 1 — HTTP 400: prompt too long");
        assert_eq!(text(&errors_line(&l, 48)), "errors bad_request 3, stalled 1 — HTTP 400: pro…");
        assert_eq!(text(&errors_line(&l, 36)), "errors bad_request 3, stalled 1", "no room, no reason");
    }

    #[test]
    fn latency_line_names_its_units_and_reads_tpot_like_the_log() {
        let l = LiveAttempt {
            ttft_p50_ms: Some(764.0),
            ttft_p90_ms: Some(1240.0),
            itl_now_ms: Some(0.6),
            ..LiveAttempt::default()
        };
        assert_eq!(text(&latency_line(&l, 60)), "TTFT p50/p90 764 ms / 1.24 s · TPOT 0.6 ms");
        assert_eq!(text(&latency_line(&l, 38)), "TTFT p50/90 764 ms/1.24 s  TPOT 0.6 ms");
        let slow = LiveAttempt { ttft_p50_ms: Some(1240.0), ttft_p90_ms: Some(2210.0), itl_now_ms: None, ..l };
        assert_eq!(text(&latency_line(&slow, 30)), "TTFT p50 1.24 s  TPOT —");
        assert_eq!(crate::cell::headline::fmt_token_ms(Some(0.6)), "0.6 ms", "the log line's formatter");
    }
}
