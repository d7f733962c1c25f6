//! The long-context row: chat prompts of `tokens` tokens (128k: about 0.5 MB of JSON each) at
//! `streams` concurrent streams, `rounds` rounds after one that opens the connections, through
//! the tool's own stream path (`BodyTemplate` render, `run_stream`) to the bench server in its
//! own process, which answers one token. Send time is from the request sample's send instant to
//! the server's handler having the whole body (its unix time in `x-bench-read-unix-ns`,
//! src/bench/server.rs), both on the machine's one realtime clock; divided by the body's MB.
//! Client CPU per MB is this process's CPU over the counted rounds; server CPU per MB its own.

use super::sysinfo::{process_cpu, rss_kib, unix_ns};
use crate::load::backend::{HttpBackend, SharedBackend};
use crate::load::filler::filler_text;
use crate::load::live::LiveCounters;
use crate::load::request::{BodyOptions, BodyTemplate, Endpoint};
use crate::load::sample::RequestSample;
use crate::load::stream::{StreamSpec, run_stream};
use crate::stats::Samples;
use reqwest::header::{HeaderMap, HeaderName};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The shape of the long-context row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LongShape {
    /// Concurrent streams.
    pub streams: usize,
    /// Prompt tokens per request (about 4 bytes each).
    pub tokens: usize,
    /// Counted rounds (one more opens the connections first).
    pub rounds: usize,
}

/// p50 / p99 / max of one figure.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Spread {
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Largest.
    pub max: f64,
}

impl Spread {
    fn of(s: &mut Samples) -> Self {
        let (p50, p99) = (s.percentile(50.0).unwrap_or(0.0), s.percentile(99.0).unwrap_or(0.0));
        Self { p50, p99, max: s.max().unwrap_or(0.0) }
    }
}

/// What the long-context row measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct LongFigures {
    /// The shape run.
    pub shape: LongShape,
    /// Requests counted (streams x rounds less failures).
    pub requests: u64,
    /// Mean request body, bytes.
    pub body_bytes: u64,
    /// Send time per MB of body, ms: from the send to the server having the whole body.
    pub send_ms_per_mb: Spread,
    /// Body render (nonce and one copy of the prompt) per request, microseconds.
    pub render_us: Spread,
    /// Body MB sent per second of wall time over the counted rounds, MB/s (1 MB = 10^6 bytes).
    pub mb_per_s: f64,
    /// Client CPU (user + system, this process) per MB sent, ms.
    pub client_cpu_ms_per_mb: f64,
    /// Server CPU per MB received, ms (its own process).
    pub server_cpu_ms_per_mb: f64,
    /// VmRSS of the client process at the end, KiB.
    pub rss_kib: u64,
    /// Peak RSS of the client process, KiB.
    pub hwm_kib: u64,
    /// VmRSS before it connected, KiB.
    pub idle_rss_kib: u64,
    /// Failed requests.
    pub errors: u64,
}

/// The section the table prints for the row.
pub(crate) fn section(f: &LongFigures) -> String {
    let s = &f.send_ms_per_mb;
    format!(
        "long context: {} streams x {} rounds, {} prompt tokens ({:.3} MB body), {} errors\n  \
         send ms/MB (send -> server has the body) p50/p99/max {:.2}/{:.2}/{:.2}   {:.0} MB/s   \
         client CPU {:.2} ms/MB   server CPU {:.2} ms/MB   render p50 {:.0} us",
        f.shape.streams,
        f.shape.rounds,
        f.shape.tokens,
        f.body_bytes as f64 / 1e6,
        f.errors,
        s.p50,
        s.p99,
        s.max,
        f.mb_per_s,
        f.client_cpu_ms_per_mb,
        f.server_cpu_ms_per_mb,
        f.render_us.p50,
    )
}

/// One request's send ms per MB, render us and body bytes; None when it failed.
type One = Option<(f64, f64, u64)>;

