//! The report's record of a sharded session (issue 27): which shard wrote a file
//! (`shard`), and which shards a merged report holds (`merge`).

use serde::{Deserialize, Serialize};

/// The shard that wrote this report: its slice of the session and its clock.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ShardSection {
    /// This shard, 0-based.
    pub index: u32,
    /// Shards in the session.
    pub count: u32,
    /// The session's id, the same in every shard.
    pub session_id: String,
    /// The wall-clock instant the session's cell timeline starts at (`--start-at`), unix
    /// seconds; None when the shard started at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_at_unix_s: Option<f64>,
    /// This machine's clock as the system's NTP state gave it, when readable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock: Option<ClockReading>,
    /// The attempts this shard ran on the session's timeline (`--start-at`), in run order:
    /// when each was due and when it started and opened its window, wall clock.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub timeline: Vec<SlotRecord>,
}

/// One attempt on the session's cell timeline: its fixed slot and what this shard did with it.
/// Instants are wall clock, unix seconds (this machine's clock: see `clock`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SlotRecord {
    /// The cell's label.
    pub cell: String,
    /// The attempt, 1-based.
    pub attempt: u32,
    /// When the slot began: the instant every shard starts this attempt.
    pub slot_start_unix_s: f64,
    /// The slot's length, s (a decode cell's: --warmup-timeout + window + drain allowance).
    pub slot_s: f64,
    /// When this shard started the attempt.
    pub started_unix_s: f64,
    /// How late it started, ms: > 0 when the attempt before overran its slot (or the run
    /// reached --start-at late); 0 on time.
    pub late_ms: f64,
    /// When the window was due to open (the slot start + --warmup-timeout), for a cell that
    /// opens one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_due_unix_s: Option<f64>,
    /// When this shard's window opened, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_opened_unix_s: Option<f64>,
}

#[cfg(test)]
impl SlotRecord {
    /// A slot of `cell`'s attempt `attempt` that began at `start` (unix s), started on time and
    /// opened no window, for tests.
    pub(crate) fn on_time(cell: &str, attempt: u32, start: f64) -> SlotRecord {
        SlotRecord {
            cell: cell.into(),
            attempt,
            slot_start_unix_s: start,
            slot_s: 16.0,
            started_unix_s: start,
            late_ms: 0.0,
            window_due_unix_s: None,
            window_opened_unix_s: None,
        }
    }
}

/// A machine's clock against true time, as the kernel's NTP state reports it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ClockReading {
    /// Where the figures came from (e.g. `adjtimex`).
    pub source: String,
    /// True when the kernel says the clock is synchronised.
    pub synced: bool,
    /// Estimated offset from true time, ms (the kernel's current offset), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset_ms: Option<f64>,
    /// The kernel's maximum error bound, ms, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_error_ms: Option<f64>,
    /// The kernel's estimated error, ms, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub est_error_ms: Option<f64>,
}

/// What a merged report (`report merge`) was made of.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MergeSection {
    /// The session every merged shard belongs to.
    pub session_id: String,
    /// Shards the session had.
    pub shard_count: u32,
    /// Every shard of the session, in index order, with what became of it.
    pub shards: Vec<MergedShard>,
}

/// One shard of a merged session.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MergedShard {
    /// The shard, 0-based.
    pub index: u32,
    /// What the merge found for it.
    pub status: MergedShardStatus,
    /// The file it was read from, when one was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// Why it is not `merged` (one line), when it is not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// What became of one shard in a merge.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum MergedShardStatus {
    /// Its report is in the merge and the shard finished.
    Merged,
    /// Its report is in the merge but the shard did not finish (killed, halted, stopped).
    Incomplete,
    /// No report of it was given.
    Missing,
}
