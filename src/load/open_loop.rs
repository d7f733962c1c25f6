//! Open-loop arrivals at a rate that may change while they run: gamma-distributed gaps
//! (shape `--burstiness`, 1 is Poisson, seeded), at most `cap` requests in flight. An arrival
//! that finds the cap reached waits for a slot; the schedule stays absolute, so the waits do
//! not lower the offered rate (late arrivals go out as soon as slots free). A permanent error
//! (a request the server can never take) ends the arrivals, as it ends a closed-loop stream.

use super::request::BodyTemplate;
use super::sample::RequestSample;
use super::stream::run_stream;
use super::worker::WorkerCtx;
use crate::load::rate::Rate;
use rand::SeedableRng;
use rand::rngs::StdRng;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc::UnboundedSender;
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// One draw of Gamma(`shape`, `scale`) (mean shape x scale), by `rand_distr`; the mean when
/// the parameters are no gamma's (the flags keep both positive and finite, so never here).
pub(crate) fn gamma(rng: &mut impl rand::Rng, shape: f64, scale: f64) -> f64 {
    use rand_distr::Distribution;
    rand_distr::Gamma::new(shape, scale).map_or(shape * scale, |g| g.sample(rng))
}

/// The gap before the next arrival at `rate` with gamma shape `shape` (mean 1/rate).
pub(crate) fn gap(rng: &mut StdRng, rate: Rate, shape: f64) -> Duration {
    match rate {
        Rate::Inf => Duration::ZERO,
        Rate::PerSecond(r) => crate::units::secs(gamma(rng, shape, 1.0 / (shape * r))),
    }
}

/// What an open-loop attempt sends: the body, the in-flight cap, the arrival process.
pub(crate) struct OpenLoopPlan {
    /// The body of every request (a unique nonce goes in front of its prompt).
    pub body: BodyTemplate,
    /// Most requests in flight at once.
    pub cap: u32,
    /// Gamma shape of the gaps (`--burstiness`).
    pub shape: f64,
    /// Seed of the gaps.
    pub seed: u64,
    /// The arrivals this process sends: arrival k when the slice takes k (a shard's every
    /// count-th; all unsharded). Every gap is drawn either way, so each shard follows the one
    /// global schedule.
    pub slice: super::slice::Slice,
}

/// Sends requests at the rate `rate` holds (read again at every arrival, and at once when it
/// changes) until `cancel`; spawned on `set`, each request in its own task.
pub(crate) fn spawn_open_loop(
    ctx: Arc<WorkerCtx>,
    plan: OpenLoopPlan,
    rate: watch::Receiver<Rate>,
    tx: UnboundedSender<RequestSample>,
    cancel: CancellationToken,
) -> JoinSet<()> {
    let mut set = JoinSet::new();
    set.spawn(dispatch(ctx, plan, rate, tx, cancel));
    set
}

async fn dispatch(
    ctx: Arc<WorkerCtx>,
    plan: OpenLoopPlan,
    mut rate: watch::Receiver<Rate>,
    tx: UnboundedSender<RequestSample>,
    cancel: CancellationToken,
) {
    let mut rng = StdRng::seed_from_u64(plan.seed ^ 0x0DE1_0CA1);
    let slots = Arc::new(Semaphore::new(plan.cap.max(1) as usize));
    let mut requests = JoinSet::new();
    let mut next = Instant::now();
    // A permanent error (e.g. context overflow) ends the arrivals: every request would fail.
    let refused = CancellationToken::new();
    for seq in 0u64.. {
        if plan.slice.takes(seq) {
            let permit = tokio::select! {
                _ = cancel.cancelled() => break,
                _ = ctx.no_more.cancelled() => break,
                _ = refused.cancelled() => break,
                p = slots.clone().acquire_owned() => p.expect("the semaphore is never closed"),
            };
            let (ctx, tx, stop, refuse) = (ctx.clone(), tx.clone(), cancel.clone(), refused.clone());
            let body = plan.body.render(&format!("[{:x}.o.{seq}] ", ctx.nonce_base));
            requests.spawn(async move {
                let sample = RequestSample::new(seq as u32, Instant::now());
                let sample = run_stream(&*ctx.backend, &ctx.spec(), body, sample, &stop, &ctx.live).await;
                if sample.error_kind().is_some_and(|k| k.is_permanent()) {
                    refuse.cancel();
                }
                let _ = tx.send(sample);
                drop(permit);
            });
        }
        while requests.try_join_next().is_some() {}
        next += gap(&mut rng, *rate.borrow_and_update(), plan.shape);
        loop {
            tokio::select! {
                _ = cancel.cancelled() => break,
                _ = refused.cancelled() => break,
                _ = ctx.no_more.cancelled() => break,
                _ = tokio::time::sleep_until(next) => break,
                changed = rate.changed() => {
                    if changed.is_err() {
                        break;
                    }
                    // A new rate applies from now: the pending gap is drawn again at it.
                    next = Instant::now() + gap(&mut rng, *rate.borrow_and_update(), plan.shape);
                }
            }
        }
    }
    while requests.join_next().await.is_some() {}
}

#[cfg(test)]
#[path = "open_loop_shard_tests.rs"]
mod shard_tests;

#[cfg(test)]
mod tests {
    use super::*;

    fn mean_and_cv(shape: f64) -> (f64, f64) {
        let mut rng = StdRng::seed_from_u64(9);
        let g: Vec<f64> = (0..40_000).map(|_| gap(&mut rng, Rate::PerSecond(4.0), shape).as_secs_f64()).collect();
        let mean = g.iter().sum::<f64>() / g.len() as f64;
        let var = g.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / g.len() as f64;
        (mean, var.sqrt() / mean)
    }

    #[test]
    fn gaps_have_the_rate_and_the_burstiness_of_the_shape() {
        for shape in [0.5, 1.0, 4.0] {
            let (mean, cv) = mean_and_cv(shape);
            assert!((mean - 0.25).abs() < 0.01, "shape {shape}: mean {mean}");
            // A gamma of shape k has a coefficient of variation 1/sqrt(k).
            assert!((cv - 1.0 / shape.sqrt()).abs() < 0.05, "shape {shape}: cv {cv}");
        }
        assert_eq!(gap(&mut StdRng::seed_from_u64(1), Rate::Inf, 1.0), Duration::ZERO);
    }
}
