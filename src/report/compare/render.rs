//! How a [`Comparison`] reads: a plain table (`text`), GitHub tables (`markdown`), or its JSON.
//! Deltas are signed (`+4.1%`, `−12.0%`) with the word for the direction (`better`, `worse`),
//! so a lower TTFT reads `better`; a regressed headline figure is marked `REGRESSION`.

use super::{CellDiff, Change, Comparison, FigureDiff, OneSided, Verdict};

/// `compare --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum CompareFormat {
    /// A plain-text table.
    #[default]
    Text,
    /// GitHub-flavoured markdown, for pull requests.
    Markdown,
    /// Machine-readable JSON (`schema` names its version).
    Json,
}

/// Renders `c` in `format`; ends with a newline. Text and markdown have the control
/// characters of the reports' strings escaped (`crate::text_safe`); JSON keeps them exact.
pub(crate) fn render(c: &Comparison, format: CompareFormat) -> String {
    match format {
        CompareFormat::Text => crate::text_safe::text(&text(c)).into_owned(),
        CompareFormat::Markdown => crate::text_safe::text(&markdown(c)).into_owned(),
        CompareFormat::Json => serde_json::to_string_pretty(c).map(|s| s + "\n").unwrap_or_default(),
    }
}

/// A signed percentage, one decimal, with a true minus sign: `+4.1%`, `−12.0%`, `0.0%`.
pub(crate) fn signed_pct(d: f64) -> String {
    let r = (d * 10.0).round() / 10.0;
    match r {
        r if r > 0.0 => format!("+{r:.1}%"),
        r if r < 0.0 => format!("\u{2212}{:.1}%", -r),
        _ => "0.0%".into(),
    }
}

fn value(v: Option<f64>, unit: &str) -> String {
    match (v, unit) {
        (None, _) => "—".into(),
        (Some(v), "fraction") => format!("{:.1}%", v * 100.0),
        (Some(v), "ms") if v.abs() < 10.0 => format!("{v:.2}"),
        (Some(v), "ms") if v.abs() >= 1000.0 => format!("{v:.0}"),
        (Some(v), _) => format!("{v:.1}"),
    }
}

fn delta(f: &FigureDiff) -> String {
    match (f.delta_pct, f.base, f.new) {
        (Some(d), _, _) => signed_pct(d),
        (None, Some(_), Some(_)) => "new".into(),
        _ => "—".into(),
    }
}

fn change(f: &FigureDiff) -> String {
    let word = match f.change {
        Change::Same => "same".to_string(),
        Change::Better => "better".into(),
        Change::Worse => "worse".into(),
        Change::WithinNoise if f.noise_interval.is_some() => {
            format!("within noise (±{:.1}%, 95% CI)", f.noise_pct.unwrap_or(0.0))
        }
        Change::WithinNoise => format!("within noise (±{:.1}%)", f.noise_pct.unwrap_or(0.0)),
        Change::Unavailable => "—".into(),
    };
    if f.regression { format!("{word}  REGRESSION") } else { word }
}

fn title(f: &FigureDiff) -> String {
    if f.headline { format!("* {}", f.title) } else { format!("  {}", f.title) }
}

/// `1 cell`, `3 cells`.
fn cells(n: usize) -> String {
    format!("{n} cell{}", if n == 1 { "" } else { "s" })
}

/// The closing line: the verdict in words.
pub(crate) fn summary_line(c: &Comparison) -> String {
    let figures: usize = c.cells.iter().map(|d| d.figures.len()).sum();
    let t = c.threshold_pct;
    if c.cells.is_empty() {
        // Nothing compared shows no absence of a regression (`compare` exits 2).
        return "nothing compared: the reports have no cell in common".to_string();
    }
    match c.verdict {
        Verdict::NoChange => format!("no change: {}, {figures} figures the same", cells(c.cells.len())),
        Verdict::NoRegression => {
            format!("no regression beyond {t}% in the headline figures ({})", cells(c.cells.len()))
        }
        Verdict::Regression => {
            let worst: Vec<String> = c
                .cells
                .iter()
                .flat_map(|d| d.figures.iter().filter(|f| f.regression).map(move |f| (d, f)))
                .map(|(d, f)| format!("{} {} {}", d.label, f.title, delta(f)))
                .collect();
            format!("{} regression(s) beyond {t}%: {}", c.regressions, worst.join("; "))
        }
    }
}

