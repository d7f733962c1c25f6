//! Tests of dialect detection and engine-sample extraction against hand-computed numbers.

use super::dialect::EngineDialect;
use super::engine::EngineSample;
use super::prom::Scrape;
use super::tests_prom::{FIXTURES, close, fixture};

fn engine(name: &str) -> EngineSample {
    EngineSample::detect(&fixture(name))
}

fn page(text: &str) -> EngineSample {
    EngineSample::detect(&Scrape::parse_strict(text).unwrap())
}

#[test]
fn dialect_of_every_fixture() {
    let want = [
        ("vllm_v1", EngineDialect::VllmV1),
        ("vllm_v0", EngineDialect::VllmV0),
        ("vllm_v1_docs_hist", EngineDialect::VllmV1),
        ("sglang", EngineDialect::Sglang),
        ("sglang_observability", EngineDialect::Sglang),
        ("llamacpp", EngineDialect::LlamaCpp),
        ("aibrix_gateway", EngineDialect::Unknown),
        ("vllm_router", EngineDialect::Unknown),
        ("smg_router", EngineDialect::Unknown),
        ("sgl_router_legacy", EngineDialect::Unknown),
    ];
    assert_eq!(want.len(), FIXTURES.len());
    for (name, dialect) in want {
        assert_eq!(EngineDialect::detect(&fixture(name)), dialect, "{name}");
    }
}

#[test]
fn detection_rules() {
    let d = |t: &str| EngineDialect::detect(&Scrape::parse_strict(t).unwrap());
    assert_eq!(d("vllm:num_requests_swapped 0\nvllm:kv_cache_usage_perc 0"), EngineDialect::VllmV0);
    assert_eq!(d("vllm:num_requests_running{engine=\"0\"} 1"), EngineDialect::VllmV1);
    assert_eq!(d("vllm:gpu_cache_usage_perc 0\nvllm:kv_cache_usage_perc 0"), EngineDialect::VllmV1);
    assert_eq!(d("# TYPE vllm:prefix_cache_queries_total counter"), EngineDialect::VllmV1);
    assert_eq!(d("vllm:gpu_cache_usage_perc{model_name=\"m\"} 0"), EngineDialect::VllmV0);
    assert_eq!(d("vllm:num_requests_running 1"), EngineDialect::VllmV1);
    assert_eq!(d("sglang:num_running_reqs 1"), EngineDialect::Sglang);
    assert_eq!(d("llamacpp:requests_processing 1"), EngineDialect::LlamaCpp);
    assert_eq!(d("up 1"), EngineDialect::Unknown);
}

#[test]
fn dialect_names_and_serde() {
    for d in EngineDialect::ALL {
        assert_eq!(d.as_str().parse::<EngineDialect>().unwrap(), d);
        assert_eq!(d.to_string(), d.as_str());
        let json = serde_json::to_string(&d).unwrap();
        assert_eq!(json, format!("\"{}\"", d.as_str()));
        assert_eq!(serde_json::from_str::<EngineDialect>(&json).unwrap(), d);
    }
    assert!("vllm".parse::<EngineDialect>().is_err());
}

#[test]
fn vllm_v1_two_engines() {
    let e = engine("vllm_v1");
    assert_eq!(e.dialect, EngineDialect::VllmV1);
    assert_eq!(e.running, Some(5.0));
    assert_eq!(e.waiting, Some(5.0), "never adds num_requests_waiting_by_reason");
    assert!(close(e.kv_usage.unwrap(), (9.75010481363281e-06 + 0.5) / 2.0));
    assert_eq!(e.prefix_queries_tokens, Some(2000.0));
    assert_eq!(e.prefix_hits_tokens, Some(400.0));
    assert_eq!(e.preemptions, Some(3.0));
    assert_eq!(e.prompt_tokens, Some(8000.0), "no _created epoch in the counter");
    assert_eq!(e.generation_tokens, Some(3000.0));
    assert_eq!(e.requests_finished, Some(22.0));
    assert_eq!(e.requests_aborted, Some(1.0));
    assert_eq!(e.kv_capacity_tokens, Some(22500.0 * 16.0 * 2.0));
    assert_eq!(e.block_size, Some(16.0));
    assert_eq!(e.ttft_hist.as_ref().unwrap().count, 20.0);
    assert_eq!(e.itl_hist.as_ref().unwrap().count, 300.0);
    assert_eq!((e.retracted_gauge, e.peak_seq_tokens), (None, None));
}

