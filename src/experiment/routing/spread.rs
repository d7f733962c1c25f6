//! Spreading priming requests behind a router that prefers the least-loaded worker and
//! breaks ties the same way every time (vllm-router and sglang-router `cache_aware`,
//! docs/protocol.md §8.10): sent one after another, every candidate lands on one worker. To
//! prime the k-th candidate of a round, k mod R long "ballast" streams (unique short
//! prompts, no shared prefix) are held open first, so the router sees the other workers busy
//! and picks a different one; the ballasts are cancelled once the candidate is attributed.
//! Aborted ballasts do not move the engines' finished-request counters, so counter
//! attribution of the candidate stays unambiguous.

use crate::cell::context::CellEnv;
use crate::load::live::LiveCounters;
use crate::load::request::{BodyOptions, BodyTemplate};
use crate::load::sample::RequestSample;
use crate::load::stream::{StreamSpec, run_stream};
use reqwest::header::HeaderMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Output tokens a ballast asks for; it is cancelled long before.
const BALLAST_TOKENS: u64 = 4096;

/// Open ballast streams; dropping (or [`Ballast::release`]) cancels them.
pub(crate) struct Ballast {
    cancel: CancellationToken,
    tasks: Vec<JoinHandle<()>>,
}

impl Ballast {
    /// Opens `n` ballast streams one after another under `headers`, each waited for until
    /// it streams (so the router counts it in flight) or `wait` passes.
    pub(crate) async fn hold(env: &CellEnv, headers: &HeaderMap, n: usize, tag: &str, wait: Duration) -> Self {
        let cancel = CancellationToken::new();
        let mut tasks = Vec::with_capacity(n);
        for i in 0..n {
            let live = Arc::new(LiveCounters::default());
            tasks.push(spawn_one(env, headers, format!("Ballast {tag}/{i}: count slowly."), live.clone(), &cancel));
            let deadline = Instant::now() + wait;
            while live.tokens.load(Ordering::Relaxed) == 0 && Instant::now() < deadline && !cancel.is_cancelled() {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        Self { cancel, tasks }
    }

    /// Cancels every ballast and waits for their streams to end.
    pub(crate) async fn release(mut self) {
        self.cancel.cancel();
        for t in std::mem::take(&mut self.tasks) {
            let _ = t.await;
        }
    }
}

impl Drop for Ballast {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

fn spawn_one(
    env: &CellEnv,
    headers: &HeaderMap,
    prompt: String,
    live: Arc<LiveCounters>,
    cancel: &CancellationToken,
) -> JoinHandle<()> {
    let opts = BodyOptions {
        endpoint: env.cfg.endpoint,
        model: env.facts.model.clone(),
        max_tokens: env.facts.max_model_len.map_or(BALLAST_TOKENS, |m| m.saturating_sub(64).clamp(1, BALLAST_TOKENS)),
        ignore_eos: true,
    };
    let body = BodyTemplate::new(&opts, &prompt).render("");
    let url = format!("{}{}", env.target.base, env.cfg.endpoint.path());
    let (backend, headers, served_by) = (env.target.backend.clone(), headers.clone(), env.target.served_by.clone());
    let (idle, cancel) = (env.cfg.idle_timeout, cancel.clone());
    tokio::spawn(async move {
        let spec = StreamSpec {
            url: &url,
            headers: &headers,
            served_by: &served_by,
            first_token_timeout: Some(idle),
            queued_waits: false,
            idle_timeout: idle,
            expected_chunks: 16,
        };
        run_stream(&*backend, &spec, body, RequestSample::new(0, Instant::now()), &cancel, &live).await;
    })
}
