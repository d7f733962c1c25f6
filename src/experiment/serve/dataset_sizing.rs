//! Who sizes a serve session's dataset prompts (issue 24), in the order a serving engineer
//! trusts them: the target's own `/tokenize` (it is the served model's tokenizer by
//! definition), else the local `--tokenizer` file, else each request's `usage` after the load.
//! A file given beside a `/tokenize` is checked against it on a few prompts, because a wrong
//! file (another model's) is an easy mistake whose lengths would look plausible.

use super::dataset::{DatasetPrompt, DatasetPrompts, prepare};
use crate::dataset::tokenizer::TokenizerFile;
use crate::load::calibrate::TokenCounter;
use crate::report::dataset::TokenizerRecord;

/// Prompts the `--tokenizer` file counts again after `/tokenize` counted them: local CPU only,
/// nothing more is sent to the target.
const CHECKED: usize = 8;

/// Where the prompt lengths come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LengthSource {
    /// The target's (or a replica's) `POST /tokenize`, before the load.
    Tokenize,
    /// The local `--tokenizer` file, before the load.
    TokenizerFile,
    /// Each request's `usage.prompt_tokens`, after it ran.
    Usage,
}

impl LengthSource {
    /// The report's name (`input_len_source`).
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Tokenize => "tokenize",
            Self::TokenizerFile => "tokenizer_file",
            Self::Usage => "usage",
        }
    }
}

/// The file's record after it counted the first prompts `/tokenize` counted, and the first
/// disagreement (file, target) when there was one.
pub(crate) async fn check(file: &TokenizerFile, prompts: &[DatasetPrompt]) -> (TokenizerRecord, Option<(u64, u64)>) {
    let mut record = record(file);
    let mut first = None;
    for p in prompts.iter().take(CHECKED) {
        let (Some(target), Ok(own)) = (p.input_tokens, file.count(&p.text).await) else { continue };
        record.compared += 1;
        if own != target {
            record.disagreed += 1;
            first.get_or_insert((own, target));
        }
    }
    (record, first)
}

/// The file's record before any comparison.
fn record(file: &TokenizerFile) -> TokenizerRecord {
    TokenizerRecord { path: file.path.display().to_string(), sha256: file.sha256.clone(), compared: 0, disagreed: 0 }
}

/// The session's dataset prompts for `serve_cells` cells, when `--dataset-name` gave a file:
/// counted by the `/tokenize` of the target, else of a replica (routers often do not proxy it),
/// else by the `--tokenizer` file, else left to the requests' usage; said on stderr.
pub(crate) async fn for_session(
    env: &crate::experiment::prepare::PrepareEnv<'_>,
    serve_cells: usize,
) -> anyhow::Result<Option<std::sync::Arc<DatasetPrompts>>> {
    use crate::cell::calibration::{BoundedCounter, detect_among};
    use crate::load::client::ApiClient;
    use crate::load::counters::CountMethod;
    let cfg = env.cfg;
    let Some(src) = &cfg.serve.dataset else { return Ok(None) };
    let replicas: Vec<ApiClient> = env
        .metrics
        .iter()
        .map(|m| ApiClient::new(env.client.backend().clone(), &crate::net::replica_base(&m.url), cfg.api_key.clone()))
        .collect();
    let mut counting = cfg.clone();
    // Dataset prompts go to /v1/completions (`attempt.rs`): counted as a completions prompt.
    counting.endpoint = crate::load::request::Endpoint::Completions;
    let found = detect_among(env.client, &replicas, &env.facts.model, &counting).await;
    let (n, name, per_cell, fallback) =
        (src.sampled.conversations.len(), src.format.name(), cfg.serve.num_prompts as usize, cfg.serve.output_len);
    let prompts = match (found.method == CountMethod::Tokenize, &src.tokenizer) {
        (true, file) => {
            crate::err_line!("preflight: counting {n} sampled {name} entries with /tokenize");
            let server = BoundedCounter::new(found, &counting);
            let by = Some((&server, LengthSource::Tokenize));
            let mut prompts = prepare(src, by, per_cell, serve_cells, fallback).await;
            if let (Ok(p), Some(file)) = (&mut prompts, file) {
                p.record.tokenizer = Some(checked(file, p).await);
            }
            prompts
        }
        (false, Some(file)) => {
            let path = file.path.display();
            crate::err_line!("preflight: no /tokenize: counting {n} sampled {name} entries with --tokenizer {path}");
            let by = Some((file, LengthSource::TokenizerFile));
            let mut prompts = prepare(src, by, per_cell, serve_cells, fallback).await;
            if let Ok(p) = &mut prompts {
                p.record.tokenizer = Some(record(file));
            }
            prompts
        }
        (false, None) => {
            crate::err_line!(
                "preflight: no /tokenize: {name} prompt lengths come from each request's usage (--tokenizer FILE counts them before the load)"
            );
            prepare::<TokenizerFile>(src, None, per_cell, serve_cells, fallback).await
        }
    };
    Ok(Some(std::sync::Arc::new(prompts.map_err(anyhow::Error::msg)?)))
}

/// [`check`] of the session's first prompts, warning on stderr when the file disagreed.
async fn checked(file: &TokenizerFile, prompts: &DatasetPrompts) -> TokenizerRecord {
    let (record, first) = check(file, prompts.first(CHECKED)).await;
    if let Some((own, target)) = first {
        crate::err_line!(
            "preflight: warning: --tokenizer {} counted {} of {} prompts unlike the target's /tokenize (e.g. {own} tokens where it counts {target}): not the served model's tokenizer? lengths come from /tokenize",
            record.path,
            record.disagreed,
            record.compared
        );
    }
    record
}

#[cfg(test)]
#[path = "dataset_sizing_tests.rs"]
mod tests;
