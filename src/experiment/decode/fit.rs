//! Whether a grid cell's prompt and output fit the model's context length (`max_model_len`),
//! and the `max_tokens` its requests ask for (docs/reports.md §1.2.3).

use crate::config::RunConfig;
use crate::report::skip::{Skip, SkipKind};
use crate::units::format_size;

/// Tokens kept free beside the prompt: the chat template's tokens and the calibration's error.
pub(crate) const MARGIN: u64 = 64;
/// Fewest output tokens a sustained stream is shortened to when the context length leaves less
/// than `--min-stream-tokens`; with less room still, the cell is skipped.
pub(crate) const MIN_SUSTAINED_OUTPUT: u64 = 64;
/// Longest sustained stream asked for, tokens.
const MAX_SUSTAINED: u64 = 1_000_000;
/// Sustained stream length when the context length is unknown, tokens.
const UNKNOWN_LEN_SUSTAINED: u64 = 65_536;

/// The output a cell's requests want.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wanted {
    /// A closed-loop stream that must outlast the window: what the context leaves, at least
    /// `floor` (`--min-stream-tokens`). Its length is not measured, so it may be shortened.
    Sustained {
        /// `--min-stream-tokens`.
        floor: u64,
    },
    /// A length the user set or the workload defines (`--max-tokens`, `--output` of open-loop
    /// cells, `--burst-tokens`): never changed, so a cell it does not fit is skipped.
    Fixed(u64),
}

impl Wanted {
    /// What the decode cells of `cfg` want: open-loop cells (`--request-rate`) a fixed output,
    /// closed-loop ones `--max-tokens` or a sustained stream.
    pub fn decode(cfg: &RunConfig) -> Self {
        match (cfg.rates.is_empty(), cfg.decode.max_tokens) {
            (_, Some(n)) => Wanted::Fixed(n),
            (true, None) => Wanted::Sustained { floor: cfg.decode.min_stream_tokens },
            (false, None) => Wanted::Fixed(cfg.routing.output),
        }
    }

    /// What burst cells want: `--burst-tokens`.
    pub fn burst(cfg: &RunConfig) -> Self {
        Wanted::Fixed(cfg.decode.burst_tokens)
    }
}

/// How a prompt and its wanted output fit the context length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fit {
    /// Sent with this `max_tokens`.
    Fits(u64),
    /// A sustained stream shortened below its floor to fit: sent with `to` tokens (it ends within
    /// the window and is replaced, so the cell's streams turn over).
    Shortened {
        /// `max_tokens` sent.
        to: u64,
        /// The floor it was shortened from.
        floor: u64,
    },
    /// Does not fit: the prompt, the margin and the fewest output tokens exceed the length.
    TooLong {
        /// The fewest output tokens this cell may ask for.
        fewest: u64,
        /// Tokens over the context length.
        deficit: u64,
    },
}

/// How a `prompt`-token prompt and `wanted` fit `max_model_len` (None: unknown, everything fits).
pub(crate) fn fit(max_model_len: Option<u64>, prompt: u64, wanted: Wanted) -> Fit {
    let Some(len) = max_model_len else {
        return match wanted {
            Wanted::Sustained { floor } => Fit::Fits(UNKNOWN_LEN_SUSTAINED.max(floor)),
            Wanted::Fixed(n) => Fit::Fits(n),
        };
    };
    let room = len.saturating_sub(prompt.saturating_add(MARGIN));
    let fewest = match wanted {
        Wanted::Sustained { floor } if room >= floor => return Fit::Fits(room.min(MAX_SUSTAINED.max(floor))),
        Wanted::Sustained { floor } if room >= MIN_SUSTAINED_OUTPUT => return Fit::Shortened { to: room, floor },
        Wanted::Sustained { .. } => MIN_SUSTAINED_OUTPUT,
        Wanted::Fixed(n) if room >= n => return Fit::Fits(n),
        Wanted::Fixed(n) => n,
    };
    let need = prompt.saturating_add(MARGIN).saturating_add(fewest);
    Fit::TooLong { fewest, deficit: need.saturating_sub(len) }
}

impl Fit {
    /// `max_tokens` to send (a cell that does not fit is skipped; should one be sent anyway, it
    /// asks for the fewest tokens and the server's refusal shows in the cell).
    pub(crate) fn max_tokens(self) -> u64 {
        match self {
            Fit::Fits(n) | Fit::Shortened { to: n, .. } => n,
            Fit::TooLong { fewest, .. } => fewest,
        }
    }
}

/// Why a `ctx`-token cell wanting `wanted` cannot run on a model of `max_model_len`, if it
/// cannot: the skip reason, with the deficit in tokens.
pub(crate) fn skip_reason(ctx: u64, max_model_len: Option<u64>, wanted: Wanted) -> Option<Skip> {
    let Fit::TooLong { deficit, .. } = fit(max_model_len, ctx, wanted) else { return None };
    let len = max_model_len?;
    let output = match wanted {
        Wanted::Sustained { .. } => format!("a stream of at least {MIN_SUSTAINED_OUTPUT} tokens"),
        Wanted::Fixed(n) => format!("{n} output tokens"),
    };
    let why = format!(
        "a prompt of {} tokens plus {output} and a {MARGIN}-token template margin exceed max_model_len {len}; deficit {deficit} tokens",
        format_size(ctx)
    );
    Some(Skip::new(SkipKind::ContextLength, why))
}

/// The preflight line naming the contexts whose sustained streams are shortened, if any.
pub(crate) fn shortened_note(ctx: &[u64], max_model_len: Option<u64>, wanted: Wanted) -> Option<String> {
    let Wanted::Sustained { floor } = wanted else { return None };
    let short: Vec<String> = ctx
        .iter()
        .filter_map(|c| match fit(max_model_len, *c, wanted) {
            Fit::Shortened { to, .. } => Some(format!("{} ({to} tokens)", format_size(*c))),
            _ => None,
        })
        .collect();
    (!short.is_empty()).then(|| {
        format!(
            "preflight: --ctx {} leaves fewer than --min-stream-tokens {floor} output tokens under max_model_len: those streams ask for what is left and turn over within the window",
            short.join(", ")
        )
    })
}

#[cfg(test)]
#[path = "fit_tests.rs"]
mod tests;
