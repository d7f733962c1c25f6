//! Preparing a phase's caches: reset every replica's prefix cache (where preflight found a
//! reset), then (warm and hot scenarios) prime candidate prefixes of the phase's own prefix
//! set through the gateway and pick a balanced family map. The first attempt sends the
//! candidates one after another; later attempts spread them with ballast streams
//! ([`super::spread`]), which a least-loaded router needs (docs/protocol.md §8.10).

use super::attribution::resolve;
use super::env::RoutingEnv;
use super::family_map::{Owners, Progress, candidates_per_attempt, pick_any, pick_balanced, progress};
use super::plan::PhaseSpec;
use super::report::Setup;
use super::spread::Ballast;
use crate::cell::context::CellEnv;
use crate::load::request::{BodyOptions, BodyTemplate};
use crate::load::sample::RequestSample;
use crate::load::stream::run_stream;
use crate::metrics::poller::MetricsSnapshot;
use std::collections::BTreeMap;
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Resets every replica's prefix cache with the path preflight found (vLLM's
/// `reset_prefix_cache` or SGLang's `flush_cache`). Returns per replica the path used,
/// `unsupported` (preflight found none; its one warning said what to set), or `failed: ...`.
pub(crate) async fn reset_caches(env: &CellEnv, r: &RoutingEnv) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for (i, (rep, client)) in r.replicas.iter().zip(&r.replica_clients).enumerate() {
        let outcome = match r.reset_paths.get(i).copied().flatten() {
            Some(path) => match client.post_empty(path).await {
                Ok(_) => path.trim_start_matches('/').to_string(),
                Err(e) => {
                    env.warn(format!("resetting the prefix cache of {} failed: {e}", rep.name));
                    format!("failed: {e}")
                }
            },
            None => "unsupported".to_string(),
        };
        out.insert(rep.name.clone(), outcome);
    }
    out
}

