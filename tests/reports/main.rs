//! The `reports` suite (`cargo test --test reports`): `report FILE` ([`report_cmd`]), the HTML
//! report in a real browser ([`html`]), the report writer ([`saves`]), `compare` ([`compare`]) and a
//! real Prometheus reading the simulated replicas ([`prometheus`]).

#[path = "../common/mod.rs"]
mod common;

mod compare;
mod extension;
mod html;
mod prometheus;
mod report_cmd;
mod report_many;
mod saves;
