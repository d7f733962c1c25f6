//! Tests of merging extension sections: conversation cells' counts and rates add, the figures
//! computed from requests are left out with a note, other kinds are refused.

use super::tests::{attempt, dists, shard};
use super::*;
use crate::load::sample::ErrorKind;
use crate::report::compare::Better;
use crate::report::extension::{ExtensionAttempt, ExtensionFigure};
use crate::report::status::AttemptStatus;
use std::collections::BTreeMap;

fn figure(name: &str, value: f64) -> ExtensionFigure {
    ExtensionFigure { name: name.into(), unit: "x".into(), better: Better::Lower, value: Some(value) }
}

/// A conversation attempt of `requests` requests, `tokens` output tokens over 10 s, `unsent`
/// turns not sent and a turn-1 TTFT median of `ttft`.
fn conversation(requests: u64, tokens: u64, unsent: f64, ttft: f64) -> ExtensionAttempt {
    ExtensionAttempt {
        attempt: 1,
        status: AttemptStatus::Measured,
        started_s: 1.0,
        duration_s: 10.0,
        requests,
        errors: BTreeMap::from([(ErrorKind::Stalled, 1)]),
        error_examples: BTreeMap::new(),
        output_tokens: tokens,
        output_tps: tokens as f64 / 10.0,
        ttft_p50_ms: Some(ttft),
        figures: vec![figure("turns_not_sent", unsent), figure("ttft_p50_first_turn_ms", ttft)],
        tables: BTreeMap::new(),
        labels: BTreeMap::new(),
    }
}

/// Shard `index` of 2 with one `kind` cell holding `a`.
fn with_section(index: u32, kind: &str, a: ExtensionAttempt) -> ShardInput {
    let mut input = shard(index, 2, attempt(4, 100, dists(&[1.0], &[1.0])));
    let mut section = crate::report::pareto::tests::conversation(None);
    section.kind = kind.into();
    section.cells[0].attempts = vec![a];
    input.report.extensions = vec![section];
    input
}

#[test]
fn conversation_counts_and_rates_add_and_request_figures_are_left_out_with_a_note() {
    let m = merge(vec![
        with_section(0, "conversation", conversation(30, 3_000, 1.0, 40.0)),
        with_section(1, "conversation", conversation(20, 1_000, 2.0, 90.0)),
    ])
    .unwrap();
    let a = &m.report.extensions[0].cells[0].attempts[0];
    assert_eq!((a.requests, a.output_tokens, a.errors[&ErrorKind::Stalled]), (50, 4_000, 2));
    assert!((a.output_tps - 400.0).abs() < 1e-9, "the shards' rates added");
    assert_eq!(a.figures[0].value, Some(3.0), "turns not sent add");
    assert_eq!((a.figures[1].value, a.ttft_p50_ms), (None, None), "no median of medians");
    assert!(m.notes.iter().any(|n| n.contains("ttft_p50_first_turn_ms, ttft_p50_ms left out")), "{:?}", m.notes);
}

#[test]
fn other_extension_kinds_are_refused_naming_the_kind() {
    let inputs = vec![
        with_section(0, "slo_search", conversation(3, 30, 0.0, 1.0)),
        with_section(1, "slo_search", conversation(3, 30, 0.0, 1.0)),
    ];
    let msg = merge(inputs).unwrap_err();
    assert!(msg.contains("a `slo_search` extension section") && msg.contains("--slo-search"), "{msg}");
}
