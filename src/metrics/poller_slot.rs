//! One target of the poller: its scheduling state ([`Slot`], with the backoff of an unusable
//! page), its scrape task ([`scrape`]: one page read within its caps and timeout), and how a
//! result is folded into its view and the history ([`fold_replica`], [`fold_gateway`]).

use std::time::Duration;

use tokio::time::Instant;

use super::super::engine::EngineSample;
use super::super::gateway::{self, GatewayDialect};
use super::super::page::{self, PageError};
use super::super::prom::Scrape;
use super::super::snapshot::{GatewayView, History, Point, ReplicaView};
use super::nonfinite_metrics;
use crate::load::backend::SharedBackend;
use crate::net::redact_url;

/// Longest time between scheduled scrapes of an unusable page (HTML, no engine series, too
/// large): its wait doubles from the poll interval up to this.
pub const UNUSABLE_BACKOFF_MAX: Duration = Duration::from_secs(8);

/// Scheduling state of one target (replicas first, then the gateway).
pub(super) struct Slot {
    pub(super) url: String,
    pub(super) inflight: u32,
    /// Start of the newest scrape whose result was applied; older results are dropped.
    pub(super) newest_applied: Option<Instant>,
    /// While the page is unusable: the wait between its scheduled scrapes, and the earliest
    /// time of the next one.
    pub(super) backoff: Option<(Duration, Instant)>,
}

impl Slot {
    pub(super) fn new(url: &str) -> Slot {
        Slot { url: url.to_string(), inflight: 0, newest_applied: None, backoff: None }
    }

    /// Whether a scheduled round scrapes it at `now`.
    pub(super) fn due(&self, now: Instant) -> bool {
        self.inflight == 0 && self.backoff.is_none_or(|(_, next)| next <= now)
    }

    /// An unusable page was read at `at`: the next scheduled scrape waits twice as long as the
    /// last (at least two intervals, at most [`UNUSABLE_BACKOFF_MAX`]).
    pub(super) fn back_off(&mut self, interval: Duration, at: Instant) {
        let last = self.backoff.map_or(interval, |(wait, _)| wait);
        let wait = last.saturating_mul(2).min(UNUSABLE_BACKOFF_MAX.max(interval));
        self.backoff = Some((wait, at + wait));
    }

    /// How long after its last good scrape the target counts as stale.
    pub(super) fn stale_after(&self, base: Duration, timeout: Duration) -> Duration {
        self.backoff.map_or(base, |(wait, _)| base.max(wait.saturating_mul(3).saturating_add(timeout)))
    }
}

/// Longest error message kept, characters.
const MAX_ERROR_CHARS: usize = 240;

/// The result of one scrape task.
pub(super) struct Outcome {
    pub(super) started: Instant,
    pub(super) finished: Instant,
    pub(super) result: Result<Scrape, PageError>,
}

/// Fetches and parses one page within `timeout`; every failure becomes a one-line message
/// without the URL's userinfo.
pub(super) async fn scrape(backend: SharedBackend, url: String, timeout: Duration) -> Outcome {
    let started = Instant::now();
    let clean = |e: &str| one_line(&e.replace(&url, &redact_url(&url)));
    let result = page::read(&*backend, &url, timeout).await.map_err(|e| match e {
        PageError::Failed(e) => PageError::Failed(clean(&e)),
        PageError::Unusable(e) => PageError::Unusable(clean(&e)),
    });
    Outcome { started, finished: Instant::now(), result }
}

/// Control characters become spaces; the text is cut to [`MAX_ERROR_CHARS`].
fn one_line(text: &str) -> String {
    let flat = text.chars().map(|c| if c.is_control() { ' ' } else { c });
    flat.take(MAX_ERROR_CHARS).collect()
}

/// A scrape's result to fold into a view: when its request was sent, how long it took.
pub(super) struct Done {
    pub(super) at: Instant,
    pub(super) latency: Option<Duration>,
    pub(super) result: Result<Scrape, PageError>,
}

/// A replica's scrape into its view and the history: a good page adds a point, an unusable one
/// is answered (no outage) without a point, a failed one opens or extends an outage.
pub(super) fn fold_replica(r: &mut ReplicaView, history: &mut History, done: Done) {
    let (at, latency) = (done.at, done.latency);
    match done.result {
        Ok(scrape) => {
            let sample = EngineSample::from_scrape(&scrape, r.dialect);
            history.push(&r.name, Point::from_sample(at, &sample));
            history.poll_ok(&r.name, at);
            history.note_nonfinite(&r.name, &nonfinite_metrics(&scrape, r.dialect));
            (r.sample, r.last_ok, r.last_error, r.scrape_latency) = (Some(sample), Some(at), None, latency);
            (r.consecutive_failures, r.unusable) = (0, None);
        }
        Err(PageError::Unusable(why)) => {
            history.poll_ok(&r.name, at);
            history.note_unusable(&r.name, &why);
            (r.last_ok, r.last_error, r.scrape_latency, r.consecutive_failures) = (Some(at), None, latency, 0);
            r.unusable = Some(why);
        }
        Err(PageError::Failed(e)) => {
            history.poll_failed(&r.name, at, &e);
            (r.last_error, r.consecutive_failures) = (Some(e), r.consecutive_failures.saturating_add(1));
        }
    }
}

/// The gateway's scrape into its view and the history (an unusable page counts as failed).
pub(super) fn fold_gateway(g: &mut GatewayView, history: &mut History, done: Done) {
    match done.result {
        Ok(scrape) => {
            if g.dialect == GatewayDialect::Unknown {
                g.dialect = GatewayDialect::detect(&scrape);
            }
            g.series = gateway::counter_series(&scrape);
            history.push_gateway(done.at, &g.series);
            (g.last_ok, g.last_error, g.scrape_latency, g.consecutive_failures) =
                (Some(done.at), None, done.latency, 0);
        }
        Err(e) => {
            (g.last_error, g.consecutive_failures) = (Some(e.to_string()), g.consecutive_failures.saturating_add(1))
        }
    }
}