/// True when every replica's cache was reset (and there was at least one replica).
pub(crate) fn all_reset(outcomes: &BTreeMap<String, String>) -> bool {
    !outcomes.is_empty() && outcomes.values().all(|o| super::preflight::RESET_PATHS.contains(&format!("/{o}").as_str()))
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

/// Sends one priming request for candidate `c` of prefix set `salt` under the phase's
/// route, with `ballasts` ballast streams held open meanwhile; who served it.
async fn prime_one(
    env: &CellEnv,
    r: &RoutingEnv,
    route_headers: &reqwest::header::HeaderMap,
    (c, salt, ballasts): (usize, &str, usize),
    cancel: &CancellationToken,
) -> Option<String> {
    let ballast = match ballasts {
        0 => None,
        n => Some(Ballast::hold(env, route_headers, n, &format!("{salt}/{c}"), env.cfg.idle_timeout).await),
    };
    let who = prime_attributed(env, r, route_headers, (c, salt), cancel).await;
    if let Some(b) = ballast {
        b.release().await;
    }
    who
}

async fn prime_attributed(
    env: &CellEnv,
    r: &RoutingEnv,
    route_headers: &reqwest::header::HeaderMap,
    (c, salt): (usize, &str),
    cancel: &CancellationToken,
) -> Option<String> {
    let before = match env.metrics() {
        Some(_) => env.metrics_now().await.map(|s| finished(&s)),
        None => None,
    };
    let opts =
        BodyOptions { endpoint: env.cfg.endpoint, model: env.facts.model.clone(), max_tokens: 1, ignore_eos: true };
    let body = BodyTemplate::new(&opts, &r.families.priming_prompt(c, salt)).render("");
    let url = format!("{}{}", env.target.base, env.cfg.endpoint.path());
    let spec = crate::load::stream::StreamSpec {
        url: &url,
        headers: route_headers,
        served_by: &env.target.served_by,
        first_token_timeout: Some(env.cfg.idle_timeout),
        queued_waits: false,
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
/// owners allow a balanced family map; after the last attempt, settles for the best pick. An
/// attempt ends early once balanced, or (unspread) once every candidate piled on one replica.
pub(crate) async fn prime_until_balanced(
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
        let check = |o: &Owners, sent: usize| progress(o, names, families, sent, attempt > 1);
        owners = primer.round(attempt, base..base + per_attempt, &check).await;
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

/// How an attempt is going after some candidates: owners so far and candidates sent.
pub(crate) type Check<'a> = dyn Fn(&Owners, usize) -> Progress + Send + Sync + 'a;

/// One priming attempt: sends candidates and reports who served each.
pub(crate) trait Primer {
    /// Primes `candidates` (attempt `attempt`, 1-based) one after another, asking `check`
    /// after each and stopping unless it says [`Progress::Continue`]; returns their owners.
    fn round(
        &mut self,
        attempt: u32,
        candidates: std::ops::Range<usize>,
        check: &Check<'_>,
    ) -> impl Future<Output = Owners> + Send;
}

/// Primes through the gateway under the phase's route.
struct GatewayPrimer<'a> {
    env: &'a CellEnv,
    r: &'a RoutingEnv,
    spec: &'a PhaseSpec,
    headers: &'a reqwest::header::HeaderMap,
    cancel: &'a CancellationToken,
    /// The phase's prefix set.
    salt: String,
}

impl Primer for GatewayPrimer<'_> {
    async fn round(&mut self, attempt: u32, candidates: std::ops::Range<usize>, check: &Check<'_>) -> Owners {
        if attempt > 1 {
            reset_caches(self.env, self.r).await;
            self.env.warn(format!(
                "{}: priming attempt {attempt}, spread with ballast streams (the previous one left no balanced family map)",
                self.spec.name
            ));
        }
        let mut owners = Owners::new();
        let spread = if attempt > 1 { self.r.replicas.len().max(1) } else { 1 };
        for (k, c) in candidates.enumerate() {
            if self.cancel.is_cancelled() {
                break;
            }
            let key = (c, self.salt.as_str(), k % spread);
            if let Some(who) = prime_one(self.env, self.r, self.headers, key, self.cancel).await {
                owners.entry(who).or_default().push(c);
            }
            if check(&owners, k + 1) != Progress::Continue {
                break;
            }
        }
        owners
    }
}

/// Primes `candidates` through the gateway once, one after another, all of them (a sharded
/// session's fixed priming, `super::shard_phase`); who served each.
pub(crate) async fn prime_candidates(
    env: &CellEnv,
    r: &RoutingEnv,
    spec: &PhaseSpec,
    headers: &reqwest::header::HeaderMap,
    cancel: &CancellationToken,
    candidates: std::ops::Range<usize>,
) -> Owners {
    let mut primer = GatewayPrimer { env, r, spec, headers, cancel, salt: r.prefix_set(&spec.name) };
    primer.round(1, candidates, &|_, _| Progress::Continue).await
}

/// Primes candidates through the gateway until a balanced family map exists (or attempts run
/// out), resetting the caches before every retry.
pub(crate) async fn prime(
    env: &CellEnv,
    r: &RoutingEnv,
    spec: &PhaseSpec,
    headers: &reqwest::header::HeaderMap,
    cancel: &CancellationToken,
) -> Setup {
    let cfg = &r.cfg;
    let names: Vec<String> = r.replicas.iter().map(|x| x.name.clone()).collect();
    let mut primer = GatewayPrimer { env, r, spec, headers, cancel, salt: r.prefix_set(&spec.name) };
    let per_attempt = candidates_per_attempt(cfg.priming_candidates as usize, cfg.families as usize, names.len());
    let setup =
        prime_until_balanced(&names, cfg.families as usize, per_attempt, cfg.max_setup_attempts, &mut primer).await;
    if !setup.balanced {
        let owned: Vec<String> = setup.owners.iter().map(|(n, c)| format!("{n} {}", c.len())).collect();
        env.warn(format!(
            "{}: no balanced family map after {} priming attempts (candidates owned: {}); the phase runs \
             with the measured ownership in config.initial_owners",
            spec.name,
            setup.attempt,
            if owned.is_empty() { "none attributed".to_string() } else { owned.join(", ") }
        ));
    }
    setup
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Scripted owner of each candidate per attempt; records the candidates it was asked to
    /// prime and how many it sent.
    struct Scripted<F: FnMut(u32, usize) -> Option<String> + Send> {
        calls: Vec<(u32, std::ops::Range<usize>, usize)>,
        owner: F,
    }

    impl<F: FnMut(u32, usize) -> Option<String> + Send> Primer for Scripted<F> {
        async fn round(&mut self, attempt: u32, candidates: std::ops::Range<usize>, check: &Check<'_>) -> Owners {
            let mut owners = Owners::new();
            let mut sent = 0;
            for c in candidates.clone() {
                sent += 1;
                if let Some(who) = (self.owner)(attempt, c) {
                    owners.entry(who).or_default().push(c);
                }
                if check(&owners, sent) != Progress::Continue {
                    break;
                }
            }
            self.calls.push((attempt, candidates, sent));
            owners
        }
    }

    fn ab(c: usize) -> Option<String> {
        Some(if c.is_multiple_of(2) { "a" } else { "b" }.to_string())
    }

    #[tokio::test]
    async fn retries_until_ownership_is_balanced() {
        let names = vec!["a".to_string(), "b".to_string()];
        let mut p = Scripted {
            calls: Vec::new(),
            owner: |attempt, c| if attempt == 1 { Some("a".to_string()) } else { ab(c) },
        };
        let setup = prime_until_balanced(&names, 4, 6, 3, &mut p).await;
        assert_eq!(p.calls, vec![(1, 0..6, 6), (2, 6..12, 4)], "fresh candidates on the retry, stopped once balanced");
        assert!(setup.balanced);
        assert_eq!(setup.attempt, 2);
        assert_eq!(setup.family_map, vec![6, 7, 8, 9]);
    }

    #[tokio::test]
    async fn a_pile_on_one_replica_ends_the_unspread_attempt_early() {
        let names: Vec<String> = (0..16).map(crate::sim::replica_name).collect();
        let mut p = Scripted {
            calls: Vec::new(),
            owner: |attempt, c| Some(if attempt == 1 { "sim-a".to_string() } else { crate::sim::replica_name(c % 16) }),
        };
        let setup = prime_until_balanced(&names, 32, 200, 3, &mut p).await;
        assert_eq!(p.calls, vec![(1, 0..200, 32), (2, 200..400, 32)]);
        assert!(setup.balanced && setup.attempt == 2);
        assert_eq!(setup.family_map, (200..232).collect::<Vec<_>>());
    }

    #[tokio::test]
    async fn settles_for_the_best_pick_after_the_last_attempt() {
        let names = vec!["a".to_string(), "b".to_string()];
        let mut one_sided = Scripted { calls: Vec::new(), owner: |_, _| Some("a".to_string()) };
        let setup = prime_until_balanced(&names, 4, 4, 2, &mut one_sided).await;
        assert!(!setup.balanced);
        assert_eq!(setup.attempt, 2);
        assert_eq!(setup.family_map, vec![4, 5, 6, 7]);
        let mut nobody = Scripted { calls: Vec::new(), owner: |_, _| None };
        let none = prime_until_balanced(&names, 3, 4, 1, &mut nobody).await;
        assert_eq!(none.family_map, vec![0, 1, 2], "nothing attributed: identity map");
    }
}
