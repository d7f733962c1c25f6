//! The serve experiment's sender, as `vllm bench serve` sends: request i arrives at
//! `start + offsets[i]` whatever the replies do, then waits for one of `max_concurrency`
//! permits (its `--max-concurrency` semaphore) and is sent. Its latencies are measured from
//! the send, so time spent waiting for a permit is not in its TTFT or e2el (as in vLLM).

use crate::load::sample::RequestSample;
use crate::load::stream::{StreamSpec, run_stream};
use crate::load::worker::WorkerCtx;
use bytes::Bytes;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;
use tokio::sync::mpsc::UnboundedSender;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Sends request i (body `body(i)`, built once it holds a permit, so at most
/// `max_concurrency` bodies exist at once) at `start + offsets[i]`, at most `max_concurrency`
/// in flight, and waits for all of them or `cancel`. Each finished sample goes to `tx`.
pub(crate) async fn run_capped(
    ctx: Arc<WorkerCtx>,
    start: Instant,
    offsets: Vec<Duration>,
    max_concurrency: u32,
    body: Arc<dyn Fn(u32) -> Bytes + Send + Sync>,
    tx: UnboundedSender<RequestSample>,
    cancel: CancellationToken,
) {
    let permits = Arc::new(Semaphore::new(max_concurrency.max(1) as usize));
    let mut set = JoinSet::new();
    for (i, offset) in offsets.into_iter().enumerate() {
        tokio::select! {
            _ = cancel.cancelled() => break,
            _ = tokio::time::sleep_until(start + offset) => {}
        }
        let (ctx, tx, cancel, permits, body) = (ctx.clone(), tx.clone(), cancel.clone(), permits.clone(), body.clone());
        set.spawn(async move {
            let _permit = tokio::select! {
                _ = cancel.cancelled() => return,
                p = permits.acquire_owned() => p,
            };
            let i = i as u32;
            let mut sample = RequestSample::new(i, Instant::now());
            sample.tag = i;
            let spec = StreamSpec {
                url: &ctx.url,
                headers: &ctx.headers,
                served_by: &ctx.served_by,
                first_token_timeout: ctx.first_token_timeout,
                queued_waits: ctx.queued_waits,
                idle_timeout: ctx.idle_timeout,
                expected_chunks: ctx.expected_chunks,
            };
            let sample = run_stream(&*ctx.backend, &spec, body(i), sample, &cancel, &ctx.live).await;
            let _ = tx.send(sample);
        });
    }
    while set.join_next().await.is_some() {}
}
