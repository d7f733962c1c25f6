//! The experiments a session can run: sustained decode, bursts and prefix-cache routing.

pub mod burst;
pub mod decode;
pub mod routing;
