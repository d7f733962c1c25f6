//! A local tokenizer file (`--tokenizer PATH`, issue 24): Hugging Face's `tokenizer.json`, read
//! by the `tokenizers` crate with nothing downloaded, that sizes dataset prompts when the target
//! has no `/tokenize`. A text counts what vLLM counts for a completions prompt: special tokens
//! added (a BOS where the model's template has one), never truncated or padded.

use crate::load::calibrate::{CountError, TokenCounter};
use sha2::{Digest, Sha256};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The file looked for in a directory, as vLLM and `transformers` name it.
pub const FILE_NAME: &str = "tokenizer.json";

/// A tokenizer read from a local file.
#[derive(Clone)]
pub struct TokenizerFile {
    /// The file read (a directory given resolves to its `tokenizer.json`).
    pub path: PathBuf,
    /// The file's SHA-256, lower-case hex.
    pub sha256: String,
    tokenizer: Arc<tokenizers::Tokenizer>,
}

impl fmt::Debug for TokenizerFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenizerFile").field("path", &self.path).field("sha256", &self.sha256).finish()
    }
}

/// Two files are the same tokenizer when they hold the same bytes.
impl PartialEq for TokenizerFile {
    fn eq(&self, other: &Self) -> bool {
        self.sha256 == other.sha256
    }
}

/// `--tokenizer PATH: why`, on one line.
fn named(path: &Path, why: impl fmt::Display) -> String {
    let why = why.to_string();
    format!("--tokenizer {}: {}", path.display(), why.split_whitespace().collect::<Vec<_>>().join(" "))
}

impl TokenizerFile {
    /// Reads `path`, a `tokenizer.json` or a directory holding one, or says in one line why it
    /// cannot (nothing is downloaded: a model name is not a path).
    pub fn load(path: &Path) -> Result<Self, String> {
        let file = if path.is_dir() { path.join(FILE_NAME) } else { path.to_path_buf() };
        let bytes = std::fs::read(&file).map_err(|e| match (path.is_dir(), e.kind()) {
            (true, std::io::ErrorKind::NotFound) => {
                named(path, format!("no {FILE_NAME} in this directory (only Hugging Face's {FILE_NAME} is read)"))
            }
            (false, std::io::ErrorKind::NotFound) => {
                named(path, format!("{e}; give a local {FILE_NAME} or its directory (nothing is downloaded)"))
            }
            _ => named(&file, e),
        })?;
        let mut tokenizer = tokenizers::Tokenizer::from_bytes(&bytes)
            .map_err(|e| named(&file, format!("not a Hugging Face {FILE_NAME}: {e}")))?;
        // As `transformers` encodes unless asked otherwise: the whole text, unpadded.
        tokenizer.with_truncation(None).map_err(|e| named(&file, e))?;
        tokenizer.with_padding(None);
        let sha256 = Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect();
        Ok(Self { path: file, sha256, tokenizer: Arc::new(tokenizer) })
    }

    /// Tokens of `text` sent as a completions prompt: with the special tokens the template
    /// adds, as vLLM's `/tokenize` (`add_special_tokens`, default true) and `vllm bench serve`
    /// count it.
    pub fn count_now(&self, text: &str) -> Result<u64, String> {
        let encoding = self.tokenizer.encode_fast(text, true).map_err(|e| e.to_string())?;
        Ok(encoding.len() as u64)
    }
}

impl TokenCounter for TokenizerFile {
    /// Counts on a blocking thread: a long prompt is milliseconds of CPU, kept off the runtime
    /// the monitor and the other counts run on.
    async fn count(&self, text: &str) -> Result<u64, CountError> {
        let (me, text) = (self.clone(), text.to_string());
        match tokio::task::spawn_blocking(move || me.count_now(&text)).await {
            Ok(r) => r.map_err(CountError::Failed),
            Err(e) => Err(CountError::Failed(format!("the tokenizer stopped: {e}"))),
        }
    }
}

#[cfg(test)]
#[path = "tokenizer_tests.rs"]
mod tests;
