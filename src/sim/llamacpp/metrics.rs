//! `GET /metrics` of a llama.cpp replica: the 15 `llamacpp:*` families of
//! `tests/fixtures/llamacpp_7e4c0a9/metrics.txt`, same names, help, types and order, no
//! labels, no KV-usage metric. Every read empties the throughput bucket.

use super::LlamaState;
use super::counters::{Bucket, LlamaCounters};
use super::error::LlamaError;
use crate::sim::faults::MetricsFault;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use std::fmt::Write;
use std::sync::{Arc, PoisonError};

/// The live gauges and counters one page shows.
#[derive(Debug, Clone, Copy)]
pub(super) struct Page<'a> {
    /// Lifetime counters.
    pub counters: &'a LlamaCounters,
    /// What finished since the previous read.
    pub bucket: Bucket,
    /// Slots processing a request.
    pub processing: usize,
    /// Requests waiting for a slot.
    pub deferred: usize,
}

/// Renders one page.
pub(super) fn render(p: &Page<'_>) -> String {
    let c = p.counters;
    let families: [(&str, &str, &str, f64); 15] = [
        (
            "prompt_tokens_total",
            "counter",
            "Number of prompt tokens processed, excluding cached tokens",
            c.prompt_tokens as f64,
        ),
        (
            "prompt_tokens_cached_total",
            "counter",
            "Number of prompt tokens reused from the cache",
            c.prompt_tokens_cached as f64,
        ),
        ("prompt_seconds_total", "counter", "Total time spent processing prompts", c.prompt_seconds),
        ("tokens_predicted_total", "counter", "Number of generation tokens processed", c.tokens_predicted as f64),
        ("tokens_predicted_seconds_total", "counter", "Total time spent generating tokens", c.tokens_predicted_seconds),
        (
            "n_decode_total",
            "counter",
            "Total number of llama_decode() calls, excluding speculative decoding and multimodal decoding",
            c.n_decode as f64,
        ),
        ("n_tokens_max", "counter", "Largest observed sequence length (prompt + generation)", c.n_tokens_max as f64),
        ("spec_decode_num_draft_tokens_total", "counter", "Speculative: Total draft tokens generated", 0.0),
        (
            "spec_decode_num_accepted_tokens_total",
            "counter",
            "Speculative: Total draft tokens accepted by the target model",
            0.0,
        ),
        ("spec_decode_num_drafts_total", "counter", "Speculative: Total speculative decoding verification steps", 0.0),
        ("prompt_tokens_seconds", "gauge", "Average prompt throughput in tokens/s", p.bucket.prompt_rate()),
        ("predicted_tokens_seconds", "gauge", "Average generation throughput in tokens/s", p.bucket.predicted_rate()),
        ("requests_processing", "gauge", "Number of requests processing", p.processing as f64),
        ("requests_deferred", "gauge", "Number of requests deferred", p.deferred as f64),
        (
            "n_busy_slots_per_decode",
            "gauge",
            "Average number of busy slots per llama_decode() call",
            c.busy_slots_per_decode(),
        ),
    ];
    let mut out = String::with_capacity(2700);
    for (name, kind, help, value) in families {
        let _ = writeln!(out, "# HELP llamacpp:{name} {help}\n# TYPE llamacpp:{name} {kind}\nllamacpp:{name} {value}");
    }
    out
}

/// `GET /metrics`, subject to the metrics faults; the read resets the throughput bucket.
pub(super) async fn metrics(State(st): State<Arc<LlamaState>>) -> Response {
    let replica = &st.replica;
    let fault = {
        let mut rng = replica.rng.lock().unwrap_or_else(PoisonError::into_inner);
        replica.faults.draw_metrics(&mut *rng)
    };
    match fault {
        Some(MetricsFault::Fail) => return LlamaError::server("injected fault: metrics unavailable").into_response(),
        Some(MetricsFault::Slow) => tokio::time::sleep(replica.metrics_slow_delay).await,
        None => {}
    }
    let (mut text, started) = {
        let mut stats = replica.engine.stats.lock().unwrap_or_else(PoisonError::into_inner);
        let bucket = stats.llamacpp.take_bucket();
        let page = Page { counters: &stats.llamacpp, bucket, processing: stats.running, deferred: stats.waiting };
        (render(&page), stats.created_unix as u64)
    };
    if !replica.faults.request.is_empty() {
        text.push_str(&replica.tally.exposition());
    }
    let headers = [
        (header::CONTENT_TYPE, "text/plain; version=0.0.4".to_string()),
        (header::HeaderName::from_static("process-start-time-unix"), started.to_string()),
    ];
    (headers, text).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_is_the_captured_one_for_the_same_counts() {
        let captured = include_str!("../../../tests/fixtures/llamacpp_7e4c0a9/metrics.txt");
        let counters = LlamaCounters {
            prompt_tokens: 16,
            prompt_seconds: 0.008862,
            tokens_predicted: 5,
            tokens_predicted_seconds: 0.002404,
            n_decode: 5,
            n_busy_slots: 5,
            n_tokens_max: 14,
            ..LlamaCounters::default()
        };
        let page = Page { counters: &counters, bucket: Bucket::default(), processing: 0, deferred: 0 };
        assert_eq!(render(&page), captured);
    }

    #[test]
    fn the_page_parses_without_labels() {
        let counters = LlamaCounters { n_decode: 4, n_busy_slots: 6, ..LlamaCounters::default() };
        let bucket = Bucket { predicted_tokens: 50, predicted_seconds: 0.5, ..Bucket::default() };
        let text = render(&Page { counters: &counters, bucket, processing: 2, deferred: 3 });
        let parsed = crate::metrics::prom::Scrape::parse_strict(&text).unwrap();
        assert!(parsed.has("llamacpp:requests_deferred"));
        assert!(text.contains("llamacpp:n_busy_slots_per_decode 1.5\n"));
        assert!(text.contains("llamacpp:predicted_tokens_seconds 100\n"));
        assert!(!text.contains('{') && !text.contains("kv_cache"));
    }
}
