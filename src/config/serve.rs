//! Settings of the serve experiment (`run --plan serve`): `vllm bench serve`'s random
//! workload, sized by its flag names.

use crate::stats::Slo;

/// What every serve cell sends, besides its input length, concurrency and rate.
#[derive(Debug, Clone, PartialEq)]
pub struct ServeConfig {
    /// Requests per cell (`--count`, alias `--num-prompts`).
    pub num_prompts: u32,
    /// `max_tokens` of each request, sent with `ignore_eos` (`--output`, alias
    /// `--random-output-len`).
    pub output_len: u64,
    /// Seed of the prompts' token ids and of the arrival gaps (`--seed`).
    pub seed: u64,
    /// The `--goodput` SLO; None when not given (no `request_goodput`, as vLLM).
    pub goodput: Option<Slo>,
}

#[cfg(test)]
mod tests {
    use crate::cli::run::tests_support::config;
    use crate::config::PlanKind;
    use crate::config::settings::first_difference;

    #[test]
    fn serve_settings_appear_with_the_serve_plan_and_a_changed_one_is_named() {
        let mut a = config();
        assert!(!a.settings().contains_key("goodput"));
        a.plans = vec![PlanKind::Serve];
        let before = a.settings();
        assert_eq!((before["goodput"].as_str(), before["count"].as_str()), ("default", "96"));
        a.serve.goodput = crate::stats::Slo::from_goodput(&["ttft:2000 tpot:50".into()]).ok();
        let d = first_difference(&before, &a.settings()).unwrap();
        assert_eq!(d, "it was run with --goodput default, this run has --goodput ttft:2000 tpot:50");
    }
}
