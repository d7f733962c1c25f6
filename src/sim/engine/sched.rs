//! The continuous-batching scheduler: admission, chunked prefill, KV allocation, preemption.

use super::EngineClock;
use super::request::{EngineRequest, Seq, TokenEvent};
use crate::sim::kv::{KvCache, block_hashes};
use crate::sim::params::EngineParams;
use crate::sim::stats::ReplicaStats;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// One replica's scheduler state. Pure logic: the engine loop supplies step times, and
/// admission times are read on `clock`.
pub(crate) struct Scheduler {
    params: EngineParams,
    clock: EngineClock,
    kv: KvCache,
    waiting: VecDeque<Seq>,
    running: Vec<Seq>,
    stats: Arc<Mutex<ReplicaStats>>,
    /// (step end, tokens) of recent steps, for the generation-throughput gauge.
    recent: VecDeque<(Instant, u32)>,
}

/// What one planned step costs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct StepCost {
    /// Modelled duration of the step.
    pub modelled: Duration,
    /// Requests scheduled in the step.
    pub seqs: usize,
}

fn blocks_for(tokens: usize, block_size: usize) -> usize {
    tokens.div_ceil(block_size)
}

impl Scheduler {
    /// A scheduler with an empty queue and a fresh KV cache.
    pub(crate) fn new(params: EngineParams, stats: Arc<Mutex<ReplicaStats>>) -> Self {
        let kv = KvCache::new(params.kv_blocks);
        let clock = EngineClock::Thread;
        Self { params, clock, kv, waiting: VecDeque::new(), running: Vec::new(), stats, recent: VecDeque::new() }
    }

    /// The same scheduler, reading admission times on `clock`.
    pub(crate) fn on_clock(mut self, clock: EngineClock) -> Self {
        self.clock = clock;
        self
    }

    /// True when no request is waiting or running.
    pub(crate) fn is_idle(&self) -> bool {
        self.waiting.is_empty() && self.running.is_empty()
    }

    /// Queues a new request (FCFS).
    pub(crate) fn submit(&mut self, req: EngineRequest) {
        let hashes = block_hashes(&req.prompt, self.params.block_size);
        self.waiting.push_back(Seq::new(req, hashes));
    }

    /// A killed and restarted engine: every request dropped (their streams end), the KV
    /// cache empty and every counter back at 0, as a restarted vLLM process starts.
    pub(crate) fn crash(&mut self) {
        self.waiting.clear();
        self.running.clear();
        self.recent.clear();
        self.kv = KvCache::new(self.params.kv_blocks);
        *self.lock_stats() = ReplicaStats::default();
    }

    /// Forgets every cached prefix.
    pub(crate) fn reset_prefix_cache(&mut self) {
        self.kv.reset_prefix_cache();
    }

    /// Plans the next step: drops abandoned requests, schedules running requests (preempting
    /// the newest when blocks run out), then admits waiting ones. None if nothing can run.
    pub(crate) fn schedule(&mut self) -> Option<StepCost> {
        self.drop_abandoned();
        let mut budget = self.params.max_num_batched_tokens;
        let preempted = self.schedule_running(&mut budget);
        if !preempted {
            self.admit_waiting(&mut budget);
        }
        self.cost()
    }

    fn drop_abandoned(&mut self) {
        let kv = &mut self.kv;
        let (mut aborted, mut generated, mut seconds) = (0, 0, 0.0);
        let now = self.clock.now();
        let mut st = self.stats.lock().unwrap_or_else(PoisonError::into_inner);
        self.running.retain_mut(|s| {
            let keep = !s.abandoned();
            if !keep {
                kv.release(&s.blocks);
                aborted += 1;
                st.finished_abort += 1;
                st.sglang.on_abort(s.leaving(now), true);
                let (g, t) = complete::cut_generation(s, now);
                (generated, seconds) = (generated + g, seconds + t);
            }
            keep
        });
        self.waiting.retain(|s| {
            let keep = !s.abandoned();
            if !keep {
                st.sglang.on_abort(s.leaving(now), false);
            }
            keep
        });
        if aborted > 0 {
            st.llamacpp.on_prediction(generated, seconds);
        }
    }

