//! `run --observe --prometheus URL --client-selector SEL`: watch a sharded session through a
//! Prometheus server instead of sending load (src/cmd/observe/).

use crate::metrics::observe::ClientSource;
use crate::units::parse_duration;
use clap::Args;
use std::time::Duration;

/// How long a stale shard holds the observer open when `--observe-give-up` is not given.
pub(crate) const GIVE_UP_DEFAULT: Duration = Duration::from_secs(60);

/// Flags of the observer.
#[derive(Debug, Clone, Default, Args)]
pub struct ObserveFlags {
    /// Send no load: watch a sharded session through --prometheus, its per-cell figures summed
    /// over shards (PromQL) and each shard's health, from the client series its shards serve
    /// with --metrics-listen (selected by --client-selector). Ends when every shard reported
    /// session_finished or has been stale for --observe-give-up, at --observe-timeout, or on a signal
    #[arg(
        long,
        conflicts_with_all = [
            "base_url", "host", "port", "plan", "ctx", "conc", "window", "metrics_listen", "shard", "shards",
            "session_id", "start_at", "resume", "server_cmd", "num_runs", "source_addrs", "run_burst",
            "stop_at_knee", "slo_search", "num_conversations", "model", "max_tokens", "seed", "no_metrics",
        ]
    )]
    pub observe: bool,
    /// With --observe: label matchers of the session's client series on the --prometheus
    /// server, e.g. '{job="shards",session="s-1"}' (braces optional)
    #[arg(long, value_name = "MATCHERS", requires = "observe")]
    pub client_selector: Option<String>,
    /// With --observe: stop observing after this long even if shards still run (default: no bound)
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, requires = "observe")]
    pub observe_timeout: Option<Duration>,
    /// With --observe: a shard stale this long no longer holds the observer open (its
    /// countdown shows on the screen); 0 waits for it to come back, the timeout or a signal
    /// [default: 60s]
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, requires = "observe")]
    pub observe_give_up: Option<Duration>,
}

impl ObserveFlags {
    /// `--observe-give-up` in seconds ([`GIVE_UP_DEFAULT`] when not given); `None` for 0
    /// (never give up on a stale shard).
    pub fn give_up_s(&self) -> Option<f64> {
        let d = self.observe_give_up.unwrap_or(GIVE_UP_DEFAULT);
        (!d.is_zero()).then_some(d.as_secs_f64())
    }

    /// The client series' source when `--observe` is given; a one-line error when its
    /// companions are missing or malformed.
    pub fn source(&self, prometheus: Option<&str>) -> Result<Option<ClientSource>, String> {
        if !self.observe {
            let given =
                self.client_selector.is_some() || self.observe_timeout.is_some() || self.observe_give_up.is_some();
            return match given {
                true => Err("--client-selector, --observe-timeout and --observe-give-up go with --observe".into()),
                false => Ok(None),
            };
        }
        let (Some(url), Some(sel)) = (prometheus, self.client_selector.as_deref()) else {
            return Err(
                "--observe needs --prometheus URL (the server scraping the shards) and --client-selector MATCHERS (their series)"
                    .into(),
            );
        };
        ClientSource::new(url, sel).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn give_up_defaults_to_60_s_zero_waits_and_the_flags_need_observe() {
        let on = |give_up| ObserveFlags {
            observe: true,
            client_selector: Some(r#"job="shards""#.into()),
            observe_give_up: give_up,
            ..ObserveFlags::default()
        };
        assert_eq!(on(None).give_up_s(), Some(60.0));
        assert_eq!(on(Some(Duration::from_secs(5))).give_up_s(), Some(5.0));
        assert_eq!(on(Some(Duration::ZERO)).give_up_s(), None, "0 never gives up");
        assert!(on(None).source(Some("http://127.0.0.1:9090")).unwrap().is_some());
        let off = ObserveFlags { observe: false, ..on(Some(Duration::ZERO)) };
        let e = off.source(Some("http://127.0.0.1:9090")).unwrap_err();
        assert_eq!(e, "--client-selector, --observe-timeout and --observe-give-up go with --observe");
        assert_eq!(ObserveFlags::default().source(None), Ok(None));
    }
}
