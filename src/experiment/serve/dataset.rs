//! Serve prompts from a dataset file (`--dataset-name sharegpt|custom`, issue 24): the sampled
//! entries sized by the target's own tokenizer (`/tokenize` of the target, else of a replica),
//! else by the local `--tokenizer` file, dropped where vLLM's ShareGPT bounds drop them, and
//! dealt out so each serve cell sends its own `--num-prompts`. A target without `/tokenize` is
//! never sent the prompts to count them (a probe would leave them in its prefix cache): without
//! a file their lengths come from each request's `usage`, and the report says which.

use crate::config::dataset::{CUSTOM_OUTPUT_LEN, DatasetSource};
use crate::dataset::{Conversation, FileFormat};
use crate::load::calibrate::{CountError, TokenCounter};
use crate::report::dataset::DatasetRecord;

pub(crate) use super::dataset_sizing::LengthSource;

/// `/tokenize` calls in flight while counting.
const COUNTS_IN_FLIGHT: usize = 8;
/// vLLM's ShareGPT bounds, tokens: a prompt or answer shorter than this is dropped.
const MIN_LEN: u64 = 4;
/// vLLM's ShareGPT bounds: a longer prompt is dropped, tokens.
const MAX_PROMPT_LEN: u64 = 1024;
/// vLLM's ShareGPT bounds: a longer prompt plus answer is dropped, tokens.
const MAX_TOTAL_LEN: u64 = 2048;

/// One request of the dataset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatasetPrompt {
    /// The prompt text, sent as the completions prompt.
    pub text: String,
    /// Its length as the server counts it, when counted before the load.
    pub input_tokens: Option<u64>,
    /// The request's `max_tokens`.
    pub output_tokens: u64,
}

/// Every request of the session, in cell order, and the report's record of them.
#[derive(Debug, Clone, PartialEq)]
pub struct DatasetPrompts {
    prompts: Vec<DatasetPrompt>,
    per_cell: usize,
    /// What the report says of the dataset.
    pub record: DatasetRecord,
}

impl DatasetPrompts {
    /// Request `i` of serve cell `slot` (0-based in plan order): its own run of the prompts,
    /// wrapping round when the file had too few.
    pub fn get(&self, slot: usize, i: usize) -> &DatasetPrompt {
        &self.prompts[(slot * self.per_cell + i) % self.prompts.len()]
    }

    /// The first `n` requests (fewer when there are fewer).
    pub(crate) fn first(&self, n: usize) -> &[DatasetPrompt] {
        &self.prompts[..n.min(self.prompts.len())]
    }
}

/// Counts one text, or None when the server would not count it (too long for the model, or
/// a failed call): the entry is dropped.
async fn count<C: TokenCounter>(counter: &C, text: &str) -> Result<Option<u64>, String> {
    match counter.count(text).await {
        Ok(n) => Ok(Some(n)),
        Err(CountError::NoAnswer(e)) => Err(e),
        Err(_) => Ok(None),
    }
}

/// A sampled conversation sized: `None` when it is dropped.
async fn size<C: TokenCounter>(
    src: &DatasetSource,
    counter: Option<&C>,
    c: &Conversation,
    fallback_output: u64,
) -> Result<Option<DatasetPrompt>, String> {
    let text = c.prompt().to_string();
    let Some(counter) = counter else {
        let output_tokens = output_without_count(src, c, fallback_output);
        return Ok(Some(DatasetPrompt { text, input_tokens: None, output_tokens }));
    };
    let Some(input) = count(counter, &text).await? else { return Ok(None) };
    let output = match (src.format, src.output_len, c.completion()) {
        (FileFormat::ShareGpt, None, Some(answer)) => match count(counter, answer).await? {
            Some(n) => n,
            None => return Ok(None),
        },
        _ => output_without_count(src, c, fallback_output),
    };
    if src.format == FileFormat::ShareGpt {
        // vLLM's bounds; a fixed output length skips its lower bound, as vLLM's does.
        let short = input < MIN_LEN || (src.output_len.is_none() && output < MIN_LEN);
        if short || input > MAX_PROMPT_LEN || input + output > MAX_TOTAL_LEN {
            return Ok(None);
        }
    }
    Ok(Some(DatasetPrompt { text, input_tokens: Some(input), output_tokens: output.max(1) }))
}

