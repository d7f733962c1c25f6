//! What one cell attempt runs against, whatever the experiment: the shared context, what
//! preflight found, the live publisher, the control types, and the client-side summaries.
//! Experiments depend on this module; it depends on none of them.

pub mod attempt_loop;
pub(crate) mod calibration;
pub mod context;
pub mod control;
pub(crate) mod facts;
pub(crate) mod goodput;
pub(crate) mod halt;
pub(crate) mod headline;
pub mod lag;
pub(crate) mod prefix_cache;
pub mod publisher;
pub(crate) mod replicas_live;
pub(crate) mod sample_window;
pub(crate) mod scrapes;
pub mod search_live;
pub mod spec;
pub(crate) mod summarize;
pub(crate) mod tps_bins;
