//! Tests of the dataset's sizing (`dataset.rs`), with a counter that counts words.

use super::*;
use crate::dataset::Sampled;
use std::sync::Arc;

/// Counts whitespace-separated words; a text with `silent` in it gets no answer.
struct Words;

impl TokenCounter for Words {
    async fn count(&self, text: &str) -> Result<u64, CountError> {
        match text.contains("silent") {
            true => Err(CountError::NoAnswer("POST /tokenize did not answer in 1s".into())),
            false => Ok(text.split_whitespace().count() as u64),
        }
    }
}

fn words(n: usize) -> String {
    vec!["w"; n].join(" ")
}

fn conv(prompt: usize, answer: usize) -> Conversation {
    Conversation { turns: vec![words(prompt), words(answer)], output_tokens: None }
}

fn source(format: FileFormat, conversations: Vec<Conversation>, output_len: Option<u64>) -> DatasetSource {
    let sampled = Sampled {
        entries: conversations.len() as u64 + 1,
        unusable: 1,
        bytes: 10,
        sha256: "ab".repeat(32),
        conversations,
    };
    DatasetSource { format, path: "d.json".into(), sampled: Arc::new(sampled), seed: 7, output_len, tokenizer: None }
}

#[tokio::test]
async fn sharegpt_is_counted_and_bounded_as_vllm_and_each_cell_gets_its_own() {
    // Kept: 10/20 and 5/6; dropped: a 3-token prompt, a 3-token answer, a 1,100-token prompt,
    // and 1,000 + 1,100 over the 2,048 total.
    let convs = vec![conv(10, 20), conv(3, 20), conv(10, 3), conv(1100, 10), conv(1000, 1100), conv(5, 6)];
    let d = prepare(&source(FileFormat::ShareGpt, convs, None), Some((&Words, LengthSource::Tokenize)), 1, 2, 99)
        .await
        .unwrap();
    assert_eq!((d.record.sampled, d.record.filtered, d.record.reused), (6, 4, false));
    assert_eq!(d.get(0, 0), &DatasetPrompt { text: words(10), input_tokens: Some(10), output_tokens: 20 });
    assert_eq!(d.get(1, 0).input_tokens, Some(5), "the second cell sends its own prompt");
    assert_eq!((d.record.input_len_source.as_str(), d.record.output_len_source.as_str()), ("tokenize", "tokenize"));
    assert_eq!((d.record.mean_input_tokens, d.record.mean_output_tokens), (Some(7.5), 13.0));
    assert!(
        d.record.line().starts_with("prompts: sharegpt d.json (sha256 abababab…): 6 of 7 entries"),
        "{}",
        d.record.line()
    );
}

#[tokio::test]
async fn a_fixed_output_len_skips_the_answer_and_its_lower_bound() {
    let d = prepare(
        &source(FileFormat::ShareGpt, vec![conv(10, 2)], Some(64)),
        Some((&Words, LengthSource::Tokenize)),
        1,
        1,
        99,
    )
    .await
    .unwrap();
    assert_eq!(d.get(0, 0).output_tokens, 64);
    assert_eq!(d.record.output_len_source, "--sharegpt-output-len");
}

#[tokio::test]
async fn without_tokenize_lengths_come_from_usage_and_the_flags() {
    let d = prepare::<Words>(&source(FileFormat::ShareGpt, vec![conv(2, 2)], None), None, 4, 1, 99).await.unwrap();
    assert_eq!(d.get(0, 0), &DatasetPrompt { text: words(2), input_tokens: None, output_tokens: 99 });
    assert_eq!(
        (d.record.input_len_source.as_str(), d.record.output_len_source.as_str()),
        ("usage", "--random-output-len")
    );
    assert_eq!(d.record.mean_input_tokens, None);
    assert!(d.record.reused, "one entry for four requests");
    assert_eq!(d.get(0, 3), d.get(0, 0), "requests wrap round the few entries");
    let own = Conversation { turns: vec!["hi".into()], output_tokens: Some(9) };
    let custom =
        source(FileFormat::Custom, vec![own, Conversation { turns: vec!["yo".into()], output_tokens: None }], None);
    let d = prepare::<Words>(&custom, None, 1, 2, 99).await.unwrap();
    assert_eq!((d.get(0, 0).output_tokens, d.get(1, 0).output_tokens), (9, CUSTOM_OUTPUT_LEN));
    assert_eq!(d.record.output_len_source, "dataset (else vLLM's default 256)");
}

#[tokio::test]
async fn an_unanswered_count_or_nothing_left_is_an_error() {
    let silent = Conversation { turns: vec!["silent please".into(), "ok ok ok ok".into()], output_tokens: None };
    let e = prepare(&source(FileFormat::ShareGpt, vec![silent], None), Some((&Words, LengthSource::Tokenize)), 1, 1, 9)
        .await
        .unwrap_err();
    assert!(e.contains("did not answer"), "{e}");
    let e =
        prepare(&source(FileFormat::ShareGpt, vec![conv(2, 2)], None), Some((&Words, LengthSource::Tokenize)), 1, 1, 9)
            .await
            .unwrap_err();
    assert!(e.contains("every one of 1 sampled entries was dropped"), "{e}");
}
