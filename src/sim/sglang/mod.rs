//! The simulator's SGLang mode (`--metrics-dialect sglang`): a replica that answers as SGLang's
//! source does (docs/protocol.md §2.1, §2.4–§2.7) — its `/metrics` page and when each number moves,
//! the chunks of its streams, its native routes (`/get_server_info`, `/flush_cache`, …) and
//! its length check. The engine model underneath is the shared one (`sim/engine`).

pub(crate) mod api;
pub(crate) mod chunks;
pub(crate) mod expo;
pub(crate) mod stats;
pub(crate) mod stream;
