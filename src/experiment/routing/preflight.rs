//! Routing preflight against the servers: which cache reset each replica has (one warning
//! naming what to set when none does, docs/protocol.md §8.7), and which policy a fixed-policy
//! router was started with, so the session's routes can be that one policy (§8.8).

use super::policy::{DEPLOYED, deployed_policy, fixed_policy};
use crate::config::RunConfig;
use crate::load::client::{ApiClient, redact_url};
use crate::load::wait::{INFO_TIMEOUT, TRANSPORT_MARGIN, Wait};
use crate::metrics::gateway::{CounterSeries, GatewayDialect, counter_series};

/// Cache-reset paths, vLLM's first, then SGLang's.
pub(crate) const RESET_PATHS: [&str; 2] = ["/reset_prefix_cache", "/flush_cache"];

/// Per replica, the first reset path that answers 2xx (None when neither does); each try
/// waits at most [`INFO_TIMEOUT`], named on stderr while it lasts.
pub(crate) async fn probe_resets(clients: &[ApiClient]) -> Vec<Option<&'static str>> {
    let mut out = Vec::with_capacity(clients.len());
    for c in clients {
        let mut found = None;
        for path in RESET_PATHS {
            let wait = Wait::new(format!("POST {} (prefix-cache reset probe)", redact_url(&c.url(path))), INFO_TIMEOUT);
            let bounded = c.with_timeout(INFO_TIMEOUT + TRANSPORT_MARGIN);
            if matches!(wait.run(bounded.post_empty(path)).await, Ok(Ok(_))) {
                found = Some(path);
                break;
            }
        }
        out.push(found);
    }
    out
}

/// The one warning for replicas without a cache reset (None when every replica has one).
pub(crate) fn reset_warning(names: &[String], paths: &[Option<&'static str>]) -> Option<String> {
    let missing: Vec<&str> = names.iter().zip(paths).filter(|(_, p)| p.is_none()).map(|(n, _)| n.as_str()).collect();
    if missing.is_empty() {
        return None;
    }
    Some(format!(
        "cannot reset the prefix cache of {}: start vLLM with VLLM_SERVER_DEV_MODE=1 (mounts POST \
         /reset_prefix_cache; SGLang serves POST /flush_cache); without a reset every phase uses \
         prefixes no earlier phase sent, and records cache_reset and its early hit ratio",
        missing.join(", ")
    ))
}

/// A gateway page's dialect and counter series (None when it cannot be read).
async fn read_gateway(client: &ApiClient, url: &str) -> Option<(GatewayDialect, Vec<CounterSeries>)> {
    let read = crate::metrics::page::read(&**client.backend(), url, INFO_TIMEOUT + TRANSPORT_MARGIN);
    let wait = Wait::new(format!("GET {} (the gateway's metrics)", redact_url(url)), INFO_TIMEOUT);
    let scrape = wait.run(read).await.ok()?.ok()?;
    Some((GatewayDialect::detect(&scrape), counter_series(&scrape)))
}

/// The policy of a fixed-policy router at `url` (its gateway metrics page); one 1-token
/// request through the router makes it show when its counters appear only once used. That
/// request waits at most the first-token timeout of a short prompt, named while it lasts.
pub(crate) async fn router_policy(client: &ApiClient, url: &str, model: &str, cfg: &RunConfig) -> Option<String> {
    let (dialect, series) = read_gateway(client, url).await?;
    if !fixed_policy(dialect) {
        return None;
    }
    if let Some(p) = deployed_policy(&series) {
        return Some(p);
    }
    let limit = cfg.first_token_limit(1);
    let what = format!("POST {} (router policy probe)", redact_url(&client.url(cfg.endpoint.path())));
    let bounded = client.with_timeout(limit + TRANSPORT_MARGIN);
    let _ = Wait::new(what, limit).run(bounded.probe_prompt_tokens(model, cfg.endpoint, "policy probe")).await;
    let (_, series) = read_gateway(client, url).await?;
    deployed_policy(&series).or_else(|| Some(DEPLOYED.to_string()))
}

/// The routes of the session: behind a fixed-policy router the single route named after its
/// policy (also what `deployed` means); elsewhere as asked, `deployed` kept by name. The
/// second value is the note for the log when the asked routes were replaced.
pub(crate) fn resolve_routes(asked: &[String], policy: Option<&str>) -> (Vec<String>, Option<String>) {
    let Some(policy) = policy else { return (asked.to_vec(), None) };
    if asked.len() == 1 && (asked[0] == DEPLOYED || asked[0] == policy) {
        return (vec![policy.to_string()], None);
    }
    let note = format!(
        "the gateway is a router with the fixed policy `{policy}` and ignores routing-strategy \
         (docs/protocol.md §8.8): routes {} replaced by the one route `{policy}`",
        asked.join(",")
    );
    (vec![policy.to_string()], Some(note))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_behind_a_fixed_policy_router_become_its_policy() {
        let asked: Vec<String> = ["random", "prefix-cache"].iter().map(|s| s.to_string()).collect();
        let (routes, note) = resolve_routes(&asked, Some("cache_aware"));
        assert_eq!(routes, ["cache_aware"]);
        assert!(note.is_some_and(|n| n.contains("random,prefix-cache")));
        assert_eq!(resolve_routes(&["deployed".into()], Some("random")), (vec!["random".into()], None));
        assert_eq!(resolve_routes(&asked, None).0, asked);
    }

    #[test]
    fn the_reset_warning_names_the_server_setting() {
        let names = vec!["a".to_string(), "b".to_string()];
        let w = reset_warning(&names, &[Some("/flush_cache"), None]).unwrap();
        assert!(w.contains("of b:") && w.contains("VLLM_SERVER_DEV_MODE=1") && w.contains("/flush_cache"));
        assert_eq!(reset_warning(&names, &[Some("/reset_prefix_cache"); 2]), None);
    }
}