#[test]
fn vllm_v0_capture() {
    let e = engine("vllm_v0");
    assert_eq!(e.dialect, EngineDialect::VllmV0);
    assert_eq!((e.running, e.waiting, e.kv_usage), (Some(0.0), Some(0.0), Some(0.0)));
    assert_eq!((e.prefix_queries_tokens, e.prefix_hits_tokens), (None, None));
    assert_eq!(e.preemptions, Some(0.0));
    assert_eq!((e.prompt_tokens, e.generation_tokens), (Some(148.0), Some(955.0)));
    assert_eq!((e.requests_finished, e.requests_aborted), (Some(4.0), Some(0.0)));
    assert_eq!(e.kv_capacity_tokens, Some(81767.0 * 16.0));
    assert_eq!(e.block_size, Some(16.0));
    assert_eq!((e.ttft_hist, e.itl_hist), (None, None));
}

#[test]
fn vllm_docs_histogram_excerpt() {
    let e = engine("vllm_v1_docs_hist");
    assert_eq!(e.ttft_hist.unwrap().count, 140.0);
    assert_eq!((e.running, e.prompt_tokens, e.kv_capacity_tokens), (None, None, None));
}

#[test]
fn sglang_page() {
    let e = engine("sglang");
    assert_eq!(e.dialect, EngineDialect::Sglang);
    assert_eq!((e.running, e.waiting, e.kv_usage), (Some(7.0), Some(2.0), Some(0.42)));
    assert_eq!(e.prefix_queries_tokens, Some(12000.0));
    assert_eq!(e.prefix_hits_tokens, Some(4200.0));
    assert_eq!((e.preemptions, e.retracted_gauge), (Some(3.0), Some(1.0)));
    assert_eq!((e.prompt_tokens, e.generation_tokens), (Some(12000.0), Some(4000.0)));
    assert_eq!((e.requests_finished, e.requests_aborted), (Some(38.0), Some(2.0)));
    assert_eq!((e.kv_capacity_tokens, e.block_size), (Some(65536.0), None));
    let ttft = e.ttft_hist.unwrap();
    assert_eq!(ttft.count, 40.0);
    assert!(close(ttft.quantile(0.5).unwrap(), 0.2));
    assert!(close(ttft.quantile(0.95).unwrap(), 0.52));
    assert_eq!(e.itl_hist.unwrap().count, 1000.0);
}

/// The current layout (`observability/metrics_collector.py`): `is_streaming` and `cache_source`
/// on the tokenizer counters, `pid` on `num_retracted_reqs`, two pipeline stages each logging.
#[test]
fn sglang_current_page_counts_each_scheduler_once() {
    let e = engine("sglang_observability");
    assert_eq!((e.running, e.waiting, e.kv_usage), (Some(7.0), Some(2.0), Some(0.42)), "not once per stage");
    assert_eq!((e.kv_capacity_tokens, e.block_size), (Some(65536.0), Some(16.0)));
    assert_eq!((e.preemptions, e.retracted_gauge), (Some(3.0), Some(1.0)));
    assert_eq!((e.prompt_tokens, e.generation_tokens), (Some(12000.0), Some(4000.0)), "summed over is_streaming");
    assert_eq!((e.prefix_hits_tokens, e.requests_finished, e.requests_aborted), (Some(4200.0), Some(38.0), Some(2.0)));
    assert_eq!((e.ttft_hist.unwrap().count, e.itl_hist.unwrap().count), (40.0, 1000.0));
}

