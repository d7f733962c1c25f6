//! The serve experiment's report section (`run --plan serve`): per attempt, `vllm bench
//! serve`'s result figures under vLLM's own field names (`completed`, `request_throughput`,
//! `mean_ttft_ms`, `p99_itl_ms`, ...), beside our per-token ITL (`*_itl_token_ms`).

use super::json::RequestRecord;
use super::status::{AttemptStatus, CellOutcome};
use crate::load::sample::ErrorKind;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The serve experiment: one cell per input len x max concurrency x request rate.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ServeSection {
    /// Input length labels in row order.
    pub ctx_labels: Vec<String>,
    /// Max concurrencies, in order.
    pub conc: Vec<u32>,
    /// Request rates, in order (`inf` or requests/s as given).
    pub request_rates: Vec<String>,
    /// Shape of the gamma arrival process (1: Poisson).
    pub burstiness: f64,
    /// Requests per cell.
    pub num_prompts: u32,
    /// `max_tokens` of each request (sent with `ignore_eos`).
    pub output_len: u64,
    /// Seed of the prompts, their lengths and the arrival gaps.
    pub seed: u64,
    /// vLLM's `--random-range-ratio`: each request's input and output length was uniform over
    /// [floor(L·(1−R)), ceil(L·(1+R))] around the cell's (0: exactly L; and in reports written
    /// before the flag).
    #[serde(default)]
    pub random_range_ratio: f64,
    /// The `--goodput` SLO `request_goodput` was computed under; null without `--goodput`.
    #[serde(default)]
    pub goodput_slo: Option<GoodputSlo>,
    /// The dataset file the prompts came from (`--dataset-name sharegpt|custom`); absent for
    /// vLLM's `random` workload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset: Option<super::dataset::DatasetRecord>,
    /// vLLM's shared-prefix workload the prompts followed (`--dataset-name prefix_repetition`);
    /// absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_repetition: Option<super::dataset::PrefixRepetitionRecord>,
    /// The trace replayed on its own schedule (`--dataset-name mooncake_trace|azure_trace`);
    /// absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<super::dataset::TraceRecord>,
    /// The token ids prompts were drawn from, and the vocabulary the server was found to
    /// accept (absent when no cell ran, and in reports written before it was probed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_ids: Option<TokenIds>,
    /// The knee of each row that has one (`experiment::serve::knee`): along the rate when
    /// rates are swept, else along the concurrency.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub knees: Vec<crate::report::knee::RowKnee>,
    /// One entry per cell, in plan order.
    pub cells: Vec<ServeCellReport>,
}

impl ServeSection {
    /// The legend line of the prompts, when they were not vLLM's `random` workload.
    pub fn workload_line(&self) -> Option<String> {
        let shared = || self.prefix_repetition.as_ref().map(|p| p.line());
        let trace = || self.trace.as_ref().map(|t| t.line());
        self.dataset.as_ref().map(|d| d.line()).or_else(shared).or_else(trace)
    }
}

/// Where serve prompts' token ids come from: ids `[low, high)` of a vocabulary of `vocab` ids
/// (the largest one-token prompt the server accepted, plus one).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct TokenIds {
    /// Ids the server accepts: 0 to `vocab` - 1.
    pub vocab: u32,
    /// Lowest id drawn.
    pub low: u32,
    /// One past the highest id drawn.
    pub high: u32,
    /// One-token requests the probe sent.
    pub probes: u32,
    /// Of those, the ones the server served (one prompt and one output token each, counted in
    /// its Prometheus totals like any request).
    pub accepted: u32,
}

/// A `--goodput` SLO, ms: a request is good when it meets every bound that is set.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct GoodputSlo {
    /// Largest TTFT, ms.
    pub ttft_ms: Option<f64>,
    /// Largest TPOT, ms.
    pub tpot_ms: Option<f64>,
    /// Largest end-to-end latency, ms.
    pub e2el_ms: Option<f64>,
}

