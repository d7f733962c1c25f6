//! Load generation: SSE decoding, chunk parsing, HTTP client, workers and their samples.

pub mod chunk;
pub mod sse;
