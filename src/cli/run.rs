//! `llm-decode-bench run`: flags of a benchmark session.

use crate::config::MetricsEndpoint;
use crate::config::{PlanKind, RunConfig};
use crate::experiment::routing::{Arrival, Scenario};
use crate::load::request::{ApiKey, Endpoint};
use crate::net::check_url;
use crate::session::preflight::parse_metrics_arg;
use crate::session::prior::Prior;
use crate::units::parse_duration;
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

/// The TTFT objective when no flag names one.
pub(crate) const DEFAULT_SLO_TTFT: Duration = Duration::from_secs(2);

fn size(s: &str) -> Result<u64, String> {
    super::run_bounds::tokens(s)
}

fn conc(s: &str) -> Result<u32, String> {
    super::run_bounds::streams(s)
}

fn url(s: &str) -> Result<String, String> {
    check_url(s.trim()).map(|_| s.trim().to_string())
}

/// Flags of `llm-decode-bench run`.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// Base URL of the OpenAI-compatible server or gateway, e.g. http://127.0.0.1:8000 (or
    /// vLLM's --host and --port).
    #[arg(long, value_parser = url)]
    pub base_url: Option<String>,
    /// The flags of `vllm bench serve` users paste (`--host`, `--port`, `--backend`, ...).
    #[command(flatten)]
    pub vllm: super::vllm_compat::VllmFlags,
    /// The conversation experiment's flags (`--plan conversation`).
    #[command(flatten)]
    pub conversation: super::conversation_flags::ConversationFlags,
    /// The SLO search's flags (`--plan serve --slo-search`).
    #[command(flatten)]
    pub slo_search: super::slo_search_flags::SloSearchFlags,
    /// The engine-config sweep's flags (`--server-cmd`, `--server-param`, ...).
    #[command(flatten)]
    pub sweep: super::sweep_flags::SweepFlags,
    /// Repetitions: `--num-runs N` runs of every cell.
    #[command(flatten)]
    pub runs: super::runs_flags::RunsFlags,
    /// `--source-addrs ADDR[,ADDR...]`: local addresses of the stream connections.
    #[command(flatten)]
    pub source: super::source_addrs::SourceAddrsFlag,
    /// `--shard i/N`, `--shards N`, `--session-id`, `--start-at`: one shard of a session.
    #[command(flatten)]
    pub sharding: super::shard_flags::ShardFlags,
    /// `--observe`, `--client-selector`, `--observe-timeout`: watch a sharded session instead.
    #[command(flatten)]
    pub observing: super::observe_flags::ObserveFlags,
    /// Serve the client's live figures at http://IP:PORT/metrics in Prometheus text format for
    /// the whole session (tokens, requests, errors by kind, running streams, TTFT/ITL/TPOT
    /// histograms; labels cell, shard, session; docs/metrics.md), e.g. 0.0.0.0:9464; port 0
    /// picks a free port (printed). Bound before any load: a taken address exits 2
    #[arg(long, value_name = "IP:PORT", value_parser = crate::metrics::expose::serve::parse_listen)]
    pub metrics_listen: Option<std::net::SocketAddr>,
    /// With --metrics-listen: keep serving /metrics this long after the session ended (its
    /// report written), so a Prometheus scraping every 15 s still takes the final counts
    #[arg(long, value_name = "DURATION", default_value = "0s", value_parser = parse_duration)]
    pub metrics_linger: Duration,
    /// Model name (default: the first one `/v1/models` lists).
    #[arg(long)]
    pub model: Option<String>,
    /// A replica's Prometheus page, `URL` or `NAME=URL`; repeat once per replica (default: <base-url>/metrics).
    #[arg(long = "metrics-url", visible_alias = "replica", value_parser = parse_metrics_arg)]
    pub metrics_url: Vec<MetricsEndpoint>,
    /// Replicas from a Prometheus server (`--prometheus`, `--replica-selector`).
    #[command(flatten)]
    pub prom: super::prometheus::PrometheusArgs,
    /// The gateway's Prometheus page (routing counters).
    #[arg(long, value_parser = url)]
    pub gateway_metrics: Option<String>,
    /// Do not poll any Prometheus page (so no --metrics-url or --gateway-metrics with it).
    #[arg(long, conflicts_with_all = ["metrics_url", "gateway_metrics"])]
    pub no_metrics: bool,
    /// Experiments to run, comma-separated: decode, routing, serve (`vllm bench serve`'s random
    /// workload: token-id prompts sent to /v1/completions whatever --endpoint says),
    /// conversation (multi-turn sessions on /v1/chat/completions).
    #[arg(long, value_delimiter = ',', default_value = "decode")]
    pub plan: Vec<PlanKind>,
    /// Context sizes of the decode matrix, and the serve experiment's input lengths, tokens (k = 1024).
    #[arg(long, visible_alias = "random-input-len", value_delimiter = ',', value_parser = size, default_value = "0,16k,32k,64k,128k")]
    pub ctx: Vec<u64>,
    /// Concurrencies of the decode matrix, streams; the serve experiment's in-flight caps.
    #[arg(long, visible_alias = "max-concurrency", value_delimiter = ',', value_parser = conc, default_value = "1,2,4,8,16")]
    pub conc: Vec<u32>,
    /// Measurement window of each cell; at least 4 x --poll-interval (1s at the default).
    #[arg(long, value_parser = parse_duration, default_value = "30s")]
    pub window: Duration,
    /// Longest warmup of a cell before its window opens anyway (marked with `*`).
    #[arg(long, value_parser = parse_duration, default_value = "60s")]
    pub warmup_timeout: Duration,
    /// Extra warmup once the engine has admitted the streams.
    #[arg(long, value_parser = parse_duration, default_value = "1s")]
    pub settle: Duration,
    /// Skip (∅) a cell when ctx x conc exceeds the KV capacity times this factor.
    #[arg(long, default_value_t = 4.0)]
    pub kv_oversubscribe: f64,
    /// OpenAI endpoint used for the load (`--plan serve` always uses /v1/completions: its
    /// prompts are token ids).
    #[arg(long, value_enum, default_value_t = Endpoint::Chat)]
    pub endpoint: Endpoint,
    /// Name of the environment variable holding the API key (sent as a bearer token).
    #[arg(long, default_value = "OPENAI_API_KEY")]
    pub api_key_env: String,
    /// API key (prefer --api-key-env: a flag shows in the process list). Never printed or saved.
    #[arg(long, hide_default_value = true)]
    pub api_key: Option<ApiKey>,
    /// Run Phase 3 after the matrix: a finite burst per cell, measured end to end.
    #[arg(long)]
    pub run_burst: bool,
    /// Stop escalating a row of the decode matrix past its knee: once throughput stops rising
    /// while TTFT or the queue keeps rising, the row's higher-load cells are skipped.
    #[arg(long)]
    pub stop_at_knee: bool,
    /// Output tokens of each burst request.
    #[arg(long, value_parser = super::run_bounds::output_tokens, default_value_t = 256)]
    pub burst_tokens: u64,
    /// max_tokens of sustained streams (default: outlast the window within max_model_len).
    #[arg(long, value_parser = super::run_bounds::output_tokens)]
    pub max_tokens: Option<u64>,
    /// Fewest output tokens a sustained stream asks for; a context that leaves less is sent anyway and refused (Ne).
    #[arg(long, value_parser = size, default_value = "4k")]
    pub min_stream_tokens: u64,
    /// A stream silent this long after its first token counts as stalled.
    #[arg(long, value_parser = parse_duration, default_value = "120s")]
    pub idle_timeout: Duration,
    /// A request without its first token this long, while no stream of the cell gets one, fails (first_token_timeout); also the deadline of preflight's calibration probes [default: 120s + 2ms per prompt token].
    #[arg(long, value_parser = parse_duration)]
    pub first_token_timeout: Option<Duration>,
    /// Prometheus poll interval, at least 50ms (a --window spans at least 4 polls).
    #[arg(long, value_parser = parse_duration, default_value = "250ms")]
    pub poll_interval: Duration,
    /// Response header naming the serving replica (checked before target-pod and x-worker-url).
    #[arg(long)]
    pub served_by_header: Option<String>,
    /// Report file (default: sessions/<timestamp>.json); checked before any load is sent. An
    /// existing file is refused unless it is the --resume file or --overwrite is given.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Let --out (or --result-dir/--result-filename) replace an existing file, a session
    /// report included.
    #[arg(long)]
    pub overwrite: bool,
    /// Directory for the report when --out is not given (`vllm bench serve --result-dir`):
    /// DIR/<timestamp>.json, or DIR/<--result-filename>.
    #[arg(long, value_name = "DIR")]
    pub result_dir: Option<PathBuf>,
    /// File name of the report inside --result-dir (or the current directory).
    #[arg(long, value_name = "NAME")]
    pub result_filename: Option<String>,
    /// Accepted for `vllm bench serve` habits: the report is always saved.
    #[arg(long)]
    pub save_result: bool,
    /// A TOML file holding any of these flags by long name; flags given here win over it
    /// (`llm-decode-bench config --print-default` prints a full one).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Routing strategies to compare, sent as the `routing-strategy` header; `deployed` runs one
    /// route named after the policy a fixed-policy router (vllm-router, sglang-router) applies,
    /// which is also what happens behind such a router whatever is asked.
    #[arg(long, value_delimiter = ',', default_value = "random,least-request,prefix-cache")]
    pub routes: Vec<String>,
    /// Cache scenarios: cold-uniform, warm-uniform, hotNN (NN% of requests to one family),
    /// conversation (each family a conversation whose requests are its growing turns).
    #[arg(long, value_delimiter = ',', default_value = "cold-uniform,warm-uniform,hot50,hot90")]
    pub scenarios: Vec<Scenario>,
    /// Rounds of the routing experiment (each with its own seed and route order).
    #[arg(long, default_value_t = 2)]
    pub rounds: u32,
    /// Requests per routing phase, and per serve cell.
    #[arg(long, visible_alias = "num-prompts", default_value_t = 96)]
    pub count: u32,
    /// Mean arrival rate of a routing phase, requests/s (a single finite --request-rate sets it too).
    #[arg(long, default_value_t = 1.6)]
    pub rps: f64,
    /// Open-loop arrival rates of decode and serve cells, requests/s or `inf`, comma-separated
    /// (`1,4,16,inf` sweeps them); each cell keeps at most --conc requests in flight. Not given:
    /// decode runs closed loop and serve sends every prompt at once.
    #[arg(long, value_delimiter = ',', value_name = "RATE")]
    pub request_rate: Vec<crate::config::Rate>,
    /// Shape of the gamma arrival process of --request-rate (1: Poisson; below 1 burstier,
    /// above 1 more even), as `vllm bench serve --burstiness`.
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    pub burstiness: f64,
    /// Step of the monitor's load knob (`+` / `-` on a running decode cell): a percentage of
    /// the load (`25%`: streams by a quarter, at least one; rates x1.25 or /1.25) or an
    /// absolute number (streams closed loop, requests/s open loop).
    #[arg(long, default_value = "25%", value_name = "STEP")]
    pub knob_step: crate::config::KnobStep,
    /// At the end of a decode window, let each stream finish the request it is on (up to 8 s,
    /// then it is cut) instead of cutting it: every request then ends whole, so the report's
    /// tokens equal the server's counters. Pair with --max-tokens so requests end.
    #[arg(long)]
    pub drain: bool,
    /// Arrival process of a routing phase.
    #[arg(long, value_enum, default_value_t = Arrival::Poisson)]
    pub arrival: Arrival,
    /// Output tokens per routing request, and per serve request (max_tokens with ignore_eos).
    #[arg(long, visible_alias = "random-output-len", value_parser = super::run_bounds::output_tokens, default_value = "128")]
    pub output: u64,
    /// Length of a family prefix, tokens.
    #[arg(long, value_parser = size, default_value = "5000")]
    pub prompt_tokens: u64,
    /// Prompt families per phase.
    #[arg(long, default_value_t = 8)]
    pub families: u32,
    /// Candidate prefixes primed per attempt before warm and hot phases: at least this many,
    /// more on a fleet whose quotas need them (R x (ln R + 2 quota + 3)); an attempt stops
    /// once the family map is balanced.
    #[arg(long, default_value_t = 16)]
    pub priming_candidates: u32,
    /// Sharded routing (--shard with --plan routing): how long shard 0 has for a phase's cache
    /// resets and priming before every shard starts the measured part, e.g. `20s`, at most 1 h
    /// [default: 2 s per replica, plus 3 s per family in a primed scenario]
    #[arg(long, value_parser = parse_duration, value_name = "D")]
    pub priming_slot: Option<Duration>,
    /// A request is good when its TTFT is at most this [default: 2s]; with --slo-tpot, the
    /// session's goodput SLO (every experiment reports goodput against it).
    #[arg(long, value_parser = parse_duration)]
    pub slo_ttft: Option<Duration>,
    /// ... and its TPOT at most this, when given.
    #[arg(long, value_parser = parse_duration)]
    pub slo_tpot: Option<Duration>,
    /// Goodput SLO as `vllm bench serve` takes it: `KEY:MS` pairs, KEY one of ttft, tpot, e2el
    /// (e.g. `--goodput ttft:2000 tpot:50`); replaces --slo-ttft / --slo-tpot.
    #[arg(long, num_args = 1.., value_name = "KEY:MS")]
    pub goodput: Vec<String>,
    /// Base seed of the routing experiment (round r uses seed + r), of the serve experiment's
    /// prompts and arrival gaps, of the conversation experiment's conversations and think
    /// times, and of a dataset's sample (default: a new one every session,
    /// recorded in the report, so two sessions never share prompts in a prefix cache unless
    /// given the same).
    #[arg(long)]
    pub seed: Option<u64>,
    /// The seed drawn for this session when `--seed` is not given (drawn once).
    #[arg(skip)]
    pub drawn_seed: std::sync::OnceLock<u64>,
    /// Print the final tables in plain ASCII instead of box drawing.
    #[arg(long)]
    pub ascii: bool,
    /// Run without the live monitor: progress on stderr, tables on stdout.
    #[arg(long)]
    pub headless: bool,
    /// Also append the log lines to this file (the monitor's log panel, or headless progress).
    #[arg(long)]
    pub log_file: Option<PathBuf>,
    /// Continue the interrupted session saved in this report: its finished cells are kept, the
    /// rest run, and the report is written back to it (unless --out is given). The flags the
    /// report recorded are restored; a flag given that differs is refused before any load.
    /// A shard's report (--shard) whose --start-at has passed takes a new --start-at, which
    /// replaces the saved one (the session id stays): its unfinished cells run on the new
    /// timeline, alone unless the other shards resume at the same instant (`report merge`
    /// notes such cells).
    #[arg(long, value_name = "FILE")]
    pub resume: Option<PathBuf>,
    /// Show every cell's delta against the same cell of this saved session report (matched
    /// as `compare` matches them): live in the monitor, in the final tables and in the report.
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    /// Exit 0 even when cells errored (every request of theirs failed); by default such a run exits 4.
    /// A session that halted (cells left unrun) still exits 4.
    #[arg(long)]
    pub allow_errors: bool,
}

