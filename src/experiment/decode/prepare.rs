//! Decode's preparation: the context sizes the model's length leaves room for, one calibrated
//! prompt per size, and the decode and burst experiments over them.

use super::fit::{Fit, Wanted, fit, shortened_note};
use crate::cell::calibration::calibrate_prompts;
use crate::config::PlanKind;
use crate::experiment::prepare::{PrepareEnv, Prepared, Setup};
use crate::experiment::{burst, decode};
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use std::sync::Arc;

/// Prepares `--plan decode` (and its bursts under `--burst`).
pub struct DecodeSetup;

impl Setup for DecodeSetup {
    fn plan(&self) -> Option<PlanKind> {
        Some(PlanKind::Decode)
    }

    fn prepare<'a>(&'a self, env: PrepareEnv<'a>) -> BoxFuture<'a, anyhow::Result<Prepared>> {
        prepare(env).boxed()
    }
}

async fn prepare(env: PrepareEnv<'_>) -> anyhow::Result<Prepared> {
    let (cfg, max_model_len) = (env.cfg, env.facts.max_model_len);
    let sustained = Wanted::decode(cfg);
    let wanted: Vec<Wanted> =
        std::iter::once(sustained).chain(cfg.decode.run_burst.then(|| Wanted::burst(cfg))).collect();
    let (fits, too_long) = split_ctx(&cfg.ctx, max_model_len, &wanted);
    let mut out = Prepared::default();
    out.notes.extend(too_long_note(&too_long, max_model_len, sustained));
    out.notes.extend(shortened_note(&fits, max_model_len, sustained));
    (out.prompts, out.warnings) = calibrate_prompts(env.client, &env.facts.model, cfg, &fits).await?;
    let kv = env.facts.kv_capacity();
    out.experiments.push(Arc::new(decode::Decode::new(cfg, kv)));
    if cfg.decode.run_burst {
        out.experiments.push(Arc::new(burst::Burst::new(cfg, kv)));
    }
    Ok(out)
}

/// The context sizes some cell wanting one of `wanted` can run with (all when `max_model_len`
/// is unknown), and those whose prompt and output fit no cell: these are neither calibrated nor
/// run (the rule: `experiment::decode::fit`).
fn split_ctx(ctx: &[u64], max_model_len: Option<u64>, wanted: &[Wanted]) -> (Vec<u64>, Vec<u64>) {
    ctx.iter().partition(|c| wanted.iter().any(|w| !matches!(fit(max_model_len, **c, *w), Fit::TooLong { .. })))
}

/// The one preflight line naming the context sizes whose prompt and `wanted` output exceed
/// `max_model_len`, with their deficits, if any.
fn too_long_note(too_long: &[u64], max_model_len: Option<u64>, wanted: Wanted) -> Option<String> {
    let len = max_model_len?;
    let deficit = |c: u64| match fit(max_model_len, c, wanted) {
        Fit::TooLong { deficit, .. } => deficit,
        _ => 0,
    };
    let sizes: Vec<String> = too_long
        .iter()
        .map(|c| format!("{} (deficit {} tokens)", crate::units::format_size(*c), deficit(*c)))
        .collect();
    (!sizes.is_empty()).then(|| {
        format!(
            "preflight: --ctx {} leaves no room for the output under the model's max_model_len {len}: those cells are skipped",
            sizes.join(", ")
        )
    })
}
