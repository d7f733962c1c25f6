//! A benchmark session: preflight, the plan of cells, the runner task and its handles.
//!
//! Workers stamp their own times and hand finished samples to the attempt that owns them
//! (the aggregator); the poller and the attempts publish snapshots on `watch` channels; the
//! runner walks the cells and obeys commands. Headless mode and the live monitor drive the
//! same handles.

pub(crate) mod assemble;
pub(crate) mod clock;
pub(crate) mod handles;
pub mod log_file;
pub(crate) mod plan;
pub mod preflight;
pub(crate) mod prior;
pub(crate) mod progress;
pub(crate) mod prom_source;
pub mod resume;
pub(crate) mod runner;
pub(crate) mod runs_log;
pub(crate) mod series;
pub(crate) mod server_info;
pub mod shard_view;
pub mod snapshot;
pub mod state;
pub(crate) mod streak;
pub(crate) mod timeline;
pub(crate) mod timeline_open;

pub use handles::SessionHandles;
pub use plan::{start, start_continuing, start_session, start_with, start_with_setups};
pub use prior::Prior;
