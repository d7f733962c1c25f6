//! `llm-decode-bench sim`: flags of the simulated cluster.

use crate::sim::expo::MetricsDialect;
use crate::sim::faults::FaultSpec;
use crate::sim::gateway::{GatewayMode, PrefixParams, RouterPolicy};
use crate::sim::params::EngineParams;
use crate::sim::{EngineMode, SimConfig};
use crate::units::{parse_duration, parse_size};
use clap::Args;
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

fn size_usize(s: &str) -> Result<usize, String> {
    parse_size(s).map(|v| v as usize)
}

/// Flags of `llm-decode-bench sim`.
#[derive(Debug, Clone, Args)]
pub struct SimArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: IpAddr,
    /// Gateway port; replica i listens on PORT+i. 0 picks free ports.
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
    /// Number of replicas behind the gateway.
    #[arg(long, default_value_t = 2)]
    pub replicas: usize,
    /// Served model name.
    #[arg(long, default_value = "sim-llama-27b")]
    pub model: String,
    /// Server every replica imitates: `vllm` (OpenAI server, metrics in --metrics-dialect) or
    /// `llamacpp` (llama.cpp's llama-server --metrics: slots, llamacpp:* metrics, its streams).
    #[arg(long = "engine", value_enum, default_value_t = EngineMode::Vllm)]
    pub engine_mode: EngineMode,
    /// llama.cpp mode: context of one slot, tokens (e.g. 8k); default: the KV capacity shared
    /// out over the slots, at most --max-model-len.
    #[arg(long, value_parser = size_usize)]
    pub slot_ctx: Option<usize>,
    /// Most requests running at once per replica (vLLM --max-num-seqs; llama.cpp's slots);
    /// default 8. Unset by default as in vLLM, so its start-up line names it whenever given.
    #[arg(long)]
    pub max_num_seqs: Option<usize>,
    /// Token budget of one engine step, tokens (chunked prefill; vLLM --max-num-batched-tokens).
    #[arg(long, default_value = "2048", value_parser = size_usize)]
    pub max_num_batched_tokens: usize,
    /// KV-cache blocks per replica (capacity = blocks x block size).
    #[arg(long, default_value_t = 22_528)]
    pub kv_blocks: usize,
    /// Tokens per KV block.
    #[arg(long, default_value_t = 16)]
    pub block_size: usize,
    /// Longest prompt + output a request may have, tokens (e.g. 128k).
    #[arg(long, default_value = "128k", value_parser = size_usize)]
    pub max_model_len: usize,
    /// Tokens per streamed chunk (vLLM --stream-interval).
    #[arg(long, default_value_t = 1)]
    pub stream_interval: u32,
    /// Run modelled time this many times faster than wall time.
    #[arg(long, default_value_t = 1.0)]
    pub speed: f64,
    /// Modelled fixed cost of one engine step, milliseconds.
    #[arg(long, default_value_t = 5.6)]
    pub step_base_ms: f64,
    /// Modelled cost per request in a step, milliseconds.
    #[arg(long, default_value_t = 1.15)]
    pub step_per_seq_ms: f64,
    /// Modelled cost per prefill token, microseconds.
    #[arg(long, default_value_t = 170.0)]
    pub step_per_prefill_token_us: f64,
    /// Modelled cost per resident context token of the batch, nanoseconds.
    #[arg(long, default_value_t = 2.5)]
    pub step_per_ctx_token_ns: f64,
    /// Modelled time a request spends in the API server before the engine queues it (counted
    /// neither running nor waiting), milliseconds; short requests turning over then leave
    /// slots empty, as on a real server.
    #[arg(long, default_value_t = 0.0)]
    pub frontend_delay_ms: f64,
    /// Metrics dialect per replica, comma-separated (vllm, sglang); the last one repeats.
    #[arg(long, default_value = "vllm", value_delimiter = ',')]
    pub metrics_dialect: Vec<MetricsDialect>,
    /// Faults to inject, e.g. `reset=0.02,http500=0.01,http503=0.01,http429=0.01,stall=0.01,malformed=0.01,metrics-fail=0.1,metrics-slow=0.05` (rates 0..1).
    #[arg(long, default_value = "")]
    pub faults: FaultSpec,
    /// How long a slow `/metrics` answer takes (wall clock).
    #[arg(long, default_value = "3s", value_parser = parse_duration)]
    pub metrics_slow_delay: Duration,
    /// Gateway prefix-cache router: prompt bytes per hashed block.
    #[arg(long, default_value_t = 128)]
    pub prefix_block_bytes: usize,
    /// Gateway prefix-cache router: in-flight spread that triggers least-request routing.
    #[arg(long, default_value_t = 16)]
    pub imbalance_abs: usize,
    /// Gateway prefix-cache router: load ceiling in standard deviations above the mean.
    #[arg(long, default_value_t = 2.0)]
    pub stddev_factor: f64,
    /// Seed of the simulator's random choices (faults, random routing).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Gateway to imitate: `aibrix` (routing-strategy header, target-pod answer), or `vllm-router` /
    /// `sglang-router` (own policy, continuous_usage_stats stripped, no worker header, own metric names).
    #[arg(long, value_enum, default_value_t = GatewayMode::Aibrix)]
    pub gateway_mode: GatewayMode,
    /// Worker-selection policy of the vllm-router and sglang-router modes (cache_aware reuses the
    /// prefix-cache router); ignored in aibrix mode.
    #[arg(long, value_enum, default_value_t = RouterPolicy::RoundRobin)]
    pub router_policy: RouterPolicy,
    /// vllm-router mode: count each request twice in vllm_router_processed_requests_total, as
    /// vllm-router 0.1.17 was seen to over-count.
    #[arg(long)]
    pub router_overcount: bool,
    /// Mount `POST /reset_prefix_cache` on every replica, as vLLM does only with
    /// `VLLM_SERVER_DEV_MODE=1` (without it a reset answers 404, like stock vLLM).
    #[arg(long)]
    pub dev_mode: bool,
    /// Usage carries `prompt_tokens_details.cached_tokens`, as vLLM's
    /// `--enable-prompt-tokens-details` (stock vLLM sends no per-request cache hits).
    #[arg(long)]
    pub enable_prompt_tokens_details: bool,
    /// Also write the endpoints as JSON to this file once serving; an existing file is
    /// replaced only when it is an earlier ready file, or with --overwrite.
    #[arg(long)]
    pub ready_file: Option<PathBuf>,
    /// Let --ready-file replace any existing file.
    #[arg(long)]
    pub overwrite: bool,
    /// No gateway: the one replica (--replicas 1) listens on --port itself, as a single
    /// `vllm serve` does (e.g. as `run --server-cmd`).
    #[arg(long)]
    pub no_gateway: bool,
}

