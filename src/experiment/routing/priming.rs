//! Preparing a phase's caches: reset every replica's prefix cache, then (warm and hot
//! scenarios) prime candidate prefixes through the gateway and pick a balanced family map.

use super::attribution::resolve;
use super::env::RoutingEnv;
use super::family_map::{Owners, pick_any, pick_balanced};
use super::plan::PhaseSpec;
use super::report::Setup;
use crate::cell::context::CellEnv;
use crate::load::request::{BodyOptions, BodyTemplate};
use crate::load::sample::RequestSample;
use crate::load::stream::run_stream;
use crate::metrics::poller::MetricsSnapshot;
use std::collections::BTreeMap;
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Resets every replica's prefix cache: vLLM's `POST /reset_prefix_cache`, else SGLang's
/// `POST /flush_cache`. Returns per replica which one worked, or why none did.
pub async fn reset_caches(env: &CellEnv, r: &RoutingEnv) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for (rep, client) in r.replicas.iter().zip(&r.replica_clients) {
        let mut outcome = String::new();
        for path in ["/reset_prefix_cache", "/flush_cache"] {
            match client.post_empty(path).await {
                Ok(_) => {
                    outcome = path.trim_start_matches('/').to_string();
                    break;
                }
                Err(e) => outcome = format!("unsupported: {e}"),
            }
        }
        if outcome.starts_with("unsupported") {
            env.warn(format!(
                "cannot reset the prefix cache of {} (neither /reset_prefix_cache nor /flush_cache)",
                rep.name
            ));
        }
        out.insert(rep.name.clone(), outcome);
    }
    out
}

/// Finished requests per replica in a metrics round.
fn finished(snap: &MetricsSnapshot) -> BTreeMap<String, f64> {
    snap.replicas.iter().filter_map(|r| Some((r.name.clone(), r.sample.as_ref()?.requests_finished?))).collect()
}

/// The replica whose finished-request counter moved since `before` (waits briefly for the
/// engine's counters to catch up; None when no single replica moved).
async fn counter_owner(env: &CellEnv, before: &BTreeMap<String, f64>) -> Option<String> {
    for _ in 0..10 {
        let after = finished(&*env.metrics_now().await?);
        let moved: Vec<&String> =
            after.iter().filter(|(n, v)| **v > before.get(*n).copied().unwrap_or(0.0)).map(|(n, _)| n).collect();
        if moved.len() == 1 {
            return Some(moved[0].clone());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    None
}

/// Sends one priming request for candidate `c` under the phase's route; who served it.
async fn prime_one(
    env: &CellEnv,
    r: &RoutingEnv,
    route_headers: &reqwest::header::HeaderMap,
    c: usize,
    cancel: &CancellationToken,
) -> Option<String> {
    let before = match env.metrics() {
        Some(_) => env.metrics_now().await.map(|s| finished(&s)),
        None => None,
    };
    let opts =
        BodyOptions { endpoint: env.cfg.endpoint, model: env.facts.model.clone(), max_tokens: 1, ignore_eos: true };
    let body = BodyTemplate::new(&opts, &r.families.priming_prompt(c)).render("");
    let url = format!("{}{}", env.target.base, env.cfg.endpoint.path());
    let spec = crate::load::stream::StreamSpec {
        url: &url,
        headers: route_headers,
        served_by: &env.target.served_by,
        first_token_timeout: Some(env.cfg.idle_timeout),
        idle_timeout: env.cfg.idle_timeout,
        expected_chunks: 4,
    };
    let live = crate::load::live::LiveCounters::default();
    let sample =
        run_stream(&*env.target.backend, &spec, body, RequestSample::new(0, Instant::now()), cancel, &live).await;
    if let Some(v) = &sample.served_by {
        return Some(resolve(v, &r.replicas));
    }
    counter_owner(env, &before?).await
}

/// The priming retry loop: primes attempt after attempt (each on fresh candidates) until the
/// owners allow a balanced family map; after the last attempt, settles for the best pick.
pub async fn prime_until_balanced(
    names: &[String],
    families: usize,
    per_attempt: usize,
    max_attempts: u32,
    primer: &mut impl Primer,
) -> Setup {
    let mut owners = Owners::new();
    let attempts = max_attempts.max(1);
    for attempt in 1..=attempts {
        let base = (attempt as usize - 1) * per_attempt;
        owners = primer.round(attempt, base..base + per_attempt).await;
        if let Some(map) = pick_balanced(&owners, names, families) {
            return Setup { attempt, family_map: map, owners, balanced: true };
        }
    }
    let mut map = pick_any(&owners, families);
    let mut next = 0;
    while map.len() < families {
        if !map.contains(&next) {
            map.push(next);
        }
        next += 1;
    }
    map.sort_unstable();
    Setup { attempt: attempts, family_map: map, owners, balanced: false }
}

/// One priming attempt: sends candidates and reports who served each.
pub trait Primer {
    /// Primes `candidates` (attempt `attempt`, 1-based) and returns their owners.
    fn round(&mut self, attempt: u32, candidates: std::ops::Range<usize>) -> impl Future<Output = Owners> + Send;
}

/// Primes through the gateway under the phase's route.
struct GatewayPrimer<'a> {
    env: &'a CellEnv,
    r: &'a RoutingEnv,
    spec: &'a PhaseSpec,
    headers: &'a reqwest::header::HeaderMap,
    cancel: &'a CancellationToken,
}

impl Primer for GatewayPrimer<'_> {
    async fn round(&mut self, attempt: u32, candidates: std::ops::Range<usize>) -> Owners {
        if attempt > 1 {
            reset_caches(self.env, self.r).await;
            self.env.warn(format!(
                "{}: priming attempt {attempt} (the previous one left no balanced family map)",
                self.spec.name
            ));
        }
        let mut owners = Owners::new();
        for c in candidates {
            if self.cancel.is_cancelled() {
                break;
            }
            if let Some(who) = prime_one(self.env, self.r, self.headers, c, self.cancel).await {
                owners.entry(who).or_default().push(c);
            }
        }
        owners
    }
}

