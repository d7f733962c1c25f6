//! What a serve session's dataset file was and how its requests were sized (issue 24): the
//! file by content (SHA-256), the counts from entries to requests, the sampling seed, and
//! where every length came from, so a reader can tell an exact length from a fallback.

use serde::{Deserialize, Serialize};

/// The dataset record of a serve section.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DatasetRecord {
    /// vLLM's `--dataset-name`: `sharegpt` or `custom`.
    pub name: String,
    /// The file as given.
    pub path: String,
    /// The file's SHA-256, lower-case hex.
    pub sha256: String,
    /// The file's length, bytes.
    pub bytes: u64,
    /// Entries the file holds.
    pub entries: u64,
    /// Of those, entries that cannot make a request (no prompt; ShareGPT: no two turns).
    pub unusable: u64,
    /// Entries drawn at random from the usable ones (`seed`).
    pub sampled: u64,
    /// Of those, entries dropped by vLLM's ShareGPT length bounds (prompt or answer under 4
    /// tokens, prompt over 1024, both over 2048) or that the server would not count.
    pub filtered: u64,
    /// Requests each serve cell sends, each cell its own unless `reused`.
    pub per_cell: u64,
    /// True when the file had too few entries for every cell to send its own prompts: later
    /// cells repeat earlier cells' prompts, which a prefix cache may serve warm.
    pub reused: bool,
    /// The sampling seed (`--seed`).
    pub seed: u64,
    /// Where prompt lengths came from: `tokenize` (the server's `/tokenize`, before any load),
    /// `tokenizer_file` (the local `--tokenizer` file, before any load: the target has no
    /// `/tokenize`) or `usage` (each request's `usage.prompt_tokens`, after it ran).
    pub input_len_source: String,
    /// Where `max_tokens` came from: `tokenize` or `tokenizer_file` (the dataset's answer,
    /// counted as the prompts were), `dataset` (a `custom` line's `output_tokens`),
    /// `--sharegpt-output-len`, `--custom-output-len`, or `--random-output-len` (a ShareGPT
    /// answer that could not be counted).
    pub output_len_source: String,
    /// Mean prompt length of the requests, tokens, when counted before the load.
    pub mean_input_tokens: Option<f64>,
    /// Mean `max_tokens` of the requests.
    pub mean_output_tokens: f64,
    /// The local tokenizer file of `--tokenizer`; absent when none was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokenizer: Option<TokenizerRecord>,
}

/// The `--tokenizer` file of a dataset: which file it was, by content, and whether it counted
/// as the target's own `/tokenize` did where both counted (a wrong file gives wrong lengths).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TokenizerRecord {
    /// The file read (a directory given is its `tokenizer.json`).
    pub path: String,
    /// The file's SHA-256, lower-case hex.
    pub sha256: String,
    /// Requests whose prompt the file and the target's `/tokenize` both counted (0 when the
    /// target has none and the file counted alone).
    pub compared: u64,
    /// Of those, prompts the two counted differently: the file is not the served model's
    /// tokenizer (the target's counts were used).
    pub disagreed: u64,
}

impl TokenizerRecord {
    /// The legend's note: the file when it counted alone, the disagreement when the file and
    /// the target counted differently, else nothing.
    fn note(&self) -> String {
        let sha: String = self.sha256.chars().take(8).collect();
        match (self.compared, self.disagreed) {
            (0, _) => format!(" (--tokenizer {}, sha256 {sha}…)", self.path),
            (_, 0) => String::new(),
            (_, n) => format!(
                "; --tokenizer {} counted {n} of {} prompts unlike the target's /tokenize (its counts were used)",
                self.path, self.compared
            ),
        }
    }
}

