//! llm-decode-bench: drive streaming load against OpenAI-compatible LLM servers and watch them live.
#![warn(unreachable_pub)]

pub mod bench;
pub mod cell;
pub mod cli;
pub mod cmd;
pub mod config;
pub mod dataset;
pub mod experiment;
pub(crate) mod fdlimit;
pub mod load;
pub mod metrics;
pub mod net;
pub(crate) mod oslimits;
pub mod report;
pub mod session;
pub mod signal;
pub mod sim;
pub mod stats;
pub mod stdio;
pub mod text_safe;
pub mod tui;
pub(crate) mod units;
pub(crate) mod version;

#[cfg(test)]
mod layering_tests;
