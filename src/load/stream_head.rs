//! A streamed request's answer before its body: sending it (re-sent when it provably never
//! left), waiting for the response head within the first-token timeout, and what the head says.

use super::StreamSpec;
use super::deadline::FirstTokenClock;
use crate::load::backend::{Backend, BackendResponse};
use crate::load::classify::send_failure;
use crate::load::live::LiveCounters;
use crate::load::sample::Outcome;
use bytes::Bytes;
use reqwest::header::{CONTENT_ENCODING, CONTENT_TYPE, HeaderMap, HeaderName};
use std::sync::atomic::AtomicU32;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// What the headers of a success answer say against it being an event stream: another
/// content type (HTML, JSON) or a content encoding the client did not decode. None when they
/// say nothing (a missing content type is accepted).
pub(super) fn event_stream_doubt(headers: &HeaderMap) -> Option<String> {
    let text = |name| headers.get(name).and_then(|v: &reqwest::header::HeaderValue| v.to_str().ok()).map(str::trim);
    if let Some(enc) = text(CONTENT_ENCODING).filter(|e| !e.is_empty() && !e.eq_ignore_ascii_case("identity")) {
        return Some(format!("content-encoding {enc}"));
    }
    let ct = text(CONTENT_TYPE).filter(|c| !c.is_empty())?;
    (!ct.to_ascii_lowercase().starts_with("text/event-stream")).then(|| format!("content-type {ct}"))
}

pub(super) fn served_by(headers: &HeaderMap, names: &[HeaderName]) -> Option<String> {
    names.iter().find_map(|n| headers.get(n)).and_then(|v| v.to_str().ok()).map(str::to_string)
}

/// Sends the request and waits for the response head, within the first-token timeout: a
/// server that never answers fails as one that answers and then sends nothing. A send that
/// provably never reached the server is sent again, counted in `reconnects` (`resend`).
pub(super) async fn await_head(
    backend: &dyn Backend,
    spec: &StreamSpec<'_>,
    body: Bytes,
    cancel: &CancellationToken,
    live: &LiveCounters,
    clock: &mut FirstTokenClock,
    reconnects: &AtomicU32,
) -> Result<BackendResponse, Outcome> {
    let send = crate::load::resend::send_stream(backend, spec.url, spec.headers, body, reconnects);
    tokio::pin!(send);
    let mut armed = clock.first(spec);
    let timer = tokio::time::sleep_until(armed.unwrap_or_else(Instant::now));
    tokio::pin!(timer);
    loop {
        tokio::select! {
            biased;
            _ = cancel.cancelled() => return Err(Outcome::Cut),
            r = &mut send => return r.map_err(|e| send_failure(&e)),
            _ = &mut timer, if armed.is_some() => {
                armed = clock.check(spec, live, Instant::now())?;
                if let Some(d) = armed {
                    timer.as_mut().reset(d);
                }
            }
        }
    }
}
