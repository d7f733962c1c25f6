//! The `sweep` section of a session report (`run --server-cmd`, docs/reports.md): the
//! parameter names, the server command (API keys masked), and every parameter set with its
//! server's start-up, the settings the server resolved, and the set's own complete session
//! report nested inside, so the set is the outer dimension of every cell.

pub mod compare;
pub(crate) mod render;
pub mod side;

use super::json::SessionReport;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The engine-config sweep of a report.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SweepSection {
    /// Parameter names, in the order given (`--server-param`, or a `--server-params` file).
    pub params: Vec<String>,
    /// The server command template (`--server-cmd`), API keys masked.
    pub server_cmd: String,
    /// The target template (`--base-url`), credentials removed.
    pub base_url: String,
    /// Longest wait for a started server to answer `/health` and `/v1/models`, seconds.
    pub ready_timeout_s: f64,
    /// Wait after SIGTERM before SIGKILL, seconds.
    pub grace_s: f64,
    /// Every set, in run order; sets not reached yet are `pending`.
    pub sets: Vec<SweepSet>,
}

/// Where a parameter set stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SetStatus {
    /// Not reached yet.
    Pending,
    /// Its server is starting.
    Starting,
    /// Its session is running.
    Running,
    /// Its session ran to its end.
    Done,
    /// Its server exited or never became healthy before `--server-timeout` (see `log_tail`).
    FailedToStart,
    /// Its server answered but the session could not start (preflight; see `error`).
    Errored,
    /// The operator skipped it (`x` in the monitor) while it ran.
    SkippedByOperator,
    /// The sweep was stopped (a signal, or the operator quitting) while the set ran.
    Stopped,
}

impl SetStatus {
    /// The report name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Starting => "starting",
            Self::Running => "running",
            Self::Done => "done",
            Self::FailedToStart => "failed_to_start",
            Self::Errored => "errored",
            Self::SkippedByOperator => "skipped_by_operator",
            Self::Stopped => "stopped",
        }
    }

    /// The set has an outcome (the sweep will not run it again).
    pub fn is_final(self) -> bool {
        !matches!(self, Self::Pending | Self::Starting | Self::Running)
    }

    /// The set failed: its server did not start, or its session could not.
    pub fn failed(self) -> bool {
        matches!(self, Self::FailedToStart | Self::Errored)
    }
}

/// What the server of a set said about its own settings once it was up.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ServerSettings {
    /// The engine's sequence cap (vLLM `max_num_seqs`, llama.cpp's slots, SGLang's
    /// `max_running_requests`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_num_seqs: Option<u64>,
    /// Where it was read: `log: non-default args` (vLLM), `/props total_slots` (llama.cpp),
    /// `/get_server_info max_running_requests` (SGLang).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_num_seqs_from: Option<String>,
    /// KV-cache blocks (`num_gpu_blocks` of `vllm:cache_config_info`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_gpu_blocks: Option<u64>,
    /// Tokens per KV block (`block_size` of `vllm:cache_config_info`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_size: Option<u64>,
    /// Every label of `vllm:cache_config_info` (the engine's cache configuration), as strings.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub cache_config: BTreeMap<String, String>,
    /// The scalar values of the server log's `non-default args: {...}` line (vLLM), keys and
    /// secrets masked.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub args: BTreeMap<String, String>,
}

impl ServerSettings {
    /// True when nothing was read.
    pub fn is_empty(&self) -> bool {
        self == &Self::default()
    }
}

/// One parameter set of the sweep.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SweepSet {
    /// Position in the sweep, from 1.
    pub index: usize,
    /// Its value of every parameter.
    pub params: BTreeMap<String, String>,
    /// Where it stands.
    pub status: SetStatus,
    /// The loopback port picked for its server (`{port}`), once picked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// The command run (`sh -c`), API keys masked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Seconds from the start of its server to `/v1/models` answering.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub startup_s: Option<f64>,
    /// The settings its server resolved, when it came up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<ServerSettings>,
    /// Its server's stdout and stderr, a file beside the report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log: Option<String>,
    /// The last lines of that log when the set failed (keys masked).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub log_tail: Vec<String>,
    /// Why it failed, one line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// How its server ended (`exit status: 0`, `signal: 15 (SIGTERM)`; `SIGKILL after 10 s` when the
    /// grace ran out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_exit: Option<String>,
    /// Its session report, every cell and figure, as a `run` without a sweep writes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<Box<SessionReport>>,
}

impl SweepSet {
    /// A set not reached yet.
    pub fn pending(index: usize, params: BTreeMap<String, String>) -> Self {
        Self {
            index,
            params,
            status: SetStatus::Pending,
            port: None,
            command: None,
            startup_s: None,
            server: None,
            log: None,
            log_tail: Vec::new(),
            error: None,
            server_exit: None,
            report: None,
        }
    }
}

impl SweepSection {
    /// `set 2/3 · max_num_seqs=16`: set `s` as a heading names it.
    pub fn title(&self, s: &SweepSet) -> String {
        format!("set {}/{} · {}", s.index, self.sets.len(), self.describe(s))
    }

    /// `max_num_seqs=16, block_size=32` in parameter order.
    pub fn describe(&self, s: &SweepSet) -> String {
        describe(&self.params, &s.params)
    }

    /// Every set that has a session, as (label, report): `set 1 · max_num_seqs=4`, the label
    /// a view over several sessions (the sets side by side, a chart of them) names it by.
    pub fn sessions(&self) -> Vec<(String, &SessionReport)> {
        let label = |s: &SweepSet| format!("set {} · {}", s.index, self.describe(s));
        self.sets.iter().filter_map(|s| s.report.as_deref().map(|r| (label(s), r))).collect()
    }
}

/// A start-up time as the tables say it: `0.04`, `83.2` (seconds).
pub fn seconds(s: f64) -> String {
    if s < 1.0 { format!("{s:.2}") } else { format!("{s:.1}") }
}

/// `a=1, b=2` in the order of `names`; `(no parameters)` for an empty set.
pub fn describe(names: &[String], set: &BTreeMap<String, String>) -> String {
    let parts: Vec<String> = names.iter().filter_map(|n| set.get(n).map(|v| format!("{n}={v}"))).collect();
    match parts.is_empty() {
        true => "(no parameters)".into(),
        false => parts.join(", "),
    }
}

#[cfg(test)]
mod tests;
