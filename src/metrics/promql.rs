//! Reading engine replicas from a Prometheus server's HTTP API instead of their own pages.
//!
//! One instant query with a range selector (`{__name__=~"…", <selector>}[Ns]`) returns every
//! engine series the selector matches with the timestamps of the server's own scrapes. The
//! newest sample of each series, grouped by replica (`pod` label, else `instance`), makes a
//! synthetic page that [`EngineSample::from_scrape`](super::engine::EngineSample) reads as it
//! reads a scraped one (docs/protocol.md §0–§2): counters stay raw values, so the window and
//! delta code applies unchanged (resets included, §0.6), and each point carries the time the
//! server scraped it rather than the time we asked. Histograms are not read this way.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;

use super::prom::Scrape;
use super::types::{MetricType, Sample};
use crate::load::backend::{Backend, Exchange};
use crate::net::redact_url;

/// Engine series read from the server: the gauges and counters of docs/protocol.md §1.1,
/// §1.3, §2.1 and §2.2 (no histograms).
pub const ENGINE_METRICS: &[&str] = &[
    "vllm:num_requests_running",
    "vllm:num_requests_waiting",
    "vllm:num_requests_swapped",
    "vllm:kv_cache_usage_perc",
    "vllm:gpu_cache_usage_perc",
    "vllm:prefix_cache_queries_total",
    "vllm:prefix_cache_hits_total",
    "vllm:gpu_prefix_cache_queries_total",
    "vllm:gpu_prefix_cache_hits_total",
    "vllm:num_preemptions_total",
    "vllm:prompt_tokens_total",
    "vllm:generation_tokens_total",
    "vllm:request_success_total",
    "vllm:cache_config_info",
    "sglang:num_running_reqs",
    "sglang:num_queue_reqs",
    "sglang:token_usage",
    "sglang:max_total_num_tokens",
    "sglang:prompt_tokens_total",
    "sglang:generation_tokens_total",
    "sglang:cached_tokens_total",
    "sglang:num_requests_total",
    "sglang:num_aborted_requests_total",
    "sglang:num_retracted_requests_total",
    "sglang:num_retracted_reqs",
    "sglang:realtime_tokens_total",
    "sglang:page_size",
    "llamacpp:requests_processing",
    "llamacpp:requests_deferred",
    "llamacpp:prompt_tokens_total",
    "llamacpp:tokens_predicted_total",
    "llamacpp:n_tokens_max",
    "llamacpp:kv_cache_usage_ratio",
    "llamacpp:prompt_tokens_cached_total",
    "llamacpp:n_decode_total",
    "llamacpp:n_busy_slots_per_decode",
];

/// The running-batch gauge of each dialect: one series per engine, scraped every interval.
pub const RUNNING_METRICS: &[&str] =
    &["vllm:num_requests_running", "sglang:num_running_reqs", "llamacpp:requests_processing"];

/// Labels the server adds or that name the replica; they are dropped from the synthetic page.
const TARGET_LABELS: &[&str] = &["__name__", "job", "instance", "pod"];

/// Longest answer read, bytes.
const MAX_ANSWER_BYTES: usize = 64 << 20;

/// A Prometheus server and the selector that picks the replicas' series.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromServer {
    /// Base URL of the server, e.g. `http://prometheus:9090` (no trailing slash).
    pub url: String,
    /// Label matchers without braces, e.g. `job="vllm"`; empty matches every engine series.
    pub selector: String,
}

/// One series of a range query: its labels and its samples `(unix seconds, value)`, oldest first.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Every label, `__name__` included.
    pub labels: BTreeMap<String, String>,
    /// Samples, oldest first.
    pub values: Vec<(f64, f64)>,
}

/// The newest reading of one replica: its series' last samples as a page.
#[derive(Debug, Clone)]
pub struct ReplicaRead {
    /// `pod` label, else `instance`.
    pub name: String,
    /// The `instance` label (the scraped address).
    pub instance: String,
    /// Newest sample time among its series, unix seconds (when the server scraped it).
    pub at_unix: f64,
    /// The last sample of every series, as a page.
    pub scrape: Scrape,
}

impl PromServer {
    /// A server from `--prometheus URL` and `--replica-selector`; a selector in braces is
    /// accepted and unwrapped.
    pub fn new(url: &str, selector: &str) -> Result<PromServer, String> {
        crate::net::check_url(url.trim()).map_err(|e| format!("--prometheus: {e}"))?;
        let sel = check_selector("--replica-selector", selector)?;
        Ok(PromServer { url: url.trim().trim_end_matches('/').to_string(), selector: sel })
    }

    /// `{__name__=~"a|b",<selector>}[Ns]`.
    pub fn range_selector(&self, names: &[&str], range_s: u64) -> String {
        let sel = if self.selector.is_empty() { String::new() } else { format!(",{}", self.selector) };
        format!("{{__name__=~\"{}\"{sel}}}[{}s]", names.join("|"), range_s.max(1))
    }

