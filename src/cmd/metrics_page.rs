//! `run --metrics-listen ADDR` (docs/metrics.md): binds the live page before any load, names the
//! session on it, serves it for the whole process, and keeps serving for `--metrics-linger`
//! after the session so the last scrape sees the final counts.

use crate::config::RunConfig;
use crate::metrics::expose::serve;
use crate::metrics::expose::{Exposition, SessionLabels};
use crate::signal::Signals;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// A session id drawn for a session that was given none: 16 hex digits.
fn draw_session_id() -> String {
    format!("{:016x}", rand::random::<u64>())
}

/// The labels every series of `cfg`'s page carries.
fn labels(cfg: &RunConfig, session: String) -> SessionLabels {
    let plan: Vec<&str> = cfg.plans.iter().map(|p| p.as_str()).collect();
    SessionLabels {
        session,
        shard: cfg.shard.map_or(0, |s| s.index),
        shards: cfg.shard.map_or(1, |s| s.count),
        plan: plan.join("+"),
        version: crate::version::VERSION.to_string(),
    }
}

/// With `listen`: binds it (an error names the address), draws a session id when `cfg` has
/// none (and keeps it in `cfg`, so the report names the same one), starts serving and tells
/// where on stderr; `cfg` then carries the page every attempt registers with.
/// `id_given`: `--session-id` was given (else a shard's id was derived from its settings).
pub(crate) fn start(
    listen: Option<SocketAddr>,
    id_given: bool,
    cfg: &mut RunConfig,
) -> Result<Option<Arc<Exposition>>, String> {
    let Some(addr) = listen else { return Ok(None) };
    let listener = serve::bind(addr)?;
    let drawn = cfg.session_id.is_none();
    // A shard's id is set before this (shard_session): given with --session-id, or derived.
    let derived = !id_given;
    let session = cfg.session_id.get_or_insert_with(draw_session_id).clone();
    let expo = Arc::new(Exposition::new(labels(cfg, session.clone())));
    let bound = serve::spawn(listener, expo.clone()).map_err(|e| format!("--metrics-listen {addr}: {e}"))?;
    let origin = match (drawn, derived) {
        (true, _) => "drawn for this run",
        (false, true) => "derived from the settings and --start-at",
        (false, false) => "given",
    };
    crate::err_line!("metrics: http://{bound}/metrics (session {session}, {origin})");
    tracing::info!("metrics page at http://{bound}/metrics, session {session}");
    cfg.exposition = Some(expo.clone());
    Ok(Some(expo))
}

/// After the session: the page says so and stays up `linger` longer (a signal ends the wait).
pub(crate) async fn linger(expo: Option<&Exposition>, linger: Duration) {
    let Some(expo) = expo else { return };
    expo.finish();
    if linger.is_zero() {
        return;
    }
    crate::err_line!(
        "metrics: serving the final counts for {} more (--metrics-linger)",
        humantime::format_duration(linger)
    );
    // The session's signal listeners are gone; without new ones a signal would be ignored.
    match Signals::new() {
        Ok(mut signals) => {
            tokio::select! {
                _ = tokio::time::sleep(linger) => {}
                _ = signals.recv() => {}
            }
        }
        Err(_) => tokio::time::sleep(linger).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::shard::ShardSpec;

    #[test]
    fn labels_name_the_shard_and_the_plan() {
        let mut cfg = RunConfig::defaults("http://127.0.0.1:9");
        let whole = labels(&cfg, "s".into());
        assert_eq!((whole.shard, whole.shards, whole.plan.as_str()), (0, 1, "decode"));
        cfg.shard = Some(ShardSpec::new(2, 4).unwrap());
        cfg.plans = vec![crate::config::PlanKind::Serve, crate::config::PlanKind::Decode];
        let part = labels(&cfg, "s".into());
        assert_eq!((part.shard, part.shards, part.plan.as_str()), (2, 4, "serve+decode"));
        assert_eq!(draw_session_id().len(), 16);
    }
}
