//! The small example datasets the project ships under `examples/datasets/`, one per format
//! `--dataset-name` reads, generated here from a fixed seed (no public dataset is copied):
//! `cargo run --example datasets` writes them, and a test keeps the shipped files equal to
//! what this generates.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::fmt::Write;

/// Words the generated texts are made of.
const WORDS: &[&str] = &[
    "the",
    "scheduler",
    "batch",
    "token",
    "cache",
    "prefix",
    "request",
    "replica",
    "router",
    "latency",
    "decode",
    "prefill",
    "kernel",
    "memory",
    "block",
    "stream",
    "queue",
    "model",
    "engine",
    "throughput",
    "a",
    "of",
    "to",
    "and",
    "in",
    "is",
    "with",
    "for",
    "when",
    "every",
    "each",
    "more",
    "less",
    "fast",
    "slow",
    "long",
    "short",
    "first",
    "last",
    "busy",
    "idle",
    "warm",
    "cold",
    "shared",
    "own",
    "next",
];

/// Questions the ShareGPT and custom examples open with.
const ASKS: &[&str] = &["Explain how", "Summarize why", "Describe when", "Compare how", "List the ways", "Tell me why"];

fn words(rng: &mut StdRng, n: usize) -> String {
    let mut out = String::new();
    for i in 0..n {
        let w = WORDS[rng.random_range(0..WORDS.len())];
        out.push_str(if i == 0 { "" } else { " " });
        out.push_str(w);
    }
    out
}

/// A question of between `lo` and `hi` words after its opening.
fn ask(rng: &mut StdRng, lo: usize, hi: usize) -> String {
    let n = rng.random_range(lo..hi);
    format!("{} {}?", ASKS[rng.random_range(0..ASKS.len())], words(rng, n))
}

/// An answer of between `lo` and `hi` words.
fn answer(rng: &mut StdRng, lo: usize, hi: usize) -> String {
    let n = rng.random_range(lo..hi);
    format!("{}.", words(rng, n))
}

/// `sharegpt.json`: 24 conversations of 2 to 6 turns, the ShareGPT V3 shape.
fn sharegpt(rng: &mut StdRng) -> String {
    let mut convs = Vec::new();
    for i in 0..24 {
        let turns = 2 + 2 * rng.random_range(0..3usize);
        let conv: Vec<serde_json::Value> = (0..turns)
            .map(|t| {
                let (from, value) = match t % 2 {
                    0 => ("human", ask(rng, 8, 60)),
                    _ => ("gpt", answer(rng, 20, 160)),
                };
                serde_json::json!({"from": from, "value": value})
            })
            .collect();
        convs.push(serde_json::json!({"id": format!("example-{i}"), "conversations": conv}));
    }
    serde_json::to_string_pretty(&convs).expect("JSON values serialize") + "\n"
}

/// `custom.jsonl`: 24 prompts, most with their own `output_tokens`.
fn custom(rng: &mut StdRng) -> String {
    let mut out = String::new();
    for i in 0..24 {
        let prompt = serde_json::Value::String(ask(rng, 8, 80));
        match i % 4 {
            3 => writeln!(out, "{{\"prompt\": {prompt}}}"),
            _ => writeln!(out, "{{\"prompt\": {prompt}, \"output_tokens\": {}}}", rng.random_range(16..192)),
        }
        .expect("writing to a String");
    }
    out
}

/// `mooncake_trace.jsonl`: 48 requests over about 30 s from 12 conversations, each turn's
/// prompt its history's blocks plus one of its own (prompts at most 4 blocks, 2,048 tokens).
fn mooncake(rng: &mut StdRng) -> String {
    let mut out = String::new();
    let mut history: Vec<Vec<u64>> = vec![Vec::new(); 12];
    let (mut at, mut next_block) = (0u64, 0u64);
    for _ in 0..48 {
        let conv = rng.random_range(0..history.len());
        if history[conv].len() == 4 {
            history[conv].clear();
        }
        history[conv].push(next_block);
        next_block += 1;
        let blocks = &history[conv];
        let input = 512 * (blocks.len() as u64 - 1) + rng.random_range(64..=512);
        let ids: Vec<String> = blocks.iter().map(u64::to_string).collect();
        let output = rng.random_range(8..128);
        let line = format!(
            "{{\"timestamp\": {at}, \"input_length\": {input}, \"output_length\": {output}, \"hash_ids\": [{}]}}",
            ids.join(", ")
        );
        writeln!(out, "{line}").expect("writing to a String");
        at += rng.random_range(100..1200);
    }
    out
}

/// `azure_trace.csv`: 48 requests over about 30 s in the Azure trace's columns.
fn azure(rng: &mut StdRng) -> String {
    let mut out = String::from("TIMESTAMP,ContextTokens,GeneratedTokens\n");
    let mut us: u64 = 0;
    for _ in 0..48 {
        let (s, frac) = (us / 1_000_000, us % 1_000_000);
        let line = format!(
            "2023-11-16 18:{:02}:{:02}.{frac:06}0,{},{}",
            15 + s / 60,
            s % 60,
            rng.random_range(32..1800),
            rng.random_range(1..200)
        );
        writeln!(out, "{line}").expect("writing to a String");
        us += rng.random_range(50_000..1_200_000);
    }
    out
}

/// Every example file: its name under `examples/datasets/` and its text.
pub fn example_files() -> Vec<(&'static str, String)> {
    let mut rng = StdRng::seed_from_u64(2024);
    vec![
        ("sharegpt.json", sharegpt(&mut rng)),
        ("custom.jsonl", custom(&mut rng)),
        ("mooncake_trace.jsonl", mooncake(&mut rng)),
        ("azure_trace.csv", azure(&mut rng)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_examples_are_what_the_generator_writes() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/datasets");
        for (name, text) in example_files() {
            let shipped = std::fs::read_to_string(dir.join(name)).unwrap_or_default();
            assert!(shipped == text, "examples/datasets/{name} differs: run `cargo run --example datasets`");
        }
    }

    #[test]
    fn every_example_reads_as_its_format() {
        use crate::dataset::trace::{TraceFormat, read_trace};
        use crate::dataset::{FileFormat, sample_file};
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in example_files() {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        let s = sample_file(&dir.path().join("sharegpt.json"), FileFormat::ShareGpt, 100, 1).unwrap();
        assert_eq!((s.entries, s.unusable), (24, 0));
        let c = sample_file(&dir.path().join("custom.jsonl"), FileFormat::Custom, 100, 1).unwrap();
        assert_eq!(c.entries, 24);
        let m = read_trace(&dir.path().join("mooncake_trace.jsonl"), TraceFormat::Mooncake, 100).unwrap();
        assert_eq!(m.requests.len(), 48);
        assert!(m.requests.iter().all(|r| r.input_len <= 2048) && m.expected_hit_ratio() > 0.2);
        let a = read_trace(&dir.path().join("azure_trace.csv"), TraceFormat::Azure, 100).unwrap();
        assert_eq!(a.requests.len(), 48);
        assert!(a.span_ms() > 10_000.0 && a.span_ms() < 60_000.0, "{}", a.span_ms());
    }
}
