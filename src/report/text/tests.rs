//! Whole-report tests: the seed reproduced byte for byte, ASCII style, small matrices, burst.

use super::format::LimitMark;
use super::width::display_width;
use super::*;

const SEED: &str = include_str!("../../../tests/fixtures/seed_000.txt");

/// One measured cell's numbers: aggregate tok/s, per-request tok/s, TTFT ms, ITL ms,
/// average running requests.
type Numbers = (f64, f64, f64, f64, f64);

/// The seed's measured rows (ctx 0, 16k, 32k, 64k); `1e+01k` TTFT stands for 10.4 s.
#[rustfmt::skip]
const SEED_CELLS: [[Numbers; 5]; 4] = [
    [(146.7, 146.7, 76.0, 7.0, 1.0), (258.2, 129.1, 119.0, 8.0, 2.0),
     (393.9, 98.5, 7_000.0, 11.0, 4.0), (564.8, 70.6, 481.0, 13.0, 6.9),
     (563.1, 35.2, 27_000.0, 13.0, 7.2)],
    [(143.1, 143.1, 3_000.0, 7.0, 1.0), (260.3, 130.2, 4_000.0, 8.0, 2.0),
     (395.0, 98.8, 7_000.0, 13.0, 4.0), (315.3, 39.4, 11_000.0, 15.0, 6.0),
     (360.9, 22.6, 10_400.0, 15.0, 6.0)],
    [(144.6, 144.6, 5_000.0, 7.0, 1.0), (242.4, 121.2, 8_000.0, 10.0, 2.0),
     (385.6, 96.4, 14_000.0, 15.0, 4.0), (481.7, 60.2, 19_000.0, 17.0, 6.0),
     (445.1, 27.8, 20_000.0, 18.0, 6.0)],
    [(143.2, 143.2, 11_000.0, 7.0, 1.0), (238.5, 119.3, 17_000.0, 11.0, 2.0),
     (379.2, 94.8, 28_000.0, 27.0, 4.0), (17.1, 2.1, 40_000.0, 20.0, 5.0),
     (26.5, 1.7, 39_000.0, 22.0, 5.0)],
];

/// Client latency (p50, p90) ms of the conc 8 and 16 cells per measured row; `None` when
/// no request completed (the seed's conc 1, 2 and 4 columns never complete one).
#[rustfmt::skip]
const SEED_LATENCY: [[Option<(f64, f64)>; 2]; 4] = [
    [Some((56_500.0, 57_600.0)), Some((55_700.0, 57_500.0))],
    [Some((64_900.0, 66_700.0)), Some((65_500.0, 65_500.0))],
    [None, None],
    [Some((106_100.0, 110_900.0)), Some((106_500.0, 111_300.0))],
];

/// A measured cell; capacity-limited when the rounded running average is below `req`.
fn m(n: Numbers, req: u32, lat: Option<(f64, f64)>) -> CellView {
    let (agg, per_request, ttft, itl, running) = n;
    CellView::Measured(MeasuredCell {
        aggregate_tps: agg,
        per_request_tps: Some(per_request),
        ttft_ms: Some(ttft),
        itl_ms: Some(itl),
        running_avg: Some(running),
        requested: req,
        limit: LimitMark { capacity_limited: running.round() < f64::from(req), ..LimitMark::default() },
        errors: 0,
        latency_p50_ms: lat.map(|l| l.0),
        latency_p90_ms: lat.map(|l| l.1),
        warm: None,
    })
}

