//! The SLO search (`run --plan serve --slo-search concurrency|rate`, issue 25): the largest load
//! (requests in flight, or requests/s) at which the session SLO (`--goodput`) holds for
//! `--slo-attainment` percent of requests, found by probing the serve workload at a doubling
//! load until a probe fails, then bisecting the bracket, repeating a probe whose attainment it
//! cannot yet tell from the target (`search.rs`, pure). Each probe is a serve attempt
//! (`experiment::serve`); the search lands on the extension seam (`experiment::extension`):
//! its section is one of the report's `extensions` (kind `slo_search`), with a `probes` table.

pub(crate) mod attempt;
pub mod live;
pub mod probe;
pub mod report;
pub mod search;
pub(crate) mod section;

pub use section::{NAME, SloSearch, SloSearchSetup};
