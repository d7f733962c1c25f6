//! `--tokenizer PATH` against the simulator: behind sglang-router, which has no `/tokenize`
//! (and with only the router's metrics, so no replica is known to ask), a `custom` dataset is
//! sized by the local `tokenizer.json` before the load. The fixture is the simulator's own
//! tokenizing rule, so the file's counts must be exactly what each request's usage reports.

use crate::common;
use common::{cluster, config, validate};
use llm_decode_bench::config::dataset::DatasetSource;
use llm_decode_bench::config::serve::{RangeRatio, ServeConfig};
use llm_decode_bench::config::{MetricsEndpoint, PlanKind, Rate, RunConfig};
use llm_decode_bench::dataset::FileFormat;
use llm_decode_bench::dataset::tokenizer::TokenizerFile;
use llm_decode_bench::report::formats::{RenderSettings, ReportFormat};
use llm_decode_bench::sim::gateway::{GatewayMode, RouterPolicy};
use std::path::Path;

const N: u32 = 8;

/// 40 `custom` prompts of varied text (words longer than the simulator's 6-byte pieces,
/// punctuation, non-ASCII), each asking 6 tokens.
fn custom_file(path: &Path) -> Vec<String> {
    let prompts: Vec<String> = (0..40)
        .map(|i| format!("Request {i}: explain prefix-caching, décodage and {} tokens, please!", "KV ".repeat(i % 7)))
        .collect();
    let lines: Vec<String> =
        prompts.iter().map(|p| serde_json::json!({"prompt": p, "output_tokens": 6}).to_string()).collect();
    std::fs::write(path, lines.join("\n")).unwrap();
    prompts
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_tokenize_the_tokenizer_file_sizes_the_prompts_as_the_server_counts_them() {
    let c = cluster(1, 25.0, |cfg| {
        cfg.gateway_mode = GatewayMode::SglangRouter;
        cfg.router_policy = RouterPolicy::RoundRobin;
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let (file, out) = (dir.path().join("prompts.jsonl"), dir.path().join("tok-report.json"));
    let texts = custom_file(&file);
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tokenizer");
    let tokenizer = TokenizerFile::load(&fixture).expect("the directory's tokenizer.json reads");
    let counts: Vec<u64> = texts.iter().map(|t| tokenizer.count_now(t).unwrap()).collect();
    let source = DatasetSource::load(FileFormat::Custom, &file, 4 * N as usize, 3, None).expect("the file reads");
    let serve = ServeConfig {
        num_prompts: N,
        output_len: 16,
        seed: 3,
        range_ratio: RangeRatio::FIXED,
        goodput: None,
        dataset: Some(DatasetSource { tokenizer: Some(tokenizer.clone()), ..source }),
        prefix_repetition: None,
        trace: None,
    };
    let gateway = &c.info().gateway;
    let cfg = RunConfig {
        plans: vec![PlanKind::Serve],
        rates: vec![Rate::Inf],
        model: Some(c.info().model.clone()),
        metrics: vec![MetricsEndpoint { name: "router".into(), url: gateway.metrics_url.clone() }],
        serve,
        ..config(&gateway.url, &gateway.metrics_url, &out, vec![1024], vec![2, 4])
    };
    let report = start_and_join(cfg).await;
    assert!(validate(&out) == report, "the file holds the final report, valid against the schema");
    let s = report.serve.as_ref().expect("a serve section");
    let d = s.dataset.as_ref().expect("the dataset is recorded");
    assert_eq!((d.input_len_source.as_str(), d.output_len_source.as_str()), ("tokenizer_file", "dataset"));
    let t = d.tokenizer.as_ref().expect("the tokenizer file is recorded");
    assert_eq!((t.path.as_str(), t.sha256.as_str()), (tokenizer.path.to_str().unwrap(), tokenizer.sha256.as_str()));
    assert_eq!((t.compared, t.disagreed), (0, 0), "nothing to compare with: the file counted alone");
    let mut usage = Vec::new();
    for cell in &s.cells {
        let a = cell.attempts.last().expect("an attempt");
        assert_eq!(a.metrics.completed, u64::from(N), "conc {}", cell.max_concurrency);
        usage.extend(a.request_samples.iter().map(|r| r.input_tokens.expect("usage")));
    }
    // Every one of the 16 prompts was sent once: the file's mean over them is usage's.
    let mean_usage = usage.iter().sum::<u64>() as f64 / usage.len() as f64;
    assert_eq!(d.mean_input_tokens, Some(mean_usage), "the file counts what the server counts");
    assert!(usage.iter().all(|n| counts.contains(n)), "each request's usage is one of the file's counts: {usage:?}");
    let text = ReportFormat::Text.render(&report, RenderSettings { ascii: true, dim_ansi: false, width: Some(200) });
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("input lengths by tokenizer_file") && flat.contains("(--tokenizer "), "{text}");
    let vllm = ReportFormat::Vllm.render(&report, RenderSettings::default());
    let rows: Vec<serde_json::Value> = serde_json::from_str(&vllm).expect("a JSON array");
    assert!(rows.len() == 2 && rows.iter().all(|r| r["tokenizer_id"] == t.path.as_str()), "vLLM's key: {vllm}");
}

/// With `/tokenize` on the target, its counts are used, and a file of another model's
/// tokenizer (a byte-level BPE, not the simulator's rule) is caught on the checked prompts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn beside_tokenize_a_wrong_tokenizer_file_is_caught_and_not_used() {
    let c = cluster(1, 25.0, |_| {}).await;
    let dir = tempfile::tempdir().unwrap();
    let (file, out) = (dir.path().join("prompts.jsonl"), dir.path().join("wrong-report.json"));
    custom_file(&file);
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tokenizer/byte-level-bpe.json");
    let tokenizer = TokenizerFile::load(&fixture).expect("the fixture reads");
    let source = DatasetSource::load(FileFormat::Custom, &file, 2 * N as usize, 3, None).expect("the file reads");
    let r = &c.info().replicas[0];
    let mut cfg = RunConfig {
        plans: vec![PlanKind::Serve],
        rates: vec![Rate::Inf],
        ..config(&r.url, &r.metrics_url, &out, vec![1024], vec![4])
    };
    cfg.serve.num_prompts = N;
    cfg.serve.dataset = Some(DatasetSource { tokenizer: Some(tokenizer), ..source });
    let report = start_and_join(cfg).await;
    let d = report.serve.as_ref().and_then(|s| s.dataset.as_ref()).expect("the dataset is recorded");
    assert_eq!(d.input_len_source, "tokenize", "the target's own count wins");
    let t = d.tokenizer.as_ref().expect("the tokenizer file is recorded");
    assert_eq!((t.compared, t.disagreed), (u64::from(N), u64::from(N)), "every checked prompt counted otherwise");
    let text = ReportFormat::Text.render(&report, RenderSettings { ascii: true, dim_ansi: false, width: Some(200) });
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("counted 8 of 8 prompts unlike the target's /tokenize (its counts were used)"), "{text}");
}

async fn start_and_join(cfg: RunConfig) -> llm_decode_bench::report::json::SessionReport {
    let session = llm_decode_bench::session::start(cfg).await.expect("preflight passes");
    session.join.await.expect("the session ends")
}
