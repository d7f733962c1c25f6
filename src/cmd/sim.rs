//! `llm-decode-bench sim`: start the simulated cluster, print its endpoints, serve until a signal.

use crate::cli::sim::SimArgs;
use crate::report::atomic::write_atomic;
use crate::signal::Signals;
use crate::sim::{Cluster, ClusterInfo};
use std::process::ExitCode;

/// Serves the cluster the flags describe until SIGINT, SIGTERM or SIGHUP, then stops it and
/// exits with that signal's code (README "Exit codes": 130, 143, 129); a bad flag is one line
/// and exit 2 before anything listens.
pub(crate) async fn run(args: SimArgs) -> anyhow::Result<ExitCode> {
    let cfg = match args.to_config() {
        Ok(cfg) => cfg,
        Err(e) => return Ok(super::session::usage(&e)),
    };
    if let Some(path) = &args.ready_file {
        let ours = |b: &[u8]| serde_json::from_slice::<ClusterInfo>(b).is_ok();
        let checked = crate::report::fallback::check_writable(path, "--ready-file")
            .and_then(|()| crate::report::clobber::check_output(path, "--ready-file", args.overwrite, ours));
        if let Err(e) = checked {
            return Ok(super::session::usage(&e));
        }
    }
    // Each client stream is a connection the simulator holds open.
    if let Some((from, to)) = crate::fdlimit::raise_to_hard() {
        crate::err_line!("raised the open-file limit from {from} to {to} (one socket per stream)");
    }
    // Listening before the cluster starts: a signal from then on stops it the same way.
    let mut signals = Signals::new()?;
    let no_gateway = cfg.no_gateway;
    let cluster = Cluster::start(cfg).await?;
    // As vLLM logs it at start-up (on stdout), for a sweep to read (`run --server-cmd`).
    let _ = crate::out_line!("{}", args.non_default_args());
    print_endpoints(cluster.info(), no_gateway);
    if let Some(path) = &args.ready_file {
        let json = serde_json::to_vec_pretty(cluster.info())?;
        write_atomic(path, &json)?;
    }
    let got = signals.recv().await;
    crate::err_line!("{}: stopping the simulated cluster", got.name());
    cluster.shutdown();
    Ok(ExitCode::from(got.exit_code()))
}

/// Prints one line per endpoint.
pub(crate) fn print_endpoints(info: &ClusterInfo, no_gateway: bool) {
    if no_gateway {
        let r = &info.gateway;
        let _ = crate::out_line!("server   {}  metrics {}", r.url, r.metrics_url);
        let _ = crate::out_line!("model    {}  (max_model_len {})", info.model, info.max_model_len);
        return;
    }
    let _ = crate::out_line!(
        "gateway  {}  (routing-strategy: random | least-request | prefix-cache)  metrics {}",
        info.gateway.url,
        info.gateway.metrics_url
    );
    for r in &info.replicas {
        let _ = crate::out_line!("{:<8} {}  metrics {}", r.name, r.url, r.metrics_url);
    }
    let _ = crate::out_line!("model    {}  (max_model_len {})", info.model, info.max_model_len);
}
