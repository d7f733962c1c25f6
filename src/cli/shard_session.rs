//! The session-wide settings of a sharded run, completed once the configuration is built:
//! the session id and the seed every shard derives alike, and the plans not sharded yet.

use super::shard_flags::{derived_seed, derived_session_id};
use crate::config::{PlanKind, RunConfig};

/// `cfg` with its sharded-session settings completed: without `--session-id`, the id derived
/// from the settings; without `--seed` (`seed_given` false), the seed derived from the id, so
/// every shard draws the same schedules. Unsharded configurations pass unchanged.
pub(crate) fn finish(mut cfg: RunConfig, seed_given: bool) -> Result<RunConfig, String> {
    if cfg.routing.priming_slot.is_some() && (cfg.shard.is_none() || !cfg.plans.contains(&PlanKind::Routing)) {
        return Err(
            "--priming-slot is for sharded routing: give it with --plan routing and --shard i/N or --shards N".into()
        );
    }
    if cfg.shard.is_none() {
        return match cfg.start_at {
            Some(_) => {
                Err("--start-at aligns the shards of a session: give --shard i/N (0/1 for one process) or --shards N"
                    .into())
            }
            None => Ok(cfg),
        };
    }
    if cfg.plans.contains(&PlanKind::Routing) {
        sharded_routing(&cfg)?;
    }
    not_sliceable(&cfg)?;
    let id = cfg.session_id.clone().unwrap_or_else(|| derived_session_id(&cfg.settings(), cfg.start_at));
    if !seed_given {
        let seed = derived_seed(&id);
        (cfg.routing.seed, cfg.serve.seed) = (seed, seed);
    }
    cfg.session_id = Some(id);
    Ok(cfg)
}

/// Refuses the sharded plans no shard can run its part of alone: an SLO search picks each
/// probe's load from the probes before (every shard would need all shards' results), and a
/// burst is its requests sent at one instant, which shards keep only on the `--start-at`
/// timeline with a slot `--request-timeout` bounds.
fn not_sliceable(cfg: &RunConfig) -> Result<(), String> {
    if cfg.slo_search.is_some() {
        return Err("--slo-search cannot be sharded: each probe's load follows from every shard's results of the probes before; run the search in one process".into());
    }
    if cfg.decode.run_burst && (cfg.start_at.is_none() || cfg.request_timeout.is_none()) {
        return Err("--run-burst sharded needs --start-at and --request-timeout: a burst's requests leave every shard at its slot's instant".into());
    }
    Ok(())
}

/// What sharded routing needs (src/experiment/routing/shard_phase.rs): every phase's slot on
/// the timeline, so `--start-at` and no plan whose cells have no slot; no conversation
/// scenario (its turns build on the replies of one process's earlier turns).
fn sharded_routing(cfg: &RunConfig) -> Result<(), String> {
    if cfg.start_at.is_none() {
        return Err("sharded --plan routing needs --start-at: every shard starts a phase's measured part at the same instant, after shard 0's priming".into());
    }
    if let Some(p) = cfg.plans.iter().find(|p| matches!(p, PlanKind::Serve | PlanKind::Conversation)) {
        return Err(format!(
            "sharded --plan routing cannot run beside --plan {} in one sharded session yet (untried together on one timeline); shard them in separate sessions",
            p.as_str()
        ));
    }
    if cfg.routing.scenarios.iter().any(|s| s.conversation) {
        return Err("the routing scenario `conversation` cannot be sharded yet (a turn holds the replies of its conversation's earlier turns, sent by other shards); shard the other scenarios".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::shard::ShardSpec;

    fn sharded(index: u32) -> RunConfig {
        let mut cfg = crate::cli::run::tests_support::config();
        cfg.shard = Some(ShardSpec::new(index, 2).unwrap());
        cfg.plans = vec![PlanKind::Serve];
        cfg
    }

    #[test]
    fn every_shard_derives_the_same_id_and_seed_and_unsharded_runs_are_untouched() {
        let mut a = sharded(0);
        a.routing.seed = 11;
        let mut b = sharded(1);
        b.serve.seed = 99;
        let (a, b) = (finish(a, false).unwrap(), finish(b, false).unwrap());
        assert_eq!(a.session_id, b.session_id);
        assert_eq!((a.serve.seed, a.routing.seed), (b.serve.seed, b.serve.seed));
        let given = finish(
            RunConfig { serve: crate::config::serve::ServeConfig { seed: 7, ..a.serve.clone() }, ..sharded(0) },
            true,
        );
        assert_eq!(given.unwrap().serve.seed, 7, "--seed wins");
        let plain = finish(crate::cli::run::tests_support::config(), false).unwrap();
        assert_eq!(plain.session_id, None);
    }

    #[test]
    fn sharded_routing_needs_start_at_no_slotless_plan_and_no_conversation_scenario() {
        let mut cfg = sharded(0);
        cfg.plans = vec![PlanKind::Decode, PlanKind::Routing];
        assert!(finish(cfg.clone(), true).unwrap_err().contains("needs --start-at"));
        cfg.start_at = Some(std::time::SystemTime::now());
        let ok = finish(cfg.clone(), true).unwrap();
        assert!(ok.session_id.is_some(), "decode and routing shard");
        cfg.plans.push(PlanKind::Serve);
        assert!(finish(cfg.clone(), true).unwrap_err().contains("beside --plan serve"));
        cfg.plans.pop();
        cfg.routing.scenarios.push("conversation".parse().unwrap());
        assert!(finish(cfg.clone(), true).unwrap_err().contains("`conversation` cannot be sharded"));
        cfg.routing.scenarios.pop();
        cfg.routing.priming_slot = Some(std::time::Duration::from_secs(5));
        assert!(finish(cfg.clone(), true).is_ok());
        cfg.shard = None;
        assert!(finish(cfg, true).unwrap_err().contains("--priming-slot is for sharded routing"));
    }

    #[test]
    fn a_sharded_burst_needs_the_timeline_and_a_request_timeout() {
        let mut cfg = sharded(0);
        (cfg.plans, cfg.decode.run_burst) = (vec![PlanKind::Decode], true);
        let no_timeline = finish(cfg.clone(), true).unwrap_err();
        assert!(no_timeline.contains("--run-burst sharded needs --start-at and --request-timeout"), "{no_timeline}");
        cfg.start_at = Some(std::time::SystemTime::now());
        assert!(finish(cfg.clone(), true).is_err(), "--start-at alone is not enough");
        cfg.request_timeout = Some(std::time::Duration::from_secs(30));
        assert!(finish(cfg.clone(), true).is_ok());
        cfg.shard = None;
        cfg.start_at = None;
        assert!(finish(cfg, true).is_ok(), "unsharded bursts are as before");
    }
}
