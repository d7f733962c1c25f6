//! The ctx x conc grid shared by the decode and burst experiments, with the KV-fit rule.

use super::fit::{Wanted, skip_reason};
use crate::cell::context::CellEnv;
use crate::cell::spec::{CellKey, CellSpec};
use crate::config::RunConfig;
use crate::experiment::interface::PlannedCell;
use crate::report::skip::{Skip, SkipKind};
use crate::units::format_size;

/// Why a cell of `ctx x conc` cannot fit, if it cannot: the deficit in tokens.
pub fn kv_skip_reason(ctx: u64, conc: u32, capacity: Option<u64>, oversubscribe: f64) -> Option<Skip> {
    let capacity = capacity?;
    let need = ctx.saturating_mul(u64::from(conc));
    let allowed = (capacity as f64 * oversubscribe).floor() as u64;
    (need > allowed).then(|| {
        let why = format!(
            "needs {need} KV tokens ({conc} x {ctx}) but capacity {capacity} x oversubscribe {oversubscribe} = {allowed}; deficit {} tokens",
            need - allowed
        );
        Skip::new(SkipKind::KvCache, why)
    })
}

/// Why serve cell `spec` cannot run on a model of `max_model_len` tokens, if it cannot: its
/// prompt alone is longer (decode and burst cells also fit their output: `fit::skip_reason`).
pub fn ctx_skip_reason(spec: &CellSpec, max_model_len: Option<u64>) -> Option<Skip> {
    let CellKey::Grid { ctx, .. } = spec.key else { return None };
    let len = max_model_len?;
    (ctx > len).then(|| {
        let why =
            format!("a {}-token prompt exceeds max_model_len {len}; deficit {} tokens", format_size(ctx), ctx - len);
        Skip::new(SkipKind::ContextLength, why)
    })
}

/// The axes of a ctx x conc grid and its KV-fit rule.
#[derive(Debug, Clone, PartialEq)]
pub struct Grid {
    /// Context sizes (rows), tokens.
    pub ctx: Vec<u64>,
    /// Concurrencies (columns), streams or requests.
    pub conc: Vec<u32>,
    /// KV capacity of the target, tokens (None: unknown, nothing is skipped).
    pub kv_capacity: Option<u64>,
    /// Skip a cell when ctx x conc exceeds the capacity times this.
    pub oversubscribe: f64,
    /// The output its cells' requests want (with the prompt, it must fit max_model_len).
    pub wanted: Wanted,
}

impl Grid {
    /// The ctx x conc grid of `cfg`, skipping cells that cannot fit in `kv_capacity` tokens or
    /// whose prompt and `wanted` output cannot fit max_model_len.
    pub fn of(cfg: &RunConfig, kv_capacity: Option<u64>, wanted: Wanted) -> Self {
        Grid {
            ctx: cfg.ctx.clone(),
            conc: cfg.conc.clone(),
            kv_capacity,
            oversubscribe: cfg.decode.kv_oversubscribe,
            wanted,
        }
    }

    /// Why `spec` must be skipped just before it runs, if it must: a prompt and output longer
    /// than the model's context, or a KV capacity learned since the plan that it does not fit.
    pub fn skip_before_run(&self, env: &CellEnv, spec: &CellSpec) -> Option<Skip> {
        let CellKey::Grid { ctx, .. } = spec.key else { return None };
        skip_reason(ctx, env.facts.max_model_len, self.wanted).or_else(|| self.skip_now(spec, env.kv_capacity_now()))
    }

    /// The cells, row-major over ctx then conc; `spec` makes each cell's spec, `prefix` goes
    /// in front of its label.
    pub fn cells(&self, prefix: &str, spec: impl Fn(u64, u32) -> CellSpec) -> Vec<PlannedCell> {
        let mut cells = Vec::new();
        for &ctx in &self.ctx {
            for &conc in &self.conc {
                cells.push(PlannedCell {
                    spec: spec(ctx, conc),
                    label: format!("{prefix}ctx={} conc={conc}", format_size(ctx)),
                    skip: kv_skip_reason(ctx, conc, self.kv_capacity, self.oversubscribe),
                });
            }
        }
        cells
    }

