//! `report merge`: one session report from the reports of a sharded session's shards (`run
//! --shard i/N`). Counts add, per-request samples and distributions concatenate, percentiles
//! are recomputed from them and rates add; the server's own figures come from one shard.
//! The rules are in docs/reports.md "Merged reports".

mod attempt;
mod burst;
mod check;
mod decode;
mod dists;
mod extension;
mod routing;
mod saturation;
mod serve;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_burst;
#[cfg(test)]
mod tests_extension;
#[cfg(test)]
mod tests_prop;
#[cfg(test)]
mod tests_routing;
#[cfg(test)]
mod tests_serve;
mod timeline;

pub use check::{MAX_SHARDS, SHARD_OWN_KEYS};

use crate::report::json::SessionReport;
use crate::report::shard::{MergeSection, MergedShard, MergedShardStatus};
use std::collections::BTreeSet;

/// One shard report given to the merge, and the file it was read from.
#[derive(Debug, Clone)]
pub struct ShardInput {
    /// The file, as given (for messages and `merge.shards[].file`).
    pub file: String,
    /// Its report.
    pub report: SessionReport,
}

/// A merged report and what the merge has to say about it.
#[derive(Debug, Clone)]
pub struct Merged {
    /// The session's report: `merge` set, `shard` absent.
    pub report: SessionReport,
    /// One line each: shards missing or unfinished, figures dropped, differences between
    /// shards (for stderr).
    pub notes: Vec<String>,
}

/// Merges the shard reports `inputs` of one session; an error (one line naming the file and
/// the difference) when they are not shards of one session and plan (`check`).
pub fn merge(mut inputs: Vec<ShardInput>) -> Result<Merged, String> {
    let (session_id, count) = check::session(&inputs)?;
    inputs.sort_by_key(index);
    let mut notes = Vec::new();
    let shards = statuses(&inputs, count, &mut notes);
    let parts: Vec<(u32, &SessionReport)> = inputs.iter().map(|i| (index(i), &i.report)).collect();
    let (base_index, base) = parts[0];
    if base_index != 0 {
        notes.push(format!(
            "the server's figures (replica series, Prometheus validation, calibration) are shard {base_index}'s: shard 0 is missing"
        ));
    }
    let mut report = base.clone();
    report.decode = decode::merge(&parts, &mut notes);
    report.serve = serve::merge(&parts, &mut notes);
    // Cells a resumed shard ran on its own new timeline (`run --resume` with --start-at).
    notes.extend(timeline::notes(&parts));
    report.burst = burst::merge(&parts, &mut notes);
    report.extensions = extension::merge(&parts, &mut notes);
    (report.phases, report.phase_history) = routing::merge(&parts, &mut notes);
    report.complete = shards.iter().all(|s| s.status == MergedShardStatus::Merged);
    report.started_at = parts.iter().map(|(_, r)| r.started_at.clone()).min().unwrap_or_default();
    report.updated_at = parts.iter().map(|(_, r)| r.updated_at.clone()).max().unwrap_or_default();
    report.halted = halted(&parts);
    report.warnings = warnings(&parts);
    report.plan.baseline = None;
    report.shard = None;
    report.merge = Some(MergeSection { session_id, shard_count: count, shards });
    let notes = dedup(notes);
    // The file keeps what the merge said (figures left out, shards missing) beside stderr.
    report.warnings.extend(notes.iter().map(|n| format!("merge: {n}")));
    Ok(Merged { report, notes })
}

fn index(input: &ShardInput) -> u32 {
    input.report.shard.as_ref().map_or(0, |s| s.index)
}

/// Every shard of the session with what became of it, in index order; a note for each one
/// missing or unfinished.
fn statuses(inputs: &[ShardInput], count: u32, notes: &mut Vec<String>) -> Vec<MergedShard> {
    (0..count)
        .map(|i| match inputs.iter().find(|x| index(x) == i) {
            None => {
                notes.push(format!("shard {i}/{count} is missing: no report of it was given"));
                MergedShard { index: i, status: MergedShardStatus::Missing, file: None, detail: None }
            }
            Some(x) => {
                let detail = unfinished(&x.report);
                if let Some(d) = &detail {
                    notes.push(format!("shard {i}/{count} ({}) did not finish: {d}", x.file));
                }
                let status = if detail.is_some() { MergedShardStatus::Incomplete } else { MergedShardStatus::Merged };
                MergedShard { index: i, status, file: Some(x.file.clone()), detail }
            }
        })
        .collect()
}

/// Why a shard's report is not of a finished session, if it is not.
fn unfinished(r: &SessionReport) -> Option<String> {
    match (&r.halted, r.complete) {
        (Some(why), _) => Some(format!("halted: {why}")),
        (None, false) => Some("its report is unfinished (complete: false; stopped or killed)".into()),
        (None, true) => None,
    }
}

/// Every shard's halt reason, each under its shard.
fn halted(parts: &[(u32, &SessionReport)]) -> Option<String> {
    let why: Vec<String> =
        parts.iter().filter_map(|(i, r)| r.halted.as_ref().map(|h| format!("shard {i}: {h}"))).collect();
    (!why.is_empty()).then(|| why.join("; "))
}

/// The base shard's warnings, then every other shard's that the base has not, under its shard.
fn warnings(parts: &[(u32, &SessionReport)]) -> Vec<String> {
    let base = &parts[0].1.warnings;
    let mut out = base.clone();
    for (i, r) in &parts[1..] {
        out.extend(r.warnings.iter().filter(|w| !base.contains(w)).map(|w| format!("shard {i}: {w}")));
    }
    out
}

/// `notes` without repeats, in first-seen order.
fn dedup(notes: Vec<String>) -> Vec<String> {
    let mut seen = BTreeSet::new();
    notes.into_iter().filter(|n| seen.insert(n.clone())).collect()
}

/// The note for attempt `name` that only the shards `made` made (a shard killed or stopped
/// before it), `ran` saying what they ran of it.
fn only_some_made(name: &str, made: impl Iterator<Item = u32>, ran: &str) -> String {
    let made: Vec<String> = made.map(|i| i.to_string()).collect();
    format!("{name}: only shard {} made it ({ran}); its figures are theirs", made.join(", "))
}

/// Every attempt number any shard made of one cell, in order, each with the attempts of that
/// number (shard index, attempt) of the shards that made it. `attempts` gives a cell's
/// attempts and `number` an attempt's number.
fn by_attempt_number<'a, C, A>(
    cells: &[(u32, &'a C)],
    attempts: impl Fn(&'a C) -> &'a [A],
    number: impl Fn(&A) -> u32,
) -> Vec<(u32, Vec<(u32, &'a A)>)> {
    let mut numbers: Vec<u32> = cells.iter().flat_map(|(_, c)| attempts(c).iter().map(&number)).collect();
    numbers.sort_unstable();
    numbers.dedup();
    let of = |n: u32| -> Vec<(u32, &'a A)> {
        cells.iter().filter_map(|(i, c)| attempts(c).iter().find(|a| number(a) == n).map(|a| (*i, a))).collect()
    };
    numbers.into_iter().map(|n| (n, of(n))).collect()
}
