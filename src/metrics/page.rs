//! Reading one Prometheus page safely, for the poller, preflight and the routing setup: a size
//! cap ([`MAX_PAGE_BYTES`], counted decoded, so a gzip bomb stops there too), a line cap
//! ([`MAX_PAGE_LINES`], which bounds the parsed page's memory), a deadline on the whole read,
//! and a verdict on a page that answers but holds nothing to read ([`PageError::Unusable`]: HTML,
//! not Prometheus text, too large), which is not a lost target.

use std::time::Duration;

use reqwest::header::{CONTENT_TYPE, HeaderMap};

use super::prom::{PromError, Scrape};
use crate::load::backend::{Backend, Exchange};
use crate::load::limits::size_text;

/// Longest page read, bytes (decoded): a vLLM page with dozens of engines is under 1 MiB.
pub(crate) const MAX_PAGE_BYTES: usize = 4 << 20;
/// Most lines of a page that is parsed: about 100 MB of parsed samples at worst.
pub(crate) const MAX_PAGE_LINES: usize = 100_000;

/// Why a page read gave no scrape.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum PageError {
    /// No page: the request or its body failed, a non-success status, or the deadline passed.
    #[error("{0}")]
    Failed(String),
    /// A page answered but holds nothing to read as metrics (`not a metrics page (HTML)`, a
    /// page over the caps): the target is up, its figures are missing.
    #[error("{0}")]
    Unusable(String),
}

/// Fetches `url` within `timeout` (request to end of body) and parses it.
pub(crate) async fn read(backend: &dyn Backend, url: &str, timeout: Duration) -> Result<Scrape, PageError> {
    let (text, content_type) = match tokio::time::timeout(timeout, fetch(backend, url)).await {
        Ok(page) => page?,
        Err(_) => return Err(PageError::Failed(format!("timed out after {} ms", timeout.as_millis()))),
    };
    parse(&text, &content_type)
}

/// The page's text and content type.
async fn fetch(backend: &dyn Backend, url: &str) -> Result<(String, String), PageError> {
    let headers = HeaderMap::new();
    let resp = backend.send(Exchange::get(url, &headers)).await.map_err(|e| PageError::Failed(e.describe()))?;
    let status = resp.status();
    if let Some(why) = no_page(status, resp.headers()) {
        // What the server says about it, when it says it briefly (llama-server: "Start it with
        // `--metrics`").
        let said = resp.bytes(NO_PAGE_BODY_MAX).await.map(|b| crate::load::classify::error_message(&b));
        return Err(PageError::Unusable(match said.ok().filter(|m| !m.is_empty()) {
            Some(m) => format!("{why} ({})", crate::text_safe::line(&m)),
            None => why,
        }));
    }
    if !status.is_success() {
        return Err(PageError::Failed(format!("HTTP {status}")));
    }
    let ct = resp.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
    let body = resp.bytes(MAX_PAGE_BYTES).await.map_err(|e| match e.too_large() {
        Some(_) => PageError::Unusable(format!("a page over {} (read no further)", size_text(MAX_PAGE_BYTES))),
        None => PageError::Failed(e.describe()),
    })?;
    Ok((String::from_utf8_lossy(&body).into_owned(), ct))
}

/// Most bytes of a no-page answer's body read for its message.
const NO_PAGE_BODY_MAX: usize = 4 << 10;

/// Why an answer says there is no metrics page at the URL (the target is up): a redirect,
/// never followed, a client error such as 404 (not 408 or 429, which a retry may pass), or 501
/// (llama-server started without `--metrics`).
fn no_page(status: reqwest::StatusCode, headers: &HeaderMap) -> Option<String> {
    if status.is_redirection() {
        let to = headers.get(reqwest::header::LOCATION).and_then(|v| v.to_str().ok()).unwrap_or("?");
        return Some(format!(
            "no metrics page: HTTP {status}, a redirect to {}, not followed",
            crate::text_safe::line(to)
        ));
    }
    let retry = matches!(status.as_u16(), 408 | 429);
    let none = (status.is_client_error() && !retry) || status == reqwest::StatusCode::NOT_IMPLEMENTED;
    none.then(|| format!("no metrics page: HTTP {status}"))
}

/// Parses a page, or says why it is no metrics page.
pub(crate) fn parse(text: &str, content_type: &str) -> Result<Scrape, PageError> {
    if let Some(why) = not_metrics(text, content_type) {
        return Err(PageError::Unusable(format!("not a metrics page ({why})")));
    }
    let lines = memchr::memchr_iter(b'\n', text.as_bytes()).count();
    if lines > MAX_PAGE_LINES {
        return Err(PageError::Unusable(format!("a page of {lines} lines (over {MAX_PAGE_LINES}; not parsed)")));
    }
    Scrape::parse(text).map_err(|e| match e {
        PromError::NotExposition { first, .. } => {
            PageError::Unusable(format!("not a metrics page (not Prometheus text; it starts `{first}`)"))
        }
        e => PageError::Failed(format!("unparsable page: {e}")),
    })
}

/// Why the page is plainly something else: HTML by its content type or its first character.
fn not_metrics(text: &str, content_type: &str) -> Option<String> {
    let ct = content_type.trim().to_ascii_lowercase();
    if ct.starts_with("text/html") || ct.starts_with("application/xhtml") {
        return Some(format!("HTML; content-type {}", content_type.trim()));
    }
    let start = text.trim_start_matches(['\u{feff}', ' ', '\t', '\r', '\n']);
    start.starts_with('<').then(|| "HTML".to_string())
}

/// The verdict on a replica's page with no engine series (none named `vllm:`, `sglang:` or
/// `llamacpp:`): parsed, but of no use to the benchmark.
pub(crate) fn no_engine_series(scrape: &Scrape) -> PageError {
    let n = scrape.all().len();
    PageError::Unusable(format!("no engine series ({n} samples, none named vllm:*, sglang:* or llamacpp:*)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unusable(r: Result<Scrape, PageError>) -> String {
        match r {
            Err(PageError::Unusable(why)) => why,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn html_and_other_text_are_named_as_no_metrics_page() {
        let html = "<!DOCTYPE html><html><body>login</body></html>";
        assert_eq!(unusable(parse(html, "")), "not a metrics page (HTML)");
        let why = unusable(parse("up 1\n", "text/html; charset=utf-8"));
        assert_eq!(why, "not a metrics page (HTML; content-type text/html; charset=utf-8)");
        let json = unusable(parse("{\"status\": \"ok\"}", "application/json"));
        assert_eq!(json, "not a metrics page (not Prometheus text; it starts `{\"status\": \"ok\"}`)");
        assert!(parse("# TYPE up gauge\nup 1\n", "text/plain; version=0.0.4").is_ok());
    }

    #[test]
    fn a_page_of_too_many_lines_is_not_parsed() {
        let page = "a 1\n".repeat(MAX_PAGE_LINES + 1);
        assert!(unusable(parse(&page, "")).starts_with("a page of 100001 lines (over 100000"));
        assert!(parse(&"a 1\n".repeat(MAX_PAGE_LINES), "").is_ok());
    }

    #[test]
    fn a_page_without_engine_series_says_how_many_it_had() {
        let scrape = Scrape::parse("up 1\nother 2\n").unwrap();
        let why = no_engine_series(&scrape).to_string();
        assert_eq!(why, "no engine series (2 samples, none named vllm:*, sglang:* or llamacpp:*)");
    }
}
