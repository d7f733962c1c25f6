//! The conversation experiment (`run --plan conversation`) against the simulator: sessions of
//! turns whose history grows, a `turns` table whose prompts grow and whose later turns hit the
//! prefix cache within what the conversation's own earlier turns can give, a repeat with the
//! same `--seed` flagged warm and a new seed not, the model's own answers sent back with
//! `--history model`, the session header on every request, and every text format printing it.

use crate::common;
use common::{cluster, config, validate};
use llm_decode_bench::config::conversation::{ConversationConfig, History};
use llm_decode_bench::config::dataset::DatasetSource;
use llm_decode_bench::config::{PlanKind, Rate, RunConfig};
use llm_decode_bench::dataset::FileFormat;
use llm_decode_bench::report::extension::{ExtensionAttempt, ExtensionTable, figure};
use llm_decode_bench::report::formats::{RenderSettings, ReportFormat};
use llm_decode_bench::report::json::SessionReport;
use llm_decode_bench::report::status::AttemptStatus;
use llm_decode_bench::session::start;
use llm_decode_bench::sim::Cluster;
use std::path::Path;

/// One conversation session of `conv` at 2 sessions at once with `seed` against `c`'s replica.
async fn session(c: &Cluster, conv: ConversationConfig, seed: u64) -> SessionReport {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("conversation.json");
    let r = &c.info().replicas[0];
    let mut cfg = RunConfig {
        plans: vec![PlanKind::Conversation],
        rates: vec![Rate::Inf],
        conversation: conv,
        ..config(&r.url, &r.metrics_url, &out, vec![0], vec![2])
    };
    cfg.serve.seed = seed;
    cfg.serve.output_len = 8;
    let report = start(cfg).await.expect("preflight passes").join.await.unwrap();
    assert!(validate(&out) == report, "the file holds the final report, valid against the schema");
    report
}

fn attempt(report: &SessionReport) -> &ExtensionAttempt {
    let s = report.extensions.iter().find(|s| s.kind == "conversation").expect("a conversation section");
    assert_eq!(s.cells.len(), 1);
    s.cells[0].attempts.last().expect("an attempt")
}

fn col(t: &ExtensionTable, turn: usize, name: &str) -> Option<f64> {
    let i = t.columns.iter().position(|c| c.name == name).unwrap_or_else(|| panic!("no column {name}"));
    t.rows[turn].values[i]
}

