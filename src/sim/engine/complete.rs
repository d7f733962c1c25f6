//! Finishing a step: KV bookkeeping, token sampling, finished requests and the stats update.

use super::super::request::{FinishReason, Seq, TokenEvent};
use super::Scheduler;
use crate::sim::kv::KvCache;
use crate::sim::stats::ReplicaStats;
use std::time::{Duration, Instant};

/// What happened to one sequence at the end of a step.
enum Outcome {
    Continue,
    Finished(FinishReason),
    Aborted,
}

impl Scheduler {
    /// Applies the planned step as finished at `at`: computed tokens advance, full prompt
    /// blocks are published to the prefix cache, each request whose last token was computed
    /// samples one token, and finished or abandoned requests release their blocks.
    pub(crate) fn complete(&mut self, at: Instant) {
        let bs = self.params.block_size;
        let mut st = self.stats.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let kv = &mut self.kv;
        let mut emitted = 0u32;
        // One llama_decode() call serving every busy slot (llama.cpp mode's counters).
        let kv_max = self.running.iter().map(|s| s.computed + s.step_new).max().unwrap_or(0);
        st.llamacpp.on_decode(self.running.len(), kv_max);
        let mut sgl = crate::sim::sglang::stats::Step::default();
        self.running.retain_mut(|seq| {
            if seq.step_new == 0 {
                return true;
            }
            if seq.computed < seq.req.prompt.len() {
                sgl.prefill_tokens += seq.step_new.min(seq.req.prompt.len() - seq.computed) as u64;
            }
            seq.computed += std::mem::take(&mut seq.step_new);
            publish_hashes(kv, seq, bs);
            if seq.computed < seq.num_tokens() {
                return true;
            }
            emitted += 1;
            sgl.decode_tokens += u64::from(seq.generated > 0);
            match sample(seq, at, &mut st) {
                Outcome::Continue => true,
                Outcome::Finished(reason) => {
                    finish(seq, reason, at, &mut st);
                    kv.release(&seq.blocks);
                    false
                }
                Outcome::Aborted => {
                    st.finished_abort += 1;
                    let (generated, seconds) = cut_generation(seq, at);
                    st.llamacpp.on_prediction(generated, seconds);
                    st.sglang.on_abort(seq.leaving(at), true);
                    kv.release(&seq.blocks);
                    false
                }
            }
        });
        self.recent.push_back((at, emitted));
        while self.recent.front().is_some_and(|(t, _)| at.duration_since(*t) > Duration::from_secs(1)) {
            self.recent.pop_front();
        }
        st.gen_throughput = self.recent.iter().map(|(_, n)| f64::from(*n)).sum();
        publish_gauges(&mut st, &self.kv, self.running.len(), self.waiting.len());
        sgl.running = st.running;
        sgl.waiting = st.waiting;
        sgl.used_tokens = st.kv_used_blocks * self.params.block_size;
        sgl.token_usage = st.kv_usage;
        st.sglang.on_step(at, sgl);
    }

    /// Refreshes the gauges without running a step (after submissions or aborts).
    pub(crate) fn publish(&self) {
        let mut st = self.stats.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        publish_gauges(&mut st, &self.kv, self.running.len(), self.waiting.len());
    }
}

fn publish_gauges(st: &mut ReplicaStats, kv: &KvCache, running: usize, waiting: usize) {
    st.running = running;
    st.waiting = waiting;
    st.kv_usage = kv.usage();
    st.kv_used_blocks = kv.num_blocks() - kv.num_free();
}

fn publish_hashes(kv: &mut KvCache, seq: &mut Seq, bs: usize) {
    let prompt_full = seq.computed.min(seq.req.prompt.len()) / bs;
    while seq.hashed < prompt_full.min(seq.hashes.len()) {
        kv.commit_hash(seq.blocks[seq.hashed], seq.hashes[seq.hashed]);
        seq.hashed += 1;
    }
}

fn sample(seq: &mut Seq, at: Instant, st: &mut ReplicaStats) -> Outcome {
    seq.generated += 1;
    st.generation_tokens += 1;
    match seq.last_token_at {
        None => {
            st.prompt_tokens += seq.req.prompt.len() as u64;
            st.ttft.observe(at.saturating_duration_since(seq.req.arrival));
            seq.first_token_at = Some(at);
            let evaluated = seq.admitted_at.map_or(0.0, |t| at.saturating_duration_since(t).as_secs_f64());
            let cached = seq.cached_tokens.min(seq.req.prompt.len() as u64);
            st.llamacpp.on_prompt_eval(seq.req.prompt.len() as u64 - cached, cached, evaluated);
            st.sglang.ttft[usize::from(seq.req.stream)].observe(at.saturating_duration_since(seq.req.arrival));
        }
        Some(prev) => {
            st.itl.observe(at.saturating_duration_since(prev));
            st.sglang.itl.observe(at.saturating_duration_since(prev));
        }
    }
    seq.last_token_at = Some(at);
    if seq.req.events.send(TokenEvent::Token { at }).is_err() {
        return Outcome::Aborted;
    }
    if seq.generated >= seq.req.stop_after {
        let reason = if seq.generated >= seq.req.max_tokens { FinishReason::Length } else { FinishReason::Stop };
        return Outcome::Finished(reason);
    }
    Outcome::Continue
}

fn finish(seq: &Seq, reason: FinishReason, at: Instant, st: &mut ReplicaStats) {
    let _ = seq.req.events.send(TokenEvent::Finished { reason, cached_tokens: seq.cached_tokens });
    match reason {
        FinishReason::Stop => st.finished_stop += 1,
        FinishReason::Length => st.finished_length += 1,
    }
    st.e2e.observe(at.saturating_duration_since(seq.req.arrival));
    st.fin_prompt_tokens += seq.req.prompt.len() as u64;
    st.fin_generation_tokens += u64::from(seq.generated);
    st.fin_cached_tokens += seq.cached_tokens;
    st.fin_requests += 1;
    let (generated, seconds) = cut_generation(seq, at);
    st.llamacpp.on_prediction(generated, seconds);
    st.sglang.on_finish(seq.leaving(at));
}

/// Tokens a request generated by `at` and the time it spent generating them, seconds (what
/// llama.cpp counts when a request ends or is cut; nothing before its first token).
pub(super) fn cut_generation(seq: &Seq, at: Instant) -> (u64, f64) {
    match seq.first_token_at {
        Some(first) => (u64::from(seq.generated), at.saturating_duration_since(first).as_secs_f64()),
        None => (0, 0.0),
    }
}
