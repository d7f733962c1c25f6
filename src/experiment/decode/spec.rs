//! Which decode cell an attempt runs, and how long its streams ask to be.

/// Identifies the cell being run.
#[derive(Debug, Clone)]
pub struct DecodeCellSpec {
    /// Index in the session plan.
    pub cell: usize,
    /// Label (`ctx=16k conc=4`).
    pub label: String,
    /// Context size, tokens.
    pub ctx: u64,
    /// Requested streams (closed loop), or the in-flight cap (open loop).
    pub conc: u32,
    /// Open-loop arrival rate; None: closed loop.
    pub rate: Option<crate::config::Rate>,
    /// 1-based attempt number.
    pub attempt: u32,
}

/// `max_tokens` of a sustained stream: what the context length leaves after the prompt, but
/// never fewer than `floor` (a stream must outlast the window). When the context length leaves
/// less than `floor`, the request is sent with `floor` anyway and the server refuses it: the
/// cell shows the refusals (`(Ne)`), as a context-overflow column should.
pub fn sustained_max_tokens(max_model_len: Option<u64>, prompt_tokens: u64, floor: u64) -> u64 {
    const MARGIN: u64 = 64;
    match max_model_len {
        // `floor` wins over the 1M ceiling (`clamp` would panic on a floor above it).
        Some(len) => len.saturating_sub(prompt_tokens.saturating_add(MARGIN)).min(1_000_000).max(floor),
        None => 65_536.max(floor),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_tokens_respects_the_context_length() {
        assert_eq!(sustained_max_tokens(Some(131_072), 16_384, 4096), 131_072 - 16_384 - 64);
        // A 128k prompt leaves no room for a sustained stream: ask for the floor (refused).
        assert_eq!(sustained_max_tokens(Some(131_072), 130_000, 4096), 4096);
        assert_eq!(sustained_max_tokens(None, 10, 4096), 65_536);
        assert_eq!(sustained_max_tokens(Some(10_000_000), 0, 4096), 1_000_000);
        // A floor above the 1M ceiling wins (`--min-stream-tokens 1m` panicked in `clamp`).
        assert_eq!(sustained_max_tokens(Some(10_000_000), 0, 1 << 20), 1 << 20);
        assert_eq!(sustained_max_tokens(Some(u64::MAX), u64::MAX, 1), 1);
    }
}
