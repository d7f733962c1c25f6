//! Which token ids a serve prompt may hold. A model's vocabulary is not in the OpenAI API and
//! ranges from 4,096 ids (the testbed's tiny Llama) to over 150k, and a real vLLM refuses a
//! prompt with an id beyond it (400 `Token id N is out of vocabulary`, docs/protocol.md §3.8).
//! So the experiment asks the server once, before its first cell: the largest id a one-token
//! prompt may hold, by doubling then bisecting (about 25 one-token requests).

use crate::cell::context::Target;
use crate::load::backend::Exchange;
use crate::load::limits::{ERROR_BODY_KEEP, ERROR_BODY_WAIT};
use crate::load::request::{Endpoint, json_escape};
use crate::load::sample::ErrorKind;
use crate::report::serve::TokenIds;
use bytes::Bytes;
use std::time::Duration;

/// Largest vocabulary the probe looks for, ids.
const MAX_VOCAB: u32 = 1 << 22;
/// Where the doubling starts, ids (every tokenizer has at least this many).
const FIRST_STEP: u32 = 256;
/// Lowest id drawn at most (tokenizers keep special tokens among the low ids).
const LOW_ID: u32 = 1000;
/// Highest id drawn at most, so prompts stay five digits an id.
const HIGH_ID: u32 = 32_000;
/// Longest wait for one probe's answer.
const PROBE_TIMEOUT: Duration = Duration::from_secs(60);

/// Ids `[low, high)` to draw prompts from, given a vocabulary of `vocab` ids: above the low
/// ids where special tokens sit, and inside the vocabulary.
pub fn draw_range(vocab: u32, probes: u32, accepted: u32) -> TokenIds {
    let high = vocab.clamp(2, HIGH_ID);
    let low = LOW_ID.min(high / 16).max(1);
    TokenIds { vocab, low, high, probes, accepted }
}

/// Why the probe failed: the error kind a request failing so is filed under (the status's or
/// the transport's, as `load::classify` names them) and the one line said.
pub type ProbeError = (ErrorKind, String);

/// The kind of a failed send, as every request's.
fn send_kind(e: &crate::load::backend::BackendError) -> ErrorKind {
    crate::load::classify::send_failure(e).error_kind().unwrap_or(ErrorKind::Connect)
}

/// Whether the server takes a one-token prompt of `id`: `Ok(false)` on a 400 (out of
/// vocabulary), an error for anything else that is not a success.
async fn accepts(target: &Target, url: &str, model: &str, id: u32) -> Result<bool, ProbeError> {
    let body = format!("{{\"model\":\"{}\",\"prompt\":[{id}],\"max_tokens\":1}}", json_escape(model));
    let ex = Exchange::post(url, &target.headers, Some(Bytes::from(body))).with_timeout(PROBE_TIMEOUT);
    let resp = target.backend.send(ex).await.map_err(|e| (send_kind(&e), e.describe()))?;
    let status = resp.status();
    if status.is_success() {
        return Ok(true);
    }
    let (head, _) = resp.head_of_body(ERROR_BODY_KEEP, ERROR_BODY_WAIT).await;
    let text: String = String::from_utf8_lossy(&head).chars().take(200).collect();
    match status.as_u16() {
        400 if id > 0 => Ok(false),
        code => {
            let kind = crate::load::classify::classify_status(code, &head).error_kind();
            let line = format!("a one-token prompt [{id}] got HTTP {code}: {}", text.trim());
            Err((kind.unwrap_or(ErrorKind::BadRequest), line))
        }
    }
}

/// The server's vocabulary size (largest accepted id + 1) and the ids to draw from.
pub async fn probe(target: &Target, model: &str) -> Result<TokenIds, ProbeError> {
    let url = format!("{}{}", target.base, Endpoint::Completions.path());
    let (mut probes, mut accepted) = (1, 1);
    if !accepts(target, &url, model, 0).await? {
        return Err((ErrorKind::BadRequest, "the server refuses token-id prompts".into()));
    }
    let (mut lo, mut hi) = (0u32, FIRST_STEP);
    while hi < MAX_VOCAB {
        probes += 1;
        if !accepts(target, &url, model, hi).await? {
            break;
        }
        accepted += 1;
        (lo, hi) = (hi, hi.saturating_mul(2));
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        probes += 1;
        if accepts(target, &url, model, mid).await? {
            (lo, accepted) = (mid, accepted + 1);
        } else {
            hi = mid;
        }
    }
    Ok(draw_range(lo + 1, probes, accepted))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompts_draw_inside_the_vocabulary_above_its_low_ids() {
        let tiny = draw_range(4096, 20, 12);
        assert_eq!((tiny.low, tiny.high), (256, 4096));
        let big = draw_range(150_002, 30, 15);
        assert_eq!((big.low, big.high), (1000, 32_000));
        let odd = draw_range(3, 2, 1);
        assert!(odd.low < odd.high && odd.high <= 3, "{odd:?}");
    }
}
