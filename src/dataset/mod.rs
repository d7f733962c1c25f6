//! Datasets read from files (issue 24): vLLM's `sharegpt` (a JSON array of `conversations`)
//! and `custom` (JSONL, one `prompt` per line), streamed so a file of any size is sampled in
//! memory bounded by the sample (`stats::SampleOf`, seeded), with the file's SHA-256 and
//! counts for the report; request traces (`mooncake_trace`, `azure_trace`): their first
//! requests kept, in time order ([`trace`]); the local `tokenizer.json` that sizes prompts
//! when the target cannot ([`tokenizer`]).

mod custom;
pub mod examples;
mod hashing;
mod sharegpt;
pub mod tokenizer;
pub mod trace;
mod trace_azure;

use crate::stats::SampleOf;
use rand::SeedableRng;
use rand::seq::SliceRandom;
use std::fmt;
use std::path::Path;

/// A dataset format read from a file, named as vLLM's `--dataset-name` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileFormat {
    /// A JSON array of `{"conversations": [{"from", "value"}, ...]}` (ShareGPT V3).
    ShareGpt,
    /// JSONL: `{"prompt": "...", "output_tokens": N}` per line, `output_tokens` optional.
    Custom,
}

impl FileFormat {
    /// vLLM's `--dataset-name`.
    pub fn name(self) -> &'static str {
        match self {
            Self::ShareGpt => "sharegpt",
            Self::Custom => "custom",
        }
    }
}

/// One conversation of a dataset: its turns in order, the first one a user's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conversation {
    /// The turns' texts, alternating user and assistant as the file has them.
    pub turns: Vec<String>,
    /// The output length the file asks for (`custom`'s `output_tokens`), when it says.
    pub output_tokens: Option<u64>,
}

impl Conversation {
    /// The first user message: the prompt of a single-turn request.
    pub fn prompt(&self) -> &str {
        self.turns.first().map_or("", String::as_str)
    }

    /// The dataset's answer to the prompt (ShareGPT's second turn), when it has one.
    pub fn completion(&self) -> Option<&str> {
        self.turns.get(1).map(String::as_str)
    }
}

/// What sampling a file found: the sample, in a seeded random order, and the file's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct Sampled {
    /// At most the asked number of conversations, uniformly drawn from the usable ones.
    pub conversations: Vec<Conversation>,
    /// Entries the file holds.
    pub entries: u64,
    /// Of those, the ones that cannot make a request (ShareGPT: fewer than two turns;
    /// custom: an empty prompt), never sampled.
    pub unusable: u64,
    /// The file's length, bytes.
    pub bytes: u64,
    /// The file's SHA-256, lower-case hex.
    pub sha256: String,
}

/// A file that cannot be read as its format, said in one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatasetError(pub String);

impl fmt::Display for DatasetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DatasetError {}

/// Samples `n` usable conversations of the `format` file at `path`, seeded by `seed`, reading
/// it once from start to end: memory holds the sample, never the file.
pub fn sample_file(path: &Path, format: FileFormat, n: usize, seed: u64) -> Result<Sampled, DatasetError> {
    let file =
        std::fs::File::open(path).map_err(|e| DatasetError(format!("--dataset-path {}: {e}", path.display())))?;
    let mut reader = hashing::HashingReader::new(file);
    let mut pool = SampleOf::seeded(n, seed);
    let counts = match format {
        FileFormat::ShareGpt => sharegpt::read(&mut reader, &mut pool),
        FileFormat::Custom => custom::read(&mut reader, &mut pool),
    }
    .map_err(|e| DatasetError(format!("--dataset-path {} ({}): {e}", path.display(), format.name())))?;
    let (bytes, sha256) =
        reader.finish().map_err(|e| DatasetError(format!("--dataset-path {}: {e}", path.display())))?;
    // The sample keeps its first items in file order: shuffled, seeded.
    let mut conversations = pool.into_vec();
    conversations.shuffle(&mut rand::rngs::StdRng::seed_from_u64(seed));
    Ok(Sampled { conversations, entries: counts.entries, unusable: counts.unusable, bytes, sha256 })
}

/// Entries a reader saw, and how many of them could not make a request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Counts {
    entries: u64,
    unusable: u64,
}

impl Counts {
    /// Counts one entry, offering it to `pool` when usable.
    fn offer(&mut self, pool: &mut SampleOf<Conversation>, c: Option<Conversation>) {
        self.entries += 1;
        match c {
            Some(c) => pool.push(c),
            None => self.unusable += 1,
        }
    }
}
