//! Unit tests of the scheduler, driven step by step with a synthetic clock.

use super::*;
use crate::sim::engine::FinishReason;
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

fn params(kv_blocks: usize, max_num_seqs: usize) -> EngineParams {
    EngineParams { kv_blocks, block_size: 4, max_num_seqs, max_num_batched_tokens: 16, ..EngineParams::default() }
}

fn sched(p: EngineParams) -> (Scheduler, Arc<Mutex<ReplicaStats>>) {
    let stats = Arc::new(Mutex::new(ReplicaStats::default()));
    (Scheduler::new(p, stats.clone()), stats)
}

fn request(prompt: Vec<u32>, max_tokens: u32) -> (EngineRequest, UnboundedReceiver<TokenEvent>) {
    let (tx, rx) = unbounded_channel();
    let req =
        EngineRequest { prompt, max_tokens, stop_after: max_tokens, arrival: Instant::now(), stream: true, events: tx };
    (req, rx)
}

/// Runs steps until idle or `limit` steps; returns the number of steps run.
fn run(s: &mut Scheduler, limit: usize) -> usize {
    let mut steps = 0;
    while !s.is_idle() && steps < limit {
        if s.schedule().is_some() {
            s.complete(Instant::now());
        }
        steps += 1;
    }
    steps
}

fn tokens(rx: &mut UnboundedReceiver<TokenEvent>) -> (u32, Option<FinishReason>) {
    let (mut n, mut fin) = (0, None);
    while let Ok(ev) = rx.try_recv() {
        match ev {
            TokenEvent::Token { .. } => n += 1,
            TokenEvent::Finished { reason, .. } => fin = Some(reason),
            TokenEvent::Failed { .. } => panic!("unexpected failure"),
        }
    }
    (n, fin)
}

#[test]
fn one_request_generates_exactly_max_tokens() {
    let (mut s, stats) = sched(params(64, 4));
    let (req, mut rx) = request((0..10).collect(), 5);
    s.submit(req);
    run(&mut s, 100);
    assert_eq!(tokens(&mut rx), (5, Some(FinishReason::Length)));
    let st = stats.lock().unwrap();
    assert_eq!(st.generation_tokens, 5);
    assert_eq!(st.prompt_tokens, 10);
    assert_eq!(st.finished_length, 1);
    assert_eq!(st.kv_used_blocks, 0, "blocks released at finish");
}

#[test]
fn chunked_prefill_spreads_a_long_prompt_over_steps() {
    let (mut s, _) = sched(params(64, 4));
    let (req, mut rx) = request((0..40).collect(), 1);
    s.submit(req);
    // 40 prompt tokens at 16 per step: 3 steps, the last one samples the only token.
    assert_eq!(run(&mut s, 100), 3);
    assert_eq!(tokens(&mut rx).0, 1);
}

#[test]
fn concurrency_above_max_num_seqs_waits() {
    let (mut s, stats) = sched(params(64, 2));
    let mut rxs = Vec::new();
    for i in 0..3 {
        let (req, rx) = request(vec![i; 4], 50);
        s.submit(req);
        rxs.push(rx);
    }
    s.schedule();
    s.complete(Instant::now());
    {
        let st = stats.lock().unwrap();
        assert_eq!((st.running, st.waiting), (2, 1));
    }
    run(&mut s, 1000);
    for mut rx in rxs {
        assert_eq!(tokens(&mut rx).0, 50);
    }
}

#[test]
fn repeated_prefix_hits_the_cache() {
    let (mut s, stats) = sched(params(64, 4));
    let prompt: Vec<u32> = (0..13).collect();
    for _ in 0..2 {
        let (req, _rx) = request(prompt.clone(), 2);
        s.submit(req);
        run(&mut s, 100);
    }
    let st = stats.lock().unwrap();
    assert_eq!(st.prefix_queries, 26);
    assert_eq!(st.prefix_hits, 12, "three full blocks of 4 reused");
}

