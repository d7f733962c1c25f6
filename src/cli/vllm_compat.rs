//! The flags of `vllm bench serve` that users paste: accepted under vLLM's names where they
//! mean something here (`--host`/`--port`, `--backend`, `--ignore-eos`, `--dataset-name
//! random|prefix_repetition|sharegpt|custom|mooncake_trace|azure_trace` with `--dataset-path`, `--tokenizer`, `--random-range-ratio`, `--served-model-name`, `--disable-tqdm`), refused with one
//! line that says what to use instead otherwise (the rest: `vllm_refused.rs`).

use crate::config::serve::RangeRatio;
use crate::dataset::FileFormat;
use crate::load::request::Endpoint;
use clap::Args;

/// vLLM's names, beside `run`'s own flags.
#[derive(Debug, Clone, Default, Args)]
pub struct VllmFlags {
    /// vLLM's server host: with --port, the target is http://HOST:PORT (instead of --base-url).
    #[arg(long)]
    pub host: Option<String>,
    /// vLLM's server port (8000 when only --host is given).
    #[arg(long)]
    pub port: Option<u16>,
    /// vLLM's --backend: `vllm` or `openai` load /v1/completions, `openai-chat` /v1/chat/completions
    /// (the same as --endpoint completions / chat).
    #[arg(long, value_parser = backend)]
    pub backend: Option<Endpoint>,
    /// Accepted as vLLM has it: every request this tool sends already sets `ignore_eos`, so it
    /// runs to its max_tokens.
    #[arg(long)]
    pub ignore_eos: bool,
    /// vLLM's name the requests carry (`"model"`), when it differs from --model: it wins.
    #[arg(long, value_name = "NAME")]
    pub served_model_name: Option<String>,
    /// vLLM's --disable-tqdm: no live display, progress lines on stderr (the same as --headless).
    #[arg(long)]
    pub disable_tqdm: bool,
    /// vLLM's dataset of `--plan serve`: `random` (default: random token ids of
    /// --random-input-len), `sharegpt` (a ShareGPT JSON file), `custom` (JSONL, a `prompt`
    /// and optional `output_tokens` per line), the two read from --dataset-path, or
    /// `prefix_repetition` (random prefixes shared by groups of requests:
    /// --prefix-repetition-*), or a trace replayed on its own schedule: `mooncake_trace`
    /// (Mooncake JSONL) or `azure_trace` (the Azure LLM inference CSV), from --dataset-path.
    #[arg(long, value_name = "NAME")]
    pub dataset_name: Option<String>,
    /// The dataset file of `--dataset-name sharegpt|custom|mooncake_trace|azure_trace`, read
    /// once before any load.
    #[arg(long, value_name = "FILE")]
    pub dataset_path: Option<std::path::PathBuf>,
    /// `max_tokens` of every ShareGPT request, tokens (default: the length of the dataset's
    /// own answer, counted by the server's /tokenize).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub sharegpt_output_len: Option<u64>,
    /// `max_tokens` of a `custom` line without its own `output_tokens`, tokens (vLLM's default
    /// 256).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub custom_output_len: Option<u64>,
    /// Refused: the report keeps every request (see the error's hint).
    #[arg(long, hide = true)]
    pub metric_percentiles: Option<String>,
    /// Refused (see the error's hint).
    #[arg(long, hide = true)]
    pub percentile_metrics: Option<String>,
    /// vLLM's --random-range-ratio R (--plan serve): each request's input and output length is
    /// drawn uniformly from [floor(L·(1−R)), ceil(L·(1+R))] around the cell's --random-input-len
    /// and --random-output-len L; 0 (default): every request exactly L. At least 0, below 1.
    #[arg(long, value_name = "R", value_parser = range_ratio, allow_negative_numbers = true)]
    pub random_range_ratio: Option<RangeRatio>,
    /// vLLM's --tokenizer, a local path (nothing is downloaded): a Hugging Face
    /// `tokenizer.json`, or a directory holding one. It counts the prompts and answers of
    /// --dataset-name sharegpt|custom before the load when the target has no /tokenize (the
    /// target's own count wins, and a file that counts otherwise is warned about); without
    /// either, lengths come from each request's usage.
    #[arg(long, value_name = "PATH")]
    pub tokenizer: Option<std::path::PathBuf>,
    /// vLLM's `--prefix-repetition-*` flags.
    #[command(flatten)]
    pub prefix: super::vllm_prefix::PrefixRepetitionFlags,
    /// `--replay-speed` of a trace.
    #[command(flatten)]
    pub trace: super::vllm_trace::TraceFlags,
    /// vLLM's flags without a meaning here (`--temperature`, `--num-warmups`, ...), refused.
    #[command(flatten)]
    pub other: super::vllm_refused::VllmRefused,
}

