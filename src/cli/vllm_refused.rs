//! The other flags of `vllm bench serve` users paste, none with a meaning here: each is
//! refused with one line that says why and what to use instead, rather than clap's guess at a
//! similarly spelt flag of ours (`--top-p` → `--prompt-tokens`).

use clap::Args;

/// vLLM's flags without a meaning here; hidden from `--help`, refused when given.
#[derive(Debug, Clone, Default, Args)]
pub struct VllmRefused {
    /// Refused: vLLM's, no meaning here (see the error).
    #[arg(long, hide = true)]
    trust_remote_code: bool,
    /// Refused: vLLM's, no meaning here (see the error).
    #[arg(long, hide = true)]
    num_warmups: Option<String>,
    /// Refused: vLLM's, no meaning here (see the error).
    #[arg(long, hide = true)]
    profile: bool,
    /// Refused: vLLM's, no meaning here (see the error).
    #[arg(long, hide = true, allow_negative_numbers = true)]
    temperature: Option<String>,
    /// Refused: vLLM's, no meaning here (see the error).
    #[arg(long, hide = true, allow_negative_numbers = true)]
    top_p: Option<String>,
    /// Refused: vLLM's, no meaning here (see the error).
    #[arg(long, hide = true, allow_negative_numbers = true)]
    top_k: Option<String>,
    /// Refused: vLLM's, no meaning here (see the error).
    #[arg(long, hide = true, allow_negative_numbers = true)]
    min_p: Option<String>,
    /// Refused: vLLM's, no meaning here (see the error).
    #[arg(long, hide = true)]
    append_result: bool,
    /// Refused: vLLM's, no meaning here (see the error).
    #[arg(long, hide = true)]
    random_prefix_len: Option<String>,
    /// Refused: vLLM's, no meaning here (see the error).
    #[arg(long, hide = true)]
    label: Option<String>,
    /// Refused: vLLM's, no meaning here (see the error).
    #[arg(long, hide = true)]
    ready_check_timeout_sec: Option<String>,
    /// Refused: vLLM's, no meaning here (see the error).
    #[arg(long, hide = true)]
    save_detailed: bool,
    /// Refused: vLLM's, no meaning here (see the error).
    #[arg(long, hide = true)]
    request_id_prefix: Option<String>,
    /// Refused: vLLM's, no meaning here (see the error).
    #[arg(long, hide = true, num_args = 1..)]
    metadata: Vec<String>,
    /// Refused: vLLM's, no meaning here (see the error).
    #[arg(long, hide = true)]
    tokenizer_mode: Option<String>,
    /// Refused: vLLM's, no meaning here (see the error).
    #[arg(long, hide = true)]
    logprobs: Option<String>,
    /// Refused: vLLM's, no meaning here (see the error).
    #[arg(long, hide = true)]
    use_beam_search: bool,
}

/// Sampling flags share one reason.
const SAMPLING: &str = "requests carry no sampling parameters (the server's defaults, with ignore_eos and max_tokens): throughput and latency do not depend on them";

impl VllmRefused {
    /// The one-line error of the first flag given, or None.
    pub fn refused(&self) -> Option<String> {
        let given = |o: &Option<String>| o.is_some();
        let rules: [(bool, &str, &str); 17] = [
            (
                self.trust_remote_code,
                "--trust-remote-code",
                "no model or tokenizer code is run here (a --tokenizer file is data): drop it",
            ),
            (
                given(&self.num_warmups),
                "--num-warmups",
                "serve cells send no warm-up requests (a decode cell warms up until every stream decodes: --warmup-timeout)",
            ),
            (self.profile, "--profile", "no profiler is driven: start the server's own profiler separately"),
            (given(&self.temperature), "--temperature", SAMPLING),
            (given(&self.top_p), "--top-p", SAMPLING),
            (given(&self.top_k), "--top-k", SAMPLING),
            (given(&self.min_p), "--min-p", SAMPLING),
            (
                self.append_result,
                "--append-result",
                "each run writes its own report (--out, --result-filename); set two side by side with `compare A B`",
            ),
            (
                given(&self.random_prefix_len),
                "--random-prefix-len",
                "serve prompts share no prefix; the shared-prefix workload is the routing plan's (--plan routing --scenarios hot90)",
            ),
            (given(&self.label), "--label", "the report is named by --out or --result-filename"),
            (
                given(&self.ready_check_timeout_sec),
                "--ready-check-timeout-sec",
                "preflight checks the server once before any load: start the server first",
            ),
            (
                self.save_detailed,
                "--save-detailed",
                "the report always holds every request (request_samples): `report FILE --format csv --per-request` lists them",
            ),
            (given(&self.request_id_prefix), "--request-id-prefix", "requests carry no ids of ours: drop it"),
            (
                !self.metadata.is_empty(),
                "--metadata",
                "the report records the plan and the target itself (its plan and header)",
            ),
            (
                given(&self.tokenizer_mode),
                "--tokenizer-mode",
                "--tokenizer reads a tokenizer.json with Hugging Face's tokenizers, as vLLM's `auto` mode (the fast tokenizer) does; no other mode is offered: drop it",
            ),
            (given(&self.logprobs), "--logprobs", "requests ask for no logprobs: drop it"),
            (self.use_beam_search, "--use-beam-search", "requests are plain sampling to max_tokens: drop it"),
        ];
        rules.into_iter().find(|(hit, ..)| *hit).map(|(_, flag, why)| format!("{flag} (vllm bench serve): {why}"))
    }
}

#[cfg(test)]
mod tests {
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn run(args: &[&str]) -> String {
        let mut all = vec!["llm-decode-bench", "run", "--base-url", "http://127.0.0.1:9"];
        all.extend_from_slice(args);
        match Cli::try_parse_from(all).map(|cli| cli.command) {
            Ok(Some(Command::Run(r))) => r.to_config().err().unwrap_or_default(),
            Ok(_) => "not run".into(),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn each_flag_is_refused_in_one_line_naming_itself() {
        let cases: [&[&str]; 17] = [
            &["--trust-remote-code"],
            &["--num-warmups", "3"],
            &["--profile"],
            &["--temperature", "0"],
            &["--top-p", "0.9"],
            &["--top-k", "-1"],
            &["--min-p", "0.1"],
            &["--append-result"],
            &["--random-prefix-len", "128"],
            &["--label", "x"],
            &["--ready-check-timeout-sec", "600"],
            &["--save-detailed"],
            &["--request-id-prefix", "r"],
            &["--metadata", "a=1", "b=2"],
            &["--tokenizer-mode", "auto"],
            &["--logprobs", "1"],
            &["--use-beam-search"],
        ];
        for args in cases {
            let e = run(args);
            assert!(e.starts_with(&format!("{} (vllm bench serve): ", args[0])), "{args:?}: {e}");
            assert!(!e.contains('\n') && !e.contains("tip:"), "{args:?}: {e}");
        }
    }
}