/// The seed's report as a view.
fn seed_view() -> DecodeView {
    let conc = vec![1, 2, 4, 8, 16];
    let mut cells: Vec<Vec<CellView>> = SEED_CELLS
        .iter()
        .zip(SEED_LATENCY)
        .map(|(row, lat)| {
            let lat = [None, None, None, lat[0], lat[1]];
            (0..5).map(|i| m(row[i], conc[i], lat[i])).collect()
        })
        .collect();
    let err = |errors| CellView::Errored { errors };
    cells.push(vec![err(1), err(2), err(4), err(8), CellView::Skipped]);
    DecodeView {
        tool_version: "9.9.9-test".into(),
        ctx_labels: ["0", "16k", "32k", "64k", "128k"].map(String::from).to_vec(),
        conc,
        cells,
        aggregate_sources: vec!["none".into(), "openai_continuous_usage".into()],
        burst: None,
        knees: Vec::new(),
        column_labels: Vec::new(),
        skip_notes: Vec::new(),
    }
}

/// The seed's per-stream figure under vLLM's name (TPOT, docs/reports.md §1.2) and the
/// per-request legend (issue 23): each pair is a seed line and what replaces it.
const NAMING: [(&str, &str); 6] = [
    ("Aggregate tok/s  + TTFT/ITL   ", "Aggregate tok/s  + TTFT/TPOT  "),
    ("as TTFT ms / ITL ms for the same ctx/conc ", "as TTFT ms / TPOT ms for the same ctx/conc "),
    ("coordinate. ITL is computed from", "coordinate. TPOT is computed from"),
    ("a missing ITL means no stream", "a missing TPOT means no stream"),
    (
        "request-level distributions remain in JSON under request_samples.\n",
        "request-level distributions remain in JSON under request_samples.\n\
         Per-request tok/s = aggregate tok/s / average streams decoding in the window \n\
         (client-side: streams between their first and last token), so a cell held below \n\
         its concurrency shows what each running stream got.\n",
    ),
    (
        "ITL=(last_token_time-first_token_time)/(output_tokens-1), user tok/s=1/ITL.",
        "TPOT=(last_token_time-first_token_time)/(output_tokens-1) (vLLM's name; ITL is \n\
         per token gap), user tok/s=1/TPOT.",
    ),
];

/// The seed with its allowed substitutions: the version line, the Python `1e+01k` rendered
/// as `10k` (right-aligned, so the cell keeps its width), and [`NAMING`].
fn expected_seed() -> String {
    let (_, rest) = SEED.split_once('\n').unwrap_or(("", SEED));
    let mut s = format!("llm-decode-bench v9.9.9-test\n{rest}").replace("1e+01k", "   10k");
    for (old, new) in NAMING {
        assert!(s.contains(old), "the seed has {old:?}");
        s = s.replace(old, new);
    }
    s
}

#[test]
fn seed_reproduced_byte_for_byte() {
    let out = render_decode(&seed_view(), RenderOptions::default());
    let expected = expected_seed();
    for (i, (a, b)) in out.lines().zip(expected.lines()).enumerate() {
        assert_eq!(a, b, "line {}", i + 1);
    }
    assert_eq!(out, expected);
}

#[test]
fn ascii_style_lines() {
    let opts = RenderOptions { style: BoxStyle::Ascii, dim_ansi: false, max_width: None };
    let out = render_decode(&seed_view(), opts);
    let lines: Vec<&str> = out.lines().collect();
    let phase2 = format!("+{} Phase 2 {}+", "-".repeat(34), "-".repeat(35));
    assert_eq!(lines[1], phase2);
    assert_eq!(lines[2], format!("| Sustained Decode{} |", " ".repeat(60)));
    let top = "+------------+----------+----------+----------+--------------+---------------+";
    assert_eq!(lines[8], top);
    assert_eq!(lines[9], "| ctx \\ conc |        1 |        2 |        4 |            8 |            16 |");
    assert_eq!(lines[10], top);
    assert_eq!(lines[11], "| 0          |    146.7 |    258.2 |    393.9 | 564.8 (7/8)* | 563.1 (7/16)* |");
    assert_eq!(lines[19], "| 128k       | 0.0 (1e) | 0.0 (2e) | 0.0 (4e) |     0.0 (8e) |             ∅ |");
    assert!(!out.contains(['╭', '╮', '╰', '╯', '│', '─', '┬', '┼', '┴', '├', '┤']));
}

