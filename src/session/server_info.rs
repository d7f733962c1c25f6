//! Capacity a replica states on a page of its own when its metrics do not (yet) show it:
//! SGLang's `GET /get_server_info` (docs/protocol.md §2.6).

use crate::load::backend::{Backend, Exchange};
use serde_json::Value;
use std::time::Duration;

/// Longest wait for the page.
const TIMEOUT: Duration = Duration::from_secs(10);

/// The replica's base URL from its metrics URL (`.../metrics` removed).
fn base_of(metrics_url: &str) -> &str {
    let t = metrics_url.trim_end_matches('/');
    t.strip_suffix("/metrics").unwrap_or(t)
}

/// The KV pool of an SGLang replica, tokens: `max_total_num_tokens` of `/get_server_info`,
/// else the sum of its data-parallel ranks' `internal_states[].memory_usage.token_capacity`.
pub(crate) fn sglang_kv_capacity_of(info: &Value) -> Option<u64> {
    if let Some(n) = info.get("max_total_num_tokens").and_then(Value::as_u64).filter(|n| *n > 0) {
        return Some(n);
    }
    let ranks = info.get("internal_states")?.as_array()?;
    let caps: Vec<u64> =
        ranks.iter().filter_map(|r| r.pointer("/memory_usage/token_capacity").and_then(Value::as_u64)).collect();
    (!caps.is_empty()).then(|| caps.iter().sum())
}

/// The server-info page of the replica whose metrics page is `metrics_url`.
pub(crate) fn info_url(metrics_url: &str) -> String {
    format!("{}/get_server_info", base_of(metrics_url))
}

/// An SGLang server-info page at `url`, asked with `headers` for at most `timeout`; None when
/// it is missing, fails or is not JSON.
pub(crate) async fn sglang_info(
    backend: &dyn Backend,
    url: &str,
    headers: &reqwest::header::HeaderMap,
    timeout: Duration,
) -> Option<Value> {
    let resp = backend.send(Exchange::get(url, headers).with_timeout(timeout)).await.ok()?;
    if !resp.status().is_success() {
        return None;
    }
    let body = resp.bytes(crate::load::limits::JSON_ANSWER_MAX).await.ok()?;
    serde_json::from_slice(&body).ok()
}

/// Reads an SGLang replica's KV pool from its server info; None when the page is missing or
/// does not say.
pub(crate) async fn sglang_kv_capacity(backend: &dyn Backend, metrics_url: &str) -> Option<u64> {
    let headers = reqwest::header::HeaderMap::new();
    sglang_kv_capacity_of(&sglang_info(backend, &info_url(metrics_url), &headers, TIMEOUT).await?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_pool_from_the_top_level_else_the_ranks() {
        assert_eq!(sglang_kv_capacity_of(&json!({"max_total_num_tokens": 350_000})), Some(350_000));
        let ranks = json!({"max_total_num_tokens": null, "internal_states": [
            {"memory_usage": {"token_capacity": 1000}}, {"memory_usage": {"token_capacity": 1500}}]});
        assert_eq!(sglang_kv_capacity_of(&ranks), Some(2500));
        assert_eq!(sglang_kv_capacity_of(&json!({"version": "0.5"})), None);
        assert_eq!(base_of("http://h:30000/metrics/"), "http://h:30000");
    }
}
