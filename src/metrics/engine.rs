//! Per-replica engine numbers ([`EngineSample`]) extracted from a scrape, and their deltas.
//!
//! Rules (docs/protocol.md §0): exact names only; `*_created` is never a counter; series of
//! several DP engines (`engine` label) are summed, fractions averaged; histogram bounds come
//! from `le`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::dialect::EngineDialect;
use super::histogram::{Histogram, HistogramError};
use super::prom::{MetricType, Scrape};

/// One poll of one replica. Every field is `None` when the page doesn't expose it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EngineSample {
    /// The dialect the numbers were read with.
    pub dialect: EngineDialect,
    /// Requests in the running batch, summed over engines.
    pub running: Option<f64>,
    /// Requests in the waiting queue, summed over engines (never `..._by_reason`).
    pub waiting: Option<f64>,
    /// KV-cache usage, fraction 0..1, averaged over engines.
    pub kv_usage: Option<f64>,
    /// Counter: prompt tokens looked up in the prefix cache, tokens (vLLM 0.8.x: blocks).
    /// SGLang: all prompt tokens of finished requests.
    pub prefix_queries_tokens: Option<f64>,
    /// Counter: prompt tokens served from the prefix cache, tokens (vLLM 0.8.x: blocks).
    pub prefix_hits_tokens: Option<f64>,
    /// Counter: preemptions (vLLM) or retractions (SGLang `num_retracted_requests_total`).
    pub preemptions: Option<f64>,
    /// SGLang `num_retracted_reqs` gauge (requests retracted recently; not cumulative).
    pub retracted_gauge: Option<f64>,
    /// Counter: prompt tokens processed, tokens (SGLang: counted when a request finishes).
    pub prompt_tokens: Option<f64>,
    /// Counter: generated tokens, tokens (SGLang, llama.cpp: counted when a request finishes).
    pub generation_tokens: Option<f64>,
    /// Counter that moves as tokens are generated, tokens: vLLM's `generation_tokens_total`;
    /// llama.cpp's busy-slot decodes, `n_busy_slots_per_decode x n_decode_total` (one token per
    /// busy slot per decode call, prefill calls included); None where the engine counts tokens
    /// only when a request ends (SGLang). See [`EngineDialect::live_tokens`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live_generation_tokens: Option<f64>,
    /// Counter: requests finished for any reason but abort.
    pub requests_finished: Option<f64>,
    /// Counter: aborted requests.
    pub requests_aborted: Option<f64>,
    /// KV-cache capacity summed over engines, tokens.
    pub kv_capacity_tokens: Option<f64>,
    /// KV block (page) size, tokens.
    pub block_size: Option<f64>,
    /// llama.cpp `n_tokens_max`: longest sequence seen since start (high-water mark, not a
    /// capacity), tokens.
    pub peak_seq_tokens: Option<f64>,
    /// Time-to-first-token histogram, seconds, summed over engines.
    pub ttft_hist: Option<Histogram>,
    /// Inter-token latency histogram, seconds, summed over engines.
    pub itl_hist: Option<Histogram>,
}

/// Counter changes between two [`EngineSample`]s of one replica.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CounterDeltas {
    /// Prefix-cache lookups, tokens.
    pub prefix_queries_tokens: Option<f64>,
    /// Prefix-cache hits, tokens.
    pub prefix_hits_tokens: Option<f64>,
    /// Preemptions / retractions.
    pub preemptions: Option<f64>,
    /// Prompt tokens, tokens.
    pub prompt_tokens: Option<f64>,
    /// Generated tokens, tokens.
    pub generation_tokens: Option<f64>,
    /// Tokens the live counter saw generated ([`EngineSample::live_generation_tokens`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live_generation_tokens: Option<f64>,
    /// Requests finished (not aborted).
    pub requests_finished: Option<f64>,
    /// Requests aborted.
    pub requests_aborted: Option<f64>,
    /// TTFT observations in the interval, seconds.
    pub ttft_hist: Option<Histogram>,
    /// Inter-token latency observations in the interval, seconds.
    pub itl_hist: Option<Histogram>,
    /// A counter or histogram went down (the replica restarted); for those the later
    /// value itself is reported as the delta.
    pub reset: bool,
}

