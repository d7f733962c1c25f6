//! ShareGPT's layout read as a stream: a JSON array of entries, each with `conversations` of
//! `{"from", "value"}` turns (other fields ignored); an entry with fewer than two turns has no
//! answer to measure against and is counted unusable, as vLLM's ShareGPT sampler skips it.

use super::{Conversation, Counts};
use crate::stats::SampleOf;
use serde::Deserialize;
use serde::de::{DeserializeSeed, Deserializer, SeqAccess, Visitor};
use std::fmt;
use std::io::{BufReader, Read};

#[derive(Deserialize)]
struct Entry {
    #[serde(default)]
    conversations: Vec<Turn>,
}

#[derive(Deserialize)]
struct Turn {
    #[serde(default)]
    value: String,
}

/// Reads the whole array from `reader`, offering each usable entry to `pool`.
pub(super) fn read(reader: impl Read, pool: &mut SampleOf<Conversation>) -> Result<Counts, String> {
    let mut de = serde_json::Deserializer::from_reader(BufReader::with_capacity(1 << 20, reader));
    let counts = de.deserialize_seq(Entries { pool }).map_err(|e| format!("not a ShareGPT JSON array: {e}"))?;
    de.end().map_err(|e| format!("after the array: {e}"))?;
    Ok(counts)
}

/// Visits the top-level array one entry at a time, so only the current entry is in memory.
struct Entries<'a> {
    pool: &'a mut SampleOf<Conversation>,
}

impl<'de> Visitor<'de> for Entries<'_> {
    type Value = Counts;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of {\"conversations\": [...]} entries")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Counts, A::Error> {
        let mut counts = Counts::default();
        while let Some(entry) = seq.next_element::<Entry>()? {
            let usable = (entry.conversations.len() >= 2).then(|| Conversation {
                turns: entry.conversations.into_iter().map(|t| t.value).collect(),
                output_tokens: None,
            });
            counts.offer(self.pool, usable);
        }
        Ok(counts)
    }
}

impl<'de> DeserializeSeed<'de> for Entries<'_> {
    type Value = Counts;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Counts, D::Error> {
        d.deserialize_seq(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(text: &str, n: usize) -> Result<(Vec<Conversation>, Counts), String> {
        let mut pool = SampleOf::seeded(n, 1);
        let counts = read(text.as_bytes(), &mut pool)?;
        Ok((pool.into_vec(), counts))
    }

    #[test]
    fn turns_are_kept_in_order_and_short_entries_are_unusable() {
        let text = r#"[
          {"id": "a", "conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "hello"},
                                        {"from": "human", "value": "more"}]},
          {"id": "b", "conversations": [{"from": "human", "value": "alone"}]},
          {"id": "c"}
        ]"#;
        let (convs, counts) = sample(text, 10).unwrap();
        assert_eq!((counts.entries, counts.unusable), (3, 2));
        assert_eq!(convs.len(), 1);
        assert_eq!((convs[0].prompt(), convs[0].completion()), ("hi", Some("hello")));
        assert_eq!(convs[0].turns.len(), 3);
    }

    #[test]
    fn a_file_that_is_not_an_array_is_one_line() {
        for bad in [r#"{"conversations": []}"#, "[{\"conversations\": [", "[] x", ""] {
            let e = sample(bad, 1).unwrap_err();
            assert!(!e.contains('\n'), "{bad}: {e}");
        }
    }
}
