//! Settings of the serve experiment (`run --plan serve`): `vllm bench serve`'s random
//! workload, sized by its flag names.

use crate::stats::Slo;
use std::ops::RangeInclusive;

/// What every serve cell sends, besides its input length, concurrency and rate.
#[derive(Debug, Clone, PartialEq)]
pub struct ServeConfig {
    /// Requests per cell (`--count`, alias `--num-prompts`).
    pub num_prompts: u32,
    /// `max_tokens` of each request, sent with `ignore_eos` (`--output`, alias
    /// `--random-output-len`).
    pub output_len: u64,
    /// Seed of the prompts' token ids, their lengths and the arrival gaps (`--seed`).
    pub seed: u64,
    /// How far each request's input and output lengths spread around the cell's
    /// (`--random-range-ratio`, vLLM's; 0: every request exactly the mean).
    pub range_ratio: RangeRatio,
    /// The `--goodput` SLO; None when not given (no `request_goodput`, as vLLM).
    pub goodput: Option<Slo>,
    /// The dataset file the prompts come from (`--dataset-name sharegpt|custom`); None: vLLM's
    /// `random` workload of token ids.
    pub dataset: Option<super::dataset::DatasetSource>,
    /// vLLM's shared-prefix workload (`--dataset-name prefix_repetition`) instead of the
    /// `random` one; its output length is `output_len`.
    pub prefix_repetition: Option<super::prefix_repetition::PrefixRepetition>,
    /// The trace replayed on its own schedule (`--dataset-name mooncake_trace|azure_trace`)
    /// instead of the `random` workload; `num_prompts` is then the requests kept of it.
    pub trace: Option<super::trace::TraceSource>,
}

/// The spread of a serve cell's request lengths around their means.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RangeRatio(f64);

impl RangeRatio {
    /// Every request exactly the mean length.
    pub const FIXED: Self = Self(0.0);

    /// `r` when it is in [0, 1), vLLM's bounds.
    pub fn new(r: f64) -> Result<Self, String> {
        match (0.0..1.0).contains(&r) {
            true => Ok(Self(r)),
            false => Err(format!("{r}: the range ratio must be at least 0 and below 1, as vLLM's")),
        }
    }

    /// The ratio.
    pub fn get(self) -> f64 {
        self.0
    }

    /// The inclusive length range around `mean`, never below `floor` tokens.
    pub fn bounds(self, mean: u64, floor: u64) -> RangeInclusive<u64> {
        let low = (mean as f64 * (1.0 - self.0)).floor() as u64;
        let high = (mean as f64 * (1.0 + self.0)).ceil() as u64;
        low.max(floor)..=high.max(floor)
    }
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
