//! A request with a time limit from its send (`run --request-timeout`, serve and conversation
//! requests): past the limit it is cut, as when the attempt is stopped, and recorded `cut`.
//! The limit is one timer beside the stream's own future, so the read path is unchanged.

use super::sample::RequestSample;
use super::stream::{StreamSpec, run_stream};
use super::worker::WorkerCtx;
use bytes::Bytes;
use tokio_util::sync::CancellationToken;

/// [`run_stream`] of `body` with `ctx`'s backend and counters, cut at `ctx.request_timeout`
/// after it starts (when set) or when `cancel` fires.
pub(crate) async fn run_stream_within(
    ctx: &WorkerCtx,
    spec: &StreamSpec<'_>,
    body: Bytes,
    sample: RequestSample,
    cancel: &CancellationToken,
) -> RequestSample {
    let Some(limit) = ctx.request_timeout else {
        return run_stream(&*ctx.backend, spec, body, sample, cancel, &ctx.live).await;
    };
    let cut = cancel.child_token();
    let stream = run_stream(&*ctx.backend, spec, body, sample, &cut, &ctx.live);
    tokio::pin!(stream);
    tokio::select! {
        done = &mut stream => done,
        _ = tokio::time::sleep(limit) => {
            cut.cancel();
            stream.await
        }
    }
}
