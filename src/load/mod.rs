//! Load generation: the transport seam, SSE decoding, chunk parsing, HTTP client, workers and
//! their samples.

pub mod backend;
pub mod calibrate;
pub mod chunk;
pub mod classify;
pub mod client;
pub mod counters;
pub mod filler;
pub mod limits;
pub mod live;
pub mod open_loop;
pub mod pool;
pub mod rate;
pub mod request;
pub mod resend;
pub mod reuse;
pub mod reuse_probe;
pub mod sample;
pub mod scrub;
pub mod sse;
pub mod stream;
pub mod tap;
pub mod timeline;
pub mod wait;
pub mod worker;