fn generated(turns: u32) -> ConversationConfig {
    ConversationConfig {
        conversations: 4,
        turns,
        user_tokens: 40,
        session_header: Some("x-session-id".into()),
        ..ConversationConfig::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn histories_grow_turn_by_turn_hit_the_cache_within_their_own_sharing_and_a_repeat_is_warm() {
    let c = cluster(1, 25.0, |_| {}).await;
    let report = session(&c, generated(3), 11).await;
    let a = attempt(&report);
    assert_eq!((a.status, a.requests, a.error_count()), (AttemptStatus::Measured, 12, 0));
    assert_eq!(a.output_tokens, 12 * 8, "every turn streams its 8 tokens");
    let t = &a.tables["turns"];
    assert_eq!(t.rows.iter().map(|r| r.key).collect::<Vec<_>>(), [1, 2, 3]);
    let prompt: Vec<f64> = (0..3).map(|k| col(t, k, "prompt_tokens_mean").unwrap()).collect();
    assert!(prompt[0] < prompt[1] && prompt[1] < prompt[2], "the history grows: {prompt:?}");
    assert_eq!(col(t, 0, "expected_prefix_hit_ratio"), Some(0.0), "a first turn shares nothing");
    for k in 1..3 {
        let (hit, most) = (col(t, k, "prefix_hit_ratio").unwrap(), col(t, k, "expected_prefix_hit_ratio").unwrap());
        assert!(hit > 0.2 && hit <= most + 1e-9, "turn {} hits its earlier turn, never more: {hit} of {most}", k + 1);
        assert_eq!(col(t, k, "requests"), Some(4.0));
    }
    assert!(col(t, 0, "prefix_hit_ratio").unwrap() < 0.2, "a cold first turn");
    // Stock vLLM (and the simulator by default) sends no per-request cache hits: the counters tell.
    assert_eq!(col(t, 1, "prefix_hits_from_usage"), Some(0.0));
    assert_eq!(figure(a, "warm_cache"), Some(0.0));
    assert_eq!(figure(a, "turns_not_sent"), Some(0.0));
    let expected = figure(a, "expected_prefix_hit_ratio").unwrap();
    assert!(expected > 0.3 && figure(a, "prefix_hit_ratio").unwrap() <= expected + 0.05);
    // The attempt's median TPOT lies among its turns' medians, and places it in the Pareto view.
    let tpot = figure(a, "tpot_p50_ms").expect("a median TPOT");
    let turns: Vec<f64> = (0..3).map(|k| col(t, k, "tpot_p50_ms").unwrap()).collect();
    let (lo, hi) = turns.iter().fold((f64::MAX, 0.0_f64), |(lo, hi), v| (lo.min(*v), hi.max(*v)));
    assert!(tpot > 0.0 && tpot >= lo * 0.99 && tpot <= hi * 1.01, "{tpot} among {turns:?}");
    let points = llm_decode_bench::report::pareto::points(&[llm_decode_bench::report::pareto::Source {
        label: "",
        report: &report,
    }]);
    assert_eq!(points.len(), 1, "{points:?}");
    assert_eq!(points[0].kind.name(), "conversation");
    assert!((points[0].per_user_tps - 1000.0 / tpot).abs() < 1e-9 && points[0].aggregate_tps == a.output_tps);
    for format in [ReportFormat::Text, ReportFormat::Markdown, ReportFormat::Html] {
        let text = format.render(&report, RenderSettings { ascii: true, dim_ansi: false, width: Some(220) });
        assert!(text.contains("conversation conc=2 rate=inf") && text.contains("prefix_hit_ratio"), "{text}");
        assert!(text.contains("turns of conversation conc=2 rate=inf"), "the per-turn table: {text}");
    }

    let csv = ReportFormat::Csv.render(&report, RenderSettings { ascii: true, dim_ansi: false, width: None });
    assert!(csv.contains("turns.2.prefix_hit_ratio=") && csv.contains("warm_cache=0"), "{csv}");

    let again = session(&c, generated(3), 11).await;
    assert_eq!(figure(attempt(&again), "warm_cache"), Some(1.0), "the same seed finds its conversations cached");
    let other = session(&c, generated(3), 12).await;
    assert_eq!(figure(attempt(&other), "warm_cache"), Some(0.0), "a new seed is cold");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_s_answers_are_sent_back_with_history_model() {
    let c = cluster(1, 25.0, |s| s.prompt_tokens_details = true).await;
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/datasets/sharegpt.json");
    let dataset = DatasetSource::load(FileFormat::ShareGpt, &path, 4, 3, None).unwrap();
    let conv = ConversationConfig { history: History::Model, dataset: Some(dataset), ..generated(2) };
    let report = session(&c, conv, 3).await;
    let a = attempt(&report);
    assert_eq!(a.error_count(), 0);
    let t = &a.tables["turns"];
    let (first, second) = (col(t, 0, "prompt_tokens_mean").unwrap(), col(t, 1, "prompt_tokens_mean").unwrap());
    // Turn 2 holds turn 1's prompt, its 8 answer tokens and a new user message.
    assert!(second > first + 8.0, "{first} then {second}");
    let (hit, most) = (col(t, 1, "prefix_hit_ratio").unwrap(), col(t, 1, "expected_prefix_hit_ratio").unwrap());
    assert!(hit > 0.0 && hit <= most + 1e-9, "{hit} of {most}");
    assert_eq!(col(t, 1, "prefix_hits_from_usage"), Some(1.0), "every request's usage has cached_tokens");
}
