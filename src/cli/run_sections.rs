//! The experiment sections and the SLO of a `RunConfig`, built from `run`'s flags.

use super::{DEFAULT_SLO_TTFT, RunArgs, dedup};
use crate::config::decode::DecodeConfig;
use crate::config::{RunConfig, SloSource};
use crate::experiment::routing::RoutingConfig;
use crate::stats::Slo;
use std::path::PathBuf;

/// Longest `--priming-slot`: an hour for one phase's resets and priming.
const MAX_PRIMING_SLOT: std::time::Duration = std::time::Duration::from_secs(3600);

impl RunArgs {
    pub(super) fn decode_config(&self) -> DecodeConfig {
        DecodeConfig {
            warmup_timeout: self.warmup_timeout,
            settle: self.settle,
            kv_oversubscribe: self.kv_oversubscribe,
            run_burst: self.run_burst,
            stop_at_knee: self.stop_at_knee,
            burst_tokens: self.burst_tokens.max(1),
            max_tokens: self.max_tokens,
            min_stream_tokens: self.min_stream_tokens.max(1),
            knob_step: self.knob_step,
            drain: self.drain,
        }
    }

    pub(super) fn routing_config(&self) -> Result<RoutingConfig, String> {
        if self.families == 0 || self.count == 0 || self.rounds == 0 {
            return Err("--families, --count and --rounds must be at least 1".into());
        }
        if self.priming_candidates < self.families {
            return Err("--priming-candidates must be at least --families".into());
        }
        if !(self.rps.is_finite() && self.rps > 0.0) {
            return Err("--rps must be a positive number".into());
        }
        // `vllm bench serve --request-rate R` habits: one finite rate is the routing rate too.
        let rps = match self.request_rate.as_slice() {
            [crate::config::Rate::PerSecond(r)] => *r,
            _ => self.rps,
        };
        if self.priming_slot.is_some_and(|d| d.is_zero() || d > MAX_PRIMING_SLOT) {
            return Err("--priming-slot must be longer than 0 s (shard 0 primes in it) and at most 1 h".into());
        }
        if self.routes.iter().any(|r| r.trim().is_empty()) {
            return Err("--routes has an empty name".into());
        }
        Ok(RoutingConfig {
            routes: dedup(&self.routes.iter().map(|r| r.trim().to_string()).collect::<Vec<_>>()),
            scenarios: dedup(&self.scenarios),
            rounds: self.rounds,
            count: self.count,
            rps,
            arrival: self.arrival,
            output: self.output.max(1),
            prompt_tokens: self.prompt_tokens.max(1),
            families: self.families,
            priming_candidates: self.priming_candidates,
            slo: self.slo()?,
            seed: self.session_seed(),
            gateway_metrics: self.gateway_metrics.clone(),
            max_setup_attempts: 3,
            priming_slot: self.priming_slot,
        })
    }
}

impl RunArgs {
    /// `--out`, else `--result-dir` / `--result-filename`, else None (a default name, in
    /// `--result-dir` when given: [`RunConfig::out_dir`]).
    pub(super) fn out_path(&self) -> Option<PathBuf> {
        if self.out.is_some() {
            return self.out.clone();
        }
        let dir = self.result_dir.clone();
        self.result_filename.as_ref().map(|name| dir.unwrap_or_default().join(name))
    }

    /// The serve experiment's settings: `--count`, `--output`, `--seed`, `--random-range-ratio`
    /// and `--goodput`.
    pub(super) fn serve_config(&self) -> Result<crate::config::serve::ServeConfig, String> {
        // As vLLM: no request_goodput unless an SLO was chosen (the session's, `--goodput` or
        // `--slo-ttft` / `--slo-tpot`).
        let goodput = if self.slo_source().is_chosen() { Some(self.slo()?) } else { None };
        let prefix = self.vllm.prefix.config(self.vllm.dataset_name.as_deref(), self.count)?;
        Ok(crate::config::serve::ServeConfig {
            num_prompts: self.count,
            output_len: prefix.map_or(self.output.max(1), |p| p.output_len),
            seed: self.session_seed(),
            range_ratio: self.vllm.random_range_ratio.unwrap_or(crate::config::serve::RangeRatio::FIXED),
            goodput,
            // Read in `to_session`, which reads the files the flags name.
            dataset: None,
            prefix_repetition: prefix,
            trace: None,
        })
    }

