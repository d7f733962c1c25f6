//! Size caps and read deadlines of the bodies the tool reads from a target, so that no answer
//! makes it hold unbounded memory or wait without end for a body: error bodies, JSON answers,
//! event-stream lines and events ([`super::sse`]), metrics pages ([`crate::metrics::page`]).
//! A compressed body counts decoded: a small gzip body that inflates to gigabytes stops at the
//! same cap, after reading only as much as the cap needs.

use std::time::Duration;

/// Bytes of an error answer's body kept for its message (the rest is never read).
pub(crate) const ERROR_BODY_KEEP: usize = 64 << 10;
/// Longest wait for an error answer's body once its head is in; what came by then is kept.
pub(crate) const ERROR_BODY_WAIT: Duration = Duration::from_secs(5);
/// Longest JSON answer of the API (discovery, tokenization, probes): a `/tokenize` answer
/// lists the prompt's token ids, about 7 bytes each, so this fits prompts of millions of tokens.
pub(crate) const JSON_ANSWER_MAX: usize = 32 << 20;
/// Longest line, and longest event data, of an event stream (an OpenAI chunk is about 300
/// bytes): a longer one fails the request as `oversized`.
pub(crate) const SSE_LINE_MAX: usize = 1 << 20;

/// Most bytes an event stream may carry without dispatching an event (comments, unknown
/// fields, blank lines): a server's keep-alive comments are a few bytes each, so this much
/// means the stream is not one; the request fails as `oversized` instead of reading on.
pub(crate) const SSE_WITHOUT_EVENT_MAX: u64 = 4 << 20;

/// A size in bytes for a message: `64 KiB`, `4 MiB`, `300 bytes`.
pub(crate) fn size_text(n: usize) -> String {
    match n {
        n if n >= 1 << 20 && n % (1 << 20) == 0 => format!("{} MiB", n >> 20),
        n if n >= 1 << 10 && n % (1 << 10) == 0 => format!("{} KiB", n >> 10),
        n => format!("{n} bytes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_in_their_unit() {
        assert_eq!(size_text(ERROR_BODY_KEEP), "64 KiB");
        assert_eq!(size_text(SSE_LINE_MAX), "1 MiB");
        assert_eq!(size_text(300), "300 bytes");
        assert_eq!(size_text((1 << 20) + 1), "1048577 bytes");
    }
}
