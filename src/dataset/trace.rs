//! Request traces replayed on their own schedule (issue 24): Mooncake's JSONL (`timestamp` ms,
//! `input_length`, `output_length`, `hash_ids` of 512-token blocks) and the Azure LLM inference
//! trace's CSV (`TIMESTAMP`, `ContextTokens`, `GeneratedTokens`), read in one streamed pass that
//! keeps the first `limit` requests, counts the rest and fingerprints the file.

use super::DatasetError;
use super::hashing::HashingReader;
use super::trace_azure;
use serde::Deserialize;
use std::io::{BufRead, BufReader};
use std::path::Path;

/// Tokens of one Mooncake `hash_ids` block.
pub const BLOCK_TOKENS: u64 = 512;

/// A trace's layout, named as `--dataset-name` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceFormat {
    /// Mooncake's JSONL: `{"timestamp", "input_length", "output_length", "hash_ids"}`.
    Mooncake,
    /// The Azure LLM inference trace's CSV: `TIMESTAMP,ContextTokens,GeneratedTokens`.
    Azure,
}

impl TraceFormat {
    /// The `--dataset-name`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Mooncake => "mooncake_trace",
            Self::Azure => "azure_trace",
        }
    }
}

/// One request of a trace.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceRequest {
    /// When it arrives, ms after the trace's first request.
    pub at_ms: f64,
    /// Prompt tokens.
    pub input_len: u64,
    /// `max_tokens` (at least 1).
    pub output_len: u64,
    /// Its prompt's blocks in order: equal ids are equal `BLOCK_TOKENS`-token blocks (Mooncake;
    /// empty for Azure, whose prompts share nothing).
    pub hash_ids: Vec<u64>,
}

/// A trace as read: its first requests in time order and the file's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    /// The kept requests, ordered by arrival, the first at 0 ms.
    pub requests: Vec<TraceRequest>,
    /// Requests the file holds.
    pub entries: u64,
    /// The file's length, bytes.
    pub bytes: u64,
    /// The file's SHA-256, lower-case hex.
    pub sha256: String,
}

impl Trace {
    /// The most of the kept requests' prompt tokens a prefix cache that never evicts could
    /// serve, as a ratio of all of them: each request's leading blocks as far as earlier
    /// requests held their tokens (a request whose prompt ends inside a block sent only part of
    /// it, and only that part can be cached), the last of its prompt's tokens always computed.
    /// 0 without blocks.
    pub fn expected_hit_ratio(&self) -> f64 {
        // Per block id, the most of its tokens an earlier prompt held.
        let mut seen: std::collections::HashMap<u64, u64> = std::collections::HashMap::new();
        let (mut hits, mut queries) = (0u64, 0u64);
        for r in &self.requests {
            let held = |j: usize| BLOCK_TOKENS.min(r.input_len.saturating_sub(j as u64 * BLOCK_TOKENS));
            let mut hit = 0;
            for (j, id) in r.hash_ids.iter().enumerate() {
                let cached = seen.get(id).copied().unwrap_or(0).min(held(j));
                hit += cached;
                if cached < BLOCK_TOKENS {
                    break;
                }
            }
            hits += hit.min(r.input_len.saturating_sub(1));
            queries += r.input_len;
            for (j, id) in r.hash_ids.iter().enumerate() {
                let e = seen.entry(*id).or_default();
                *e = (*e).max(held(j));
            }
        }
        if queries == 0 { 0.0 } else { hits as f64 / queries as f64 }
    }

    /// When the last kept request arrives, ms after the first.
    pub fn span_ms(&self) -> f64 {
        self.requests.last().map_or(0.0, |r| r.at_ms)
    }
}

/// Reads the `format` trace at `path`, keeping its first `limit` requests (file order, then
/// sorted by time), counting every entry and hashing every byte.
pub fn read_trace(path: &Path, format: TraceFormat, limit: usize) -> Result<Trace, DatasetError> {
    let named = |e: String| DatasetError(format!("--dataset-path {} ({}): {e}", path.display(), format.name()));
    let file =
        std::fs::File::open(path).map_err(|e| DatasetError(format!("--dataset-path {}: {e}", path.display())))?;
    let mut reader = HashingReader::new(file);
    let mut requests = Vec::new();
    let entries = read_lines(&mut reader, format, limit, &mut requests).map_err(named)?;
    let (bytes, sha256) =
        reader.finish().map_err(|e| DatasetError(format!("--dataset-path {}: {e}", path.display())))?;
    if requests.is_empty() {
        return Err(named("no request in the file".into()));
    }
    requests.sort_by(|a, b| a.at_ms.total_cmp(&b.at_ms));
    let first = requests[0].at_ms;
    requests.iter_mut().for_each(|r| r.at_ms -= first);
    Ok(Trace { requests, entries, bytes, sha256 })
}

/// Parses every line, keeping the first `limit` requests in `out`; returns the entry count.
fn read_lines(
    reader: impl std::io::Read,
    format: TraceFormat,
    limit: usize,
    out: &mut Vec<TraceRequest>,
) -> Result<u64, String> {
    let mut r = BufReader::with_capacity(1 << 20, reader);
    let mut buf = String::new();
    let mut azure = trace_azure::Columns::default();
    let mut entries = 0u64;
    for number in 1.. {
        buf.clear();
        if r.read_line(&mut buf).map_err(|e| format!("line {number}: {e}"))? == 0 {
            break;
        }
        let line = buf.trim();
        if line.is_empty() {
            continue;
        }
        let parsed = match format {
            TraceFormat::Mooncake => mooncake(line).map(Some),
            TraceFormat::Azure => azure.line(line),
        };
        let Some(request) = parsed.map_err(|e| format!("line {number}: {e}"))? else { continue };
        entries += 1;
        if out.len() < limit {
            out.push(request);
        }
    }
    Ok(entries)
}