/// The largest step cost, front-end delay or `--stddev-factor` taken.
const MAX_COST: f64 = 1e6;
/// The most replicas a simulated cluster has (as `Cluster::start` checks).
const MAX_REPLICAS: usize = 64;
/// The most tokens of a size flag (`--max-model-len`, `--slot-ctx`, KV capacity, ...): 2^30.
const MAX_SIM_TOKENS: usize = 1 << 30;
/// The simulated engine's sequence cap when `--max-num-seqs` is not given.
const DEFAULT_MAX_NUM_SEQS: usize = 8;

impl SimArgs {
    /// Bounds the counts and sizes, so that the cluster's tables and KV arithmetic stay small.
    fn check_sizes(&self) -> Result<(), String> {
        crate::units::in_range("--speed", self.speed, 0.001, 1e6)?;
        if !(1..=MAX_REPLICAS).contains(&self.replicas) {
            return Err(format!("--replicas must be within 1..{MAX_REPLICAS}"));
        }
        let kv = self.kv_blocks.saturating_mul(self.block_size);
        let sizes = [
            ("--max-num-seqs", self.max_num_seqs()),
            ("--max-num-batched-tokens", self.max_num_batched_tokens),
            ("--max-model-len", self.max_model_len),
            ("--slot-ctx", self.slot_ctx.unwrap_or(0)),
            ("--kv-blocks x --block-size", kv),
        ];
        match sizes.iter().find(|(_, v)| *v > MAX_SIM_TOKENS) {
            Some((flag, _)) => Err(format!("{flag} must be at most {MAX_SIM_TOKENS}")),
            None => Ok(()),
        }
    }
}

fn ms(v: f64) -> Duration {
    crate::units::secs(v / 1e3)
}

impl SimArgs {
    /// The simulator configuration these flags describe.
    pub fn to_config(&self) -> Result<SimConfig, String> {
        let all = [
            self.step_base_ms,
            self.step_per_seq_ms,
            self.step_per_prefill_token_us,
            self.step_per_ctx_token_ns,
            self.frontend_delay_ms,
            self.stddev_factor,
        ];
        if all.iter().any(|v| !(0.0..=MAX_COST).contains(v)) {
            return Err("step costs, --frontend-delay-ms and --stddev-factor must be numbers from 0 to 1000000".into());
        }
        self.check_sizes()?;
        let engine = EngineParams {
            max_num_seqs: self.max_num_seqs(),
            max_num_batched_tokens: self.max_num_batched_tokens,
            kv_blocks: self.kv_blocks,
            block_size: self.block_size,
            max_model_len: self.max_model_len,
            step_base: ms(self.step_base_ms),
            step_per_seq: ms(self.step_per_seq_ms),
            step_per_prefill_token: ms(self.step_per_prefill_token_us / 1e3),
            step_per_ctx_token_ns: self.step_per_ctx_token_ns,
            frontend_delay: ms(self.frontend_delay_ms),
            speed: self.speed,
        };
        engine.validate()?;
        if self.prefix_block_bytes == 0 {
            return Err("--prefix-block-bytes must be at least 1".into());
        }
        let cfg = SimConfig {
            host: self.host,
            port: self.port,
            replicas: self.replicas,
            model: self.model.clone(),
            engine,
            stream_interval: self.stream_interval.max(1),
            dialects: self.metrics_dialect.clone(),
            faults: self.faults.clone(),
            metrics_slow_delay: self.metrics_slow_delay,
            prefix: PrefixParams {
                block_bytes: self.prefix_block_bytes,
                imbalance_abs: self.imbalance_abs,
                stddev_factor: self.stddev_factor,
                ..PrefixParams::default()
            },
            seed: self.seed,
            gateway_mode: self.gateway_mode,
            router_policy: self.router_policy,
            router_overcount: self.router_overcount,
            dev_mode: self.dev_mode,
            prompt_tokens_details: self.enable_prompt_tokens_details,
            engine_mode: self.engine_mode,
            slot_ctx: self.slot_ctx,
            no_gateway: self.no_gateway,
        };
        crate::sim::check(&cfg)?;
        Ok(cfg)
    }
}

