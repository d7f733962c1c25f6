//! The dataset a serve session sends (`--dataset-name sharegpt|custom --dataset-path FILE`,
//! issue 24): the file is read and sampled while the flags are checked, so a file that cannot
//! be read is a one-line error before any load.

use crate::dataset::tokenizer::TokenizerFile;
use crate::dataset::{FileFormat, Sampled, sample_file};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// vLLM's default `--custom-output-len`, tokens: a `custom` line without `output_tokens`
/// asks for this many.
pub const CUSTOM_OUTPUT_LEN: u64 = 256;

/// Candidates sampled per request a session sends: ShareGPT entries outside vLLM's length
/// bounds are dropped after counting, so twice the need is drawn.
pub const OVERSAMPLE: usize = 2;

/// A dataset file, sampled.
#[derive(Debug, Clone, PartialEq)]
pub struct DatasetSource {
    /// Its layout, vLLM's `--dataset-name`.
    pub format: FileFormat,
    /// The file, as given.
    pub path: PathBuf,
    /// The sample (in seeded random order) and the file's figures.
    pub sampled: Arc<Sampled>,
    /// The sampling seed (`--seed`).
    pub seed: u64,
    /// vLLM's `--sharegpt-output-len` / `--custom-output-len`: every request's `max_tokens`
    /// when given (a `custom` line's own `output_tokens` wins over the default only).
    pub output_len: Option<u64>,
    /// The local tokenizer of `--tokenizer`: it sizes the prompts when the target has no
    /// `/tokenize` (the target's own count wins: it is the model's tokenizer by definition).
    pub tokenizer: Option<TokenizerFile>,
}

impl DatasetSource {
    /// Samples `n` usable entries of `path`, or says in one line why it cannot.
    pub fn load(format: FileFormat, path: &Path, n: usize, seed: u64, output_len: Option<u64>) -> Result<Self, String> {
        let sampled = sample_file(path, format, n, seed).map_err(|e| e.to_string())?;
        if sampled.conversations.is_empty() {
            let why = format!("{} entries, {} of them unusable", sampled.entries, sampled.unusable);
            return Err(format!("--dataset-path {}: no usable {} entry ({why})", path.display(), format.name()));
        }
        Ok(Self { format, path: path.to_path_buf(), sampled: Arc::new(sampled), seed, output_len, tokenizer: None })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_without_a_usable_entry_is_one_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("empty.jsonl");
        std::fs::write(&path, "{\"prompt\": \"\"}\n").unwrap();
        let e = DatasetSource::load(FileFormat::Custom, &path, 4, 1, None).unwrap_err();
        assert!(e.contains("no usable custom entry (1 entries, 1 of them unusable)") && !e.contains('\n'), "{e}");
        let e = DatasetSource::load(FileFormat::Custom, &dir.path().join("none"), 4, 1, None).unwrap_err();
        assert!(e.starts_with("--dataset-path ") && !e.contains('\n'), "{e}");
        std::fs::write(&path, "{\"prompt\": \"hi\", \"output_tokens\": 9}\n").unwrap();
        let d = DatasetSource::load(FileFormat::Custom, &path, 4, 1, None).unwrap();
        assert_eq!(d.sampled.conversations[0].output_tokens, Some(9));
    }
}