fn range_ratio(s: &str) -> Result<RangeRatio, String> {
    let r: f64 = s.trim().parse().map_err(|_| format!("{s}: not a number (a ratio such as 0.25)"))?;
    RangeRatio::new(r)
}

fn backend(s: &str) -> Result<Endpoint, String> {
    match s {
        "vllm" | "openai" => Ok(Endpoint::Completions),
        "openai-chat" => Ok(Endpoint::Chat),
        other => Err(format!("{other}: this tool speaks the OpenAI API: vllm, openai (completions) or openai-chat")),
    }
}

impl VllmFlags {
    /// The one-line error of the first vLLM flag that has no meaning here, naming what to use.
    pub fn refused(&self) -> Option<String> {
        let given = |o: &Option<String>| o.is_some();
        let known = ["random", "sharegpt", "custom", "prefix_repetition", "mooncake_trace", "azure_trace"];
        let rules: [(bool, &str); 3] = [
            (
                self.dataset_name.as_deref().is_some_and(|d| !known.contains(&d)),
                "--dataset-name: built in are vLLM's random, prefix_repetition, sharegpt and custom, and the traces mooncake_trace and azure_trace (the last four with --dataset-path FILE)",
            ),
            (
                given(&self.metric_percentiles),
                "--metric-percentiles: the report keeps every request; pick percentiles when reading it: `report FILE --format vllm --percentiles 50,90,99` or `compare --percentiles`",
            ),
            (
                given(&self.percentile_metrics),
                "--percentile-metrics: every metric (TTFT, TPOT, ITL, E2EL) is in the report; `report FILE --format vllm` exports them",
            ),
        ];
        let line = rules.into_iter().find(|(hit, _)| *hit).map(|(_, line)| line.to_string());
        line.or_else(|| self.other.refused())
    }

    /// The dataset file's layout: None for vLLM's `random` workload; an error when the name
    /// and the file, or an output-length flag and the dataset, do not go together.
    pub fn dataset_format(&self) -> Result<Option<FileFormat>, String> {
        let format = match self.dataset_name.as_deref() {
            Some("sharegpt") => Some(FileFormat::ShareGpt),
            Some("custom") => Some(FileFormat::Custom),
            _ => None,
        };
        let trace = super::vllm_trace::trace_format(self.dataset_name.as_deref());
        let file = format.map(FileFormat::name).or(trace.map(|t| t.name()));
        match (file, &self.dataset_path) {
            (None, Some(_)) => {
                return Err(
                    "--dataset-path needs --dataset-name sharegpt, custom, mooncake_trace or azure_trace".into()
                );
            }
            (Some(name), None) => return Err(format!("--dataset-name {name} reads a file: add --dataset-path FILE")),
            _ => {}
        }
        if self.sharegpt_output_len.is_some() && format != Some(FileFormat::ShareGpt) {
            return Err("--sharegpt-output-len sizes --dataset-name sharegpt's requests".into());
        }
        if self.custom_output_len.is_some() && format != Some(FileFormat::Custom) {
            return Err("--custom-output-len sizes --dataset-name custom's requests".into());
        }
        if self.tokenizer.is_some() && format.is_none() {
            return Err("--tokenizer counts the text prompts of --dataset-name sharegpt|custom; the other datasets send token ids, exact without it".into());
        }
        Ok(format)
    }

    /// The dataset flags against the plan: a dataset other than `random` feeds `--plan serve`,
    /// whose `--random-range-ratio` spreads only the `random` one.
    pub fn check_with_plan(&self, serve: bool, conversation: bool) -> Result<(), String> {
        if self.random_range_ratio.is_some() && !serve {
            return Err("--random-range-ratio spreads the serve experiment's lengths: add --plan serve".into());
        }
        let trace = super::vllm_trace::trace_format(self.dataset_name.as_deref());
        let name = match (self.dataset_format()?, trace) {
            (Some(format), _) => format.name(),
            (None, Some(t)) => t.name(),
            (None, None) if self.dataset_name.as_deref() == Some("prefix_repetition") => "prefix_repetition",
            (None, None) => return Ok(()),
        };
        if conversation && !serve && name != "sharegpt" {
            return Err(format!(
                "--dataset-name {name}: the conversation experiment reads sharegpt files; {name} feeds --plan serve"
            ));
        }
        let conversations = conversation && name == "sharegpt";
        if !serve && !conversations {
            let also = if name == "sharegpt" { " (or --plan conversation)" } else { "" };
            return Err(format!("--dataset-name {name} feeds the serve experiment: add --plan serve{also}"));
        }
        match self.random_range_ratio {
            Some(_) => Err(format!("--random-range-ratio spreads the random dataset's lengths; {name} has its own")),
            None => Ok(()),
        }
    }

