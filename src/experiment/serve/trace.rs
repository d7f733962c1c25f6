//! A trace's requests as serve prompts (issue 24): request i is sent at the trace's time
//! (divided by `--replay-speed`) with its own input and output length. Mooncake's `hash_ids`
//! become blocks of `BLOCK_TOKENS` random token ids, drawn from the block id and the cell's
//! seed, so equal ids are identical blocks (the trace's prefix sharing, exactly) while no two
//! cells or re-runs share a block; tokens past the listed blocks are the request's own.

use super::lengths::Lengths;
use super::prompts::prompt_ids;
use crate::config::trace::TraceSource;
use crate::dataset::trace::{BLOCK_TOKENS, TraceRequest};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::ops::Range;
use std::time::Duration;

/// Salt of the blocks' seed, so a block is never a request's own tail.
const BLOCK_SALT: u64 = 0x6861_7368_5f69_6473;

/// The first `n` requests' arrivals, after the replay's start.
pub(crate) fn offsets(trace: &TraceSource, n: usize) -> Vec<Duration> {
    (0..n.min(trace.trace.requests.len())).map(|i| trace.offset(i)).collect()
}

/// The first `n` requests' lengths.
pub(crate) fn lengths(trace: &TraceSource, n: usize) -> Lengths {
    let kept = &trace.trace.requests[..n.min(trace.trace.requests.len())];
    Lengths { input: kept.iter().map(|r| r.input_len).collect(), output: kept.iter().map(|r| r.output_len).collect() }
}

/// The token ids of block `id` of a cell seeded by `seed`.
fn block(id: u64, seed: u64, range: &Range<u32>) -> impl Iterator<Item = u32> {
    let mut rng = StdRng::seed_from_u64((seed ^ BLOCK_SALT) ^ id.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let range = range.clone();
    (0..BLOCK_TOKENS).map(move |_| rng.random_range(range.clone()))
}

/// Request `i`'s prompt: its blocks in order, then ids of its own, `input_len` in all.
pub(crate) fn prompt(r: &TraceRequest, i: u32, seed: u64, range: Range<u32>) -> Vec<u32> {
    let mut out = Vec::with_capacity(r.input_len as usize);
    for &id in &r.hash_ids {
        if out.len() as u64 >= r.input_len {
            break;
        }
        out.extend(block(id, seed, &range));
    }
    out.truncate(r.input_len as usize);
    let own = r.input_len - out.len() as u64;
    out.extend(prompt_ids(own, seed, i, range));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(input_len: u64, hash_ids: &[u64]) -> TraceRequest {
        TraceRequest { at_ms: 0.0, input_len, output_len: 1, hash_ids: hash_ids.to_vec() }
    }

    #[test]
    fn equal_block_ids_are_equal_blocks_and_the_rest_is_the_request_s_own() {
        let ids = 100..30_000;
        let a = prompt(&req(1100, &[7, 8]), 0, 5, ids.clone());
        let b = prompt(&req(700, &[7, 9]), 1, 5, ids.clone());
        assert_eq!((a.len(), b.len()), (1100, 700));
        assert_eq!(a[..512], b[..512], "block 7 in both");
        assert_ne!(a[512..700], b[512..700], "blocks 8 and 9 differ");
        let c = prompt(&req(40, &[]), 2, 5, ids.clone());
        assert_eq!(c, prompt_ids(40, 5, 2, ids.clone()), "no blocks: the random workload's prompt");
        let other_cell = prompt(&req(1100, &[7, 8]), 0, 6, ids.clone());
        assert_ne!(a[..512], other_cell[..512], "each cell its own block contents");
        assert!(a.iter().all(|t| ids.contains(t)));
    }
}