impl CounterDeltas {
    /// Prefix-cache token hit ratio in the interval, 0..1; `None` without lookups.
    pub fn prefix_hit_rate(&self) -> Option<f64> {
        let (h, q) = (self.prefix_hits_tokens?, self.prefix_queries_tokens?);
        (q > 0.0).then(|| h / q)
    }
}

impl EngineSample {
    /// Detects the dialect, then extracts.
    pub fn detect(scrape: &Scrape) -> EngineSample {
        Self::from_scrape(scrape, EngineDialect::detect(scrape))
    }

    /// Extracts the numbers of `dialect` from `scrape`.
    pub fn from_scrape(scrape: &Scrape, dialect: EngineDialect) -> EngineSample {
        let mut sample = match dialect {
            EngineDialect::VllmV1 => vllm(scrape, true),
            EngineDialect::VllmV0 => vllm(scrape, false),
            EngineDialect::Sglang => sglang(scrape),
            EngineDialect::LlamaCpp => llamacpp(scrape),
            EngineDialect::Unknown => EngineSample::default(),
        };
        sample.dialect = dialect;
        sample
    }

    /// Counter changes since `earlier`: `None` where either side lacks the counter; a counter
    /// that went down means a restart, so the later value is the delta and `reset` is set.
    pub fn delta(&self, earlier: &EngineSample) -> CounterDeltas {
        let mut reset = false;
        let mut d = |later: Option<f64>, before: Option<f64>| {
            let (l, e) = (later?, before?);
            if l < e {
                reset = true;
                Some(l)
            } else {
                Some(l - e)
            }
        };
        let mut out = CounterDeltas {
            prefix_queries_tokens: d(self.prefix_queries_tokens, earlier.prefix_queries_tokens),
            prefix_hits_tokens: d(self.prefix_hits_tokens, earlier.prefix_hits_tokens),
            preemptions: d(self.preemptions, earlier.preemptions),
            prompt_tokens: d(self.prompt_tokens, earlier.prompt_tokens),
            generation_tokens: d(self.generation_tokens, earlier.generation_tokens),
            live_generation_tokens: d(self.live_generation_tokens, earlier.live_generation_tokens),
            requests_finished: d(self.requests_finished, earlier.requests_finished),
            requests_aborted: d(self.requests_aborted, earlier.requests_aborted),
            ..CounterDeltas::default()
        };
        out.reset = reset;
        out.ttft_hist = hist_delta(&self.ttft_hist, &earlier.ttft_hist, &mut out.reset);
        out.itl_hist = hist_delta(&self.itl_hist, &earlier.itl_hist, &mut out.reset);
        out
    }
}

fn hist_delta(later: &Option<Histogram>, before: &Option<Histogram>, reset: &mut bool) -> Option<Histogram> {
    let (l, e) = (later.as_ref()?, before.as_ref()?);
    if l.same_bounds(e) && l.is_reset_since(e) {
        *reset = true;
    }
    l.delta(e)
}

/// Sum of a counter; `Some(0)` when its family is declared but has no series yet
/// (labelled counters appear only once touched).
fn counter(s: &Scrape, name: &str) -> Option<f64> {
    s.sum(name).or_else(|| {
        let declared = s.types().get(name) == Some(&MetricType::Counter)
            || name.strip_suffix("_total").and_then(|f| s.types().get(f)).is_some_and(|t| *t == MetricType::Counter);
        declared.then_some(0.0)
    })
}

/// The first of `names` that is exposed as a counter.
fn first_counter(s: &Scrape, names: &[&str]) -> Option<f64> {
    names.iter().find_map(|n| counter(s, n))
}

/// The first of `names` whose histogram exists; a histogram that exists but can't be read
/// (mixed bounds) gives `None` rather than a fallback.
fn first_hist(s: &Scrape, names: &[&str]) -> Option<Histogram> {
    for name in names {
        match s.try_histogram(name) {
            Ok(h) => return Some(h),
            Err(HistogramError::NotFound { .. }) => continue,
            Err(_) => return None,
        }
    }
    None
}