impl DatasetRecord {
    /// One line for a table's legend: `prompts: sharegpt sg.json (sha256 1a2b3c4d…): 192 of 94145
    /// entries sampled (seed 0), 8 dropped, 96 a cell; input lengths by tokenize, ...`.
    pub fn line(&self) -> String {
        let sha: String = self.sha256.chars().take(8).collect();
        let reused = if self.reused {
            "; too few entries: cells repeat prompts (a warm prefix cache may serve them)"
        } else {
            ""
        };
        let tokenizer = self.tokenizer.as_ref().map(TokenizerRecord::note).unwrap_or_default();
        format!(
            "prompts: {} {} (sha256 {sha}…): {} of {} entries sampled (seed {}), {} dropped, {} a cell; input lengths by {}, max_tokens by {}{reused}{tokenizer}",
            self.name,
            self.path,
            self.sampled,
            self.entries,
            self.seed,
            self.filtered,
            self.per_cell,
            self.input_len_source,
            self.output_len_source,
        )
    }
}

/// The record of vLLM's `prefix_repetition` workload (`--dataset-name prefix_repetition`):
/// every serve cell drew its own `num_prefixes` random prefixes (seeded by `--seed` and the
/// cell) and dealt its requests among them, each with its own random suffix.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PrefixRepetitionRecord {
    /// Tokens every request of a group shares.
    pub prefix_len: u64,
    /// Tokens of each request's own suffix.
    pub suffix_len: u64,
    /// Distinct prefixes per cell.
    pub num_prefixes: u32,
    /// `max_tokens` of every request.
    pub output_len: u64,
    /// Requests per cell; groups differ by one request at most (vLLM drops the remainder).
    pub per_cell: u32,
    /// The largest share of a cell's prompt tokens a prefix cache can serve from the cell's
    /// own requests: every request after its group's first finds the prefix, 0 to 1.
    pub expected_prefix_hit_ratio: f64,
}

impl PrefixRepetitionRecord {
    /// One line for a table's legend.
    pub fn line(&self) -> String {
        format!(
            "prompts: prefix_repetition: {} prefixes of {} tokens a cell, each request its own {}-token suffix, {} a cell; a prefix cache can serve at most {:.1}% of prompt tokens",
            self.num_prefixes,
            self.prefix_len,
            self.suffix_len,
            self.per_cell,
            self.expected_prefix_hit_ratio * 100.0
        )
    }
}

/// The record of a trace replayed on its own schedule (`--dataset-name mooncake_trace|
/// azure_trace`): the file by content, the requests kept, the pace, and the prefix sharing its
/// blocks give (every serve cell drew its own block contents, seeded by `--seed` and the cell).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TraceRecord {
    /// `mooncake_trace` or `azure_trace`.
    pub name: String,
    /// The file as given.
    pub path: String,
    /// The file's SHA-256, lower-case hex.
    pub sha256: String,
    /// The file's length, bytes.
    pub bytes: u64,
    /// Requests the file holds.
    pub entries: u64,
    /// Of those, the first ones each cell replays (`--num-prompts`).
    pub replayed: u64,
    /// `--replay-speed`: the trace's gaps divided by it.
    pub replay_speed: f64,
    /// The replayed requests' arrivals span, on the trace's clock, s.
    pub span_s: f64,
    /// Tokens of one `hash_ids` block (Mooncake's 512).
    pub block_tokens: u64,
    /// Mean prompt length, tokens.
    pub mean_input_tokens: f64,
    /// Mean `max_tokens`.
    pub mean_output_tokens: f64,
    /// The largest share of prompt tokens a prefix cache that never evicts can serve from the
    /// replayed requests' shared blocks, 0 to 1 (0 for Azure's, which share nothing).
    pub expected_prefix_hit_ratio: f64,
}

impl TraceRecord {
    /// One line for a table's legend.
    pub fn line(&self) -> String {
        let sha: String = self.sha256.chars().take(8).collect();
        format!(
            "prompts: {} {} (sha256 {sha}…): the first {} of {} requests over {:.1} s at x{} the trace's pace; mean {:.0} tokens in, {:.0} out; a prefix cache can serve at most {:.1}% of prompt tokens",
            self.name,
            self.path,
            self.replayed,
            self.entries,
            self.span_s,
            self.replay_speed,
            self.mean_input_tokens,
            self.mean_output_tokens,
            self.expected_prefix_hit_ratio * 100.0
        )
    }
}
