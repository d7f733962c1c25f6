//! The `decode` suite (`cargo test --test decode`): headless decode sessions against the
//! simulator ([`run`]), verdicts ([`verdicts`]), the knee sweep ([`knee_sweep`]), open-loop cells and
//! the load knob ([`knob`]), stale metrics ([`staleness`]), `--baseline` ([`baseline_overlay`]) and KV
//! re-detection ([`kv_redetect`]), and the prefix cache ([`warm`]).

#[path = "../common/mod.rs"]
mod common;

mod baseline_overlay;
mod drain;
mod knee_sweep;
mod knob;
mod kv_redetect;
mod run;
mod shards;
mod shards_resume;
mod staleness;
mod verdicts;
mod warm;