#[test]
fn sglang_data_parallel_ranks_are_summed_and_tp_copies_are_not() {
    let e = page(
        "sglang:num_running_reqs{dp_rank=\"0\",tp_rank=\"0\"} 3\n\
         sglang:num_running_reqs{dp_rank=\"0\",tp_rank=\"1\"} 3\n\
         sglang:num_running_reqs{dp_rank=\"1\",tp_rank=\"2\"} 4\n\
         sglang:num_running_reqs{dp_rank=\"1\",tp_rank=\"3\"} 4\n",
    );
    assert_eq!(e.running, Some(7.0));
}

#[test]
fn llamacpp_page() {
    let e = engine("llamacpp");
    assert_eq!(e.dialect, EngineDialect::LlamaCpp);
    assert_eq!((e.running, e.waiting, e.kv_usage), (Some(2.0), Some(1.0), None));
    assert_eq!((e.prompt_tokens, e.generation_tokens), (Some(5120.0), Some(2048.0)));
    assert_eq!(e.peak_seq_tokens, Some(3100.0));
    assert_eq!((e.kv_capacity_tokens, e.requests_finished, e.preemptions), (None, None, None));
}

#[test]
fn llamacpp_7e4c0a9_page_has_a_live_token_counter() {
    // The real page (tests/fixtures/llamacpp_7e4c0a9/): `n_busy_slots_per_decode` is a gauge
    // there, and the cached-prompt counter exists. Live tokens = busy slots x decode calls.
    let e = page(include_str!("../../tests/fixtures/llamacpp_7e4c0a9/metrics.txt"));
    assert_eq!(e.dialect, EngineDialect::LlamaCpp);
    assert_eq!((e.prompt_tokens, e.generation_tokens), (Some(16.0), Some(5.0)));
    assert_eq!(e.live_generation_tokens, Some(5.0), "5 decode calls with one busy slot each");
    assert_eq!((e.prefix_hits_tokens, e.prefix_queries_tokens), (Some(0.0), Some(16.0)));
    assert_eq!((e.kv_usage, e.kv_capacity_tokens), (None, None));
    // The older fixture declares the average a counter: read the same way.
    assert!(close(engine("llamacpp").live_generation_tokens.unwrap(), 2100.0 * 1.75));
}

#[test]
fn live_tokens_by_dialect() {
    use super::dialect::LiveTokens;
    assert_eq!(EngineDialect::VllmV1.live_tokens(), LiveTokens::Counter("vllm:generation_tokens_total"));
    assert!(matches!(EngineDialect::LlamaCpp.live_tokens(), LiveTokens::Counter(_)));
    assert!(matches!(EngineDialect::Sglang.live_tokens(), LiveTokens::Counter(_)));
    // The older SGLang page has no per-step counter: not checkable, and it says why.
    assert_eq!(engine("sglang").live_generation_tokens, None);
    let why = EngineDialect::Sglang.no_live_counter_reason();
    assert!(why.starts_with("server counts move at request end on sglang"), "{why}");
    assert_eq!(EngineDialect::Unknown.no_live_counter_reason(), "no engine token counter recognised (unknown dialect)");
    assert_eq!(engine("vllm_v1").live_generation_tokens, engine("vllm_v1").generation_tokens);
}

#[test]
fn gateway_pages_give_an_empty_sample() {
    assert_eq!(engine("vllm_router"), EngineSample::default());
}

#[test]
fn vllm_fallbacks_to_deprecated_names() {
    let e = page(
        "vllm:gpu_prefix_cache_queries_total{engine=\"0\"} 10\n\
         vllm:gpu_prefix_cache_hits_total{engine=\"0\"} 4\n\
         vllm:gpu_cache_usage_perc{engine=\"0\"} 0.25\n\
         vllm:time_per_output_token_seconds_bucket{engine=\"0\",le=\"0.1\"} 3\n\
         vllm:time_per_output_token_seconds_bucket{engine=\"0\",le=\"+Inf\"} 4\n",
    );
    assert_eq!(e.dialect, EngineDialect::VllmV1);
    assert_eq!((e.prefix_queries_tokens, e.prefix_hits_tokens), (Some(10.0), Some(4.0)));
    assert_eq!(e.kv_usage, Some(0.25));
    assert_eq!(e.itl_hist.unwrap().count, 4.0);
}