/// One serve cell with its history.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ServeCellReport {
    /// Prompt length, tokens.
    pub input_len: u64,
    /// Input length label.
    pub ctx_label: String,
    /// Most requests in flight.
    pub max_concurrency: u32,
    /// Mean arrival rate: `inf` or requests/s.
    pub request_rate: String,
    /// Where the cell stands.
    pub status: CellOutcome,
    /// Why the cell was skipped.
    pub timeout_reason: Option<String>,
    /// What kept the cell from running (`kv_cache`, `context_length`, `plan`, `past_knee`);
    /// absent unless skipped, and in reports written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skip: Option<crate::report::skip::SkipKind>,
    /// Every attempt, oldest first.
    pub attempts: Vec<ServeAttempt>,
    /// This cell's figures against the same cell of the `--baseline` session (omitted without
    /// one, or when the baseline has no result for the cell).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub baseline: Vec<crate::report::baseline::BaselineFigure>,
    /// Its repeated runs (`run --num-runs N`, N > 1): the latest round's attempts and every
    /// headline figure's mean, sd, CV and confidence interval; the tables show the means.
    /// Absent with one run per cell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runs: Option<crate::report::runs::RunsBlock>,
}

/// One run of a serve cell: `num_prompts` requests on the cell's arrival schedule.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ServeAttempt {
    /// 1-based attempt number.
    pub attempt: u32,
    /// How the attempt ended.
    pub status: AttemptStatus,
    /// Attempt start, seconds since the session start.
    pub started_s: f64,
    /// Requests planned.
    pub num_prompts: u32,
    /// Failed requests by kind.
    pub errors: BTreeMap<ErrorKind, u64>,
    /// One example message per error kind (absent in reports that predate it).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub error_examples: BTreeMap<ErrorKind, String>,
    /// Re-sends on a fresh connection of requests that provably never reached the server
    /// (docs/reports.md); not failures. 0 in reports that predate it.
    #[serde(default)]
    pub reconnects: u64,
    /// vLLM's figures.
    #[serde(flatten)]
    pub metrics: ServeMetrics,
    /// One entry per request.
    pub request_samples: Vec<RequestRecord>,
    /// The server's count of the attempt's output tokens against the client's; absent when
    /// not polled, the engine is unknown, or the attempt was stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_tokens: Option<ServerTokenCheck>,
    /// What the server's prefix cache served the attempt's requests, beside the most its
    /// workload shares (`warm` when more); absent without prefix-cache counters, or when the
    /// attempt was stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_cache: Option<super::prefix_cache::PrefixCacheCheck>,
    /// How late the requests were sent against their schedule (each request's
    /// `schedule_lag_ms`); absent when none was sent, and in reports written before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule_lag: Option<super::schedule_lag::ScheduleLag>,
    /// A shard's attempt (`run --shard i/N`): its chunk gaps, from which `report merge`
    /// recomputes the session's ITL figures; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard_gaps: Option<super::shard_dists::ServeShardGaps>,
}

/// The server's and the client's output tokens of one serve attempt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerTokenCheck {
    /// The engine counter read, e.g. `llamacpp:tokens_predicted_total`.
    pub counter: String,
    /// Its change over the attempt, summed over the replicas, tokens.
    pub server_output_tokens: f64,
    /// Output tokens the client counted over every request (failed ones included), tokens.
    pub client_output_tokens: u64,
    /// The two are equal.
    pub equal: bool,
}

