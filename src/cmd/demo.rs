//! The one-command demo: an in-process simulated cluster on free loopback ports and a short
//! session against it (a small decode matrix, then a routing comparison with a hot scenario),
//! shown in the live monitor or, headless, as the final tables.

use super::session;
use crate::cli::demo::DemoArgs;
use crate::config::MetricsEndpoint;
use crate::config::{PlanKind, RunConfig};
use crate::experiment::routing::{Arrival, RoutingConfig};
use crate::session::start;
use crate::signal::Signals;
use crate::sim::params::EngineParams;
use crate::sim::{Cluster, ClusterInfo, SimConfig};
use std::process::ExitCode;
use std::time::Duration;

/// The demo cluster: two replicas of 4 running requests each, so 16 streams are capacity
/// limited, and the default KV cache, so 128k x 16 does not fit.
pub(crate) fn demo_cluster(speed: f64) -> SimConfig {
    SimConfig {
        replicas: 2,
        engine: EngineParams { speed, max_num_seqs: 4, ..EngineParams::default() },
        dev_mode: true,
        ..SimConfig::default()
    }
}

/// The demo session against a running demo cluster. Arrival rate and TTFT objective scale
/// with the speed, so in modelled time the routing phases send 3.2 req/s with a 2 s TTFT
/// objective: enough that the replica owning the hot prefix saturates under prefix-cache
/// routing while least-request spreads the load (docs/reports.md §2.8).
pub(crate) fn demo_config(
    info: &ClusterInfo,
    speed: f64,
    window: Duration,
    out: Option<std::path::PathBuf>,
) -> RunConfig {
    let metrics =
        info.replicas.iter().map(|r| MetricsEndpoint { name: r.name.clone(), url: r.metrics_url.clone() }).collect();
    RunConfig {
        metrics,
        plans: vec![PlanKind::Decode, PlanKind::Routing],
        ctx: vec![0, 16 * 1024, 128 * 1024],
        conc: vec![1, 4, 16],
        window,
        idle_timeout: Duration::from_secs(60),
        out,
        slo: crate::stats::Slo { ttft: Some(crate::units::secs(2.0 / speed)), tpot: None, e2e: None },
        slo_source: crate::config::SloSource::Demo,
        routing: RoutingConfig {
            scenarios: ["cold-uniform", "hot90"].iter().filter_map(|s| s.parse().ok()).collect(),
            rounds: 1,
            count: 96,
            rps: 3.2 * speed,
            arrival: Arrival::Poisson,
            gateway_metrics: Some(info.gateway.metrics_url.clone()),
            ..RoutingConfig::default()
        },
        decode: crate::config::decode::DecodeConfig {
            warmup_timeout: Duration::from_secs(30),
            settle: Duration::from_millis(500),
            kv_oversubscribe: 2.0,
            min_stream_tokens: 4096,
            ..RunConfig::defaults(&info.gateway.url).decode
        },
        ..RunConfig::defaults(&info.gateway.url)
    }
}

/// Runs the demo in the monitor (on a terminal) or headless. Its 128k row cannot fit the
/// simulated model's context and is skipped (`∅`); errored cells do not fail a demo; the other
/// exit codes are `run`'s.
pub(crate) async fn run_demo(args: DemoArgs) -> anyhow::Result<ExitCode> {
    if let Err(e) = args.check() {
        return Ok(session::usage(&e));
    }
    let checked = session::check_out(args.out.as_deref(), None, args.overwrite, None)
        .and_then(|()| session::check_log_file(args.log_file.as_deref(), args.out.as_deref()));
    if let Err(e) = checked {
        return Ok(session::usage(&e));
    }
    let cluster = Cluster::start(demo_cluster(args.demo_speed)).await?;
    let mut cfg = demo_config(cluster.info(), args.demo_speed, args.demo_window, args.out.clone());
    let printer = session::printer(args.headless, args.log_file.as_deref())?;
    // In the monitor, finished cells can be re-run until the operator quits.
    cfg.hold_after_last = printer.is_none();
    let mut signals = Signals::new()?;
    let handles = match session::preflight(start(cfg), &mut signals, args.log_file.as_deref()).await {
        Ok(h) => h,
        Err(code) => return Ok(code),
    };
    let slo = handles.snapshot.borrow().slo.map(|s| format!("; {}", s.describe())).unwrap_or_default();
    let banner = format!(
        "demo: simulated cluster at {} (speed {}x); report: {}{slo}",
        cluster.info().gateway.url,
        args.demo_speed,
        handles.report_path.display()
    );
    let display = session::Display { log_file: args.log_file.clone(), ascii: args.ascii, allow_errors: true };
    let code = session::finish(handles, signals, display, printer, banner).await;
    cluster.shutdown();
    Ok(code)
}
