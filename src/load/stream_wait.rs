//! The read loop's wait for its next body read, its cut (the cancel token) and its timer,
//! without registering with the token and the timer again on every read.
//!
//! A `tokio::select!` over the three polls each of them on every read: the token's wait takes
//! the lock of its waiter list (one list shared by every stream of an attempt) and the timer
//! stores the waker again. Here the read is polled first; the token and the timer are polled
//! only when the read has to wait and the task's waker changed, or the timer was re-armed,
//! since they last stored it. Otherwise they still hold a waker that wakes this task, and an
//! atomic check tells whether either fired.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use tokio::time::{Instant, Sleep};
use tokio_util::sync::{CancellationToken, WaitForCancellationFuture};

/// What ended one wait.
pub(super) enum Woke<T> {
    /// The token was cancelled.
    Cut,
    /// The timer fired.
    Timer,
    /// The read finished.
    Read(T),
}

/// The token and the timer of one request's read loop.
pub(super) struct Waits<'p, 'c> {
    cancel: &'c CancellationToken,
    cancelled: Pin<&'p mut WaitForCancellationFuture<'c>>,
    timer: Pin<&'p mut Sleep>,
    /// The waker the token and the timer hold, once they were polled.
    waker: Option<Waker>,
    /// The timer was reset since it was last polled.
    rearmed: bool,
}

impl<'p, 'c> Waits<'p, 'c> {
    /// Waits on `cancelled` (of `cancel`) and `timer`.
    pub(super) fn new(
        cancel: &'c CancellationToken,
        cancelled: Pin<&'p mut WaitForCancellationFuture<'c>>,
        timer: Pin<&'p mut Sleep>,
    ) -> Self {
        Self { cancel, cancelled, timer, waker: None, rearmed: true }
    }

    /// Moves the timer to `deadline`.
    pub(super) fn reset(&mut self, deadline: Instant) {
        self.timer.as_mut().reset(deadline);
        self.rearmed = true;
    }

    /// Runs `read` until it finishes, the token is cancelled (checked first) or, when
    /// `armed`, the timer fires.
    pub(super) async fn next<F: Future>(&mut self, armed: bool, read: F) -> Woke<F::Output> {
        let mut read = std::pin::pin!(read);
        std::future::poll_fn(|cx| self.poll(cx, armed, read.as_mut())).await
    }

    fn poll<F: Future>(&mut self, cx: &mut Context<'_>, armed: bool, read: Pin<&mut F>) -> Poll<Woke<F::Output>> {
        if self.cancel.is_cancelled() {
            return Poll::Ready(Woke::Cut);
        }
        if let Poll::Ready(out) = read.poll(cx) {
            return Poll::Ready(Woke::Read(out));
        }
        let registered = !self.rearmed && self.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker()));
        if registered {
            // Both hold this task's waker: a cut or a firing timer wakes it.
            return if armed && self.timer.is_elapsed() { Poll::Ready(Woke::Timer) } else { Poll::Pending };
        }
        if self.cancelled.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Woke::Cut);
        }
        if armed && self.timer.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Woke::Timer);
        }
        self.waker = Some(cx.waker().clone());
        self.rearmed = false;
        Poll::Pending
    }
}
