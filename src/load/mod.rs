//! Load generation: the transport seam, SSE decoding, chunk parsing, HTTP client, workers and
//! their samples.

pub mod backend;
pub(crate) mod calibrate;
pub mod chunk;
pub(crate) mod classify;
pub mod client;
pub(crate) mod counters;
pub(crate) mod filler;
pub(crate) mod limits;
pub mod live;
pub(crate) mod open_loop;
pub(crate) mod pool;
pub mod rate;
pub mod request;
pub mod resend;
pub(crate) mod reuse;
pub mod reuse_probe;
pub mod sample;
pub(crate) mod scrub;
pub mod slo;
pub mod sse;
pub mod stream;
pub(crate) mod tap;
pub(crate) mod timeline;
pub(crate) mod wait;
pub mod worker;
