//! An optional observer of every data event the stream reader decodes, with the reader's own
//! timestamp of the read that carried it: the bench instrument's measurement-lag probe
//! (src/bench/probe.rs). Off unless installed; off, it costs one atomic load per data event.

use std::sync::OnceLock;
use tokio::time::Instant;

/// The observer: an event's data (the JSON of a `data:` line), when its request was sent (one
/// instant per request, so the observer can tell streams apart) and when its read was timed.
pub(crate) type Tap = fn(data: &[u8], sent_at: Instant, at: Instant);

static TAP: OnceLock<Tap> = OnceLock::new();

/// Installs the observer for the life of the process; false when one already is.
pub(crate) fn install(tap: Tap) -> bool {
    TAP.set(tap).is_ok()
}

/// The observer, if installed.
#[inline]
pub(crate) fn get() -> Option<Tap> {
    TAP.get().copied()
}
