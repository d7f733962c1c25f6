//! The `sim` suite (`cargo test --test sim`): the embedded simulator itself, one replica's
//! OpenAI API ([`api`]), fault injection ([`faults`]), the gateway's strategies ([`gateway`]),
//! `/metrics` pages ([`metrics`]), the router modes ([`routers`]) and the SGLang mode ([`sglang`]).

#[path = "../common/mod.rs"]
mod common;

mod api;
mod faults;
mod gateway;
mod metrics;
mod routers;
mod sglang;
