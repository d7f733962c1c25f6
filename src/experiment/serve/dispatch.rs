//! The serve experiment's sender, as `vllm bench serve` sends: request i arrives at
//! `start + offsets[i]` whatever the replies do, then waits for one of `max_concurrency`
//! permits (its `--max-concurrency` semaphore) and is sent. Its latencies are measured from
//! the send, so time spent waiting for a permit is not in its TTFT or e2el (as in vLLM).

use crate::load::sample::RequestSample;
use crate::load::slice::Slice;
use crate::load::stream_limit::run_stream_within;
use crate::load::worker::WorkerCtx;
use bytes::Bytes;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;
use tokio::sync::mpsc::UnboundedSender;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Runs job i at `start + offsets[i]` once one of `max_concurrency` permits is free (so at
/// most that many run at once), until every job ended or `cancel`; only the jobs `slice`
/// takes (a shard's every count-th of the one schedule, issue 27; every job unsharded). A
/// job's future does no work until it holds its permit. The conversation experiment runs its
/// sessions on it too.
pub(crate) async fn each_capped<F, Fut>(
    start: Instant,
    offsets: Vec<Duration>,
    (max_concurrency, slice): (u32, Slice),
    cancel: CancellationToken,
    job: F,
) where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let permits = Arc::new(Semaphore::new(max_concurrency.max(1) as usize));
    let mut set = JoinSet::new();
    let mine = offsets.into_iter().enumerate().filter(|(i, _)| slice.takes(*i as u64));
    for (i, offset) in mine {
        tokio::select! {
            _ = cancel.cancelled() => break,
            _ = tokio::time::sleep_until(start + offset) => {}
        }
        let (cancel, permits, run) = (cancel.clone(), permits.clone(), job(i));
        set.spawn(async move {
            let _permit = tokio::select! {
                _ = cancel.cancelled() => return,
                p = permits.acquire_owned() => p,
            };
            run.await;
        });
    }
    while set.join_next().await.is_some() {}
}

/// Sends request i (body `body(i)`, built once it holds a permit, so at most
/// `max_concurrency` bodies exist at once) at `start + offsets[i]`, at most `max_concurrency`
/// in flight, the requests `slice` takes only, and waits for all of them or `cancel`. Each
/// finished sample goes to `tx`.
pub(crate) async fn run_capped(
    ctx: Arc<WorkerCtx>,
    start: Instant,
    offsets: Vec<Duration>,
    max_concurrency: (u32, Slice),
    body: Arc<dyn Fn(u32) -> Bytes + Send + Sync>,
    tx: UnboundedSender<RequestSample>,
    cancel: CancellationToken,
) {
    let job = |i: usize| {
        let (ctx, tx, cancel, body) = (ctx.clone(), tx.clone(), cancel.clone(), body.clone());
        async move {
            let i = i as u32;
            let mut sample = RequestSample::new(i, Instant::now());
            sample.tag = i;
            let sample = run_stream_within(&ctx, &ctx.spec(), body(i), sample, &cancel).await;
            let _ = tx.send(sample);
        }
    };
    each_capped(start, offsets, max_concurrency, cancel.clone(), job).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// The jobs `slice` runs of `offsets`, with when each started after `start`.
    async fn ran(offsets: &[Duration], slice: Slice) -> Vec<(usize, Duration)> {
        let (start, seen) = (Instant::now(), Arc::new(Mutex::new(Vec::new())));
        let job = |i: usize| {
            let seen = seen.clone();
            async move { seen.lock().unwrap().push((i, start.elapsed())) }
        };
        each_capped(start, offsets.to_vec(), (slice.cap(4), slice), CancellationToken::new(), job).await;
        let mut out = seen.lock().unwrap().clone();
        out.sort();
        out
    }

    #[tokio::test(start_paused = true)]
    async fn shards_run_every_kth_job_at_its_offset_of_the_one_schedule() {
        let rate = crate::config::Rate::PerSecond(20.0);
        let offsets = crate::experiment::serve::schedule::arrival_offsets(50, rate, 0.5, 9);
        let whole = ran(&offsets, Slice::WHOLE).await;
        assert_eq!(whole.len(), 50);
        for count in [2u32, 3, 7] {
            let mut union = Vec::new();
            for index in 0..count {
                let mine = ran(&offsets, Slice { index, count }).await;
                assert!(mine.iter().all(|(i, _)| *i as u32 % count == index));
                union.extend(mine);
            }
            union.sort();
            assert_eq!(union, whole, "{count} shards");
        }
    }
}
