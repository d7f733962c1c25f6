//! Which decode cell an attempt runs, and how long its streams ask to be.

/// Identifies the cell being run.
#[derive(Debug, Clone)]
pub struct DecodeCellSpec {
    /// Index in the session plan.
    pub cell: usize,
    /// Label (`ctx=16k conc=4`).
    pub label: String,
    /// Context size, tokens.
    pub ctx: u64,
    /// Requested streams (closed loop), or the in-flight cap (open loop): this shard's own
    /// (its slice of `planned_conc`; the whole of it unsharded).
    pub conc: u32,
    /// The cell's planned concurrency over every shard (its `conc` column), streams: what the
    /// server's running count, which counts every shard's streams, is compared with.
    pub planned_conc: u32,
    /// Open-loop arrival rate; None: closed loop.
    pub rate: Option<crate::config::Rate>,
    /// 1-based attempt number.
    pub attempt: u32,
    /// This shard's slice of the cell's arrivals (open loop: arrival k is sent by shard k mod
    /// N; `conc` above is already the shard's own).
    pub slice: crate::load::slice::Slice,
    /// The instant the window opens on the session's timeline (`--start-at`): the warmup
    /// lasts until then whatever admission says; None opens it when the streams are admitted.
    pub opens_at: Option<tokio::time::Instant>,
}
