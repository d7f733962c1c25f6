//! Tests of who sizes dataset prompts (`dataset_sizing.rs`): the `--tokenizer` file counting
//! alone, and checked against the target's counts.

use super::*;
use crate::config::dataset::DatasetSource;
use crate::dataset::{Conversation, FileFormat, Sampled};
use std::path::Path;
use std::sync::Arc;

/// The simulator's rule as a `tokenizer.json` (tests/fixtures/tokenizer/).
fn sim_rule() -> TokenizerFile {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tokenizer");
    TokenizerFile::load(&dir).expect("the fixture reads")
}

fn source(turns: &[(&str, &str)]) -> DatasetSource {
    let conversations: Vec<Conversation> = turns
        .iter()
        .map(|(p, a)| Conversation { turns: vec![p.to_string(), a.to_string()], output_tokens: None })
        .collect();
    let sampled =
        Sampled { entries: conversations.len() as u64, unusable: 0, bytes: 10, sha256: "ab".repeat(32), conversations };
    let file = Some(sim_rule());
    DatasetSource {
        format: FileFormat::ShareGpt,
        path: "d.json".into(),
        sampled: Arc::new(sampled),
        seed: 7,
        output_len: None,
        tokenizer: file,
    }
}

#[tokio::test]
async fn the_file_counts_prompts_and_answers_when_the_target_cannot() {
    // "Explain how the cache works" is 6 tokens by the simulator's rule ("Explai", "n", " how",
    // " the", " cache", " works"); the answer "It keeps blocks." 4.
    let src = source(&[("Explain how the cache works", "It keeps blocks."), ("Hi", "ok")]);
    let file = src.tokenizer.clone().unwrap();
    let d = prepare(&src, Some((&file, LengthSource::TokenizerFile)), 1, 1, 99).await.unwrap();
    assert_eq!(d.get(0, 0).input_tokens, Some(6));
    assert_eq!(d.get(0, 0).output_tokens, 4);
    assert_eq!(d.record.filtered, 1, "\"Hi\" is one token, under vLLM's bound of 4");
    assert_eq!(
        (d.record.input_len_source.as_str(), d.record.output_len_source.as_str()),
        ("tokenizer_file", "tokenizer_file")
    );
}

#[tokio::test]
async fn a_file_unlike_the_target_is_found_on_the_checked_prompts() {
    let file = sim_rule();
    let prompt = |text: &str, input_tokens| DatasetPrompt { text: text.into(), input_tokens, output_tokens: 8 };
    // Counted by the target as 6 (agrees), 9 (disagrees), and not counted (skipped).
    let prompts =
        [prompt("Explain how the cache works", Some(6)), prompt("a b c", Some(9)), prompt("left to usage", None)];
    let (record, first) = check(&file, &prompts).await;
    assert_eq!((record.compared, record.disagreed), (2, 1));
    assert_eq!(first, Some((3, 9)), "the file's count (\"a\", \" b\", \" c\"), then the target's");
    assert_eq!(record.sha256, file.sha256);
    let (record, first) = check(&file, &prompts[..1]).await;
    assert_eq!((record.compared, record.disagreed, first), (1, 0, None));
}
