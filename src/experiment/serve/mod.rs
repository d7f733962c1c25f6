//! The serve experiment (`run --plan serve`): `vllm bench serve`'s random workload per input
//! len x max concurrency x request rate cell (random token-id prompts of exactly
//! `--random-input-len` tokens, `--random-output-len` tokens each with `ignore_eos`, both
//! spread by `--random-range-ratio` (`lengths.rs`), gamma arrivals), or a dataset file's
//! prompts (`dataset.rs`, sized as `dataset_sizing.rs` says), reported with vLLM's metric definitions and field names.

pub(crate) mod attempt;
pub mod dataset;
pub(crate) mod dataset_sizing;
pub(crate) mod dispatch;
pub(crate) mod headline;
pub(crate) mod knee;
pub mod lengths;
pub(crate) mod metrics;
pub(crate) mod prompts;
pub(crate) mod schedule;
pub(crate) mod section;
pub(crate) mod server_check;
pub(crate) mod trace;
pub mod vocab;

pub use attempt::{ServeCell, run_serve_attempt};
pub use section::{Serve, ServeSetup};
