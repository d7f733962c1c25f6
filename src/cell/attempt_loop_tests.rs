//! Tests of the attempt loop: samples received, published, trimmed to their ends.

use super::*;
use crate::cell::context::Target;
use crate::cell::facts::Facts;
use crate::load::backend::HttpBackend;
use crate::load::classify::failure;
use crate::load::sample::ErrorKind;
use tokio::sync::{mpsc, watch};

fn env() -> (CellEnv, watch::Receiver<LiveAttempt>) {
    let (live_tx, live_rx) = watch::channel(LiveAttempt::default());
    let facts = Facts {
        model: "m".into(),
        max_model_len: None,
        runtime: None,
        gateway_version: None,
        replicas: Vec::new(),
        prompts: Vec::new(),
        warnings: Vec::new(),
        metrics_source: None,
    };
    let target = Target {
        backend: HttpBackend::shared(crate::net::client_builder().build().expect("client")),
        base: "http://127.0.0.1:9".into(),
        headers: Default::default(),
        served_by: Vec::new(),
    };
    let env = CellEnv {
        target,
        poller: None,
        live_tx,
        events: mpsc::unbounded_channel().0,
        started: Instant::now(),
        cfg: Arc::new(crate::cli::run::tests_support::config()),
        facts: Arc::new(facts),
        started_wall: String::new(),
        notes: Default::default(),
        announced: Default::default(),
        halt: Default::default(),
        nonce: 0,
    };
    (env, live_rx)
}

fn sample(pod: &str, failed: bool) -> RequestSample {
    let mut s = RequestSample::new(0, Instant::now());
    s.served_by = Some(pod.into());
    if failed {
        s.outcome = failure(ErrorKind::Overloaded, "503");
    }
    s
}

#[tokio::test(start_paused = true)]
async fn samples_are_tallied_and_published_on_the_tick() {
    let (env, live) = env();
    let (tx, rx) = mpsc::unbounded_channel();
    let publisher = LivePublisher::new(3, "burst ctx=0 conc=2".into(), 2);
    let mut lp = AttemptLoop::new(&env, rx, Arc::new(LiveCounters::default()), publisher, PlainTally);
    tx.send(sample("sim-a", true)).unwrap();
    tx.send(sample("sim-b", false)).unwrap();
    let cancel = CancellationToken::new();
    let start = Instant::now();
    assert_eq!(lp.wait(&cancel, None).await, Wake::Tick);
    assert_eq!(Instant::now() - start, TICK, "published on the tick, not before");
    let view = live.borrow().clone();
    assert_eq!(view.cell, Some(3));
    assert_eq!(
        view.errors.get(&crate::load::sample::ErrorKind::Overloaded),
        Some(&1),
        "errors of a burst are counted: {:?}",
        view.errors
    );
    assert_eq!((view.served_by.get("sim-a"), view.served_by.get("sim-b")), (Some(&1), Some(&1)));
    assert_eq!(lp.samples().len(), 2);
}

/// Requests that end after the last tick are in the view the panels keep at the end
/// (the Replicas panel read 84 of 91 requests at DONE).
#[tokio::test(start_paused = true)]
async fn the_last_samples_are_published_when_the_attempt_finishes() {
    let (env, live) = env();
    let (tx, rx) = mpsc::unbounded_channel();
    let publisher = LivePublisher::new(0, "r1-hot90-prefix-cache".into(), 2);
    let mut lp = AttemptLoop::new(&env, rx, Arc::new(LiveCounters::default()), publisher, PlainTally);
    tx.send(sample("sim-a", false)).unwrap();
    assert_eq!(lp.wait(&CancellationToken::new(), None).await, Wake::Tick);
    tx.send(sample("sim-b", false)).unwrap();
    tx.send(sample("sim-b", false)).unwrap();
    drop(tx);
    let (samples, _) = lp.finish();
    let view = live.borrow().clone();
    assert_eq!(samples.len(), 3);
    assert_eq!((view.served_by.get("sim-a"), view.served_by.get("sim-b")), (Some(&1), Some(&2)));
}

#[tokio::test(start_paused = true)]
async fn wait_returns_at_the_deadline_and_on_cancel() {
    let (env, _live) = env();
    let (_tx, rx) = mpsc::unbounded_channel::<RequestSample>();
    let publisher = LivePublisher::new(0, "c".into(), 1);
    let mut lp = AttemptLoop::new(&env, rx, Arc::new(LiveCounters::default()), publisher, PlainTally);
    let cancel = CancellationToken::new();
    let end = Instant::now() + Duration::from_millis(100);
    assert_eq!(lp.wait(&cancel, Some(end)).await, Wake::Deadline);
    assert_eq!(Instant::now(), end);
    cancel.cancel();
    assert_eq!(lp.wait(&cancel, None).await, Wake::Cancelled);
}

#[test]
fn keeping_the_ends_keeps_ttft_itl_and_the_last_token() {
    use crate::load::sample::Mark;
    let mut s = sample("a", false);
    s.marks = (1..=1000).map(|i| Mark { at_us: 5_000 + i * 100, tokens: i }).collect();
    let (ttft, itl, last) = (s.ttft(), s.itl(), s.last_token_at());
    keep_timeline_ends(&mut s);
    assert!(s.marks.len() == 2 && s.marks.heap_bytes() <= 16, "the rest is freed: {}", s.marks.heap_bytes());
    assert_eq!((s.ttft(), s.itl(), s.last_token_at()), (ttft, itl, last));
}

#[tokio::test(start_paused = true)]
async fn run_until_keeps_every_sample_sent_before_the_end() {
    let (env, _live) = env();
    let (tx, rx) = mpsc::unbounded_channel();
    let publisher = LivePublisher::new(0, "c".into(), 1);
    let mut lp = AttemptLoop::new(&env, rx, Arc::new(LiveCounters::default()), publisher, PlainTally);
    let sender = async move {
        for i in 0..50 {
            tokio::time::sleep(Duration::from_millis(30)).await;
            tx.send(sample(if i % 2 == 0 { "a" } else { "b" }, false)).unwrap();
        }
    };
    lp.run_until(sender).await;
    let (samples, _) = lp.finish();
    assert_eq!(samples.len(), 50);
}
