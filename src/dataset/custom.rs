//! vLLM's `custom` dataset read as a stream: JSONL, one `{"prompt": "...", "output_tokens": N}`
//! per line (`output_tokens` optional, other fields ignored, blank lines skipped). A line that
//! is not such an object is an error naming its line; an empty prompt is counted unusable.

use super::{Conversation, Counts};
use crate::stats::SampleOf;
use serde::Deserialize;
use std::io::{BufRead, BufReader, Read};

#[derive(Deserialize)]
struct Line {
    prompt: String,
    #[serde(default)]
    output_tokens: Option<u64>,
}

/// Reads every line of `reader`, offering each usable prompt to `pool`.
pub(super) fn read(reader: impl Read, pool: &mut SampleOf<Conversation>) -> Result<Counts, String> {
    let mut counts = Counts::default();
    let mut buf = String::new();
    let mut r = BufReader::with_capacity(1 << 20, reader);
    for number in 1.. {
        buf.clear();
        if r.read_line(&mut buf).map_err(|e| format!("line {number}: {e}"))? == 0 {
            break;
        }
        if buf.trim().is_empty() {
            continue;
        }
        let line: Line = serde_json::from_str(&buf).map_err(|e| format!("line {number}: {e}"))?;
        if line.output_tokens == Some(0) {
            return Err(format!("line {number}: output_tokens 0: a request asks for at least 1 token"));
        }
        let usable = (!line.prompt.is_empty())
            .then(|| Conversation { turns: vec![line.prompt], output_tokens: line.output_tokens });
        counts.offer(pool, usable);
    }
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(text: &str) -> Result<(Vec<Conversation>, Counts), String> {
        let mut pool = SampleOf::seeded(10, 1);
        let counts = read(text.as_bytes(), &mut pool)?;
        Ok((pool.into_vec(), counts))
    }

    #[test]
    fn prompts_and_optional_output_lengths() {
        let text =
            "{\"prompt\": \"a\", \"output_tokens\": 12}\n\n{\"prompt\": \"b\", \"tag\": 1}\n{\"prompt\": \"\"}\n";
        let (mut convs, counts) = sample(text).unwrap();
        convs.sort_by(|x, y| x.turns.cmp(&y.turns));
        assert_eq!((counts.entries, counts.unusable), (3, 1));
        assert_eq!((convs[0].prompt(), convs[0].output_tokens), ("a", Some(12)));
        assert_eq!((convs[1].prompt(), convs[1].output_tokens, convs[1].completion()), ("b", None, None));
    }

    #[test]
    fn a_bad_line_is_named() {
        assert_eq!(sample("{\"prompt\": \"a\"}\n{\"text\": \"b\"}\n").unwrap_err().split(':').next(), Some("line 2"));
        assert!(sample("{\"prompt\": \"a\", \"output_tokens\": 0}").unwrap_err().contains("at least 1 token"));
        assert!(sample("not json").unwrap_err().starts_with("line 1: "));
    }
}
