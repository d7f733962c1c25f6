//! A reason to end the whole session at once, raised by whatever sees it first (the attempt
//! loop on an `unauthorized` answer, the runner after [`SAME_FAILURE_CELLS`] cells in a row
//! failed every request the same way: retrying cannot help) and obeyed by the runner.

use crate::load::sample::ErrorKind;
use std::sync::Mutex;
use tokio_util::sync::CancellationToken;

/// Cells in a row whose every request failed with one and the same error kind (of those that
/// say the server does not serve, see [`FailureStreak`]) after which the session stops.
pub(crate) const SAME_FAILURE_CELLS: u32 = 2;

/// Counts the cells in a row whose every request failed the same way. Kinds that depend on
/// the request or the load offered (`context_overflow`, `bad_request`, `rate_limited`) do not
/// count: another cell may well pass. `unauthorized` halts at once on its own.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct FailureStreak {
    kind: Option<ErrorKind>,
    cells: u32,
}

/// True when every request of a cell failing with `kind` says the server does not serve.
fn says_server_fails(kind: ErrorKind) -> bool {
    !matches!(
        kind,
        ErrorKind::ContextOverflow | ErrorKind::BadRequest | ErrorKind::RateLimited | ErrorKind::Unauthorized
    )
}

impl FailureStreak {
    /// Counts a cell that ran to its end: `failure` is the one kind every request failed with
    /// and an example message (None: the cell measured something, or failed several ways).
    /// Returns the line to halt with once [`SAME_FAILURE_CELLS`] cells in a row failed alike.
    pub(crate) fn observe(&mut self, failure: Option<(ErrorKind, Option<&str>)>) -> Option<String> {
        let Some((kind, example)) = failure.filter(|(k, _)| says_server_fails(*k)) else {
            *self = Self::default();
            return None;
        };
        self.cells = if self.kind == Some(kind) { self.cells + 1 } else { 1 };
        self.kind = Some(kind);
        (self.cells >= SAME_FAILURE_CELLS).then(|| {
            let example = example.map_or_else(String::new, |e| format!(": {e}"));
            format!(
                "stopping the session: {} cells in a row failed every request with {}{example}; the target does not serve, the cells left are not run",
                self.cells,
                kind.as_str()
            )
        })
    }
}

/// The session's halt signal: raised once, with the one line that says why.
#[derive(Debug, Default)]
pub struct Halt {
    token: CancellationToken,
    reason: Mutex<Option<String>>,
}

impl Halt {
    /// Raises the halt with `reason`; true the first time (later reasons are dropped).
    pub fn raise(&self, reason: String) -> bool {
        let Ok(mut r) = self.reason.lock() else { return false };
        if r.is_some() {
            return false;
        }
        *r = Some(reason);
        self.token.cancel();
        true
    }

    /// Why the session halts, once raised.
    pub fn reason(&self) -> Option<String> {
        self.reason.lock().ok().and_then(|r| r.clone())
    }

    /// True once raised.
    pub fn is_raised(&self) -> bool {
        self.token.is_cancelled()
    }

    /// Resolves once raised.
    pub async fn raised(&self) {
        self.token.cancelled().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_server_failure_in_consecutive_cells_halts() {
        let mut s = FailureStreak::default();
        let timeout = Some((ErrorKind::FirstTokenTimeout, Some("no first token after 4.0 s")));
        assert_eq!(s.observe(timeout), None);
        let line = s.observe(timeout).expect("the second cell in a row halts");
        assert_eq!(
            line,
            "stopping the session: 2 cells in a row failed every request with first_token_timeout: no first token after 4.0 s; the target does not serve, the cells left are not run"
        );
        // A measured cell, or another kind, starts the count again.
        let mut s = FailureStreak::default();
        assert_eq!(s.observe(timeout), None);
        assert_eq!(s.observe(None), None);
        assert_eq!(s.observe(timeout), None);
        assert_eq!(s.observe(Some((ErrorKind::Connect, None))), None);
        assert!(s.observe(Some((ErrorKind::Connect, None))).is_some_and(|l| l.contains("with connect; the target")));
    }

    #[test]
    fn failures_of_the_request_or_the_load_do_not_halt() {
        for kind in [ErrorKind::ContextOverflow, ErrorKind::BadRequest, ErrorKind::RateLimited] {
            let mut s = FailureStreak::default();
            assert!((0..5).all(|_| s.observe(Some((kind, None))).is_none()), "{kind:?}");
        }
    }

    #[tokio::test]
    async fn the_first_reason_wins() {
        let h = Halt::default();
        assert!(!h.is_raised() && h.reason().is_none());
        assert!(h.raise("first".into()));
        assert!(!h.raise("second".into()));
        h.raised().await;
        assert_eq!(h.reason().as_deref(), Some("first"));
    }
}