#[test]
fn dim_ansi_only_touches_dim_lines() {
    let opts = RenderOptions { style: BoxStyle::Unicode, dim_ansi: true, max_width: None };
    let out = render_decode(&seed_view(), opts);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[12],
        "│            │     \x1b[2m76/7\x1b[0m │    \x1b[2m119/8\x1b[0m │    \x1b[2m7k/11\x1b[0m │       \x1b[2m481/13\x1b[0m │        \x1b[2m27k/13\x1b[0m │"
    );
    assert_eq!(out.matches("\x1b[2m").count(), 20);
    let plain = out.replace("\x1b[2m", "").replace("\x1b[0m", "");
    assert_eq!(plain, render_decode(&seed_view(), RenderOptions::default()));
}

/// A 2x2 matrix with an errored measurement, a missing ITL and a not-run cell.
fn small_view() -> DecodeView {
    let measured = MeasuredCell {
        aggregate_tps: 143.06,
        per_request_tps: Some(71.5),
        ttft_ms: Some(812.0),
        itl_ms: None,
        running_avg: Some(2.0),
        requested: 2,
        errors: 2,
        latency_p50_ms: Some(950.0),
        latency_p90_ms: Some(1_234.0),
        ..MeasuredCell::default()
    };
    DecodeView {
        tool_version: "0.1.0".into(),
        ctx_labels: vec!["0".into(), "32k".into()],
        conc: vec![1, 2],
        cells: vec![
            vec![m((90.0, 90.0, 50.0, 11.0, 1.0), 1, Some((900.0, 990.0)))],
            vec![CellView::NotRun, CellView::Measured(measured)],
        ],
        aggregate_sources: vec!["openai_continuous_usage".into()],
        burst: None,
        knees: Vec::new(),
        column_labels: Vec::new(),
        skip_notes: Vec::new(),
    }
}

#[test]
fn small_matrix_tables() {
    let out = render_decode(&small_view(), RenderOptions::default());
    let aggregate = "
Aggregate tok/s  + TTFT/TPOT       
╭────────────┬───────┬────────────╮
│ ctx \\ conc │     1 │          2 │
├────────────┼───────┼────────────┤
│ 0          │  90.0 │          · │
│            │ 50/11 │            │
│ 32k        │     · │ 143.1 (2e) │
│            │       │      812/— │
╰────────────┴───────┴────────────╯
Sustained Decode: aggregate tok/s uses OpenAI stream usage by default 
(continuous completion_tokens when the server supports it). Prometheus is kept 
as validation/scheduler data.
Aggregate source(s): openai_continuous_usage
· = not run: skipped by the operator or the session ended before this cell
Per-Request tok/s           
╭────────────┬──────┬──────╮
│ ctx \\ conc │    1 │    2 │
├────────────┼──────┼──────┤
│ 0          │ 90.0 │    · │
│ 32k        │    · │ 71.5 │
╰────────────┴──────┴──────╯
Client request latency: p50 / p90  
ms                                 
╭────────────┬─────────┬──────────╮
│ ctx \\ conc │       1 │        2 │
├────────────┼─────────┼──────────┤
│ 0          │ 900/990 │        · │
│ 32k        │       · │ 950/1.2k │
╰────────────┴─────────┴──────────╯
";
    assert!(out.contains(aggregate), "{out}");
    let summary = "
Aggregate decode tok/s            
╭────────────┬──────┬────────────╮
│ ctx \\ conc │    1 │          2 │
├────────────┼──────┼────────────┤
│ 0          │ 90.0 │          · │
│ 32k        │    · │ 143.1 (2e) │
╰────────────┴──────┴────────────╯";
    assert!(out.ends_with(summary), "{out}");
    assert!(!out.contains("∅ = skipped"));
    assert!(!out.contains("(X/Y) ="));
}

