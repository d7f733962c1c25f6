//! A request with a time limit from its send (`run --request-timeout`, serve, conversation and
//! burst requests): past the limit it is cut, as when the attempt is stopped, and recorded `cut`.
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::backend::{Backend, BackendResponse, Exchange, SendFuture};
    use crate::load::sample::Outcome;
    use std::sync::Arc;
    use std::time::Duration;
    use tokio::time::Instant;

    /// A server that streams 10 one-token events 100 ms apart, then ends.
    #[derive(Debug)]
    struct Slow;

    impl Backend for Slow {
        fn send<'a>(&'a self, _req: Exchange<'a>) -> SendFuture<'a> {
            Box::pin(async move {
                use futures_util::StreamExt;
                const EVENT: &str = "data: {\"choices\":[{\"text\":\"a\",\"index\":0,\"finish_reason\":null}]}\n\n";
                let events = (0..10).map(|_| EVENT).chain(["data: [DONE]\n\n"]);
                let paced = futures_util::stream::iter(events).then(|e| async move {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    Ok::<_, std::io::Error>(Bytes::from(e))
                });
                let body = axum::body::Body::from_stream(paced);
                let resp =
                    axum::response::Response::builder().header("content-type", "text/event-stream").body(body).unwrap();
                Ok(BackendResponse::from_local(resp))
            })
        }
    }

    /// A request of [`Slow`] under `limit`: its sample.
    async fn within(limit: Option<Duration>) -> RequestSample {
        let ctx = WorkerCtx { request_timeout: limit, expected_chunks: 16, ..WorkerCtx::for_tests(Arc::new(Slow)) };
        let sample = RequestSample::new(0, Instant::now());
        run_stream_within(&ctx, &ctx.spec(), Bytes::new(), sample, &CancellationToken::new()).await
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_past_its_limit_is_cut_there_and_one_within_it_completes() {
        let cut = within(Some(Duration::from_millis(450))).await;
        assert_eq!(cut.outcome, Outcome::Cut);
        assert_eq!(cut.e2e(), Duration::from_millis(450), "cut at the limit, from the send");
        assert_eq!(cut.marks.len(), 4, "the tokens before the cut are kept");
        let whole = within(Some(Duration::from_secs(5))).await;
        assert!(whole.completed(), "{:?}", whole.outcome);
        assert_eq!(whole.marks.len(), 10);
        assert!(within(None).await.completed(), "no limit: as before");
    }
}