    /// Every series of `names` the selector matches, with their samples of the last `range_s`.
    pub async fn range_query(
        &self,
        backend: &dyn Backend,
        names: &[&str],
        range_s: u64,
        timeout: Duration,
    ) -> Result<Vec<Series>, String> {
        let query = self.range_selector(names, range_s);
        let url = reqwest::Url::parse_with_params(&format!("{}/api/v1/query", self.url), [("query", query.as_str())])
            .map_err(|e| format!("bad URL: {e}"))?;
        let body = get_json(backend, url.as_str(), timeout).await?;
        parse_matrix(&body)
    }

    /// The `scrape_interval` of the server's configuration (`/api/v1/status/config`): the
    /// first one written, the global default unless the file sets none. Seconds.
    pub async fn configured_interval(&self, backend: &dyn Backend, timeout: Duration) -> Option<f64> {
        let body = get_json(backend, &format!("{}/api/v1/status/config", self.url), timeout).await.ok()?;
        let yaml = body.pointer("/data/yaml")?.as_str()?;
        let line = yaml.lines().find_map(|l| l.trim().strip_prefix("scrape_interval:"))?;
        parse_prom_duration(line.trim())
    }
}

pub(crate) async fn get_json(backend: &dyn Backend, url: &str, timeout: Duration) -> Result<Value, String> {
    let headers = reqwest::header::HeaderMap::new();
    let read = async {
        let mut resp = backend.send(Exchange::get(url, &headers)).await.map_err(|e| e.describe())?;
        let status = resp.status();
        let mut body = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(|e| e.describe())? {
            if body.len() + chunk.len() > MAX_ANSWER_BYTES {
                return Err(format!("answer larger than {MAX_ANSWER_BYTES} bytes"));
            }
            body.extend_from_slice(&chunk);
        }
        let json: Result<Value, _> = serde_json::from_slice(&body);
        match (status.is_success(), json) {
            (_, Ok(v)) if v["status"] == "error" => {
                Err(format!("HTTP {status}: {}", v["error"].as_str().unwrap_or("error")))
            }
            (true, Ok(v)) => Ok(v),
            (true, Err(_)) => Err(format!("HTTP {status}: not a Prometheus API answer")),
            (false, _) => Err(format!("HTTP {status}")),
        }
    };
    let out = match tokio::time::timeout(timeout, read).await {
        Ok(r) => r,
        Err(_) => Err(format!("timed out after {} ms", timeout.as_millis())),
    };
    out.map_err(|e| e.replace(url, &redact_url(url)).chars().map(|c| if c.is_control() { ' ' } else { c }).collect())
}

/// The series of an API answer whose `resultType` is `matrix`.
pub fn parse_matrix(body: &Value) -> Result<Vec<Series>, String> {
    let data = &body["data"];
    if data["resultType"] != "matrix" {
        return Err(format!("expected a matrix result, got {}", data["resultType"]));
    }
    let result = data["result"].as_array().ok_or("answer without `data.result`")?;
    let series = result.iter().map(|s| {
        let labels = s["metric"].as_object().into_iter().flatten();
        let labels = labels.filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string()))).collect();
        let values = s["values"].as_array().into_iter().flatten();
        let values = values.filter_map(|p| Some((p.get(0)?.as_f64()?, parse_value(p.get(1)?.as_str()?)?))).collect();
        Series { labels, values }
    });
    Ok(series.collect())
}

/// A sample value as the API writes it (`"12"`, `"1e+09"`, `"NaN"`, `"+Inf"`, `"-Inf"`).
pub fn parse_value(s: &str) -> Option<f64> {
    match s {
        "NaN" => Some(f64::NAN),
        "+Inf" | "Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        _ => s.parse().ok(),
    }
}

/// A Prometheus duration (`15s`, `1m`, `1m30s`, `500ms`), seconds.
pub fn parse_prom_duration(s: &str) -> Option<f64> {
    let s = s.trim().trim_matches(['"', '\'']);
    humantime::parse_duration(s).ok().map(|d| d.as_secs_f64()).filter(|d| *d > 0.0)
}

/// The replica a series belongs to: its `pod` label, else its `instance`.
pub fn replica_name(labels: &BTreeMap<String, String>) -> Option<&str> {
    labels.get("pod").or_else(|| labels.get("instance")).map(String::as_str)
}

