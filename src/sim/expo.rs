//! Prometheus text exposition of a replica's statistics in vLLM V1 or SGLang names.

use super::params::EngineParams;
use super::stats::{Hist, ReplicaStats};
use std::fmt::Write;
use std::time::Instant;

/// Which engine's metric names a replica exports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MetricsDialect {
    /// vLLM V1 names (`vllm:*`, `model_name` and `engine` labels, `_created` gauges).
    #[default]
    Vllm,
    /// SGLang (`sglang:*`, and SGLang's API: [`crate::sim::sglang`]).
    Sglang,
}

impl std::str::FromStr for MetricsDialect {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "vllm" => Ok(Self::Vllm),
            "sglang" => Ok(Self::Sglang),
            other => Err(format!("unknown metrics dialect `{other}` (known: vllm, sglang)")),
        }
    }
}

/// Builds exposition text family by family.
pub struct Expo {
    out: String,
    labels: String,
}

impl Expo {
    /// A writer whose samples all carry `labels` (already formatted, e.g. `model_name="m"`).
    pub fn new(labels: String) -> Self {
        Self { out: String::with_capacity(8192), labels }
    }

    fn header(&mut self, name: &str, help: &str, kind: &str) {
        let _ = writeln!(self.out, "# HELP {name} {help}\n# TYPE {name} {kind}");
    }

    fn sample(&mut self, name: &str, extra: &str, value: f64) {
        let sep = if extra.is_empty() || self.labels.is_empty() { "" } else { "," };
        let _ = writeln!(self.out, "{name}{{{}{sep}{extra}}} {value:?}", self.labels);
    }

    /// A gauge family with one sample.
    pub fn gauge(&mut self, name: &str, help: &str, value: f64) {
        self.header(name, help, "gauge");
        self.sample(name, "", value);
    }

    /// A counter family (`<base>_total`), followed by its `<base>_created` gauge when
    /// `created` is given, as prometheus_client does in single-process mode.
    pub fn counter(&mut self, base: &str, help: &str, value: f64, created: Option<f64>) {
        self.counter_series(base, help, &[("", value)], created);
    }

    /// A counter family with one sample per extra label set.
    pub fn counter_series(&mut self, base: &str, help: &str, series: &[(&str, f64)], created: Option<f64>) {
        let total = format!("{base}_total");
        self.header(&total, help, "counter");
        for (extra, v) in series {
            self.sample(&total, extra, *v);
        }
        if let Some(c) = created {
            let name = format!("{base}_created");
            self.header(&name, help, "gauge");
            for (extra, _) in series {
                self.sample(&name, extra, c);
            }
        }
    }

    /// A histogram family with cumulative buckets, `+Inf`, `_sum` and `_count`.
    pub fn histogram(&mut self, name: &str, help: &str, h: &Hist, created: Option<f64>) {
        self.header(name, help, "histogram");
        let mut cum = 0u64;
        let bucket = format!("{name}_bucket");
        for (i, count) in h.counts.iter().enumerate() {
            cum += count;
            let le = h.bounds.get(i).map_or_else(|| "+Inf".to_string(), |b| format!("{b:?}"));
            self.sample(&bucket, &format!("le=\"{le}\""), cum as f64);
        }
        self.sample(&format!("{name}_count"), "", h.count as f64);
        self.sample(&format!("{name}_sum"), "", h.sum);
        if let Some(c) = created {
            let cname = format!("{name}_created");
            self.header(&cname, help, "gauge");
            self.sample(&cname, "", c);
        }
    }

    /// The finished text.
    pub fn finish(self) -> String {
        self.out
    }
}

/// Renders a replica's `/metrics` page as scraped at `now` (on the engine's clock).
pub fn render(dialect: MetricsDialect, model: &str, p: &EngineParams, st: &ReplicaStats, now: Instant) -> String {
    match dialect {
        MetricsDialect::Vllm => render_vllm(model, p, st),
        MetricsDialect::Sglang => super::sglang::expo::render(model, p, st, now),
    }
}

fn render_vllm(model: &str, p: &EngineParams, st: &ReplicaStats) -> String {
    let c = Some(st.created_unix);
    let mut e = Expo::new(format!("engine=\"0\",model_name=\"{model}\""));
    e.gauge("vllm:num_requests_running", "Number of requests in model execution batches.", st.running as f64);
    e.gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", st.waiting as f64);
    e.header("vllm:num_requests_waiting_by_reason", "Number of requests waiting, by reason.", "gauge");
    e.sample("vllm:num_requests_waiting_by_reason", "reason=\"capacity\"", st.waiting as f64);
    e.sample("vllm:num_requests_waiting_by_reason", "reason=\"deferred\"", 0.0);
    e.gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", st.kv_usage);
    e.counter(
        "vllm:prefix_cache_queries",
        "Prefix cache queries, in terms of number of queried tokens.",
        st.prefix_queries as f64,
        c,
    );
    e.counter(
        "vllm:prefix_cache_hits",
        "Prefix cache hits, in terms of number of cached tokens.",
        st.prefix_hits as f64,
        c,
    );
    e.counter("vllm:num_preemptions", "Cumulative number of preemption from the engine.", st.preemptions as f64, c);
    e.counter("vllm:prompt_tokens", "Number of prefill tokens processed.", st.prompt_tokens as f64, c);
    e.counter("vllm:generation_tokens", "Number of generation tokens processed.", st.generation_tokens as f64, c);
    let finished = [
        ("finished_reason=\"stop\"", st.finished_stop as f64),
        ("finished_reason=\"length\"", st.finished_length as f64),
        ("finished_reason=\"abort\"", st.finished_abort as f64),
    ];
    e.counter_series("vllm:request_success", "Count of successfully processed requests.", &finished, c);
    e.histogram("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", &st.ttft, c);
    e.histogram("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", &st.itl, c);
    e.histogram("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", &st.e2e, c);
    e.histogram(
        "vllm:request_queue_time_seconds",
        "Histogram of time spent in WAITING phase for request.",
        &st.queue,
        c,
    );
    let info = format!(
        "block_size=\"{}\",cache_dtype=\"auto\",enable_prefix_caching=\"True\",gpu_memory_utilization=\"0.9\",num_cpu_blocks=\"None\",num_gpu_blocks=\"{}\",num_gpu_blocks_override=\"None\",sliding_window=\"None\",swap_space=\"4\"",
        p.block_size, p.kv_blocks
    );
    e.header("vllm:cache_config_info", "Information of the LLMEngine CacheConfig", "gauge");
    e.sample("vllm:cache_config_info", &info, 1.0);
    e.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vllm_page_parses_and_names_every_family() {
        let text =
            render(MetricsDialect::Vllm, "m", &EngineParams::default(), &ReplicaStats::default(), Instant::now());
        let parsed = crate::metrics::prom::Scrape::parse_strict(&text).unwrap();
        for name in ["vllm:num_requests_running", "vllm:prefix_cache_hits_total", "vllm:cache_config_info"] {
            assert!(parsed.has(name), "{name}");
        }
        assert!(text.contains("vllm:generation_tokens_created{engine=\"0\",model_name=\"m\"}"));
        assert!(text.contains("le=\"+Inf\""));
    }

    #[test]
    fn sglang_page_uses_sglang_names() {
        let text =
            render(MetricsDialect::Sglang, "m", &EngineParams::default(), &ReplicaStats::default(), Instant::now());
        assert!(text.contains("sglang:max_total_num_tokens{engine_type=\"unified\",model_name=\"m\""));
        assert!(!text.contains("vllm:"));
    }
}