    fn schedule_running(&mut self, budget: &mut usize) -> bool {
        let mut preempted = false;
        let mut i = 0;
        while i < self.running.len() {
            self.running[i].step_new = 0;
            if *budget == 0 {
                i += 1;
                continue;
            }
            let seq = &self.running[i];
            let new = (seq.num_tokens() - seq.computed).min(*budget);
            let need = blocks_for(seq.computed + new, self.params.block_size).saturating_sub(seq.blocks.len());
            let mut fits = true;
            while self.kv.num_free() < need {
                let victim = self.running.len() - 1;
                self.preempt(victim);
                preempted = true;
                if victim == i {
                    fits = false;
                    break;
                }
            }
            if !fits {
                break;
            }
            let seq = &mut self.running[i];
            self.kv.allocate(need, &mut seq.blocks);
            seq.step_new = new;
            *budget -= new;
            i += 1;
        }
        preempted
    }

    fn preempt(&mut self, idx: usize) {
        let mut seq = self.running.remove(idx);
        self.kv.release(&seq.blocks);
        seq.blocks.clear();
        seq.computed = 0;
        seq.hashed = 0;
        seq.step_new = 0;
        self.waiting.push_front(seq);
        let mut st = self.lock_stats();
        st.preemptions += 1;
        st.sglang.on_retract();
    }

    fn admit_waiting(&mut self, budget: &mut usize) {
        let bs = self.params.block_size;
        while *budget > 0 && self.running.len() < self.params.max_num_seqs {
            let Some(seq) = self.waiting.front_mut() else { break };
            let total = seq.num_tokens();
            if blocks_for(total, bs) > self.kv.num_blocks() {
                self.fail_front(total);
                continue;
            }
            // A fully cached prompt still recomputes its last token (as vLLM does).
            let cached = self.kv.cached_prefix_len(&seq.hashes).min((total - 1) / bs);
            let mut blocks = Vec::new();
            self.kv.acquire_cached(&seq.hashes, cached, &mut blocks);
            let computed = cached * bs;
            let new = (total - computed).min(*budget);
            let need = blocks_for(computed + new, bs) - cached;
            if !self.kv.allocate(need, &mut blocks) {
                self.kv.release(&blocks);
                break;
            }
            let Some(mut seq) = self.waiting.pop_front() else { break };
            self.note_admission(&mut seq, total, computed);
            seq.blocks = blocks;
            seq.computed = computed;
            seq.hashed = cached;
            seq.step_new = new;
            *budget -= new;
            self.running.push(seq);
        }
    }

    fn note_admission(&mut self, seq: &mut Seq, total: usize, cached: usize) {
        let mut st = self.lock_stats();
        st.prefix_queries += total as u64;
        st.prefix_hits += cached as u64;
        st.sglang.on_admission(cached as u64);
        if seq.admitted_at.is_none() {
            let now = self.clock.now();
            seq.admitted_at = Some(now);
            seq.cached_tokens = cached as u64;
            st.queue.observe(now.saturating_duration_since(seq.req.arrival));
        }
    }

    fn fail_front(&mut self, total: usize) {
        if let Some(seq) = self.waiting.pop_front() {
            let message = format!(
                "request needs {total} tokens of KV cache but the replica has only {}",
                self.kv.num_blocks() * self.params.block_size
            );
            let _ = seq.req.events.send(TokenEvent::Failed { message });
        }
    }

    fn cost(&self) -> Option<StepCost> {
        let (mut seqs, mut prefill, mut ctx) = (0, 0, 0);
        for s in self.running.iter().filter(|s| s.step_new > 0) {
            seqs += 1;
            if s.num_tokens() - s.computed > 1 {
                prefill += s.step_new;
            }
            ctx += s.computed + s.step_new;
        }
        (seqs > 0).then(|| StepCost { modelled: self.params.step_cost(seqs, prefill, ctx), seqs })
    }

    fn lock_stats(&self) -> std::sync::MutexGuard<'_, ReplicaStats> {
        self.stats.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[path = "complete.rs"]
mod complete;

#[cfg(test)]
#[path = "sched_tests.rs"]
mod tests;
