//! The end of a decode attempt: its streams are told to stop (cut), or with `--drain` first
//! left to finish the requests they are on, within a bounded grace.

use super::Run;
use crate::cell::control::RunnerEvent;
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Longest wait for the streams to end once they are told to stop.
pub(crate) const STOP_GRACE: Duration = Duration::from_secs(10);

/// With `--drain`, longest wait for the requests in flight at the window's end to finish on
/// their own; the rest are then cut within what is left of [`STOP_GRACE`].
pub(crate) const DRAIN_WAIT: Duration = Duration::from_secs(8);

impl Run<'_> {
    /// Stops the streams: with `--drain` (and no cancel) they first finish their requests for
    /// up to [`DRAIN_WAIT`]; then the rest are cut, and aborted when [`STOP_GRACE`] is over.
    pub(super) async fn stop_workers(&mut self, stop: &CancellationToken) {
        let grace_end = Instant::now() + STOP_GRACE;
        if self.env.cfg.decode.drain && !stop.is_cancelled() {
            self.drain(Instant::now() + DRAIN_WAIT).await;
        }
        stop.cancel();
        let workers = self.load.tasks();
        let joined = async { while workers.join_next().await.is_some() {} };
        if self.lp.run_until(tokio::time::timeout_at(grace_end, joined)).await.is_err() {
            self.load.tasks().abort_all();
        }
    }

    /// `--drain`: no stream starts another request; those in flight finish on their own until
    /// `until`, when the ones left are said in the log (the caller then cuts them).
    async fn drain(&mut self, until: Instant) {
        self.no_more.cancel();
        let workers = self.load.tasks();
        let joined = async { while workers.join_next().await.is_some() {} };
        if self.lp.run_until(tokio::time::timeout_at(until, joined)).await.is_err() {
            let left = self.lp.live().totals().in_flight.max(0);
            let (label, wait) = (&self.spec.label, DRAIN_WAIT.as_secs_f64());
            self.env.emit(RunnerEvent::Log(format!(
                "{label}: {left} requests still in flight after {wait:.0} s of --drain are cut (lower --max-tokens so they end)"
            )));
        }
    }
}