    /// Why grid cell `spec` cannot fit in `capacity_now` (the KV capacity known now), when the
    /// plan could not tell (capacity unknown at preflight); the plan's reason text.
    pub fn skip_now(&self, spec: &CellSpec, capacity_now: Option<u64>) -> Option<Skip> {
        let CellKey::Grid { ctx, conc, .. } = spec.key else { return None };
        match self.kv_capacity {
            Some(_) => None,
            None => kv_skip_reason(ctx, conc, capacity_now, self.oversubscribe),
        }
    }

    /// Row labels (`16k`, ...).
    pub fn ctx_labels(&self) -> Vec<String> {
        self.ctx.iter().map(|c| format_size(*c)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::kind::ExperimentKind;
    use crate::report::skip::SkipKind;

    #[test]
    fn kv_skip_matches_the_seed() {
        // tests/fixtures/seed_000.txt: 64k x 16 and 128k x 8 ran, 128k x 16 was skipped (oversubscribe 4).
        let cap = Some(360_448);
        assert!(kv_skip_reason(65_536, 16, cap, 4.0).is_none());
        assert!(kv_skip_reason(131_072, 8, cap, 4.0).is_none());
        let r = kv_skip_reason(131_072, 16, cap, 4.0).unwrap();
        assert!(r.kind == SkipKind::KvCache && r.reason.contains("deficit 655360 tokens"), "{r:?}");
        assert!(kv_skip_reason(131_072, 16, None, 4.0).is_none(), "unknown capacity never skips");
    }

    #[test]
    fn a_context_over_max_model_len_is_skipped() {
        let big = CellSpec::grid(ExperimentKind::Decode, 1 << 30, 1);
        let r = ctx_skip_reason(&big, Some(131_072)).unwrap();
        assert_eq!(r.kind, SkipKind::ContextLength);
        assert!(r.reason.contains("exceeds max_model_len 131072; deficit 1073610752 tokens"), "{r}");
        assert_eq!(
            ctx_skip_reason(&CellSpec::grid(ExperimentKind::Decode, 131_072, 1), Some(131_072)),
            None,
            "sent, refused"
        );
        assert_eq!(ctx_skip_reason(&big, None), None, "unknown length: runs");
    }

    #[test]
    fn cells_are_row_major_with_labels_and_skips() {
        let g = Grid {
            ctx: vec![0, 131_072],
            conc: vec![1, 16],
            kv_capacity: Some(360_448),
            oversubscribe: 4.0,
            wanted: Wanted::Fixed(1),
        };
        let cells = g.cells("burst ", |ctx, conc| CellSpec::grid(ExperimentKind::Burst, ctx, conc));
        let labels: Vec<&str> = cells.iter().map(|c| c.label.as_str()).collect();
        assert_eq!(
            labels,
            ["burst ctx=0 conc=1", "burst ctx=0 conc=16", "burst ctx=128k conc=1", "burst ctx=128k conc=16"]
        );
        assert_eq!(cells.iter().filter(|c| c.skip.is_some()).count(), 1);
        assert_eq!(cells[3].spec, CellSpec::grid(ExperimentKind::Burst, 131_072, 16));
    }

    #[test]
    fn a_capacity_learned_later_skips_with_the_plan_reason() {
        let unknown = Grid {
            ctx: vec![131_072],
            conc: vec![16],
            kv_capacity: None,
            oversubscribe: 4.0,
            wanted: Wanted::Fixed(1),
        };
        let big = CellSpec::grid(ExperimentKind::Decode, 131_072, 16);
        assert!(
            unknown.cells("", |c, n| CellSpec::grid(ExperimentKind::Decode, c, n))[0].skip.is_none(),
            "planned to run"
        );
        assert_eq!(unknown.skip_now(&big, Some(360_448)), kv_skip_reason(131_072, 16, Some(360_448), 4.0));
        assert!(unknown.skip_now(&big, Some(360_448)).is_some_and(|r| r.reason.contains("deficit 655360 tokens")));
        assert_eq!(unknown.skip_now(&big, None), None, "still unknown: runs");
        assert_eq!(unknown.skip_now(&CellSpec::grid(ExperimentKind::Decode, 131_072, 1), Some(360_448)), None, "fits");
        let known = Grid { kv_capacity: Some(360_448), ..unknown };
        assert_eq!(known.skip_now(&big, Some(1)), None, "the plan already decided");
    }
}
