//! vLLM's flags of `--dataset-name prefix_repetition` (`config::prefix_repetition`): the shared
//! prefix's and each suffix's length, the number of prefixes and the output length, vLLM's
//! defaults when not given.

use crate::config::prefix_repetition::PrefixRepetition;
use clap::Args;

/// The `--prefix-repetition-*` flags.
#[derive(Debug, Clone, Default, Args)]
pub struct PrefixRepetitionFlags {
    /// Tokens every request of a group shares, with --dataset-name prefix_repetition (vLLM's
    /// default 256).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1 << 24))]
    pub prefix_repetition_prefix_len: Option<u64>,
    /// Tokens of each request's own random suffix (vLLM's default 256).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(0..=1 << 24))]
    pub prefix_repetition_suffix_len: Option<u64>,
    /// Distinct prefixes each serve cell draws; its --num-prompts requests are dealt among them
    /// evenly (vLLM's default 10).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub prefix_repetition_num_prefixes: Option<u32>,
    /// `max_tokens` of every request, tokens (vLLM's default 128; --random-output-len does not
    /// apply to this dataset).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub prefix_repetition_output_len: Option<u64>,
}

impl PrefixRepetitionFlags {
    /// True when any of the flags was given.
    fn any(&self) -> bool {
        self.prefix_repetition_prefix_len.is_some()
            || self.prefix_repetition_suffix_len.is_some()
            || self.prefix_repetition_num_prefixes.is_some()
            || self.prefix_repetition_output_len.is_some()
    }

    /// The workload when `dataset_name` is `prefix_repetition`; an error when the flags are
    /// given without it, or its `num_prompts` requests a cell are fewer than its prefixes.
    pub fn config(&self, dataset_name: Option<&str>, num_prompts: u32) -> Result<Option<PrefixRepetition>, String> {
        if dataset_name != Some("prefix_repetition") {
            return match self.any() {
                true => Err("--prefix-repetition-* flags shape --dataset-name prefix_repetition's requests".into()),
                false => Ok(None),
            };
        }
        let d = PrefixRepetition::DEFAULT;
        let p = PrefixRepetition {
            prefix_len: self.prefix_repetition_prefix_len.unwrap_or(d.prefix_len),
            suffix_len: self.prefix_repetition_suffix_len.unwrap_or(d.suffix_len),
            num_prefixes: self.prefix_repetition_num_prefixes.unwrap_or(d.num_prefixes),
            output_len: self.prefix_repetition_output_len.unwrap_or(d.output_len),
        };
        p.check(num_prompts).map(|_| Some(p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flags_go_with_their_dataset_and_default_as_vllm() {
        let none = PrefixRepetitionFlags::default();
        assert_eq!(none.config(None, 96), Ok(None));
        assert_eq!(none.config(Some("prefix_repetition"), 96), Ok(Some(PrefixRepetition::DEFAULT)));
        let given = PrefixRepetitionFlags { prefix_repetition_num_prefixes: Some(4), ..none.clone() };
        assert!(given.config(Some("random"), 96).unwrap_err().starts_with("--prefix-repetition-* flags"));
        let p = given.config(Some("prefix_repetition"), 8).unwrap().unwrap();
        assert_eq!((p.num_prefixes, p.prefix_len, p.output_len), (4, 256, 128));
        assert!(given.config(Some("prefix_repetition"), 3).unwrap_err().contains("fewer than"));
    }
}
