//! `run --num-runs N` (issue 25, repetitions): every cell runs N times back to back, and its
//! figures become the mean of its runs with their spread (`report::runs`). Checked here, so 0
//! or junk is one line and exit 2 before any load is sent.

use clap::Args;

/// The most runs a cell may be asked for: more is a typo, not a plan.
pub(crate) const MAX_RUNS: u32 = 1000;

/// `--num-runs`.
#[derive(Debug, Clone, Default, Args)]
pub struct RunsFlags {
    /// Runs of every cell, back to back (decode cells, bursts, serve and conversation cells,
    /// routing phases): each run is one attempt, and the cell reports every headline figure's
    /// mean, standard deviation, CV and 95% confidence interval over them; its tables show the
    /// means. `compare` and `--baseline` call a change inside the interval `within noise`
    /// [default: 1].
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub num_runs: Option<String>,
}

impl RunsFlags {
    /// Runs per cell: 1 when not given; the error names the flag and says what it takes.
    pub fn runs(&self) -> Result<u32, String> {
        let Some(given) = &self.num_runs else { return Ok(1) };
        let bad = || format!("--num-runs {given}: takes a whole number of runs per cell, from 1 to {MAX_RUNS}");
        match given.trim().parse::<u32>() {
            Ok(n) if (1..=MAX_RUNS).contains(&n) => Ok(n),
            _ => Err(bad()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(s: Option<&str>) -> Result<u32, String> {
        RunsFlags { num_runs: s.map(String::from) }.runs()
    }

    #[test]
    fn one_by_default_and_zero_or_junk_is_one_line_naming_the_flag() {
        assert_eq!(runs(None), Ok(1));
        assert_eq!(runs(Some("3")), Ok(3));
        assert_eq!(runs(Some(" 5 ")), Ok(5));
        for bad in ["0", "-1", "x", "2.5", "", "1001", "99999999999"] {
            let e = runs(Some(bad)).unwrap_err();
            assert!(e.starts_with(&format!("--num-runs {bad}: ")) && !e.contains('\n'), "{e}");
        }
    }
}