/// Primes candidates through the gateway until a balanced family map exists (or attempts run
/// out), resetting the caches before every retry.
pub async fn prime(
    env: &CellEnv,
    r: &RoutingEnv,
    spec: &PhaseSpec,
    headers: &reqwest::header::HeaderMap,
    cancel: &CancellationToken,
) -> Setup {
    let cfg = &r.cfg;
    let names: Vec<String> = r.replicas.iter().map(|x| x.name.clone()).collect();
    let mut primer = GatewayPrimer { env, r, spec, headers, cancel };
    let setup = prime_until_balanced(
        &names,
        cfg.families as usize,
        cfg.priming_candidates as usize,
        cfg.max_setup_attempts,
        &mut primer,
    )
    .await;
    if !setup.balanced {
        env.warn(format!("{}: no balanced family map after {} priming attempts", spec.name, setup.attempt));
    }
    setup
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Scripted owners per attempt; records the candidates it was asked to prime.
    struct Scripted<F: FnMut(u32, Vec<usize>) -> Owners + Send> {
        calls: Vec<(u32, std::ops::Range<usize>)>,
        owners: F,
    }

    impl<F: FnMut(u32, Vec<usize>) -> Owners + Send> Primer for Scripted<F> {
        async fn round(&mut self, attempt: u32, candidates: std::ops::Range<usize>) -> Owners {
            self.calls.push((attempt, candidates.clone()));
            (self.owners)(attempt, candidates.collect())
        }
    }

    fn owners(pairs: &[(&str, Vec<usize>)]) -> Owners {
        pairs.iter().map(|(n, c)| (n.to_string(), c.clone())).collect()
    }

    #[tokio::test]
    async fn retries_until_ownership_is_balanced() {
        let names = vec!["a".to_string(), "b".to_string()];
        let mut p = Scripted {
            calls: Vec::new(),
            owners: |attempt, c: Vec<usize>| match attempt {
                1 => owners(&[("a", c)]),
                _ => owners(&[
                    ("a", c.iter().copied().step_by(2).collect()),
                    ("b", c.iter().copied().skip(1).step_by(2).collect()),
                ]),
            },
        };
        let setup = prime_until_balanced(&names, 4, 6, 3, &mut p).await;
        assert_eq!(p.calls, vec![(1, 0..6), (2, 6..12)], "fresh candidates on the retry");
        assert!(setup.balanced);
        assert_eq!(setup.attempt, 2);
        assert_eq!(setup.family_map, vec![6, 7, 8, 9]);
    }

    #[tokio::test]
    async fn settles_for_the_best_pick_after_the_last_attempt() {
        let names = vec!["a".to_string(), "b".to_string()];
        let mut one_sided = Scripted { calls: Vec::new(), owners: |_, c: Vec<usize>| owners(&[("a", c)]) };
        let setup = prime_until_balanced(&names, 4, 4, 2, &mut one_sided).await;
        assert!(!setup.balanced);
        assert_eq!(setup.attempt, 2);
        assert_eq!(setup.family_map, vec![4, 5, 6, 7]);
        let mut nobody = Scripted { calls: Vec::new(), owners: |_, _| Owners::new() };
        let none = prime_until_balanced(&names, 3, 4, 1, &mut nobody).await;
        assert_eq!(none.family_map, vec![0, 1, 2], "nothing attributed: identity map");
    }
}