    /// The target: `--base-url`, or vLLM's `--host`/`--port`; both, or neither, is an error.
    pub fn base_url(&self, base_url: Option<&str>) -> Result<String, String> {
        match (base_url, &self.host, self.port) {
            (Some(_), Some(_), _) | (Some(_), _, Some(_)) => {
                Err("--base-url and --host/--port both name the target: give one of them".into())
            }
            (Some(b), None, None) => Ok(b.to_string()),
            (None, None, None) => Err("no target: give --base-url URL (or vLLM's --host and --port)".into()),
            (None, host, port) => {
                let host = host.as_deref().unwrap_or("127.0.0.1");
                let host = if host.contains(':') && !host.starts_with('[') { format!("[{host}]") } else { host.into() };
                let url = format!("http://{host}:{}", port.unwrap_or(8000));
                crate::net::check_url(&url).map(|_| url).map_err(|e| format!("--host/--port: {e}"))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_and_port_make_the_target_and_clash_with_base_url() {
        let f = |host: Option<&str>, port: Option<u16>| VllmFlags {
            host: host.map(Into::into),
            port,
            ..VllmFlags::default()
        };
        assert_eq!(f(Some("10.0.0.2"), Some(9000)).base_url(None).unwrap(), "http://10.0.0.2:9000");
        assert_eq!(f(None, Some(9000)).base_url(None).unwrap(), "http://127.0.0.1:9000", "vLLM's default host");
        assert_eq!(f(Some("::1"), None).base_url(None).unwrap(), "http://[::1]:8000");
        assert_eq!(f(None, None).base_url(Some("http://h:1")).unwrap(), "http://h:1");
        assert!(f(Some("h"), None).base_url(Some("http://h:1")).unwrap_err().contains("give one of them"));
        assert!(f(None, None).base_url(None).unwrap_err().starts_with("no target"));
    }

    #[test]
    fn flags_without_a_meaning_here_say_what_to_use() {
        assert_eq!(VllmFlags::default().refused(), None);
        let random = VllmFlags { dataset_name: Some("random".into()), ignore_eos: true, ..VllmFlags::default() };
        assert_eq!(random.refused(), None, "the built-in dataset and ignore_eos are accepted");
        let pct = VllmFlags { metric_percentiles: Some("50,99".into()), ..VllmFlags::default() };
        assert!(pct.refused().unwrap().contains("report FILE --format vllm --percentiles"));
        let sharegpt = VllmFlags { dataset_name: Some("sharegpt".into()), ..VllmFlags::default() };
        assert_eq!(sharegpt.refused(), None, "a dataset vLLM names is accepted");
        let sonnet = VllmFlags { dataset_name: Some("sonnet".into()), ..VllmFlags::default() };
        assert!(sonnet.refused().unwrap().starts_with("--dataset-name: built in are"));
        assert_eq!(backend("openai-chat"), Ok(Endpoint::Chat));
        assert!(backend("tgi").is_err());
    }

    #[test]
    fn a_dataset_name_and_its_file_go_together() {
        let f = |name: Option<&str>, path: Option<&str>| VllmFlags {
            dataset_name: name.map(Into::into),
            dataset_path: path.map(Into::into),
            ..VllmFlags::default()
        };
        assert_eq!(f(None, None).dataset_format(), Ok(None));
        assert_eq!(f(Some("random"), None).dataset_format(), Ok(None));
        assert_eq!(f(Some("sharegpt"), Some("a.json")).dataset_format(), Ok(Some(FileFormat::ShareGpt)));
        assert_eq!(f(Some("custom"), Some("a.jsonl")).dataset_format(), Ok(Some(FileFormat::Custom)));
        assert!(f(Some("sharegpt"), None).dataset_format().unwrap_err().contains("add --dataset-path FILE"));
        assert!(f(None, Some("a.json")).dataset_format().unwrap_err().starts_with("--dataset-path needs"));
        let len = VllmFlags { sharegpt_output_len: Some(64), ..f(Some("custom"), Some("a.jsonl")) };
        assert!(len.dataset_format().unwrap_err().starts_with("--sharegpt-output-len"));
        let tok = |name| VllmFlags { tokenizer: Some("t.json".into()), ..f(Some(name), Some("a.jsonl")) };
        assert_eq!(tok("custom").dataset_format(), Ok(Some(FileFormat::Custom)));
        assert!(tok("mooncake_trace").dataset_format().unwrap_err().contains("the other datasets send token ids"));
    }
}
