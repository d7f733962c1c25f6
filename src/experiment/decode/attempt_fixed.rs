//! The warmup of a decode attempt on the session's timeline (`run --start-at`, issue 27): the
//! window opens at a fixed instant, the same on every shard, whatever this shard's streams
//! did; a cell whose streams were not admitted by then is marked as a timed-out warmup (`*`).

use super::super::admission::{Admission, AdmissionTracker};
use super::Run;
use crate::cell::attempt_loop::Wake;
use crate::cell::control::Phase;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

impl Run<'_> {
    /// Warms up until `at`; Some(true) when the streams were not admitted by then, None when
    /// every stream died or `cancel` fired first.
    pub(super) async fn warmup_until(&mut self, cancel: &CancellationToken, at: Instant) -> Option<bool> {
        self.lp.phase(Phase::Warming, Some(at.saturating_duration_since(Instant::now())));
        let mut tracker = AdmissionTracker::default();
        let mut admitted = false;
        loop {
            if cancel.is_cancelled() || self.all_stopped() {
                return None;
            }
            self.ignore_knob();
            let now = Instant::now();
            if !admitted && self.admission(&mut tracker, now) != Admission::NotYet {
                admitted = true;
            }
            if now >= at {
                return Some(!admitted);
            }
            if self.lp.wait(cancel, Some(at)).await == Wake::Cancelled {
                return None;
            }
        }
    }
}