#[derive(Deserialize)]
struct MooncakeLine {
    timestamp: f64,
    input_length: u64,
    output_length: u64,
    #[serde(default)]
    hash_ids: Vec<u64>,
}

/// One Mooncake line.
fn mooncake(line: &str) -> Result<TraceRequest, String> {
    let l: MooncakeLine = serde_json::from_str(line).map_err(|e| e.to_string())?;
    checked(l.timestamp, l.input_length, l.output_length, l.hash_ids)
}

/// A request from its fields, or why they cannot make one.
pub(super) fn checked(at_ms: f64, input_len: u64, output_len: u64, hash_ids: Vec<u64>) -> Result<TraceRequest, String> {
    if !(at_ms.is_finite() && at_ms >= 0.0) {
        return Err(format!("timestamp {at_ms}: a time at or after 0 is needed"));
    }
    if input_len == 0 {
        return Err("an input length of 0: a request sends at least 1 token".into());
    }
    // A trace's 0 generated tokens (a request cut at once) still asks for one.
    Ok(TraceRequest { at_ms, input_len, output_len: output_len.max(1), hash_ids })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(format: TraceFormat, text: &str, limit: usize) -> Result<Trace, String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t");
        std::fs::write(&path, text).unwrap();
        read_trace(&path, format, limit).map_err(|e| e.0)
    }

    #[test]
    fn mooncake_lines_are_kept_in_time_order_from_zero() {
        let text = "{\"timestamp\": 500, \"input_length\": 600, \"output_length\": 5, \"hash_ids\": [1, 2]}\n\n\
                    {\"timestamp\": 200, \"input_length\": 10, \"output_length\": 0, \"hash_ids\": [1]}\n\
                    {\"timestamp\": 900, \"input_length\": 7, \"output_length\": 3}\n";
        let t = parse(TraceFormat::Mooncake, text, 10).unwrap();
        assert_eq!(t.entries, 3);
        let at: Vec<f64> = t.requests.iter().map(|r| r.at_ms).collect();
        assert_eq!(at, vec![0.0, 300.0, 700.0]);
        assert_eq!((t.requests[0].input_len, t.requests[0].output_len), (10, 1), "0 generated still asks for 1");
        assert_eq!(t.requests[1].hash_ids, vec![1, 2]);
        assert!(t.requests[2].hash_ids.is_empty());
        assert_eq!(t.span_ms(), 700.0);
        let first_two = parse(TraceFormat::Mooncake, text, 2).unwrap();
        assert_eq!((first_two.requests.len(), first_two.entries), (2, 3), "the first two in file order");
        assert_eq!(first_two.sha256, t.sha256);
    }

    #[test]
    fn a_bad_line_is_named_in_one_line() {
        let e = parse(TraceFormat::Mooncake, "{\"timestamp\": 1, \"input_length\": 3, \"output_length\": 1}\n{}", 9)
            .unwrap_err();
        assert!(e.contains("(mooncake_trace): line 2: missing field") && !e.contains('\n'), "{e}");
        let e = parse(TraceFormat::Mooncake, "{\"timestamp\": 1, \"input_length\": 0, \"output_length\": 1}", 9)
            .unwrap_err();
        assert!(e.contains("line 1: an input length of 0"), "{e}");
        assert!(parse(TraceFormat::Mooncake, "\n\n", 9).unwrap_err().ends_with("no request in the file"));
    }

    #[test]
    fn the_expected_hit_counts_leading_blocks_seen_before() {
        let req =
            |input_len, ids: &[u64]| TraceRequest { at_ms: 0.0, input_len, output_len: 1, hash_ids: ids.to_vec() };
        let trace = |requests| Trace { requests, entries: 0, bytes: 0, sha256: String::new() };
        // 1024 + 1024 + 600 queried; the second reuses block 1 (512), the third blocks 1 and 2
        // but only 599 of its 600 tokens can hit; block 3 after an unseen block 9 does not count.
        let t = trace(vec![req(1024, &[1, 2]), req(1024, &[1, 3]), req(600, &[1, 2])]);
        assert!((t.expected_hit_ratio() - (512.0 + 599.0) / 2648.0).abs() < 1e-12);
        let t = trace(vec![req(1024, &[1, 3]), req(1024, &[9, 3])]);
        assert_eq!(t.expected_hit_ratio(), 0.0);
        assert_eq!(trace(vec![req(5, &[])]).expected_hit_ratio(), 0.0);
        // A short prompt sent only 334 tokens of block 0: a later [0, 4] can hit those 334, not
        // 512 (the example trace does this; the real vLLM run hit 0.469 of a claimed 0.671).
        let t = trace(vec![req(334, &[0]), req(1000, &[0, 4])]);
        assert!((t.expected_hit_ratio() - 334.0 / 1334.0).abs() < 1e-12, "{}", t.expected_hit_ratio());
        // Once a later prompt held the whole block, the next one can hit all of it.
        let t = trace(vec![req(334, &[0]), req(1000, &[0, 4]), req(600, &[0, 5])]);
        assert!((t.expected_hit_ratio() - (334.0 + 512.0) / 1934.0).abs() < 1e-12);
    }
}