#[test]
fn burst_table_after_phase3_panel() {
    let mut view = small_view();
    let cell = BurstCell {
        requests: 96,
        success: 94,
        e2e_p50_ms: Some(12_300.0),
        e2e_p90_ms: Some(12_600.0),
        output_tps: Some(812.44),
        warm: false,
    };
    view.burst = Some(BurstView {
        ctx_labels: vec!["0".into()],
        conc: vec![8, 16],
        cells: vec![vec![BurstCellView::Measured(cell), BurstCellView::Skipped]],
    });
    let out = render_decode(&view, RenderOptions::default());
    let phase3 = "
╭────────────────────────────────── Phase 3 ───────────────────────────────────╮
│ Burst / E2E Decode                                                           │
│ A finite client-facing request burst per cell after Sustained Decode,        │
│ measured end to end. Use it to judge request UX; Sustained Decode stays the  │
│ throughput signal.                                                           │
╰──────────────────────────────────────────────────────────────────────────────╯
Burst output tok/s  + E2E p50/p90
ms                               
╭────────────┬─────────────┬────╮
│ ctx \\ conc │           8 │ 16 │
├────────────┼─────────────┼────┤
│ 0          │  812.4 (2e) │  ∅ │
│            │ 12.3k/12.6k │    │
╰────────────┴─────────────┴────╯
Burst cells show output tok/s over the whole burst, with dim detail as 
end-to-end request latency p50 ms / p90 ms over successful requests (—/— when 
none succeeded). (Ne) = N requests of the burst failed.
∅ = skipped/hidden because the cell does not fit in KV cache; exact deficit is 
kept in JSON timeout_reason

╭────────────────────────────── Primary Summary";
    assert!(out.contains(phase3), "{out}");
    assert!(!out.contains("Not run. Re-run"));
    assert!(!out.contains("W = warm cache"), "no warm burst: no legend");
    let warm = BurstCell { warm: true, requests: 8, success: 8, output_tps: Some(100.0), ..Default::default() };
    view.burst.as_mut().unwrap().cells[0][0] = BurstCellView::Measured(warm);
    let out = render_decode(&view, RenderOptions::default());
    assert!(
        out.contains("100.0 W") && out.contains("W = warm cache: the server's prefix cache served more of the burst's"),
        "{out}"
    );
    assert_widths(&out, BoxStyle::Unicode);
}

/// Every box (panel or table) has one width on all its lines, a table's title line has the
/// table's width, and every other line (legends) fits in the panel width.
fn assert_widths(out: &str, style: BoxStyle) {
    let (corner, vertical) = match style {
        BoxStyle::Unicode => (('╭', '╰'), '│'),
        BoxStyle::Ascii => (('+', '+'), '|'),
    };
    let lines: Vec<&str> = out.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        if !lines[i].starts_with(corner.0) {
            assert!(display_width(lines[i]) <= PANEL_WIDTH, "too wide: {:?}", lines[i]);
            i += 1;
            continue;
        }
        let width = display_width(lines[i]);
        let closes =
            |j: &usize| lines[*j].starts_with(corner.1) && !lines.get(j + 1).is_some_and(|n| n.starts_with(vertical));
        let end = (i + 1..lines.len()).find(closes).unwrap_or(lines.len() - 1);
        for line in &lines[i..=end] {
            assert_eq!(display_width(line), width, "{line:?}");
        }
        if width < PANEL_WIDTH {
            let title = lines.get(i.wrapping_sub(1)).copied().unwrap_or_default();
            assert_eq!(display_width(title), width, "title {title:?}");
        }
        i = end + 1;
    }
}

