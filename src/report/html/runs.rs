//! Repetitions (`run --num-runs N`): one row per cell or phase with a `runs` block, each
//! headline figure as `mean ±half` with its CV, and a note that every other table of the page
//! shows these means. Empty without repetitions, so the page is as it was.

use super::page::{escape, table};
use crate::report::json::SessionReport;
use crate::report::runs::render::{COLUMNS, column_figure, cv_text, legend, mean_pm, rows, runs_text};

/// The section's content: the note and the table; empty when no cell has repetitions.
pub(super) fn runs_table(report: &SessionReport) -> String {
    let rows = rows(report);
    let Some(planned) = rows.iter().map(|r| r.block.planned).max() else { return String::new() };
    let shown: Vec<&(&str, &[&str])> =
        COLUMNS.iter().filter(|(_, names)| rows.iter().any(|r| column_figure(r.block, names).is_some())).collect();
    let mut head = vec!["cell", "runs"];
    head.extend(shown.iter().map(|(title, _)| *title));
    let numeric: Vec<&str> = head[1..].to_vec();
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let mut row = vec![escape(&r.label), runs_text(r.block)];
            for (_, names) in &shown {
                row.push(match column_figure(r.block, names) {
                    Some((name, s)) => {
                        let cv = cv_text(s);
                        let cv =
                            if cv.is_empty() { String::new() } else { format!(" <span class=\"dim\">{cv}</span>") };
                        format!("{}{cv}", escape(&mean_pm(name, s)))
                    }
                    None => "—".into(),
                });
            }
            row
        })
        .collect();
    format!("<p class=\"note\">{}</p>\n{}", escape(&legend(planned)), table(&head, &numeric, &body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeated_cell_shows_its_mean_interval_and_cv() {
        let mut report = crate::report::tests_schema::full_report();
        assert_eq!(runs_table(&report), "", "no repetitions, no section");
        crate::report::runs::annotate(&mut report, 2);
        let html = runs_table(&report);
        assert!(html.contains("mean of its measured runs") && html.contains("<th>tok/s</th>"), "{html}");
        assert!(html.contains("decode ctx=16k conc=8"), "{html}");
    }
}
