//! `llm-decode-bench sim`: start the simulated cluster, print its endpoints, serve until a signal.

use crate::cli::sim::SimArgs;
use crate::report::atomic::write_atomic;
use crate::sim::{Cluster, ClusterInfo};
use std::process::ExitCode;

/// Serves the cluster the flags describe until SIGINT or SIGTERM.
pub async fn run(args: SimArgs) -> anyhow::Result<ExitCode> {
    let cfg = args.to_config().map_err(anyhow::Error::msg)?;
    let cluster = Cluster::start(cfg).await?;
    print_endpoints(cluster.info());
    if let Some(path) = &args.ready_file {
        let json = serde_json::to_vec_pretty(cluster.info())?;
        write_atomic(path, &json)?;
    }
    wait_for_signal().await;
    cluster.shutdown();
    Ok(ExitCode::SUCCESS)
}

/// Prints one line per endpoint.
pub fn print_endpoints(info: &ClusterInfo) {
    println!(
        "gateway  {}  (routing-strategy: random | least-request | prefix-cache)  metrics {}",
        info.gateway.url, info.gateway.metrics_url
    );
    for r in &info.replicas {
        println!("{:<8} {}  metrics {}", r.name, r.url, r.metrics_url);
    }
    println!("model    {}  (max_model_len {})", info.model, info.max_model_len);
}

async fn wait_for_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = match signal(SignalKind::terminate()) {
            Ok(s) => s,
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
                return;
            }
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
