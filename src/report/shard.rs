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