/// `max_tokens` without counting the answer: the flag, a `custom` line's own, vLLM's default.
fn output_without_count(src: &DatasetSource, c: &Conversation, fallback: u64) -> u64 {
    let own = match src.format {
        FileFormat::Custom => c.output_tokens.or(src.output_len).unwrap_or(CUSTOM_OUTPUT_LEN),
        FileFormat::ShareGpt => src.output_len.unwrap_or(fallback),
    };
    own.max(1)
}

/// Where `max_tokens` came from, for the report.
fn output_source(src: &DatasetSource, by: LengthSource) -> &'static str {
    match (src.format, src.output_len) {
        (FileFormat::ShareGpt, Some(_)) => "--sharegpt-output-len",
        (FileFormat::ShareGpt, None) if by != LengthSource::Usage => by.as_str(),
        (FileFormat::ShareGpt, None) => "--random-output-len",
        (FileFormat::Custom, _) if src.sampled.conversations.iter().all(|c| c.output_tokens.is_some()) => "dataset",
        (FileFormat::Custom, Some(_)) => "--custom-output-len",
        (FileFormat::Custom, None) => "dataset (else vLLM's default 256)",
    }
}

/// Sizes the sample of `src` for `cells` serve cells of `per_cell` requests each, counting
/// with `counter`, which `by` names (None: nothing counts before the load, `usage` will).
/// `fallback_output` is `max_tokens` of a ShareGPT answer that cannot be counted. An error
/// when a count got no answer in time, or when no entry is left.
pub(crate) async fn prepare<C: TokenCounter + Sync>(
    src: &DatasetSource,
    counter: Option<(&C, LengthSource)>,
    per_cell: usize,
    cells: usize,
    fallback_output: u64,
) -> Result<DatasetPrompts, String> {
    let need = per_cell.saturating_mul(cells).max(1);
    let by = counter.map_or(LengthSource::Usage, |(_, by)| by);
    let counter = counter.map(|(c, _)| c);
    // A few counts at a time, in order (a stream adapter's closure over these borrows is not
    // `Send` for every lifetime the session's boxed future needs).
    let mut sized = Vec::with_capacity(src.sampled.conversations.len());
    for chunk in src.sampled.conversations.chunks(COUNTS_IN_FLIGHT) {
        let counts: Vec<_> = chunk.iter().map(|c| size(src, counter, c, fallback_output)).collect();
        for r in futures_util::future::join_all(counts).await {
            sized.push(r?);
        }
    }
    let sampled = sized.len() as u64;
    let mut prompts: Vec<DatasetPrompt> = sized.into_iter().flatten().collect();
    let filtered = sampled - prompts.len() as u64;
    if prompts.is_empty() {
        return Err(format!(
            "--dataset-path {}: every one of {sampled} sampled entries was dropped (vLLM's ShareGPT bounds: prompt and answer at least {MIN_LEN} tokens, prompt at most {MAX_PROMPT_LEN}, both at most {MAX_TOTAL_LEN})",
            src.path.display()
        ));
    }
    prompts.truncate(need);
    let n = prompts.len() as f64;
    let record = DatasetRecord {
        name: src.format.name().into(),
        path: src.path.display().to_string(),
        sha256: src.sampled.sha256.clone(),
        bytes: src.sampled.bytes,
        entries: src.sampled.entries,
        unusable: src.sampled.unusable,
        sampled,
        filtered,
        per_cell: per_cell as u64,
        reused: prompts.len() < need,
        seed: src.seed,
        input_len_source: by.as_str().into(),
        output_len_source: output_source(src, by).into(),
        mean_input_tokens: counter.map(|_| prompts.iter().filter_map(|p| p.input_tokens).sum::<u64>() as f64 / n),
        mean_output_tokens: prompts.iter().map(|p| p.output_tokens).sum::<u64>() as f64 / n,
        tokenizer: None,
    };
    Ok(DatasetPrompts { prompts, per_cell: per_cell.max(1), record })
}

#[cfg(test)]
#[path = "dataset_tests.rs"]
mod tests;
