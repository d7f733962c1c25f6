//! Headless end-of-run text report: boxed tables, panels and the decode-matrix layout.
//!
//! The output reproduces the reference report `tests/fixtures/seed_000.txt` byte for byte.
//! Notation: `(X/Y)*` running/requested and capacity flag, `(Ne)` errors, `∅` skipped
//! (does not fit in KV cache), `-` not applicable, `—` missing value, `·` not run.

pub(crate) mod blocks;
pub(crate) mod burst;
pub(crate) mod decode;
pub(crate) mod extension;
pub(crate) mod format;
pub(crate) mod panel;
pub(crate) mod routing;
pub(crate) mod serve;
pub(crate) mod table;
pub(crate) mod width;
mod wrap;

#[cfg(test)]
mod tests;

pub(crate) use blocks::{Block, render_text_blocks};
pub(crate) use burst::{BurstCell, BurstCellView, BurstView};
#[cfg(test)]
pub(crate) use decode::render_decode;
pub(crate) use decode::{CellView, DecodeView, KneeMark, MeasuredCell, decode_blocks};
#[cfg(test)]
pub(crate) use panel::PANEL_WIDTH;
pub(crate) use panel::{Panel, wrap};
pub(crate) use routing::routing_blocks;
pub(crate) use serve::{ServeCellView, ServeView, serve_blocks};
pub(crate) use table::{BoxStyle, RenderOptions, Row, Table};