#[test]
fn fully_cached_prompt_recomputes_its_last_token() {
    let (mut s, stats) = sched(params(64, 4));
    let prompt: Vec<u32> = (0..8).collect();
    for _ in 0..2 {
        let (req, _rx) = request(prompt.clone(), 1);
        s.submit(req);
        run(&mut s, 100);
    }
    assert_eq!(stats.lock().unwrap().prefix_hits, 4);
}

#[test]
fn running_out_of_blocks_preempts_and_everything_still_finishes() {
    // 12 blocks of 4 = 48 tokens; two requests of 16 + 20 tokens need 18 blocks in total.
    let (mut s, stats) = sched(params(12, 4));
    let mut rxs = Vec::new();
    for i in 0..2 {
        let (req, rx) = request(vec![100 + i; 16], 20);
        s.submit(req);
        rxs.push(rx);
    }
    run(&mut s, 10_000);
    for mut rx in rxs {
        assert_eq!(tokens(&mut rx), (20, Some(FinishReason::Length)));
    }
    assert!(stats.lock().unwrap().preemptions > 0);
}

#[test]
fn abandoned_request_releases_its_blocks() {
    let (mut s, stats) = sched(params(64, 4));
    let (req, rx) = request((0..10).collect(), 1000);
    s.submit(req);
    s.schedule();
    s.complete(Instant::now());
    drop(rx);
    run(&mut s, 10);
    assert!(s.is_idle());
    s.publish(); // as the engine thread does when it goes idle
    let st = stats.lock().unwrap();
    assert_eq!(st.finished_abort, 1);
    assert_eq!(st.kv_used_blocks, 0);
}

#[test]
fn request_larger_than_the_cache_fails() {
    let (mut s, _) = sched(params(2, 4));
    let (req, mut rx) = request((0..20).collect(), 1);
    s.submit(req);
    run(&mut s, 10);
    assert!(matches!(rx.try_recv(), Ok(TokenEvent::Failed { .. })));
}

#[test]
fn step_cost_grows_with_batch_and_prefill() {
    let (mut s, _) = sched(params(64, 4));
    let (a, _ra) = request(vec![1; 4], 10);
    s.submit(a);
    let prefill = s.schedule().unwrap();
    s.complete(Instant::now());
    let single = s.schedule().unwrap();
    s.complete(Instant::now());
    let (b, _rb) = request(vec![2; 1], 10);
    s.submit(b);
    let both = s.schedule().unwrap();
    assert_eq!(single.seqs, 1);
    assert_eq!(both.seqs, 2);
    assert!(prefill.modelled > single.modelled);
    assert!(both.modelled > single.modelled);
}

#[test]
fn long_prompts_are_admitted_one_prefill_at_a_time() {
    // docs/protocol.md §8.6: at concurrency 4 with prompts four budgets long, running rises
    // 1, 2, 3, 4 one prefill apart while the rest wait; the gauges after each step show it.
    let (mut s, stats) = sched(params(1024, 8));
    let mut rxs = Vec::new();
    for i in 0..4u32 {
        let (req, rx) = request((i * 1000..i * 1000 + 64).collect(), 1000);
        s.submit(req);
        rxs.push(rx);
    }
    let mut seen = Vec::new();
    for _ in 0..20 {
        if s.schedule().is_some() {
            s.complete(Instant::now());
        }
        let st = stats.lock().unwrap();
        seen.push((st.running, st.waiting));
    }
    // 64 tokens in chunks of 16: a prompt takes 4 steps; the next starts in the step after.
    assert_eq!(&seen[..4], [(1, 3); 4]);
    assert_eq!(&seen[4..8], [(2, 2); 4], "{seen:?}");
    assert_eq!(&seen[8..12], [(3, 1); 4], "{seen:?}");
    assert_eq!(&seen[12..16], [(4, 0); 4], "{seen:?}");
}