#[test]
fn created_never_stands_in_for_a_counter() {
    let e = page(
        "# TYPE vllm:prompt_tokens_created gauge\n\
         vllm:prompt_tokens_created{engine=\"0\"} 1.7537953269352946e+09\n",
    );
    assert_eq!(e.prompt_tokens, None);
}

#[test]
fn declared_counter_without_series_is_zero() {
    let e = page(
        "# TYPE sglang:cached_tokens_total counter\n\
         sglang:prompt_tokens_total{model_name=\"q\"} 10\n",
    );
    assert_eq!((e.prompt_tokens, e.prefix_hits_tokens), (Some(10.0), Some(0.0)));
    assert_eq!(e.generation_tokens, None);
}

#[test]
fn kv_capacity_variants() {
    let unlabelled = page(
        "vllm:num_requests_running{engine=\"0\"} 0\nvllm:num_requests_running{engine=\"1\"} 0\n\
         vllm:cache_config_info{block_size=\"128\",num_gpu_blocks=\"100\"} 1\n",
    );
    assert_eq!(unlabelled.kv_capacity_tokens, Some(2.0 * 12800.0));
    let sized = page(
        "vllm:cache_config_info{engine=\"0\",block_size=\"16\",num_gpu_blocks=\"10\",kv_cache_size_tokens=\"150\"} 1\n",
    );
    assert_eq!(sized.kv_capacity_tokens, Some(150.0));
    let unknown = page("vllm:cache_config_info{engine=\"0\",block_size=\"16\",num_gpu_blocks=\"None\"} 1\n");
    assert_eq!((unknown.kv_capacity_tokens, unknown.block_size), (None, Some(16.0)));
}

#[test]
fn deltas_between_polls() {
    let before = engine("vllm_v1");
    let mut after = before.clone();
    after.prompt_tokens = Some(9000.0);
    after.prefix_queries_tokens = Some(2500.0);
    after.prefix_hits_tokens = Some(650.0);
    after.requests_aborted = None;
    let d = after.delta(&before);
    assert!(!d.reset);
    assert_eq!(d.prompt_tokens, Some(1000.0));
    assert_eq!(d.generation_tokens, Some(0.0));
    assert_eq!(d.requests_aborted, None, "missing on one side");
    assert_eq!(d.prefix_hit_rate(), Some(0.5));
    assert_eq!(d.ttft_hist.unwrap().count, 0.0);
}

#[test]
fn a_counter_going_down_is_a_restart() {
    let before = engine("sglang");
    let mut after = before.clone();
    after.generation_tokens = Some(150.0);
    let d = after.delta(&before);
    assert!(d.reset);
    assert_eq!(d.generation_tokens, Some(150.0));
    assert_eq!(d.prompt_tokens, Some(0.0));
    let mut restarted = before.clone();
    let ttft = restarted.ttft_hist.as_mut().unwrap();
    ttft.count = 1.0;
    ttft.buckets.iter_mut().for_each(|b| b.1 = b.1.min(1.0));
    let d = restarted.delta(&before);
    assert!(d.reset);
    assert_eq!(d.ttft_hist.unwrap().count, 1.0);
}

#[test]
fn sglang_realtime_decode_tokens_are_the_live_counter() {
    // The current page layout (tests/fixtures/sglang_observability.txt): decode tokens per step.
    let e = page(include_str!("../../tests/fixtures/sglang_observability.txt"));
    assert_eq!(e.dialect, EngineDialect::Sglang);
    assert_eq!(e.live_generation_tokens, Some(4100.0), "mode=\"decode\" only, one series per scheduler");
}
