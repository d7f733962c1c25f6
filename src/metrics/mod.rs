//! Scraping model for Prometheus `/metrics` pages of LLM engines and gateways.
//!
//! * [`prom`]: an owned, queryable model of one parsed exposition ([`Scrape`]).
//! * [`histogram`]: cumulative-bucket histograms, deltas and quantile estimates.
//! * [`dialect`]: which engine produced a page ([`EngineDialect`]).
//! * [`engine`]: the per-replica numbers the benchmark needs ([`EngineSample`]).
//! * [`gateway`]: router/gateway counters and their deltas ([`GatewayDialect`]).
//! * [`page`]: one page read within a size cap and a deadline, or why it is no metrics page.
//! * [`poller`]: the task that scrapes every target on a schedule and publishes snapshots.
//! * [`promql`], [`prom_poller`]: the same snapshots read from a Prometheus server's API.
//! * [`snapshot`]: what it publishes ([`snapshot::MetricsSnapshot`]) and the bounded history.
//! * [`expose`]: the client's own live page (`run --metrics-listen`), its registry and listener.
//! * [`observe`]: a sharded session's client series read back from Prometheus (`run --observe`).
//! * [`window`]: pure statistics over that history: window averages, peaks, counter deltas.
//!
//! Metric names, types and traps follow `docs/protocol.md` §0–§2 and §4–§8.

pub(crate) mod dialect;
pub mod engine;
pub mod expose;
mod exposition;
pub mod gateway;
pub(crate) mod histogram;
pub mod observe;
pub(crate) mod page;
pub mod poller;
pub mod prom;
pub mod prom_poller;
pub mod promql;
pub(crate) mod snapshot;
pub(crate) mod types;
pub(crate) mod window;

#[cfg(test)]
mod tests_engine;
#[cfg(test)]
mod tests_gateway;
#[cfg(test)]
mod tests_histogram;
#[cfg(test)]
mod tests_prom;
#[cfg(test)]
mod tests_props;

pub use dialect::{EngineDialect, UnknownDialect};
pub use engine::{CounterDeltas, EngineSample};
pub use gateway::{CounterDelta, CounterSeries, GatewayDialect, UnknownGateway};
pub use histogram::{Histogram, HistogramError};
pub use prom::{MetricType, ParseIssue, PromError, Sample, SampleRole, Scrape};