/// The newest reading of every replica in `series`, by name.
pub fn group(series: &[Series]) -> Vec<ReplicaRead> {
    let mut by: BTreeMap<String, (String, f64, Vec<Sample>)> = BTreeMap::new();
    for s in series {
        let (Some(name), Some(&(ts, value))) = (replica_name(&s.labels), s.values.last()) else { continue };
        let Some(metric) = s.labels.get("__name__") else { continue };
        let instance = s.labels.get("instance").cloned().unwrap_or_default();
        let entry = by.entry(name.to_string()).or_insert_with(|| (instance, ts, Vec::new()));
        entry.1 = entry.1.max(ts);
        let labels = s.labels.iter().filter(|(k, _)| !TARGET_LABELS.contains(&k.as_str()));
        let labels = labels.map(|(k, v)| (k.clone(), v.clone())).collect();
        entry.2.push(Sample { name: metric.clone(), labels, value });
    }
    let read = |(name, (instance, at_unix, samples)): (String, (String, f64, Vec<Sample>))| {
        let types = samples.iter().map(|s| (s.name.clone(), metric_type(&s.name))).collect();
        ReplicaRead { name, instance, at_unix, scrape: Scrape::from_parts(samples, types) }
    };
    by.into_iter().map(read).collect()
}

/// The family type a scraped page declares for `name` (docs/protocol.md §0.1): `_total` names
/// are counters, the rest of [`ENGINE_METRICS`] gauges.
fn metric_type(name: &str) -> MetricType {
    if name.ends_with("_total") { MetricType::Counter } else { MetricType::Gauge }
}

/// The median time between consecutive samples of a series, seconds: the server's scrape
/// interval for those targets. `None` without two samples in any series.
pub fn median_spacing(series: &[Series]) -> Option<f64> {
    let mut gaps: Vec<f64> =
        series.iter().flat_map(|s| s.values.windows(2).map(|w| w[1].0 - w[0].0)).filter(|g| *g > 0.0).collect();
    if gaps.is_empty() {
        return None;
    }
    gaps.sort_by(f64::total_cmp);
    Some(gaps[gaps.len() / 2])
}

#[cfg(test)]
#[path = "tests_promql.rs"]
mod tests;

/// The label matchers of `selector` (given to `flag`) without braces, or a one-line error.
/// A selector in braces is accepted and unwrapped; every matcher is `label="value"` with `=`,
/// `!=`, `=~` or `!~`.
pub fn check_selector(flag: &str, selector: &str) -> Result<String, String> {
    let sel = selector.trim();
    let sel = sel.strip_prefix('{').and_then(|s| s.strip_suffix('}')).unwrap_or(sel).trim();
    if sel.contains(['{', '}']) {
        return Err(format!("{flag} `{selector}`: give label matchers only, e.g. job=\"vllm\""));
    }
    if let Some(bad) = split_matchers(sel).into_iter().find(|m| !is_matcher(m)) {
        return Err(format!(
            "{flag} `{selector}`: `{bad}` is not a label matcher; write label=\"value\" (the value quoted, e.g. job=\"vllm\"), with =, !=, =~ or !~"
        ));
    }
    Ok(sel.to_string())
}

/// The comma-separated matchers of a selector, commas inside quoted values kept.
fn split_matchers(sel: &str) -> Vec<&str> {
    let (mut out, mut start, mut quote) = (Vec::new(), 0, None::<char>);
    for (i, c) in sel.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (None, '"' | '\'' | '`') => quote = Some(c),
            (None, ',') => {
                out.push(sel[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(sel[start..].trim());
    out.into_iter().filter(|m| !m.is_empty()).collect()
}

/// True for one PromQL label matcher: a label name, `=`, `!=`, `=~` or `!~`, a quoted value.
fn is_matcher(m: &str) -> bool {
    let name_end = m.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(m.len());
    let (name, rest) = m.split_at(name_end);
    let rest = rest.trim_start();
    let op = ["=~", "!~", "!=", "="].into_iter().find(|op| rest.starts_with(op));
    let (Some(op), false) = (op, name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit())) else {
        return false;
    };
    let value = rest[op.len()..].trim();
    let q = value.chars().next();
    value.len() >= 2 && matches!(q, Some('"' | '\'' | '`')) && value.ends_with(q.unwrap_or('"'))
}

#[cfg(test)]
mod selector_tests {
    use super::*;

    #[test]
    fn selectors_are_label_matchers_with_quoted_values() {
        let ok = |s: &str| PromServer::new("http://127.0.0.1:9090", s).map(|p| p.selector);
        assert_eq!(ok(r#"job="vllm""#).as_deref(), Ok(r#"job="vllm""#));
        assert!(ok(r#"{job="vllm", pod=~"a,b.*"}"#).is_ok(), "commas inside values");
        assert!(ok(r#"namespace!="x",job!~'t.*'"#).is_ok());
        assert!(ok("").is_ok(), "empty: every engine series");
        for bad in ["job=vllm", "job", r#"="vllm""#, r#"job=="vllm""#, r#"job="vllm"#] {
            let e = ok(bad).expect_err(bad);
            assert!(e.contains("not a label matcher") && e.contains(r#"job="vllm""#), "{bad}: {e}");
        }
    }
}