async fn one(
    url: Arc<str>,
    template: Arc<BodyTemplate>,
    backend: SharedBackend,
    w: u32,
    round: usize,
    anchor: (Instant, u64),
) -> One {
    let (headers, names) = (HeaderMap::new(), [HeaderName::from_static(super::server::READ_HEADER)]);
    let spec = StreamSpec {
        url: &url,
        headers: &headers,
        served_by: &names,
        first_token_timeout: Some(Duration::from_secs(60)),
        queued_waits: false,
        idle_timeout: Duration::from_secs(60),
        expected_chunks: 4,
    };
    let t = std::time::Instant::now();
    let body = template.render(&format!("[{w}.{round}] "));
    let render_us = t.elapsed().as_secs_f64() * 1e6;
    let len = body.len() as u64;
    let live = LiveCounters::default();
    let sample = RequestSample::new(w, Instant::now());
    let s = run_stream(&*backend, &spec, body, sample, &CancellationToken::new(), &live).await;
    let read_ns: u64 = s.served_by.as_deref().and_then(|v| v.parse().ok()).filter(|_| s.completed())?;
    let sent_ns = anchor.1 + s.sent_at.saturating_duration_since(anchor.0).as_nanos() as u64;
    let send_ms = read_ns.saturating_sub(sent_ns) as f64 / 1e6;
    Some((send_ms / (len as f64 / 1e6), render_us, len))
}

/// Runs the row against the bench server at `url` (its base URL) in this process.
pub(crate) async fn run(shape: LongShape, url: &str) -> anyhow::Result<LongFigures> {
    let idle_rss_kib = rss_kib().unwrap_or_default().0;
    let anchor = (Instant::now(), unix_ns());
    let http = crate::net::client_builder().no_proxy().build()?;
    // About 4 characters a token, as the filler's words are.
    let text = filler_text(7, shape.tokens * 4);
    let opts = BodyOptions { endpoint: Endpoint::Chat, model: "bench".into(), max_tokens: 1, ignore_eos: true };
    let template = Arc::new(BodyTemplate::new(&opts, &text));
    drop(text);
    let client = crate::net::client_builder().no_proxy().pool_max_idle_per_host(shape.streams).build()?;
    let backend = HttpBackend::shared(client);
    let chat: Arc<str> = format!("{url}/v1/chat/completions").into();
    let (mut per_mb, mut render) = (Samples::new(), Samples::new());
    let (mut bytes, mut errors) = (0u64, 0u64);
    let (mut cpu0, mut wall0, mut srv0) = (process_cpu(), Instant::now(), super::child::stats_at(&http, url).await?);
    // Round 0 opens the connections and is not counted.
    for round in 0..=shape.rounds {
        if round == 1 {
            (cpu0, wall0, srv0) = (process_cpu(), Instant::now(), super::child::stats_at(&http, url).await?);
        }
        let mut set = tokio::task::JoinSet::new();
        for w in 0..shape.streams {
            set.spawn(one(chat.clone(), template.clone(), backend.clone(), w as u32, round, anchor));
        }
        while let Some(r) = set.join_next().await {
            match r? {
                Some((ms_per_mb, r_us, len)) if round > 0 => {
                    per_mb.push(ms_per_mb);
                    render.push(r_us);
                    bytes += len;
                }
                Some(_) => {}
                None => errors += 1,
            }
        }
    }
    let (cpu, wall) = ((process_cpu() - cpu0).as_secs_f64(), wall0.elapsed().as_secs_f64());
    let srv1 = super::child::stats_at(&http, url).await?;
    let srv_cpu = srv1.cpu_ns.saturating_sub(srv0.cpu_ns) as f64 / 1e9;
    let (mb, requests) = (bytes as f64 / 1e6, per_mb.len() as u64);
    let per = |x: f64| if mb > 0.0 { x * 1e3 / mb } else { 0.0 };
    let (rss, hwm) = rss_kib().unwrap_or_default();
    Ok(LongFigures {
        shape,
        requests,
        body_bytes: bytes.checked_div(requests).unwrap_or(0),
        send_ms_per_mb: Spread::of(&mut per_mb),
        render_us: Spread::of(&mut render),
        mb_per_s: if wall > 0.0 { mb / wall } else { 0.0 },
        client_cpu_ms_per_mb: per(cpu),
        server_cpu_ms_per_mb: per(srv_cpu),
        rss_kib: rss,
        hwm_kib: hwm,
        idle_rss_kib,
        errors,
    })
}
