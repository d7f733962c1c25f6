//! The conversation experiment (`run --plan conversation`, issue 24): multi-turn sessions, each
//! turn sending the history so far plus the next user message after a think time, with figures
//! per turn index (TTFT against the history, goodput, the prefix cache's hits beside what the
//! conversation's own earlier turns can give). It lands on the extension seam
//! (`experiment::extension`): its section is one of the report's `extensions`, with a `turns`
//! table per attempt, so every format, `compare` and `--baseline` read it unchanged.

pub(crate) mod attempt;
pub(crate) mod counters;
pub(crate) mod live;
pub mod script;
pub(crate) mod section;
pub(crate) mod session;
pub mod turns;

pub use section::{ConversationSetup, Conversations, NAME};
