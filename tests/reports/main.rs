//! The `reports` suite (`cargo test --test reports`): `report FILE` ([`report_cmd`]), the HTML
//! report in a real browser ([`html`]), the report writer ([`saves`]), `compare` ([`compare`]) and a
//! real Prometheus reading the simulated replicas ([`prometheus`]), and the client's own live
//! page (`run --metrics-listen`) against the report and through a real Prometheus ([`metrics_listen`]),
//! and the observer's give-up and file schema ([`observe_screen`]).

#[path = "../common/mod.rs"]
mod common;

mod compare;
mod extension;
mod html;
mod metrics_listen;
mod observe;
mod observe_screen;
mod prometheus;
mod report_cmd;
mod report_many;
mod saves;
mod shard_verdict;
mod sharded;
mod sharded_kill;
