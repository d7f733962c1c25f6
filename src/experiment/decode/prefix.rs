//! What a decode attempt's prompts can share in a prefix cache, and its check (issue 24).
//!
//! Every request is the cell's calibrated text behind a nonce of its own (`[base.worker.seq] `,
//! `load::worker`; open loop `[base.o.seq] `). A prefix cache matches from a prompt's first
//! token (vLLM hashes each block with its parent's hash; SGLang's radix tree and llama.cpp's
//! slots compare from the start), so no request is served any of its text from another's
//! blocks, however often the streams send it again, and no later session finds it either.
//! What requests do have in common is what comes before their nonces differ: the request form
//! (chat template, BOS) and the nonce's first bytes. So the most an attempt's requests share is
//! that head over the prompt: a fraction of a percent of a 16k prompt, all of an empty one.

use crate::cell::context::CellEnv;
use crate::cell::facts::Prompt;
use crate::metrics::poller::MetricsSnapshot;
use crate::report::prefix_cache::PrefixCacheCheck;

/// Longest nonce a decode request carries, bytes: `[{base:x}.{worker}.{seq}] ` with every
/// number at its largest (a `u64` base in hex, a `u32` worker, a `u64` sequence); the
/// open-loop `[{base:x}.o.{seq}] ` is shorter. A byte is at most one token.
pub(crate) const NONCE_MAX_BYTES: u64 = 51;

/// The most an attempt's requests share of their prompt tokens: the request form (`form`, the
/// server's count of an empty text) and the nonce, over the prompt (`prompt_tokens`, counted
/// with the form, the nonce left out: the share is overstated, never understated), at most 1:
/// all of an empty text's. None when the form of a text could not be counted: the head is then
/// unknown.
pub(crate) fn expected_sharing(prompt_tokens: u64, form: Option<u64>) -> Option<f64> {
    if prompt_tokens == 0 {
        // An empty text (the `0` row): the requests are nothing but the form and the nonce.
        return Some(1.0);
    }
    let form = form?;
    let head = (form + NONCE_MAX_BYTES) as f64;
    let prompt = prompt_tokens.max(form).max(1) as f64;
    Some((head / prompt).min(1.0))
}

/// The attempt's check: the replicas' counters from `start` (read before its first request)
/// to after its last, which the client cut, against what its prompt shares. A warm attempt is
/// said in the log, naming the cell.
pub(crate) async fn check(
    env: &CellEnv,
    label: &str,
    prompt: &Prompt,
    start: Option<&MetricsSnapshot>,
) -> Option<PrefixCacheCheck> {
    let expected = expected_sharing(prompt.tokens, prompt.form_tokens);
    let check = crate::cell::prefix_cache::prefix_cache_settled(env, start, expected).await?;
    if check.warm {
        env.warn(format!(
            "{label}: {} (each request's nonce comes first, so these hits are not the cell's own: \
             other traffic on the replicas, or a cache that reuses more than prefixes)",
            check.warm_note()
        ));
    }
    Some(check)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_nonce_fits_the_bound() {
        let closed = format!("[{:x}.{}.{}] ", u64::MAX, u32::MAX, u64::MAX);
        let open = format!("[{:x}.o.{}] ", u64::MAX, u64::MAX);
        assert_eq!(closed.len() as u64, NONCE_MAX_BYTES);
        assert!((open.len() as u64) < NONCE_MAX_BYTES);
    }

    #[test]
    fn a_long_prompt_shares_only_its_head_and_an_empty_one_all_of_it() {
        let long = expected_sharing(16_384, Some(13)).unwrap();
        assert!((long - 64.0 / 16_384.0).abs() < 1e-12, "form 13 + nonce 51 of 16k: {long}");
        let short = expected_sharing(128, Some(13)).unwrap();
        assert!((short - 0.5).abs() < 1e-12, "a short prompt is half head: {short}");
        assert_eq!(expected_sharing(0, Some(13)), Some(1.0), "ctx 0: the request is all head");
        assert_eq!(expected_sharing(0, None), Some(1.0), "ctx 0 needs no form to be all head");
        assert_eq!(expected_sharing(16_384, None), None, "the form was not counted: unknown, not 0");
    }

    #[test]
    fn a_cold_decode_cell_is_not_warm_and_hits_past_its_head_are() {
        let expected = expected_sharing(4096, Some(10));
        let cold = PrefixCacheCheck::judge(0.0, 40_960.0, expected).unwrap();
        assert!(!cold.warm, "no hits: cold");
        let head = PrefixCacheCheck::judge(61.0 * 10.0, 40_960.0, expected).unwrap();
        assert!(!head.warm, "every request served its whole head from the cache: still its own");
        let text = PrefixCacheCheck::judge(4096.0 * 9.0, 40_960.0, expected).unwrap();
        assert!(text.warm, "nine of ten requests served their text: not the cell's own hits");
        let unknown = PrefixCacheCheck::judge(4096.0 * 9.0, 40_960.0, expected_sharing(4096, None)).unwrap();
        assert!(!unknown.warm, "an unknown head is never judged");
    }
}
