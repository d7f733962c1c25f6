//! The token accounting rule (docs/reports.md §1.1), one test per stream shape, each fed
//! through [`run_stream`] from a body a real server sent or one built to its documented shape.

use super::*;
use crate::load::backend::{Backend, BackendResponse, Exchange, SendFuture};
use crate::load::sample::{RequestSample, TokenSource};

/// A server that answers every request with one fixed event-stream body.
#[derive(Debug)]
struct Fixed(&'static str);

impl Backend for Fixed {
    fn send<'a>(&'a self, _req: Exchange<'a>) -> SendFuture<'a> {
        let body = self.0;
        Box::pin(async move {
            // Several reads per event, as a real socket may deliver them.
            let pieces: Vec<Result<Bytes, std::io::Error>> =
                body.as_bytes().chunks(37).map(|c| Ok(Bytes::copy_from_slice(c))).collect();
            let resp = axum::response::Response::builder()
                .header("content-type", "text/event-stream")
                .body(axum::body::Body::from_stream(futures_util::stream::iter(pieces)))
                .unwrap();
            Ok(BackendResponse::from_local(resp))
        })
    }
}

async fn measure(body: &'static str) -> RequestSample {
    let headers = HeaderMap::new();
    let spec = StreamSpec {
        url: "http://server/v1/completions",
        headers: &headers,
        served_by: &[],
        first_token_timeout: None,
        queued_waits: false,
        idle_timeout: Duration::from_secs(5),
        expected_chunks: 8,
    };
    let live = LiveCounters::default();
    let sample = RequestSample::new(0, Instant::now());
    run_stream(&Fixed(body), &spec, Bytes::new(), sample, &CancellationToken::new(), &live).await
}

fn tokens_per_mark(s: &RequestSample) -> Vec<u64> {
    s.marks.iter().map(|m| m.tokens).collect()
}

#[tokio::test]
async fn llamacpp_completions_usage_on_the_finish_chunk_is_the_total_not_more_tokens() {
    // Captured from llama-server 7e4c0a9: 3 text chunks, then a finish chunk that carries
    // both `choices` and `usage` (completion_tokens 3). Counted twice, this read 6.
    let s = measure(include_str!("../../tests/fixtures/llamacpp_7e4c0a9/completions_stream.sse")).await;
    assert!(s.completed(), "{:?}", s.outcome);
    assert_eq!(s.output_tokens, 3);
    assert_eq!(s.token_source, TokenSource::FinalUsageScaled);
    assert_eq!(tokens_per_mark(&s), [1, 2, 3]);
    assert_eq!(s.prompt_tokens, Some(3));
}

#[tokio::test]
async fn llamacpp_chat_usage_chunk_without_choices_is_the_total() {
    let s = measure(include_str!("../../tests/fixtures/llamacpp_7e4c0a9/chat_stream.sse")).await;
    assert_eq!((s.output_tokens, s.token_source), (2, TokenSource::FinalUsageScaled));
    assert_eq!(s.content_chunks, 2, "the role chunk and the empty finish delta carry no text");
}

#[tokio::test]
async fn final_usage_rescales_chunks_that_held_several_tokens() {
    // Two text chunks, then the finish chunk says 6 tokens: 3 per chunk.
    let body = concat!(
        "data: {\"choices\":[{\"text\":\"ab\",\"index\":0,\"finish_reason\":null}]}\n\n",
        "data: {\"choices\":[{\"text\":\"cd\",\"index\":0,\"finish_reason\":null}]}\n\n",
        "data: {\"choices\":[{\"text\":\"\",\"index\":0,\"finish_reason\":\"length\"}],",
        "\"usage\":{\"completion_tokens\":6,\"prompt_tokens\":4}}\n\n",
        "data: [DONE]\n\n",
    );
    let s = measure(body).await;
    assert_eq!((s.output_tokens, s.token_source), (6, TokenSource::FinalUsageScaled));
    assert_eq!(tokens_per_mark(&s), [3, 6]);
}

#[tokio::test]
async fn a_finish_chunk_with_text_and_the_total_counts_its_text_once() {
    let body = concat!(
        "data: {\"choices\":[{\"text\":\"a\",\"index\":0,\"finish_reason\":null}]}\n\n",
        "data: {\"choices\":[{\"text\":\"b\",\"index\":0,\"finish_reason\":\"stop\"}],",
        "\"usage\":{\"completion_tokens\":2,\"prompt_tokens\":4}}\n\n",
        "data: [DONE]\n\n",
    );
    let s = measure(body).await;
    assert_eq!((s.output_tokens, s.token_source), (2, TokenSource::FinalUsageScaled));
    assert_eq!(tokens_per_mark(&s), [1, 2]);
}

#[tokio::test]
async fn vllm_continuous_usage_counts_each_chunk_exactly() {
    // vLLM with continuous_usage_stats: usage on every chunk, cumulative; stream_interval 2
    // puts two tokens in the middle chunk; the include_usage chunk repeats the total.
    let body = concat!(
        "data: {\"object\":\"text_completion\",\"choices\":[{\"index\":0,\"text\":\"a\",\"finish_reason\":null}],",
        "\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":1,\"total_tokens\":6}}\n\n",
        "data: {\"object\":\"text_completion\",\"choices\":[{\"index\":0,\"text\":\"bc\",\"finish_reason\":null}],",
        "\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":3,\"total_tokens\":8}}\n\n",
        "data: {\"object\":\"text_completion\",\"choices\":[{\"index\":0,\"text\":\"d\",\"finish_reason\":\"length\"}],",
        "\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":4,\"total_tokens\":9}}\n\n",
        "data: {\"object\":\"text_completion\",\"choices\":[],",
        "\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":4,\"total_tokens\":9}}\n\n",
        "data: [DONE]\n\n",
    );
    let s = measure(body).await;
    assert_eq!((s.output_tokens, s.token_source), (4, TokenSource::OpenaiContinuousUsage));
    assert_eq!(tokens_per_mark(&s), [1, 3, 4]);
}

#[tokio::test]
async fn vllm_chat_continuous_usage_starts_on_the_role_chunk() {
    // The role chunk carries usage with 0 completion tokens: continuous from the start.
    let body = concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}],",
        "\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":0}}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":1}}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"b\"},\"finish_reason\":\"length\"}],",
        "\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2}}\n\n",
        "data: [DONE]\n\n",
    );
    let s = measure(body).await;
    assert_eq!((s.output_tokens, s.token_source), (2, TokenSource::OpenaiContinuousUsage));
}