#[test]
fn no_line_wider_than_its_block() {
    let ascii = RenderOptions { style: BoxStyle::Ascii, dim_ansi: false, max_width: None };
    for view in [seed_view(), small_view()] {
        assert_widths(&render_decode(&view, RenderOptions::default()), BoxStyle::Unicode);
        assert_widths(&render_decode(&view, ascii), BoxStyle::Ascii);
    }
    assert_widths(SEED, BoxStyle::Unicode);
}

#[test]
fn degenerate_views_do_not_panic() {
    let empty = render_decode(&DecodeView::default(), RenderOptions::default());
    assert!(empty.starts_with("llm-decode-bench v\n"));
    let ragged = DecodeView {
        ctx_labels: vec!["0".into(), "8k".into()],
        conc: vec![1, 2, 4],
        cells: vec![vec![CellView::Errored { errors: 0 }]],
        ..DecodeView::default()
    };
    let out = render_decode(&ragged, RenderOptions::default());
    assert!(out.contains("│ 8k         │        · │ · │ · │"));
    let mut nan = small_view();
    if let Some(CellView::Measured(c)) = nan.cells[1].get_mut(1) {
        c.aggregate_tps = f64::NAN;
        c.running_avg = Some(f64::INFINITY);
    }
    assert!(render_decode(&nan, RenderOptions::default()).contains("—"));
}

#[test]
fn view_round_trips_through_json() {
    let view = seed_view();
    let json = serde_json::to_string(&view).unwrap_or_default();
    assert!(json.contains("\"kind\":\"measured\""));
    let back: Result<DecodeView, _> = serde_json::from_str(&json);
    assert_eq!(back.ok(), Some(view));
}

#[test]
fn a_sustained_run_with_no_completed_request_leaves_the_latency_matrix_out() {
    let mut view = small_view();
    for cell in view.cells.iter_mut().flatten() {
        if let CellView::Measured(m) = cell {
            (m.latency_p50_ms, m.latency_p90_ms) = (None, None);
        }
    }
    let out = render_decode(&view, RenderOptions::default());
    assert!(!out.contains("Client request latency: p50"), "{out}");
    assert!(out.contains("Client request latency: no request completed inside a window"), "{out}");
    assert!(render_decode(&small_view(), RenderOptions::default()).contains("Client request latency: p50"));
}

/// Without Prometheus a limited cell reads `7547.7*?` with no `(X/Y)`: the legend explains
/// the mark and not the running count it does not show (issue 23's trial).
#[test]
fn the_running_legend_only_where_a_running_count_shows() {
    let mut view = small_view();
    let limit = super::format::LimitMark {
        capacity_limited: true,
        limit: Some(crate::report::status::CapacityLimit::Unknown),
        warmup_timed_out: false,
    };
    view.cells[1][1] =
        CellView::Measured(MeasuredCell { aggregate_tps: 7547.7, requested: 2, limit, ..MeasuredCell::default() });
    let out = render_decode(&view, RenderOptions::default());
    assert!(out.contains("7547.7*?") && out.contains("*?"), "{out}");
    assert!(!out.contains("(X/Y)"), "{out}");
    assert!(render_decode(&seed_view(), RenderOptions::default()).contains("(X/Y) = avg running"));
}

/// `1002.8 (64e) (0/2)`: a running count below the request with no mark is explained (failed
/// requests or turnover, not a server limit), and only when some cell shows one (issue 23).
#[test]
fn an_unmarked_running_count_is_explained() {
    let mut view = small_view();
    view.cells[1][1] = CellView::Measured(MeasuredCell {
        aggregate_tps: 1002.8,
        running_avg: Some(0.2),
        requested: 2,
        errors: 64,
        ..MeasuredCell::default()
    });
    let out = render_decode(&view, RenderOptions::default());
    assert!(out.contains("1002.8 (64e) (0.2/2)"), "{out}");
    let flat = out.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("(X/Y) with no mark = fewer ran than requested but no server limit was seen"), "{out}");
    assert!(!render_decode(&seed_view(), RenderOptions::default()).contains("with no mark"));
}
