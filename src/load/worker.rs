//! Worker loops: closed-loop streams (a finished stream is replaced at once) and an
//! open-loop dispatcher on an absolute schedule. Finished samples go to one aggregator over
//! an unbounded channel and are never dropped.

use super::backend::SharedBackend;
use super::live::LiveCounters;
use super::request::BodyTemplate;
use super::sample::RequestSample;
use super::stream::{StreamSpec, run_stream};
use bytes::Bytes;
use reqwest::header::{HeaderMap, HeaderName};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc::UnboundedSender;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Shared, read-only context of the workers of one cell attempt.
#[derive(Debug)]
pub struct WorkerCtx {
    /// Transport to the target (one connection pool shared by all workers).
    pub backend: SharedBackend,
    /// Endpoint URL.
    pub url: String,
    /// Request headers.
    pub headers: HeaderMap,
    /// Response headers naming the serving replica, in order of preference.
    pub served_by: Vec<HeaderName>,
    /// Longest wait for a first token (None: until cancelled).
    pub first_token_timeout: Option<Duration>,
    /// A request queued behind streams that receive tokens keeps waiting (see
    /// [`StreamSpec::queued_waits`]).
    pub queued_waits: bool,
    /// Longest silence once tokens flow.
    pub idle_timeout: Duration,
    /// Expected output chunks per request, to size timelines once.
    pub expected_chunks: usize,
    /// Live counters of this attempt.
    pub live: Arc<LiveCounters>,
    /// Distinguishes this attempt's nonces from every other attempt's.
    pub nonce_base: u64,
    /// Once cancelled, no worker starts another request; those in flight run to their end
    /// (a decode window's `--drain`). The workers' own stop token still cuts them.
    pub no_more: CancellationToken,
    /// Longest a request may take from its send before it is cut (`--request-timeout`, serve,
    /// conversation and burst requests: [`crate::load::stream_limit::run_stream_within`]); None: no
    /// limit.
    pub request_timeout: Option<Duration>,
}

impl WorkerCtx {
    /// A context for unit tests: `backend` at a fixed completions URL, no headers, no
    /// first-token or request limit, a 5 s idle timeout, fresh live counters.
    #[cfg(test)]
    pub(crate) fn for_tests(backend: SharedBackend) -> Self {
        Self {
            backend,
            url: "http://server/v1/completions".into(),
            headers: HeaderMap::new(),
            served_by: Vec::new(),
            first_token_timeout: None,
            queued_waits: false,
            idle_timeout: Duration::from_secs(5),
            request_timeout: None,
            expected_chunks: 4,
            live: Arc::new(LiveCounters::default()),
            nonce_base: 0,
            no_more: CancellationToken::new(),
        }
    }

    pub(crate) fn spec(&self) -> StreamSpec<'_> {
        StreamSpec {
            url: &self.url,
            headers: &self.headers,
            served_by: &self.served_by,
            first_token_timeout: self.first_token_timeout,
            queued_waits: self.queued_waits,
            idle_timeout: self.idle_timeout,
            expected_chunks: self.expected_chunks,
        }
    }
}

/// Backoff after a transient failure of a closed-loop stream.
const BACKOFF: [Duration; 4] =
    [Duration::from_millis(100), Duration::from_millis(250), Duration::from_millis(500), Duration::from_secs(1)];

/// Starts `streams` closed-loop workers sending `body` (each request gets a unique nonce in
/// front of the prompt). A worker stops on cancel or on a permanent error (e.g. context
/// overflow: retrying cannot help); transient errors are retried after a short backoff.
pub fn spawn_closed_loop(
    ctx: Arc<WorkerCtx>,
    body: BodyTemplate,
    streams: u32,
    tx: UnboundedSender<RequestSample>,
    cancel: CancellationToken,
) -> JoinSet<()> {
    let mut set = JoinSet::new();
    for worker in 0..streams {
        let (ctx, body, tx, cancel) = (ctx.clone(), body.clone(), tx.clone(), cancel.clone());
        set.spawn(async move { closed_loop(worker, &ctx, &body, &tx, &cancel).await });
    }
    set
}

pub(super) async fn closed_loop(
    worker: u32,
    ctx: &WorkerCtx,
    body: &BodyTemplate,
    tx: &UnboundedSender<RequestSample>,
    cancel: &CancellationToken,
) {
    let spec = ctx.spec();
    let mut failures = 0usize;
    for seq in 0u64.. {
        if cancel.is_cancelled() || ctx.no_more.is_cancelled() {
            break;
        }
        let nonce = format!("[{:x}.{worker}.{seq}] ", ctx.nonce_base);
        let sample = RequestSample::new(worker, Instant::now());
        let sample = run_stream(&*ctx.backend, &spec, body.render(&nonce), sample, cancel, &ctx.live).await;
        let kind = sample.error_kind();
        if tx.send(sample).is_err() {
            break;
        }
        match kind {
            Some(k) if k.is_permanent() => break,
            Some(_) => {
                let pause = BACKOFF[failures.min(BACKOFF.len() - 1)];
                failures += 1;
                tokio::select! {
                    _ = cancel.cancelled() => break,
                    _ = ctx.no_more.cancelled() => break,
                    _ = tokio::time::sleep(pause) => {}
                }
            }
            None => failures = 0,
        }
    }
}

/// One request of an open-loop schedule.
#[derive(Debug, Clone)]
pub struct Planned {
    /// When to send it, after the schedule's start.
    pub offset: Duration,
    /// The request body.
    pub body: Bytes,
    /// Caller's tag (e.g. the prompt family), copied into the sample.
    pub tag: u32,
}

/// Sends every planned request at `start + offset` (an absolute schedule: a late send keeps
/// its scheduled time, so latency is measured from when it should have gone out) and waits
/// for all of them. Each request runs in its own task: the schedule never waits on a reply.
pub async fn run_open_loop(
    ctx: Arc<WorkerCtx>,
    start: Instant,
    plan: Vec<Planned>,
    tx: UnboundedSender<RequestSample>,
    cancel: CancellationToken,
) {
    let mut set = JoinSet::new();
    for (i, p) in plan.into_iter().enumerate() {
        let at = start + p.offset;
        tokio::select! {
            _ = cancel.cancelled() => break,
            _ = tokio::time::sleep_until(at) => {}
        }
        let (ctx, tx, cancel) = (ctx.clone(), tx.clone(), cancel.clone());
        set.spawn(async move {
            let mut sample = RequestSample::new(i as u32, Instant::now());
            sample.scheduled_at = Some(at);
            sample.tag = p.tag;
            let sample = run_stream(&*ctx.backend, &ctx.spec(), p.body, sample, &cancel, &ctx.live).await;
            let _ = tx.send(sample);
        });
    }
    while set.join_next().await.is_some() {}
}