impl RunConfig {
    /// The configuration `run --base-url BASE_URL` gives: every other setting at its flag's
    /// default. Code that builds a configuration (the demo, tests) starts from it.
    pub fn defaults(base_url: &str) -> RunConfig {
        #[derive(clap::Parser)]
        struct Only {
            #[command(flatten)]
            run: RunArgs,
        }
        let parsed = <Only as clap::Parser>::try_parse_from(["run", "--base-url", base_url]);
        let mut cfg = parsed.map_err(|e| e.to_string()).and_then(|o| o.run.to_config()).unwrap_or_else(|e| {
            unreachable!("the defaults of `run` are valid: {e}");
        });
        cfg.base_url = base_url.to_string();
        // Whatever the environment holds, a built configuration sends no key.
        cfg.api_key = None;
        cfg
    }
}

impl RunArgs {
    /// `--seed`, else a seed drawn for this session.
    pub fn session_seed(&self) -> u64 {
        self.seed.unwrap_or_else(|| *self.drawn_seed.get_or_init(|| u64::from(rand::random::<u32>())))
    }

    /// Checks the flags and builds the run configuration, then reads `--baseline` and checks
    /// that `--resume` can continue its report under it (a resumed run writes to that report
    /// unless `--out` says otherwise).
    pub fn to_session(&self) -> Result<(RunConfig, Prior), String> {
        let mut cfg = self.to_config()?;
        cfg.serve.dataset = self.dataset(&cfg)?;
        cfg.conversation.dataset = self.conversation_dataset(&cfg)?;
        if let Some(trace) = self.trace()? {
            // The replay sends the requests it kept, each its own output length.
            cfg.serve.num_prompts = trace.trace.requests.len() as u32;
            cfg.serve.output_len = trace.trace.requests.iter().map(|r| r.output_len).max().unwrap_or(1);
            cfg.serve.trace = Some(trace);
        }
        let mut prior = Prior::default();
        if let Some(path) = &self.baseline {
            prior.baseline = Some(std::sync::Arc::new(crate::report::baseline::Baseline::open(path)?));
        }
        if let Some(path) = &self.resume {
            prior.resume = Some(crate::session::resume::open(path, &cfg)?);
            cfg.out.get_or_insert_with(|| path.clone());
        }
        Ok((cfg, prior))
    }

