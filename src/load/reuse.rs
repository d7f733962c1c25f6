//! Whether streamed requests may reuse pooled connections to the target: decided before any
//! load by the preflight probe ([`super::reuse_probe`]), or learned at run time from a failed
//! send ([`super::resend`]); read by the transport on every streamed request and by the report.
//!
//! Hot path cost: one relaxed atomic load per streamed request.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

/// What the report says about connection reuse (`target.connection_reuse`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectionReuse {
    /// True: streamed requests share the pooled connections; false: each streamed request
    /// opens a connection of its own and asks the server to close it (`Connection: close`).
    /// Non-streamed API calls always pool.
    pub streams_reuse: bool,
    /// Why, e.g. "server closed the connection 0.21 ms after a streamed response (preflight
    /// probe)" or "not probed: https".
    pub evidence: String,
    /// Generation requests the preflight probe sent that the server answered (1, or 0 when
    /// it was not probed): one streamed request of one token, which the server counts in its
    /// request totals like any other (`vllm:request_success_total`, ...).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub probe_requests: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// Says a line to the session's log.
type Tell = Box<dyn Fn(String) + Send + Sync>;

/// The streams' connection policy of one transport, shared by every task of a session. Starts
/// out reusing connections, "not probed".
pub struct StreamReuse {
    fresh: AtomicBool,
    probe_requests: AtomicU32,
    evidence: Mutex<String>,
    tell: Mutex<Option<Tell>>,
}

impl Default for StreamReuse {
    fn default() -> Self {
        Self {
            fresh: AtomicBool::new(false),
            probe_requests: AtomicU32::new(0),
            evidence: Mutex::new("not probed".into()),
            tell: Mutex::new(None),
        }
    }
}

impl fmt::Debug for StreamReuse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StreamReuse").field("fresh", &self.fresh_streams()).finish_non_exhaustive()
    }
}

impl StreamReuse {
    /// True when every streamed request must go out on a connection of its own.
    pub fn fresh_streams(&self) -> bool {
        self.fresh.load(Ordering::Relaxed)
    }

    /// Sets the policy from preflight (`streams_reuse` and its `evidence`, found with
    /// `probe_requests` answered requests); returns the one line to log.
    pub fn decide(&self, streams_reuse: bool, evidence: String, probe_requests: u32) -> String {
        self.fresh.store(!streams_reuse, Ordering::Relaxed);
        self.probe_requests.store(probe_requests, Ordering::Relaxed);
        let line = line(streams_reuse, &evidence);
        self.set_evidence(evidence);
        line
    }

    /// A streamed request sent on a pooled connection got no answer (`why`): from now on every
    /// streamed request opens a connection of its own. Logged once, through [`Self::on_change`].
    pub fn learn(&self, why: &str) {
        if self.fresh.swap(true, Ordering::Relaxed) {
            return;
        }
        let evidence = format!("learned at run time: a streamed request on a pooled connection got no answer ({why})");
        let line = line(false, &evidence);
        self.set_evidence(evidence);
        if let Ok(tell) = self.tell.lock()
            && let Some(tell) = tell.as_ref()
        {
            tell(line);
        }
    }

    /// Where a change learned at run time is told (the session's log), in place of any before.
    pub fn on_change(&self, tell: impl Fn(String) + Send + Sync + 'static) {
        if let Ok(mut t) = self.tell.lock() {
            *t = Some(Box::new(tell));
        }
    }

    /// The policy as the report records it.
    pub fn report(&self) -> ConnectionReuse {
        let evidence = self.evidence.lock().map(|e| e.clone()).unwrap_or_default();
        let probe_requests = self.probe_requests.load(Ordering::Relaxed);
        ConnectionReuse { streams_reuse: !self.fresh_streams(), evidence, probe_requests }
    }

    fn set_evidence(&self, evidence: String) {
        if let Ok(mut e) = self.evidence.lock() {
            *e = evidence;
        }
    }
}

/// The log line of a policy.
fn line(streams_reuse: bool, evidence: &str) -> String {
    let what = if streams_reuse {
        "streamed requests reuse pooled connections"
    } else {
        "every streamed request opens a connection of its own"
    };
    format!("connections: {what}; {evidence}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn starts_pooled_and_unprobed() {
        let r = StreamReuse::default();
        assert!(!r.fresh_streams());
        assert_eq!(
            r.report(),
            ConnectionReuse { streams_reuse: true, evidence: "not probed".into(), probe_requests: 0 }
        );
    }

    #[test]
    fn preflight_decides_and_says_one_line() {
        let r = StreamReuse::default();
        let said = r.decide(false, "server closed the connection 0.2 ms after a streamed response".into(), 1);
        assert!(r.fresh_streams());
        assert!(said.contains("opens a connection of its own") && said.contains("0.2 ms"), "{said}");
        assert!(!r.report().streams_reuse);
        r.decide(true, "kept open".into(), 1);
        assert!(!r.fresh_streams() && r.report().evidence == "kept open");
    }

    #[test]
    fn learning_at_run_time_is_told_once() {
        let r = StreamReuse::default();
        let told = Arc::new(Mutex::new(Vec::new()));
        let sink = told.clone();
        r.on_change(move |l| sink.lock().unwrap().push(l));
        r.learn("connection closed before message completed");
        r.learn("again");
        assert!(r.fresh_streams());
        let told = told.lock().unwrap();
        assert_eq!(told.len(), 1, "{told:?}");
        assert!(told[0].contains("learned at run time") && told[0].contains("before message completed"));
        assert!(r.report().evidence.starts_with("learned at run time"));
    }
}
