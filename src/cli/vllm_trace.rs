//! The flags of trace replay under `--plan serve` (issue 24): `--dataset-name mooncake_trace|
//! azure_trace` with `--dataset-path FILE`, and `--replay-speed X` on the trace's own pace.

use crate::config::trace::ReplaySpeed;
use crate::dataset::trace::TraceFormat;
use clap::Args;

/// `--replay-speed`.
#[derive(Debug, Clone, Default, Args)]
pub struct TraceFlags {
    /// How much faster than a trace its requests are sent (--dataset-name mooncake_trace or
    /// azure_trace): 1 (default) keeps the trace's own gaps, 2 halves them, 0.5 doubles them.
    #[arg(long, value_name = "X", value_parser = replay_speed)]
    pub replay_speed: Option<ReplaySpeed>,
}

fn replay_speed(s: &str) -> Result<ReplaySpeed, String> {
    let x: f64 = s.trim().parse().map_err(|_| format!("{s}: not a number (a factor such as 2)"))?;
    ReplaySpeed::new(x)
}

/// The trace format `--dataset-name` names, if it names one.
pub(crate) fn trace_format(dataset_name: Option<&str>) -> Option<TraceFormat> {
    match dataset_name {
        Some("mooncake_trace") => Some(TraceFormat::Mooncake),
        Some("azure_trace") => Some(TraceFormat::Azure),
        _ => None,
    }
}

impl TraceFlags {
    /// The flags against the dataset: `--replay-speed` paces a trace; a trace arrives on its own
    /// schedule, so `--request-rate` (`rates_given`) has no meaning with it.
    pub fn check(&self, format: Option<TraceFormat>, rates_given: bool) -> Result<(), String> {
        match format {
            None if self.replay_speed.is_some() => {
                Err("--replay-speed paces a trace: add --dataset-name mooncake_trace or azure_trace".into())
            }
            Some(f) if rates_given => Err(format!(
                "--request-rate: {} arrives on the trace's own schedule; --replay-speed X scales it",
                f.name()
            )),
            _ => Ok(()),
        }
    }

    /// The speed, the trace's own pace when not given.
    pub fn speed(&self) -> ReplaySpeed {
        self.replay_speed.unwrap_or(ReplaySpeed::REAL_TIME)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_speed_goes_with_a_trace_and_the_rate_does_not() {
        let fast = TraceFlags { replay_speed: Some(ReplaySpeed::new(2.0).unwrap()) };
        assert!(fast.check(None, false).unwrap_err().starts_with("--replay-speed paces a trace"));
        assert_eq!(fast.check(trace_format(Some("azure_trace")), false), Ok(()));
        let e = TraceFlags::default().check(Some(TraceFormat::Mooncake), true).unwrap_err();
        assert!(e.contains("mooncake_trace arrives on the trace's own schedule"), "{e}");
        assert_eq!(TraceFlags::default().speed(), ReplaySpeed::REAL_TIME);
        assert!(replay_speed("0").is_err() && replay_speed("x").unwrap_err().contains("not a number"));
        assert_eq!(trace_format(Some("sharegpt")), None);
    }
}