fn vllm(s: &Scrape, v1: bool) -> EngineSample {
    let (queries, hits, usage) = if v1 {
        (
            ["vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total"],
            ["vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total"],
            ["vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"],
        )
    } else {
        (
            ["vllm:gpu_prefix_cache_queries_total"; 2],
            ["vllm:gpu_prefix_cache_hits_total"; 2],
            ["vllm:gpu_cache_usage_perc", "vllm:kv_cache_usage_perc"],
        )
    };
    let (requests_finished, requests_aborted) = vllm_finished(s);
    let (kv_capacity_tokens, block_size) = vllm_kv_capacity(s);
    EngineSample {
        running: s.sum("vllm:num_requests_running"),
        waiting: s.sum("vllm:num_requests_waiting"),
        kv_usage: usage.iter().find_map(|n| s.avg(n)),
        prefix_queries_tokens: first_counter(s, &queries),
        prefix_hits_tokens: first_counter(s, &hits),
        preemptions: counter(s, "vllm:num_preemptions_total"),
        prompt_tokens: counter(s, "vllm:prompt_tokens_total"),
        generation_tokens: counter(s, "vllm:generation_tokens_total"),
        // vLLM counts generated tokens per engine step: the same counter is live.
        live_generation_tokens: counter(s, "vllm:generation_tokens_total"),
        requests_finished,
        requests_aborted,
        kv_capacity_tokens,
        block_size,
        ttft_hist: first_hist(s, &["vllm:time_to_first_token_seconds"]),
        itl_hist: first_hist(s, &["vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds"]),
        ..EngineSample::default()
    }
}

/// `request_success_total` split into (all reasons but `abort`, `abort`).
fn vllm_finished(s: &Scrape) -> (Option<f64>, Option<f64>) {
    const NAME: &str = "vllm:request_success_total";
    let total = counter(s, NAME);
    let aborted = total.map(|_| s.sum_where(NAME, "finished_reason", "abort").unwrap_or(0.0));
    (total.zip(aborted).map(|(t, a)| t - a), aborted)
}

/// KV capacity (tokens) and block size from `vllm:cache_config_info`: per engine
/// `kv_cache_size_tokens` when present, else `num_gpu_blocks × block_size`, summed over
/// distinct `engine` values. An info series without `engine` on a page whose gauges show N
/// engines is taken to describe each of them (DP engines share one cache config).
fn vllm_kv_capacity(s: &Scrape) -> (Option<f64>, Option<f64>) {
    let mut per_engine: BTreeMap<Option<&str>, f64> = BTreeMap::new();
    let mut block_size = None;
    for x in s.samples("vllm:cache_config_info") {
        let num = |key: &str| {
            let v = x.labels.get(key)?.trim().parse::<f64>().ok()?;
            (v.is_finite() && v >= 0.0).then_some(v)
        };
        let bs = num("block_size");
        block_size = block_size.or(bs);
        let tokens = num("kv_cache_size_tokens").or_else(|| Some(num("num_gpu_blocks")? * bs?));
        if let Some(t) = tokens {
            per_engine.entry(x.labels.get("engine").map(String::as_str)).or_insert(t);
        }
    }
    if per_engine.is_empty() {
        return (None, block_size);
    }
    let mut total: f64 = per_engine.values().sum();
    if per_engine.keys().all(Option::is_none) {
        let engines = s.label_values("vllm:num_requests_running", "engine").len();
        total *= engines.max(1) as f64;
    }
    (Some(total), block_size)
}

fn sglang(s: &Scrape) -> EngineSample {
    let prompt = counter(s, "sglang:prompt_tokens_total");
    let aborted = counter(s, "sglang:num_aborted_requests_total");
    // `num_requests_total` counts requests the tokenizer saw finish, running ones cut by their
    // client included; `num_aborted_requests_total` counts every client abort, queued ones
    // too (docs/protocol.md §2.1), so the difference is a close floor of the finished ones.
    let finished = counter(s, "sglang:num_requests_total").map(|t| (t - aborted.unwrap_or(0.0)).max(0.0));
    let scheduler = |name: &str| sglang_schedulers(s, name);
    let kv_usage = scheduler("sglang:token_usage");
    EngineSample {
        running: scheduler("sglang:num_running_reqs").map(|v| v.iter().sum()),
        waiting: scheduler("sglang:num_queue_reqs").map(|v| v.iter().sum()),
        kv_usage: kv_usage.map(|v| v.iter().sum::<f64>() / v.len() as f64),
        prefix_queries_tokens: prompt,
        prefix_hits_tokens: counter(s, "sglang:cached_tokens_total"),
        preemptions: scheduler("sglang:num_retracted_requests_total")
            .map(|v| v.iter().sum())
            .or_else(|| counter(s, "sglang:num_retracted_requests_total")),
        retracted_gauge: scheduler("sglang:num_retracted_reqs").map(|v| v.iter().sum()),
        prompt_tokens: prompt,
        generation_tokens: counter(s, "sglang:generation_tokens_total"),
        // Newer builds count decoded tokens per step (docs/protocol.md §2.1); older have none live.
        live_generation_tokens: sglang_schedulers_where(s, "sglang:realtime_tokens_total", |l| {
            l.get("mode").is_some_and(|m| m == "decode")
        })
        .map(|v| v.iter().sum()),
        requests_finished: finished,
        requests_aborted: aborted,
        kv_capacity_tokens: scheduler("sglang:max_total_num_tokens").map(|v| v.iter().sum()),
        block_size: scheduler("sglang:page_size").and_then(|v| v.first().copied()),
        ttft_hist: first_hist(s, &["sglang:time_to_first_token_seconds"]),
        itl_hist: first_hist(s, &["sglang:inter_token_latency_seconds", "sglang:time_per_output_token_seconds"]),
        ..EngineSample::default()
    }
}

