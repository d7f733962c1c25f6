//! The lines the text and markdown reports add under a merged report's tables (`report
//! merge`, docs/reports.md §9): which shards of which session it holds, and how its figures
//! were made.

use super::json::SessionReport;
use super::shard::{MergeSection, MergedShardStatus};
use super::text::Block;

/// How a merged report's figures were made, one paragraph.
const RULES: &str = "Counts, tokens and tok/s are the shards' added; latency percentiles come \
from every shard's values together (never averaged); the server's figures (running, \
Prometheus, replica series) are one shard's (docs/reports.md §9).";

/// The note of a merged report (nothing for any other): its session, its shards and what
/// became of each, and [`RULES`].
pub(crate) fn merge_blocks(report: &SessionReport) -> Vec<Block> {
    let Some(m) = &report.merge else { return Vec::new() };
    let mut lines = vec![head(m), RULES.to_string()];
    // What the merge noted (a cell only some shards ran, figures left out): the tables above
    // show those cells' figures as they are, so the reader is told here which ones.
    lines.extend(report.warnings.iter().filter_map(|w| w.strip_prefix("merge: ")).map(|n| format!("Note: {n}.")));
    vec![Block::Blank, Block::Legend(lines)]
}

fn head(m: &MergeSection) -> String {
    let merged = m.shards.iter().filter(|s| s.status == MergedShardStatus::Merged).count();
    let each: Vec<String> = m
        .shards
        .iter()
        .map(|s| {
            let status = match s.status {
                MergedShardStatus::Merged => "merged",
                MergedShardStatus::Incomplete => "incomplete",
                MergedShardStatus::Missing => "missing",
            };
            match &s.file {
                Some(f) => format!("{} {status} ({f})", s.index),
                None => format!("{} {status}", s.index),
            }
        })
        .collect();
    format!(
        "Merged report of session {}: {merged} of {} shards finished and merged (an incomplete one's figures are in as far as it ran); shard {}.",
        m.session_id,
        m.shard_count,
        each.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::shard::MergedShard;

    #[test]
    fn a_merged_report_names_its_shards_and_others_get_nothing() {
        let mut r = crate::report::tests_schema::minimal_report();
        assert!(merge_blocks(&r).is_empty());
        let shard = |index, status, file: Option<&str>| MergedShard {
            index,
            status,
            file: file.map(String::from),
            detail: None,
        };
        r.merge = Some(MergeSection {
            session_id: "s1".into(),
            shard_count: 3,
            shards: vec![
                shard(0, MergedShardStatus::Merged, Some("a.json")),
                shard(1, MergedShardStatus::Missing, None),
                shard(2, MergedShardStatus::Incomplete, Some("c.json")),
            ],
        });
        r.warnings = vec![
            "merge: ctx=0 conc=4 attempt 1: only shard 0 made it (2 of the cell's 4 streams); its figures are theirs"
                .into(),
            "metrics of r0 unavailable".into(),
        ];
        let Block::Legend(lines) = &merge_blocks(&r)[1] else { panic!("a legend") };
        assert_eq!(
            lines[0],
            "Merged report of session s1: 1 of 3 shards finished and merged (an incomplete one's figures are in as far as it ran); shard 0 merged (a.json), 1 missing, 2 incomplete (c.json)."
        );
        assert_eq!(lines.len(), 3, "the merge's own notes, not other warnings: {lines:?}");
        assert!(lines[2].starts_with("Note: ctx=0 conc=4 attempt 1: only shard 0 made it (2 of the cell's 4 streams)"));
        let text = crate::report::tables::render_text(&r, true, false);
        assert!(text.contains("Merged report of session s1") && text.contains("only shard 0 made it"), "{text}");
    }
}