    /// Checks the flags and builds the run configuration, without reading the files it names
    /// (`--baseline`, `--resume`: [`Self::to_session`]).
    pub fn to_config(&self) -> Result<RunConfig, String> {
        if let Some(refused) = self.vllm.refused() {
            return Err(refused);
        }
        let base_url = self.vllm.base_url(self.base_url.as_deref())?;
        if self.window.is_zero() {
            return Err("--window must be longer than 0".into());
        }
        if !(self.kv_oversubscribe.is_finite() && self.kv_oversubscribe > 0.0) {
            return Err("--kv-oversubscribe must be a positive number".into());
        }
        if self.first_token_timeout.is_some_and(|t| t.is_zero()) {
            return Err("--first-token-timeout must be longer than 0".into());
        }
        if self.idle_timeout.is_zero() {
            return Err("--idle-timeout must be longer than 0".into());
        }
        if self.poll_interval < Duration::from_millis(50) {
            return Err("--poll-interval must be at least 50ms".into());
        }
        super::run_bounds::check(self)?;
        if self.plan.contains(&PlanKind::Serve) && self.ctx.iter().all(|c| *c == 0) {
            return Err("--random-input-len 0: serve prompts need at least 1 token".into());
        }
        let conversation = self.plan.contains(&PlanKind::Conversation);
        self.vllm.check_with_plan(self.plan.contains(&PlanKind::Serve), conversation)?;
        let trace = crate::cli::vllm_trace::trace_format(self.vllm.dataset_name.as_deref());
        self.vllm.trace.check(trace, !self.request_rate.is_empty())?;
        let from_env = || std::env::var(&self.api_key_env).ok().map(ApiKey::new);
        let api_key = self.api_key.clone().or_else(from_env).filter(|k| !k.is_empty());
        let routing = self.routing_config()?;
        let sharding = self.sharding.resolve(|k| std::env::var(k).ok(), std::time::SystemTime::now())?;
        if sharding.shard.is_some() && self.sweep.server_cmd.is_some() {
            return Err("--server-cmd (a sweep) cannot be sharded: each shard would start its own servers".into());
        }
        let cfg = RunConfig {
            source_addrs: self.source.addrs(&base_url)?,
            routing,
            base_url,
            model: self.vllm.served_model_name.clone().or_else(|| self.model.clone()),
            api_key,
            endpoint: self.vllm.backend.unwrap_or(self.endpoint),
            metrics: self.metrics_url.clone(),
            no_metrics: self.no_metrics,
            prometheus: self.prom.server(&self.metrics_url, self.no_metrics)?,
            plans: dedup(&self.plan),
            ctx: dedup(&self.ctx),
            conc: dedup(&self.conc),
            rates: dedup(&self.request_rate),
            burstiness: self.burstiness,
            window: self.window,
            decode: self.decode_config(),
            idle_timeout: self.idle_timeout,
            first_token_timeout: self.first_token_timeout,
            poll_interval: self.poll_interval,
            served_by_header: self.served_by_header.clone(),
            out: self.out_path(),
            out_dir: self.result_dir.clone(),
            slo: self.slo()?,
            slo_source: self.slo_source(),
            serve: self.serve_config()?,
            conversation: self.conversation.config(conversation, self.vllm.dataset_format()?)?,
            slo_search: self.slo_search_config()?,
            hold_after_last: false,
            report_frame: None,
            num_runs: self.runs.runs()?,
            shard: sharding.shard,
            session_id: sharding.session_id,
            start_at: sharding.start_at,
            request_timeout: sharding.request_timeout,
            exposition: None,
        };
        super::shard_session::finish(cfg, self.seed.is_some())
    }
}

#[path = "run_sections.rs"]
mod sections;

fn dedup<T: PartialEq + Clone>(v: &[T]) -> Vec<T> {
    let mut out: Vec<T> = Vec::with_capacity(v.len());
    for x in v {
        if !out.contains(x) {
            out.push(x.clone());
        }
    }
    out
}

/// Building blocks for unit tests elsewhere in the crate.
#[cfg(test)]
#[path = "run_tests.rs"]
pub(crate) mod tests_support;
