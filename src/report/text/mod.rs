//! Headless end-of-run text report: boxed tables, panels and the decode-matrix layout.
//!
//! The output reproduces the reference report `tests/fixtures/seed_000.txt` byte for byte.
//! Notation: `(X/Y)*` running/requested and capacity flag, `(Ne)` errors, `∅` skipped
//! (does not fit in KV cache), `-` not applicable, `—` missing value, `·` not run.

pub mod blocks;
pub mod burst;
pub mod decode;
pub mod extension;
pub mod format;
pub mod panel;
pub mod routing;
pub mod serve;
pub mod table;
pub mod width;
mod wrap;

#[cfg(test)]
mod tests;

pub use blocks::{Block, render_text_blocks};
pub use burst::{BurstCell, BurstCellView, BurstView};
pub use decode::{CellView, DecodeView, KneeMark, MeasuredCell, decode_blocks, render_decode};
pub use panel::{PANEL_WIDTH, Panel, wrap};
pub use routing::{render_routing, routing_blocks};
pub use serve::{ServeCellView, ServeView, serve_blocks};
pub use table::{BoxStyle, RenderOptions, Row, Table};
