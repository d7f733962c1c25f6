//! Library example: start the simulated cluster in-process, send one streaming request through
//! the crate's load path, and print what the request measured.
//!
//! Run: `cargo run --release --example measure_one`

use llm_decode_bench::load::live::LiveCounters;
use llm_decode_bench::load::request::{BodyOptions, BodyTemplate, Endpoint};
use llm_decode_bench::load::sample::RequestSample;
use llm_decode_bench::load::stream::{StreamSpec, run_stream};
use llm_decode_bench::sim::{Cluster, SimConfig};
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cluster = Cluster::start(SimConfig::default()).await?;
    let info = cluster.info();
    let url = format!("{}{}", info.gateway.url, Endpoint::Chat.path());
    let mut headers = HeaderMap::new();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert("routing-strategy", HeaderValue::from_static("prefix-cache"));
    let served_by = [HeaderName::from_static("target-pod")];
    let spec = StreamSpec {
        url: &url,
        headers: &headers,
        served_by: &served_by,
        first_token_timeout: Some(Duration::from_secs(30)),
        queued_waits: false,
        idle_timeout: Duration::from_secs(30),
        expected_chunks: 64,
    };
    let opts = BodyOptions { endpoint: Endpoint::Chat, model: info.model.clone(), max_tokens: 64, ignore_eos: true };
    let body = BodyTemplate::new(&opts, "Explain continuous batching in one paragraph.").render("");
    let http = llm_decode_bench::load::backend::HttpBackend::new(llm_decode_bench::net::client_builder().build()?);
    let live = LiveCounters::default();
    let s =
        run_stream(&http, &spec, body, RequestSample::new(0, Instant::now()), &CancellationToken::new(), &live).await;
    println!("served by      {}", s.served_by.as_deref().unwrap_or("?"));
    println!("outcome        {:?}", s.outcome);
    println!("output tokens  {} ({})", s.output_tokens, s.token_source.as_str());
    println!("TTFT           {:.1} ms", s.ttft().map_or(f64::NAN, |d| d.as_secs_f64() * 1e3));
    println!("ITL            {:.2} ms", s.itl().map_or(f64::NAN, |d| d.as_secs_f64() * 1e3));
    println!("end to end     {:.1} ms", s.e2e().as_secs_f64() * 1e3);
    cluster.shutdown();
    Ok(())
}
