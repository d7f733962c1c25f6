//! The SGLang `/metrics` page as SGLang writes it (docs/protocol.md §2.1): prometheus_client in
//! multiprocess mode, so label names sorted, no `_created` series, and a family absent until
//! its first sample (a labelled counter until first incremented, scheduler gauges until the
//! first log); only the startup constants are there from the start.

use super::stats::Logged;
use super::stats::Step;
use crate::sim::params::EngineParams;
use crate::sim::stats::{Hist, ReplicaStats};
use std::fmt::Write;
use std::time::Instant;

/// A page under construction: every sample of a family gets `base` labels plus its own.
struct Page {
    out: String,
}

impl Page {
    fn family(&mut self, name: &str, help: &str, kind: &str) {
        let _ = writeln!(self.out, "# HELP {name} {help}\n# TYPE {name} {kind}");
    }

    /// One sample; `labels` are already formatted and sorted (`a="x",b="y"`).
    fn sample(&mut self, name: &str, labels: &str, value: f64) {
        let _ = writeln!(self.out, "{name}{{{labels}}} {value:?}");
    }

    fn gauge(&mut self, name: &str, help: &str, labels: &str, value: f64) {
        self.family(name, help, "gauge");
        self.sample(name, labels, value);
    }

    /// A counter family with the series that have been touched (value above 0).
    fn counter(&mut self, name: &str, help: &str, series: &[(String, u64)]) {
        if series.iter().all(|(_, v)| *v == 0) {
            return;
        }
        self.family(name, help, "counter");
        for (labels, v) in series.iter().filter(|(_, v)| *v > 0) {
            self.sample(name, labels, *v as f64);
        }
    }

    /// A histogram family with the series that have observations.
    fn histogram(&mut self, name: &str, help: &str, series: &[(String, &Hist)]) {
        if series.iter().all(|(_, h)| h.count == 0) {
            return;
        }
        self.family(name, help, "histogram");
        for (labels, h) in series.iter().filter(|(_, h)| h.count > 0) {
            let mut cum = 0;
            for (i, c) in h.counts.iter().enumerate() {
                cum += c;
                let le = h.bounds.get(i).map_or_else(|| "+Inf".to_string(), |b| format!("{b:?}"));
                // prometheus_client's multiprocess collector appends `le` after the sorted labels.
                self.sample(&format!("{name}_bucket"), &format!("{labels},le=\"{le}\""), cum as f64);
            }
            self.sample(&format!("{name}_count"), labels, h.count as f64);
            self.sample(&format!("{name}_sum"), labels, h.sum);
        }
    }
}

/// `labels` with `key="value"` added in sorted position.
fn with_label(labels: &str, key: &str, value: &str) -> String {
    let mut parts: Vec<String> = labels.split(',').filter(|p| !p.is_empty()).map(str::to_string).collect();
    parts.push(format!("{key}=\"{value}\""));
    parts.sort();
    parts.join(",")
}

/// Renders the page a scrape at `now` reads.
pub(crate) fn render(model: &str, p: &EngineParams, st: &ReplicaStats, now: Instant) -> String {
    let sg = &st.sglang;
    let tok = format!("engine_type=\"unified\",model_name=\"{model}\"");
    let sched = format!("engine_type=\"unified\",model_name=\"{model}\",moe_ep_rank=\"0\",pp_rank=\"0\",tp_rank=\"0\"");
    let mut page = Page { out: String::with_capacity(8192) };
    let live = Step {
        running: st.running,
        waiting: st.waiting,
        used_tokens: st.kv_used_blocks * p.block_size,
        token_usage: st.kv_usage,
        ..Step::default()
    };
    if sg.last_log.is_some() {
        scheduler_gauges(&mut page, &sched, &sg.gauges(now, live));
    }
    let capacity = p.kv_capacity_tokens();
    page.gauge(
        "sglang:max_total_num_tokens",
        "Maximum total number of tokens in the KV cache pool.",
        &sched,
        capacity as f64,
    );
    page.gauge("sglang:page_size", "KV cache page size in tokens.", &sched, p.block_size as f64);
    page.gauge("sglang:num_pages", "Number of KV cache pages.", &sched, p.kv_blocks as f64);
    page.gauge("sglang:context_len", "Maximum context length.", &sched, p.max_model_len as f64);
    let modes = ["prefill_compute", "prefill_cache", "decode"];
    let realtime: Vec<(String, u64)> =
        modes.iter().zip(sg.realtime).map(|(m, v)| (with_label(&sched, "mode", m), v)).collect();
    page.counter(
        "sglang:realtime_tokens_total",
        "Total number of tokens processed (updated on each log interval). mode: prefill_compute, prefill_cache, decode.",
        &realtime,
    );
    page.counter(
        "sglang:num_retracted_requests_total",
        "Total number of retracted requests.",
        &[(sched.clone(), st.preemptions)],
    );
    tokenizer_families(&mut page, &tok, st);
    page.out
}

