//! A reason to end the whole session at once, raised by whatever sees it first (the attempt
//! loop on an `unauthorized` answer: retrying cannot help) and obeyed by the runner.

use std::sync::Mutex;
use tokio_util::sync::CancellationToken;

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
