//! What one cell attempt runs against, whatever the experiment: the shared context, what
//! preflight found, the live publisher, the control types, and the client-side summaries.
//! Experiments depend on this module; it depends on none of them.

pub mod attempt_loop;
pub mod calibration;
pub mod context;
pub mod control;
pub mod facts;
pub mod goodput;
pub mod halt;
pub mod headline;
pub mod lag;
pub mod publisher;
pub mod replicas_live;
pub mod sample_window;
pub mod scrapes;
pub mod spec;
pub mod summarize;
pub mod tps_bins;