impl SimArgs {
    /// `--max-num-seqs`, or the simulated engine's own default.
    pub fn max_num_seqs(&self) -> usize {
        self.max_num_seqs.unwrap_or(DEFAULT_MAX_NUM_SEQS)
    }

    /// The engine settings that differ from their defaults, as vLLM's start-up log line says
    /// them (`non-default args: {'max_num_seqs': 4}`), under vLLM's names where it has them.
    pub fn non_default_args(&self) -> String {
        let Some(d) = <SimArgsOnly as clap::Parser>::try_parse_from(["sim"]).ok().map(|o| o.sim) else {
            return "non-default args: {}".into();
        };
        let fields = [
            ("max_num_batched_tokens", self.max_num_batched_tokens, d.max_num_batched_tokens),
            ("num_gpu_blocks_override", self.kv_blocks, d.kv_blocks),
            ("block_size", self.block_size, d.block_size),
            ("max_model_len", self.max_model_len, d.max_model_len),
        ];
        let mut parts: Vec<String> =
            fields.iter().filter(|(_, v, d)| v != d).map(|(k, v, _)| format!("'{k}': {v}")).collect();
        // vLLM's max_num_seqs has no default (the engine resolves one), so a given value is
        // always in the line, even one equal to what the engine would pick.
        if let Some(n) = self.max_num_seqs {
            parts.insert(0, format!("'max_num_seqs': {n}"));
        }
        if self.model != d.model {
            parts.insert(0, format!("'served_model_name': '{}'", self.model));
        }
        format!("non-default args: {{{}}}", parts.join(", "))
    }
}

/// The sim's flags alone, to read their defaults.
#[derive(clap::Parser)]
struct SimArgsOnly {
    #[command(flatten)]
    sim: SimArgs,
}

#[cfg(test)]
mod tests {
    use crate::cli::{Cli, Command};
    use crate::sim::{EngineMode, SimConfig};
    use clap::Parser;

    fn config(args: &[&str]) -> SimConfig {
        let cli = Cli::try_parse_from([&["llm-decode-bench", "sim"], args].concat()).unwrap();
        let Some(Command::Sim(sim)) = cli.command else { panic!("not the sim subcommand") };
        sim.to_config().unwrap()
    }

    #[test]
    fn the_engine_defaults_to_vllm_and_llamacpp_takes_a_slot_context() {
        let c = config(&[]);
        assert_eq!((c.engine_mode, c.slot_ctx), (EngineMode::Vllm, None));
        let c = config(&["--engine", "llamacpp", "--slot-ctx", "8k", "--max-num-seqs", "4"]);
        assert_eq!((c.engine_mode, c.slot_ctx, c.engine.max_num_seqs), (EngineMode::Llamacpp, Some(8192), 4));
        assert_eq!(config(&["--metrics-dialect", "vllm,sglang"]).dialects.len(), 2, "dialects still work");
        assert!(Cli::try_parse_from(["x", "sim", "--engine", "tgi"]).is_err());
    }

    #[test]
    fn the_start_line_names_the_settings_off_their_defaults_as_vllm_does() {
        let args = |a: &[&str]| match Cli::try_parse_from([&["x", "sim"], a].concat()).unwrap().command {
            Some(Command::Sim(s)) => s,
            _ => panic!("not sim"),
        };
        assert_eq!(args(&[]).non_default_args(), "non-default args: {}");
        let line = args(&["--max-num-seqs", "4", "--kv-blocks", "4000", "--model", "m"]).non_default_args();
        assert_eq!(
            line,
            "non-default args: {'served_model_name': 'm', 'max_num_seqs': 4, 'num_gpu_blocks_override': 4000}"
        );
        let eight = args(&["--max-num-seqs", "8"]).non_default_args();
        assert_eq!(eight, "non-default args: {'max_num_seqs': 8}", "given, even at the engine's own default");
        assert!(args(&["--no-gateway"]).to_config().unwrap_err().contains("--replicas 1"));
        assert!(args(&["--no-gateway", "--replicas", "1"]).to_config().unwrap().no_gateway);
    }
}