/// The line that says which interval the noise is, when a side repeated its cells.
pub(crate) const RUNS_NOISE_LINE: &str = "noise: a repeated cell (--num-runs) reads as the mean of its runs, and a change \
    inside the 95% Student-t interval of the difference of the two means (Welch; a side of one run is given the \
    other side's spread) is within noise: neither better nor worse, and no regression whatever the threshold";

fn header(c: &Comparison) -> Vec<String> {
    let pct: Vec<String> = c.percentiles.iter().map(|&q| crate::stats::percentile_list::percentile_word(q)).collect();
    let runs = c.cells.iter().flat_map(|d| &d.figures).any(|f| f.noise_interval.is_some());
    let mut lines = vec![
        format!("base  {}  (started {}, model {})", c.base.file, c.base.started_at, c.base.model),
        format!("new   {}  (started {}, model {})", c.new.file, c.new.started_at, c.new.model),
        format!(
            "threshold {}% on the headline figures (*): decode aggregate tok/s, burst output tok/s, routing output tok/s and goodput; percentiles {}",
            c.threshold_pct,
            pct.join(",")
        ),
    ];
    if runs {
        lines.push(RUNS_NOISE_LINE.to_string());
    }
    lines
}

fn rows(d: &CellDiff) -> Vec<[String; 6]> {
    d.figures
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let label = if i == 0 { d.label.clone() } else { String::new() };
            [label, title(f), value(f.base, f.unit), value(f.new, f.unit), delta(f), change(f)]
        })
        .collect()
}

fn one_sided(list: &[OneSided], side: &str, other: &str) -> Vec<String> {
    list.iter()
        .map(|o| match &o.other_status {
            Some(s) => format!("only in {side}: {} ({s} in {other})", o.label),
            None => format!("only in {side}: {}", o.label),
        })
        .collect()
}

fn text(c: &Comparison) -> String {
    let mut table = vec![["cell", "figure", "base", "new", "delta", "change"].map(String::from)];
    table.extend(c.cells.iter().flat_map(rows));
    let width = |i: usize| table.iter().map(|r| r[i].chars().count()).max().unwrap_or(0);
    let w: Vec<usize> = (0..6).map(width).collect();
    let mut out = header(c);
    out.push(String::new());
    for r in &table {
        let line = format!(
            "{:<w0$}  {:<w1$}  {:>w2$}  {:>w3$}  {:>w4$}  {}",
            r[0],
            r[1],
            r[2],
            r[3],
            r[4],
            r[5],
            w0 = w[0],
            w1 = w[1],
            w2 = w[2],
            w3 = w[3],
            w4 = w[4]
        );
        out.push(line.trim_end().to_string());
    }
    let lists = [one_sided(&c.only_in_base, "base", "new"), one_sided(&c.only_in_new, "new", "base")].concat();
    if !lists.is_empty() {
        out.push(String::new());
        out.extend(lists);
    }
    out.push(String::new());
    out.push(summary_line(c));
    out.join("\n") + "\n"
}

fn markdown(c: &Comparison) -> String {
    let mut out = vec!["### llm-decode-bench compare".to_string(), String::new()];
    out.extend(header(c).into_iter().map(|l| format!("- {l}")));
    out.push(String::new());
    out.push("| cell | figure | base | new | delta | change |".into());
    out.push("|---|---|---:|---:|---:|---|".into());
    for r in c.cells.iter().flat_map(rows) {
        let cells: Vec<String> = r.iter().map(|s| s.trim().replace('|', "\\|")).collect();
        out.push(format!("| {} |", cells.join(" | ")));
    }
    let lists = [one_sided(&c.only_in_base, "base", "new"), one_sided(&c.only_in_new, "new", "base")].concat();
    if !lists.is_empty() {
        out.push(String::new());
        out.extend(lists.into_iter().map(|l| format!("- {l}")));
    }
    out.push(String::new());
    out.push(format!("**{}**", summary_line(c)));
    out.join("\n") + "\n"
}