#[tokio::test]
async fn vllm_include_usage_only_scales_chunks_to_the_usage_chunk() {
    // Through a router (continuous usage dropped): usage only in the `choices: []` chunk.
    let body = concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}],\"usage\":null}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"b\"},\"finish_reason\":\"length\"}],\"usage\":null}\n\n",
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2}}\n\n",
        "data: [DONE]\n\n",
    );
    let s = measure(body).await;
    assert_eq!((s.output_tokens, s.token_source), (2, TokenSource::FinalUsageScaled));
}

#[tokio::test]
async fn no_usage_counts_one_token_per_text_chunk() {
    let body = concat!(
        "data: {\"choices\":[{\"index\":0,\"text\":\"a\"}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"text\":\"\"}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"text\":\"b\",\"finish_reason\":\"stop\"}]}\n\n",
        "data: [DONE]\n\n",
    );
    let s = measure(body).await;
    assert_eq!((s.output_tokens, s.token_source), (2, TokenSource::ChunkCount));
}

/// A server that sends its event-stream body in one read (`gap` None), or one event per read
/// with `gap` between them.
#[derive(Debug)]
struct Events(&'static str, Option<Duration>);

impl Backend for Events {
    fn send<'a>(&'a self, _req: Exchange<'a>) -> SendFuture<'a> {
        let (body, gap) = (self.0, self.1);
        Box::pin(async move {
            let body = match gap {
                None => axum::body::Body::from(body),
                Some(gap) => {
                    let events: Vec<String> = body.split_inclusive("\n\n").map(str::to_string).collect();
                    use futures_util::StreamExt;
                    let paced = futures_util::stream::iter(events).then(move |e| async move {
                        tokio::time::sleep(gap).await;
                        Ok::<_, std::io::Error>(Bytes::from(e))
                    });
                    axum::body::Body::from_stream(paced)
                }
            };
            let resp =
                axum::response::Response::builder().header("content-type", "text/event-stream").body(body).unwrap();
            Ok(BackendResponse::from_local(resp))
        })
    }
}

/// A stream from `server` through [`run_stream`] with the live page's histograms on: the
/// sample, the ITL histogram and the TTFTs observed.
async fn measure_observed(server: &dyn Backend) -> (RequestSample, crate::load::live_hist::HistCounts, u64) {
    let headers = HeaderMap::new();
    let spec = StreamSpec {
        url: "http://server/v1/completions",
        headers: &headers,
        served_by: &[],
        first_token_timeout: None,
        queued_waits: false,
        idle_timeout: Duration::from_secs(5),
        expected_chunks: 8,
    };
    let live = LiveCounters::default();
    live.series.get_or_init(Default::default);
    let sample = RequestSample::new(0, Instant::now());
    let s = run_stream(server, &spec, Bytes::new(), sample, &CancellationToken::new(), &live).await;
    let series = live.series.get().unwrap();
    (s, series.itl.snapshot(), series.ttft.snapshot().count())
}

#[tokio::test(start_paused = true)]
async fn the_live_itl_histogram_counts_every_token_after_the_first_chunk_once() {
    use crate::load::live_hist::bucket_of;
    // Continuous usage: chunks of 1, 2 and 1 tokens.
    let body = concat!(
        "data: {\"choices\":[{\"index\":0,\"text\":\"a\",\"finish_reason\":null}],\"usage\":{\"completion_tokens\":1}}\n\n",
        "data: {\"choices\":[{\"index\":0,\"text\":\"bc\",\"finish_reason\":null}],\"usage\":{\"completion_tokens\":3}}\n\n",
        "data: {\"choices\":[{\"index\":0,\"text\":\"d\",\"finish_reason\":\"length\"}],\"usage\":{\"completion_tokens\":4}}\n\n",
        "data: [DONE]\n\n",
    );
    // An event per read, 10 ms apart: the 2-token chunk is 2 gaps of 5 ms, the last one 10 ms.
    let (s, itl, ttfts) = measure_observed(&Events(body, Some(Duration::from_millis(10)))).await;
    assert_eq!((s.output_tokens, ttfts), (4, 1));
    assert_eq!(itl.count(), 3, "the 3 tokens after the first chunk");
    assert_eq!(itl.sum_ns, 20_000_000, "the gaps add up to the stream's span");
    assert_eq!((itl.counts[bucket_of(5_000_000)], itl.counts[bucket_of(10_000_000)]), (2, 1));
    // One read: the chunks share its time, so every token after the first chunk counts 0.
    let (s, itl, _) = measure_observed(&Events(body, None)).await;
    assert_eq!(s.output_tokens, 4);
    assert_eq!((itl.count(), itl.counts[0], itl.sum_ns), (3, 3, 0));
}