fn scheduler_gauges(page: &mut Page, sched: &str, g: &Logged) {
    page.gauge("sglang:num_running_reqs", "The number of running requests.", sched, g.running as f64);
    page.gauge("sglang:num_queue_reqs", "The number of requests in the waiting queue.", sched, g.waiting as f64);
    page.gauge("sglang:gen_throughput", "The generation throughput (token/s).", sched, g.gen_throughput);
    page.gauge("sglang:cache_hit_rate", "The prefix cache hit rate.", sched, g.cache_hit_rate);
    page.gauge("sglang:token_usage", "The token usage.", sched, g.token_usage);
    page.gauge("sglang:full_token_usage", "The token usage for full attention layers.", sched, g.token_usage);
    page.gauge("sglang:num_used_tokens", "The number of used tokens.", sched, g.used_tokens as f64);
    page.gauge(
        "sglang:kv_used_tokens",
        "Number of actively used token slots in the KV cache pool.",
        sched,
        g.used_tokens as f64,
    );
    // A gauge without `multiprocess_mode` gets prometheus_client's per-process `pid` label.
    let pid = with_label(sched, "pid", &std::process::id().to_string());
    page.gauge("sglang:num_retracted_reqs", "The number of retracted requests.", &pid, g.retracted as f64);
}

fn tokenizer_families(page: &mut Page, tok: &str, st: &ReplicaStats) {
    let sg = &st.sglang;
    let streaming = |v: [u64; 2]| -> Vec<(String, u64)> {
        vec![(with_label(tok, "is_streaming", "false"), v[0]), (with_label(tok, "is_streaming", "true"), v[1])]
    };
    let f = &sg.finished;
    page.counter("sglang:prompt_tokens_total", "Number of prefill tokens processed.", &streaming(f.prompt_tokens));
    page.counter(
        "sglang:generation_tokens_total",
        "Number of generation tokens processed.",
        &streaming(f.generation_tokens),
    );
    page.counter(
        "sglang:cached_tokens_total",
        "Number of cached prompt tokens by source (device/host/storage).",
        &[(with_label(tok, "cache_source", "total"), f.cached_tokens)],
    );
    page.counter("sglang:num_requests_total", "Number of requests processed.", &streaming(f.requests));
    page.counter("sglang:num_aborted_requests_total", "Number of requests aborted.", &[(tok.to_string(), sg.aborted)]);
    let ttft = by_stream(tok, &sg.ttft);
    page.histogram("sglang:time_to_first_token_seconds", "Histogram of time to first token in seconds.", &ttft);
    page.histogram(
        "sglang:inter_token_latency_seconds",
        "Histogram of inter-token latency in seconds.",
        &[(tok.to_string(), &sg.itl)],
    );
    let e2e = by_stream(tok, &sg.e2e);
    page.histogram("sglang:e2e_request_latency_seconds", "Histogram of End-to-end request latency in seconds", &e2e);
}

/// One series per `is_streaming` value.
fn by_stream<'a>(tok: &str, h: &'a [Hist; 2]) -> Vec<(String, &'a Hist)> {
    vec![(with_label(tok, "is_streaming", "false"), &h[0]), (with_label(tok, "is_streaming", "true"), &h[1])]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::prom::Scrape;
    use crate::metrics::{EngineDialect, EngineSample};
    use crate::sim::sglang::stats::Leaving;
    use std::time::Duration;

    #[test]
    fn a_fresh_page_has_only_the_constants() {
        let text = render("m", &EngineParams::default(), &ReplicaStats::default(), Instant::now());
        let s = Scrape::parse_strict(&text).unwrap();
        assert!(s.has("sglang:max_total_num_tokens") && s.has("sglang:context_len"));
        assert!(!s.has("sglang:num_running_reqs"), "no gauge before the first scheduler log");
        assert!(!s.types().contains_key("sglang:generation_tokens_total"), "no counter before a request ends");
        assert_eq!(EngineDialect::detect(&s), EngineDialect::Sglang);
    }

    #[test]
    fn counters_carry_the_labels_sglang_gives_them() {
        let mut st = ReplicaStats::default();
        let r = Leaving { stream: true, prompt: 12, generated: 5, cached: 4, e2e: Duration::from_millis(300) };
        st.sglang.on_finish(r);
        st.sglang.ttft[1].observe(Duration::from_millis(50));
        st.sglang.on_step(Instant::now(), Step { prefill_tokens: 8, running: 1, ..Step::default() });
        let text = render("m", &EngineParams::default(), &st, Instant::now());
        assert!(text.contains(
            "sglang:generation_tokens_total{engine_type=\"unified\",is_streaming=\"true\",model_name=\"m\"} 5.0"
        ));
        assert!(text.contains(
            "sglang:cached_tokens_total{cache_source=\"total\",engine_type=\"unified\",model_name=\"m\"} 4.0"
        ));
        assert!(text.contains("sglang:num_running_reqs{engine_type=\"unified\",model_name=\"m\",moe_ep_rank=\"0\",pp_rank=\"0\",tp_rank=\"0\"} 1.0"));
        assert!(text.contains("model_name=\"m\",le=\"+Inf\"} 1.0"));
        assert!(!text.contains("is_streaming=\"false\""), "untouched series are absent");
        let s = Scrape::parse_strict(&text).unwrap();
        let e = EngineSample::detect(&s);
        assert_eq!((e.generation_tokens, e.prompt_tokens, e.running), (Some(5.0), Some(12.0), Some(1.0)));
        assert_eq!(e.kv_capacity_tokens, Some(EngineParams::default().kv_capacity_tokens() as f64));
    }
}
