//! Preflight's network waits: each has a deadline and a name, and one that lasts says on
//! stderr what it waits for and for how long at most, so a server that never answers is
//! neither a silent nor an endless benchmark.

use std::fmt;
use std::future::Future;
use std::time::Duration;

/// After this long without an answer (or half the wait's deadline, if shorter), the wait is
/// named on stderr.
pub(crate) const WAIT_NOTICE: Duration = Duration::from_secs(3);

/// Deadline of a page that only informs (`/version`, `/props`, SGLang's `/get_server_info`, a
/// metrics read): a server that does not answer it in this time is taken not to have it.
pub(crate) const INFO_TIMEOUT: Duration = Duration::from_secs(10);

/// How much longer than its [`Wait`] a request's own timeout is: the wait, which names what
/// it waited for, is what ends it.
pub(crate) const TRANSPORT_MARGIN: Duration = Duration::from_secs(1);

/// One wait of preflight: what it waits for (e.g. `POST http://h:8000/tokenize`) and its
/// deadline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Wait {
    /// What answers, as the lines name it.
    pub what: String,
    /// Longest wait.
    pub limit: Duration,
}

/// A wait that ran out: nothing answered within its deadline.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no answer from {} within {}", .0.what, seconds(.0.limit))]
pub(crate) struct NoAnswer(pub Wait);

/// `60 s`, `2.5 s`, `250 ms`.
pub(crate) fn seconds(d: Duration) -> String {
    match d {
        d if d < Duration::from_secs(1) => format!("{} ms", d.as_millis()),
        d if d.subsec_millis() == 0 => format!("{} s", d.as_secs()),
        d => format!("{:.1} s", d.as_secs_f64()),
    }
}

impl fmt::Display for Wait {
    /// The notice: `preflight: waiting for WHAT to answer (up to 60 s)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "preflight: waiting for {} to answer (up to {})", self.what, seconds(self.limit))
    }
}

impl Wait {
    /// A wait for `what`, at most `limit`.
    pub(crate) fn new(what: impl Into<String>, limit: Duration) -> Self {
        Self { what: what.into(), limit }
    }

    /// When the wait is named: [`WAIT_NOTICE`], or half the deadline if that is sooner.
    pub(crate) fn notice_after(&self) -> Duration {
        WAIT_NOTICE.min(self.limit / 2)
    }

    /// Awaits `fut` for at most the deadline; names the wait on stderr once it lasts.
    pub(crate) async fn run<T>(&self, fut: impl Future<Output = T>) -> Result<T, NoAnswer> {
        self.run_saying(fut, |line| crate::err_line!("{line}")).await
    }

    /// [`Wait::run`], telling `say` instead of stderr.
    pub(crate) async fn run_saying<T>(
        &self,
        fut: impl Future<Output = T>,
        say: impl FnOnce(String),
    ) -> Result<T, NoAnswer> {
        let deadline = tokio::time::Instant::now() + self.limit;
        let fut = tokio::time::timeout_at(deadline, fut);
        tokio::pin!(fut);
        tokio::select! {
            r = &mut fut => return r.map_err(|_| NoAnswer(self.clone())),
            _ = tokio::time::sleep(self.notice_after()) => say(self.to_string()),
        }
        fut.await.map_err(|_| NoAnswer(self.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::time::Instant;

    #[tokio::test(start_paused = true)]
    async fn a_wait_is_named_once_it_lasts_and_ends_at_its_deadline() {
        let w = Wait::new("POST http://h:1/tokenize", Duration::from_secs(60));
        let t0 = Instant::now();
        let mut said = Vec::new();
        let r = w.run_saying(std::future::pending::<()>(), |l| said.push((Instant::now() - t0, l))).await;
        assert_eq!(Instant::now() - t0, Duration::from_secs(60), "the deadline, not later");
        assert_eq!(r.unwrap_err().to_string(), "no answer from POST http://h:1/tokenize within 60 s");
        assert_eq!(
            said,
            [(WAIT_NOTICE, "preflight: waiting for POST http://h:1/tokenize to answer (up to 60 s)".to_string())]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_short_deadline_is_named_halfway_and_a_quick_answer_not_at_all() {
        let w = Wait::new("x", Duration::from_secs(2));
        let t0 = Instant::now();
        let mut said = None;
        let r = w.run_saying(std::future::pending::<()>(), |_| said = Some(Instant::now() - t0)).await;
        assert!(r.is_err());
        assert_eq!(said, Some(Duration::from_secs(1)), "before the deadline passes");
        let mut said = false;
        let quick = async {
            tokio::time::sleep(Duration::from_millis(500)).await;
            7
        };
        assert_eq!(w.run_saying(quick, |_| said = true).await, Ok(7));
        assert!(!said);
        assert_eq!(seconds(Duration::from_millis(2500)), "2.5 s");
        assert_eq!(seconds(Duration::from_millis(250)), "250 ms");
    }
}
