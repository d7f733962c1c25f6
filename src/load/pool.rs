//! A closed-loop stream pool whose size changes while it runs (the monitor's load knob):
//! streams are added as new workers, and retired newest first by cutting them at once (the
//! cut request is kept as a sample, as at the end of a window).

use super::request::BodyTemplate;
use super::sample::RequestSample;
use super::worker::{WorkerCtx, closed_loop};
use std::sync::Arc;
use tokio::sync::mpsc::UnboundedSender;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// Closed-loop workers of one attempt, each with its own stop token under the attempt's.
pub(crate) struct StreamPool {
    ctx: Arc<WorkerCtx>,
    body: BodyTemplate,
    tx: UnboundedSender<RequestSample>,
    parent: CancellationToken,
    /// The workers' tasks (stopped ones included until joined).
    pub set: JoinSet<()>,
    streams: Vec<CancellationToken>,
    next_worker: u32,
}

impl StreamPool {
    /// Starts `streams` closed-loop workers, as [`super::worker::spawn_closed_loop`] does;
    /// `parent` stops them all.
    pub(crate) fn start(
        ctx: Arc<WorkerCtx>,
        body: BodyTemplate,
        streams: u32,
        tx: UnboundedSender<RequestSample>,
        parent: CancellationToken,
    ) -> Self {
        let mut pool = Self { ctx, body, tx, parent, set: JoinSet::new(), streams: Vec::new(), next_worker: 0 };
        pool.resize(streams);
        pool
    }

    /// Streams asked for now.
    pub(crate) fn size(&self) -> u32 {
        self.streams.len() as u32
    }

    /// Adds workers or cuts the newest ones until `streams` are asked for.
    pub(crate) fn resize(&mut self, streams: u32) {
        while self.size() > streams {
            if let Some(t) = self.streams.pop() {
                t.cancel();
            }
        }
        while self.size() < streams {
            let stop = self.parent.child_token();
            let (ctx, body, tx, cancel) = (self.ctx.clone(), self.body.clone(), self.tx.clone(), stop.clone());
            let worker = self.next_worker;
            self.next_worker += 1;
            self.set.spawn(async move { closed_loop(worker, &ctx, &body, &tx, &cancel).await });
            self.streams.push(stop);
        }
    }
}
