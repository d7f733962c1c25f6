//! The `tui` suite (`cargo test --test tui`): the monitor driving a real session with scripted
//! keys ([`session`]), full-screen `TestBackend` snapshots ([`snapshots`]), and the binary's
//! monitor on a pseudo-terminal quit with `q`, `y` ([`quit`]), and the monitor of a sweep's parameter set ([`sweep`]). The terminal guard's
//! test sets a process-wide panic hook, so it keeps a binary of its own (`tests/tui_guard.rs`).

#[path = "../common/mod.rs"]
mod common;

mod quit;
mod session;
mod shard;
mod snapshots;
mod sweep;
