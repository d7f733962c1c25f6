//! Top-level flags: the demo that runs when no subcommand is given, and its display options.

use crate::units::parse_duration;
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

/// Flags of the demo session (`llm-decode-bench` with no subcommand, or `--demo`).
#[derive(Debug, Clone, Args)]
pub struct DemoArgs {
    /// Run the demo: an embedded simulated cluster and a short decode + routing session.
    #[arg(long)]
    pub demo: bool,
    /// Speed of the demo's simulated cluster (modelled time runs this many times faster).
    #[arg(long, default_value_t = 10.0)]
    pub demo_speed: f64,
    /// Measurement window of each demo decode cell (wall clock); at least 1s (4 metric polls).
    #[arg(long, value_parser = parse_duration, default_value = "4s")]
    pub demo_window: Duration,
    /// Print progress and the final tables instead of opening the live monitor.
    #[arg(long)]
    pub headless: bool,
    /// Report file of the demo session (default: sessions/<timestamp>.json); an existing file
    /// is refused unless --overwrite is given.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Let the demo's --out replace an existing file.
    #[arg(long)]
    pub overwrite: bool,
    /// Also append the log lines to this file (the monitor's log panel, or headless progress).
    #[arg(long)]
    pub log_file: Option<PathBuf>,
    /// Plain ASCII tables in headless output.
    #[arg(long)]
    pub ascii: bool,
}

impl DemoArgs {
    /// Checks the demo's numbers: a speed from 0.01 to 1000, a window of at least 4 polls of
    /// the demo's 250 ms poll interval.
    pub fn check(&self) -> Result<(), String> {
        crate::units::in_range("--demo-speed", self.demo_speed, 0.01, 1000.0)?;
        if self.demo_window.is_zero() {
            return Err("--demo-window must be longer than 0".into());
        }
        let floor = super::run_bounds::shortest_window(crate::config::RunConfig::defaults("http://x").poll_interval);
        match self.demo_window >= floor {
            true => Ok(()),
            false => {
                Err(format!("--demo-window must be at least {} (4 metric polls)", humantime::format_duration(floor)))
            }
        }
    }
}