/// One value per distinct SGLang scheduler: every pipeline stage (`pp_rank`) and, with
/// `--enable-metrics-for-all-schedulers`, every TP rank of a DP rank logs the same scheduler
/// state, so of the series that differ only in `tp_rank`, `pp_rank` or `pid` the one of the
/// lowest (`pp_rank`, `tp_rank`) is kept (docs/protocol.md §2.1). `None` without a series.
fn sglang_schedulers(s: &Scrape, name: &str) -> Option<Vec<f64>> {
    sglang_schedulers_where(s, name, |_| true)
}

/// [`sglang_schedulers`] over the series whose labels pass `keep`.
fn sglang_schedulers_where(
    s: &Scrape,
    name: &str,
    keep: impl Fn(&BTreeMap<String, String>) -> bool,
) -> Option<Vec<f64>> {
    /// (`pp_rank`, `tp_rank`) of the series kept, and its value.
    type RankedValue = ((u64, u64), f64);
    let rank = |l: &BTreeMap<String, String>, k: &str| l.get(k).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    let mut kept: BTreeMap<Vec<(&str, &str)>, RankedValue> = BTreeMap::new();
    for x in s.samples(name).filter(|x| !x.value.is_nan() && keep(&x.labels)) {
        let key: Vec<(&str, &str)> = x
            .labels
            .iter()
            .filter(|(k, _)| !matches!(k.as_str(), "tp_rank" | "pp_rank" | "pid"))
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let at = (rank(&x.labels, "pp_rank"), rank(&x.labels, "tp_rank"));
        let slot = kept.entry(key).or_insert((at, x.value));
        if at < slot.0 {
            *slot = (at, x.value);
        }
    }
    (!kept.is_empty()).then(|| kept.into_values().map(|(_, v)| v).collect())
}

fn llamacpp(s: &Scrape) -> EngineSample {
    // `prompt_tokens_total` excludes the tokens reused from the cache (its HELP says so), so
    // the lookups are both together (they move once a prompt is evaluated, docs/protocol.md §2.3).
    let prompt = counter(s, "llamacpp:prompt_tokens_total");
    let cached = counter(s, "llamacpp:prompt_tokens_cached_total");
    // Live: every decode call adds one token per busy slot, and the gauge (a counter in older
    // builds) is the lifetime average of busy slots per call, so their product is the running
    // total of busy-slot decodes (docs/protocol.md §2.3).
    let decodes = counter(s, "llamacpp:n_decode_total");
    let busy = s.sum("llamacpp:n_busy_slots_per_decode");
    EngineSample {
        running: s.sum("llamacpp:requests_processing"),
        waiting: s.sum("llamacpp:requests_deferred"),
        kv_usage: s.avg("llamacpp:kv_cache_usage_ratio"),
        prompt_tokens: prompt,
        prefix_hits_tokens: cached,
        prefix_queries_tokens: cached.zip(prompt).map(|(c, p)| c + p),
        generation_tokens: counter(s, "llamacpp:tokens_predicted_total"),
        live_generation_tokens: decodes.zip(busy).map(|(n, b)| n * b),
        peak_seq_tokens: s.sum("llamacpp:n_tokens_max"),
        ..EngineSample::default()
    }
}