/// `vllm bench serve`'s result figures of one attempt, with its definitions: latencies are of
/// completed requests only; a figure without samples is null (vLLM writes 0).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ServeMetrics {
    /// Requests the server completed.
    pub completed: u64,
    /// Requests that failed (or were cut by a stop).
    pub failed: u64,
    /// Prompt tokens of completed requests.
    pub total_input_tokens: u64,
    /// Output tokens of completed requests.
    pub total_output_tokens: u64,
    /// Schedule start (vLLM's benchmark start: at `inf` the first send) to the last end, s.
    pub duration_s: f64,
    /// Completed requests / duration, requests/s.
    pub request_throughput: f64,
    /// Output tokens / duration, tok/s.
    pub output_throughput: f64,
    /// (Input + output tokens) / duration, tok/s.
    pub total_token_throughput: f64,
    /// Completed requests meeting the `--goodput` SLO / duration, requests/s; null without it.
    #[serde(default)]
    pub request_goodput: Option<f64>,
    /// Mean time to first token, from the send, ms (completed requests).
    #[serde(default)]
    pub mean_ttft_ms: Option<f64>,
    /// Median time to first token, from the send, ms (completed requests).
    #[serde(default)]
    pub median_ttft_ms: Option<f64>,
    /// Population standard deviation (numpy's `np.std`) of the time to first token, from the send, ms (completed requests).
    #[serde(default)]
    pub std_ttft_ms: Option<f64>,
    /// 99th percentile (numpy's linear method) of the time to first token, from the send, ms (completed requests).
    #[serde(default)]
    pub p99_ttft_ms: Option<f64>,
    /// Mean time per output token, (e2el - ttft) / (output tokens - 1), per request, ms (completed requests).
    #[serde(default)]
    pub mean_tpot_ms: Option<f64>,
    /// Median time per output token, (e2el - ttft) / (output tokens - 1), per request, ms (completed requests).
    #[serde(default)]
    pub median_tpot_ms: Option<f64>,
    /// Population standard deviation (numpy's `np.std`) of the time per output token, (e2el - ttft) / (output tokens - 1), per request, ms (completed requests).
    #[serde(default)]
    pub std_tpot_ms: Option<f64>,
    /// 99th percentile (numpy's linear method) of the time per output token, (e2el - ttft) / (output tokens - 1), per request, ms (completed requests).
    #[serde(default)]
    pub p99_tpot_ms: Option<f64>,
    /// Mean inter-token latency per chunk: the gap between consecutive content chunks of a request (vLLM's ITL), ms (completed requests).
    #[serde(default)]
    pub mean_itl_ms: Option<f64>,
    /// Median inter-token latency per chunk: the gap between consecutive content chunks of a request (vLLM's ITL), ms (completed requests).
    #[serde(default)]
    pub median_itl_ms: Option<f64>,
    /// Population standard deviation (numpy's `np.std`) of the inter-token latency per chunk: the gap between consecutive content chunks of a request (vLLM's ITL), ms (completed requests).
    #[serde(default)]
    pub std_itl_ms: Option<f64>,
    /// 99th percentile (numpy's linear method) of the inter-token latency per chunk: the gap between consecutive content chunks of a request (vLLM's ITL), ms (completed requests).
    #[serde(default)]
    pub p99_itl_ms: Option<f64>,
    /// Mean inter-token latency per token: a chunk of k tokens after gap g gives k values g/k (our ITL, beside vLLM's), ms (completed requests).
    #[serde(default)]
    pub mean_itl_token_ms: Option<f64>,
    /// Median inter-token latency per token: a chunk of k tokens after gap g gives k values g/k (our ITL, beside vLLM's), ms (completed requests).
    #[serde(default)]
    pub median_itl_token_ms: Option<f64>,
    /// Population standard deviation (numpy's `np.std`) of the inter-token latency per token: a chunk of k tokens after gap g gives k values g/k (our ITL, beside vLLM's), ms (completed requests).
    #[serde(default)]
    pub std_itl_token_ms: Option<f64>,
    /// 99th percentile (numpy's linear method) of the inter-token latency per token: a chunk of k tokens after gap g gives k values g/k (our ITL, beside vLLM's), ms (completed requests).
    #[serde(default)]
    pub p99_itl_token_ms: Option<f64>,
    /// Mean end-to-end latency, send to last byte, ms (completed requests).
    #[serde(default)]
    pub mean_e2el_ms: Option<f64>,
    /// Median end-to-end latency, send to last byte, ms (completed requests).
    #[serde(default)]
    pub median_e2el_ms: Option<f64>,
    /// Population standard deviation (numpy's `np.std`) of the end-to-end latency, send to last byte, ms (completed requests).
    #[serde(default)]
    pub std_e2el_ms: Option<f64>,
    /// 99th percentile (numpy's linear method) of the end-to-end latency, send to last byte, ms (completed requests).
    #[serde(default)]
    pub p99_e2el_ms: Option<f64>,
}