    /// The dataset file of `--dataset-name sharegpt|custom`, sampled: enough entries for every
    /// serve cell to send its own `--num-prompts` (so no cell finds another's prompts in the
    /// prefix cache), twice over for the ones vLLM's length bounds drop; with the `--tokenizer`
    /// file, read first (it is quicker to find wrong than a large dataset).
    pub(super) fn dataset(&self, cfg: &RunConfig) -> Result<Option<crate::config::dataset::DatasetSource>, String> {
        let (Some(format), Some(path)) = (self.vllm.dataset_format()?, &self.vllm.dataset_path) else {
            return Ok(None);
        };
        if !cfg.plans.contains(&crate::config::PlanKind::Serve) {
            return Ok(None);
        }
        let tokenizer =
            self.vllm.tokenizer.as_deref().map(crate::dataset::tokenizer::TokenizerFile::load).transpose()?;
        let cells = match &cfg.slo_search {
            // Each probe of the search sends its own prompts.
            Some(s) => crate::experiment::slo_search::search::most_probes(s),
            None => cfg.conc.len() * cfg.rates.len().max(1),
        };
        let n =
            (cfg.serve.num_prompts as usize).saturating_mul(cells).saturating_mul(crate::config::dataset::OVERSAMPLE);
        let output_len = self.vllm.sharegpt_output_len.or(self.vllm.custom_output_len);
        let source = crate::config::dataset::DatasetSource::load(format, path, n, cfg.serve.seed, output_len)?;
        Ok(Some(crate::config::dataset::DatasetSource { tokenizer, ..source }))
    }

    /// The ShareGPT file of `--plan conversation --dataset-name sharegpt`, sampled: enough
    /// conversations for every conversation cell to run its own.
    pub(super) fn conversation_dataset(
        &self,
        cfg: &RunConfig,
    ) -> Result<Option<crate::config::dataset::DatasetSource>, String> {
        let (Some(format), Some(path)) = (self.vllm.dataset_format()?, &self.vllm.dataset_path) else {
            return Ok(None);
        };
        if !cfg.plans.contains(&crate::config::PlanKind::Conversation) {
            return Ok(None);
        }
        let cells = cfg.conc.len() * cfg.rates.len().max(1);
        let n = (cfg.conversation.conversations as usize).saturating_mul(cells);
        let seed = cfg.serve.seed;
        crate::config::dataset::DatasetSource::load(format, path, n, seed, self.vllm.sharegpt_output_len).map(Some)
    }

    /// The SLO search's settings (`--slo-search`), checked against the rest of the run.
    pub(super) fn slo_search_config(&self) -> Result<Option<crate::config::slo_search::SloSearchConfig>, String> {
        let name = self.vllm.dataset_name.as_deref();
        let trace = name.filter(|_| crate::cli::vllm_trace::trace_format(name).is_some());
        self.slo_search.config(crate::cli::slo_search_flags::RunShape {
            plans: &self.plan,
            slo: self.slo_source(),
            num_prompts: self.count,
            rates_given: !self.request_rate.is_empty(),
            trace,
        })
    }

    /// The trace of `--dataset-name mooncake_trace|azure_trace`, its first `--num-prompts`
    /// requests read.
    pub(super) fn trace(&self) -> Result<Option<crate::config::trace::TraceSource>, String> {
        let format = crate::cli::vllm_trace::trace_format(self.vllm.dataset_name.as_deref());
        let (Some(format), Some(path)) = (format, &self.vllm.dataset_path) else { return Ok(None) };
        crate::config::trace::TraceSource::load(format, path, self.count as usize, self.vllm.trace.speed()).map(Some)
    }

    /// `--goodput` when given, else `--slo-ttft` (default 2 s) and `--slo-tpot`.
    pub(super) fn slo(&self) -> Result<Slo, String> {
        if self.slo_ttft.is_some_and(|t| t.is_zero()) || self.slo_tpot.is_some_and(|t| t.is_zero()) {
            return Err("--slo-ttft and --slo-tpot must be longer than 0".into());
        }
        match self.goodput.is_empty() {
            true => Ok(Slo { ttft: Some(self.slo_ttft.unwrap_or(DEFAULT_SLO_TTFT)), tpot: self.slo_tpot, e2e: None }),
            false => Slo::from_goodput(&self.goodput).map_err(|e| format!("--goodput: {e}")),
        }
    }

    /// Which flags named the SLO.
    pub(super) fn slo_source(&self) -> SloSource {
        match (self.goodput.is_empty(), self.slo_ttft.is_some() || self.slo_tpot.is_some()) {
            (false, _) => SloSource::Goodput,
            (true, true) => SloSource::SloFlags,
            (true, false) => SloSource::Default,
        }
    }
}
