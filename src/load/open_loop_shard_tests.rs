//! Sharded open-loop arrivals (issue 27): the dispatchers of N shards, each started at the
//! same instant with the same seed, send together exactly the arrivals one unsharded
//! dispatcher sends, at the same offsets (global rate and burstiness kept).

use super::*;
use crate::load::backend::{Backend, BackendResponse, Exchange, SendFuture};
use crate::load::request::{BodyOptions, Endpoint};
use crate::load::slice::Slice;
use std::sync::Mutex;

/// Records each request's arrival number (read from its nonce) and when it was sent.
#[derive(Debug)]
struct Recorder {
    t0: Instant,
    sent: Mutex<Vec<(u64, Duration)>>,
}

impl Backend for Recorder {
    fn send<'a>(&'a self, req: Exchange<'a>) -> SendFuture<'a> {
        let body = String::from_utf8_lossy(req.body.as_deref().unwrap_or_default()).into_owned();
        let seq = body.split(".o.").nth(1).and_then(|r| r.split(']').next()).and_then(|n| n.parse().ok());
        self.sent.lock().unwrap().push((seq.expect("a nonce with the arrival number"), self.t0.elapsed()));
        Box::pin(async move {
            let done = "data: {\"choices\":[{\"text\":\"a\",\"index\":0,\"finish_reason\":\"length\"}],\"usage\":{\"completion_tokens\":1,\"prompt_tokens\":1}}\n\ndata: [DONE]\n\n";
            let resp = axum::response::Response::builder()
                .header("content-type", "text/event-stream")
                .body(axum::body::Body::from(done))
                .unwrap();
            Ok(BackendResponse::from_local(resp))
        })
    }
}

/// What one dispatcher of `slice` sends in 3 s at 40/s, shape `shape`, seed `seed`.
async fn arrivals(slice: Slice, seed: u64, shape: f64) -> Vec<(u64, Duration)> {
    let recorder = Arc::new(Recorder { t0: Instant::now(), sent: Mutex::new(Vec::new()) });
    let ctx = Arc::new(WorkerCtx::for_tests(recorder.clone()));
    let opts = BodyOptions { endpoint: Endpoint::Completions, model: "m".into(), max_tokens: 1, ignore_eos: true };
    let plan = OpenLoopPlan { body: BodyTemplate::new(&opts, "hi"), cap: 10_000, shape, seed, slice };
    let (_rate_tx, rate) = watch::channel(Rate::PerSecond(40.0));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let stop = CancellationToken::new();
    let mut set = spawn_open_loop(ctx, plan, rate, tx, stop.clone());
    tokio::time::sleep(Duration::from_secs(3)).await;
    stop.cancel();
    while set.join_next().await.is_some() {}
    while rx.try_recv().is_ok() {}
    let mut sent = recorder.sent.lock().unwrap().clone();
    // Arrivals near the cut may fall either side of it in different runs.
    sent.retain(|(_, at)| *at < Duration::from_millis(2_900));
    sent
}

#[tokio::test(start_paused = true)]
async fn the_shards_together_send_the_unsharded_schedule() {
    for (seed, shape) in [(1, 1.0), (2, 0.3), (3, 4.0)] {
        let whole = arrivals(Slice::WHOLE, seed, shape).await;
        assert!(whole.len() > 60, "about 116 arrivals in 2.9 s at 40/s: {}", whole.len());
        for count in 2..=4u32 {
            let mut union = Vec::new();
            for index in 0..count {
                let mine = arrivals(Slice { index, count }, seed, shape).await;
                assert!(mine.iter().all(|(k, _)| k % u64::from(count) == u64::from(index)), "k mod N only");
                union.extend(mine);
            }
            union.sort_by_key(|(k, _)| *k);
            let seqs = |v: &[(u64, Duration)]| v.iter().map(|(k, _)| *k).collect::<Vec<_>>();
            assert_eq!(seqs(&union), seqs(&whole), "seed {seed} over {count} shards");
            for ((k, a), (_, b)) in union.iter().zip(&whole) {
                let off = a.as_secs_f64() - b.as_secs_f64();
                assert!(off.abs() <= 0.001, "arrival {k}: {a:?} sharded, {b:?} whole");
            }
        }
    }
}
