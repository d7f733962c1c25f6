//! `bench-server` and `bench`: the bench instrument's server and driver (BENCHMARKS.md).

use crate::bench::server::{BenchServer, ServerOptions};
use crate::cli::bench::BenchServerArgs;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

/// Serves until Ctrl-C, SIGTERM, or (with `--until-stdin-closes`) the end of stdin. The first
/// line on stdout is `listening http://HOST:PORT`.
pub(crate) async fn bench_server(args: BenchServerArgs) -> anyhow::Result<ExitCode> {
    let nofile = crate::bench::sysinfo::raise_nofile();
    let opts = ServerOptions {
        addr: SocketAddr::new(args.host, args.port),
        mode: args.mode,
        interval: Duration::from_micros(args.interval_us),
        tokens: args.tokens,
        model: args.model,
        max_model_len: args.max_model_len,
        batch_bytes: args.batch_bytes as usize,
        events_per_frame: args.events_per_frame.map_or(usize::MAX, |n| n as usize),
        shape: args.chunk_shape,
    };
    let server = BenchServer::start(opts).await?;
    crate::out_line!("listening http://{}", server.addr)?;
    let limit = nofile.map_or_else(|| "unlimited".to_string(), |n| n.to_string());
    let frames = args.events_per_frame.map_or_else(String::new, |n| format!(", at most {n} events per frame"));
    let shape = args.chunk_shape.name();
    crate::out_line!("mode {:?}, chunk shape {shape}{frames}, open-file limit {limit}", args.mode)?;
    let stdin_closed = async {
        if args.until_stdin_closes {
            let _ = tokio::task::spawn_blocking(|| std::io::copy(&mut std::io::stdin(), &mut std::io::sink())).await;
        } else {
            std::future::pending::<()>().await;
        }
    };
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
        _ = stdin_closed => {}
    }
    server.shutdown();
    Ok(ExitCode::SUCCESS)
}

/// Runs the bench: prints the table, writes the JSON figures.
pub(crate) async fn bench(args: crate::cli::bench::BenchArgs) -> anyhow::Result<ExitCode> {
    use crate::bench::figures::Client;
    use crate::cli::bench::MonitorRuns;
    let most = if args.targets { 1024 } else { args.streams.iter().copied().max().unwrap_or(1) };
    let limit = crate::bench::sysinfo::raise_nofile();
    if let Some(limit) = limit.filter(|l| *l < u64::from(most) + 256) {
        crate::err_line!(
            "error: --streams {most} needs more open files than the limit allows ({limit}); raise `ulimit -Hn`"
        );
        return Ok(ExitCode::from(super::exit::USAGE));
    }
    let mut tool_runs = match args.monitor {
        MonitorRuns::Off => vec![Client::Tool],
        MonitorRuns::On => vec![Client::ToolMonitor],
        MonitorRuns::Both => vec![Client::Tool, Client::ToolMonitor],
    };
    if args.whole_window {
        tool_runs.push(Client::Run);
    }
    let long = (args.long_tokens > 0).then_some(crate::bench::long::LongShape {
        streams: args.long_streams as usize,
        tokens: args.long_tokens,
        rounds: args.long_rounds as usize,
    });
    let plan = crate::bench::run::Plan {
        streams: args.streams,
        modes: args.modes,
        window: args.window,
        tokens: args.tokens,
        interval: Duration::from_micros(args.interval_us),
        tool_runs,
        long,
        shape: args.chunk_shape,
        events_per_frame: args.events_per_frame,
    };
    if let Some(url) = &args.server {
        return child_row(args.row, args.long_row, url, &plan).await;
    }
    // Minutes of measurement must not end in a file that cannot be written or is someone's.
    let checked = crate::report::fallback::check_writable(&args.json, "--json").and_then(|()| {
        crate::report::clobber::check_output(&args.json, "--json", args.overwrite, crate::bench::figures::is_bench_json)
    });
    if let Err(e) = checked {
        return Ok(super::session::usage(&e));
    }
    let exe = std::env::current_exe()?;
    if args.targets {
        return targets(args.window, &exe, &args.json).await;
    }
    let rows = crate::bench::run::run(&plan, &exe).await?;
    let long = crate::bench::run::long_row(&plan, &exe).await?;
    let report = crate::bench::run::report(&plan, rows, long);
    std::fs::write(&args.json, serde_json::to_vec_pretty(&report)?)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", args.json.display()))?;
    crate::out_line!("figures written to {}", args.json.display())?;
    Ok(ExitCode::SUCCESS)
}

/// `bench --targets`: the preset's runs, the targets table, the JSON.
async fn targets(window: Duration, exe: &std::path::Path, json: &std::path::Path) -> anyhow::Result<ExitCode> {
    use crate::bench::{run, targets};
    let plans = targets::plans(window);
    let mut rows = Vec::new();
    for plan in &plans {
        rows.extend(run::run(plan, exe).await?);
    }
    let table = targets::evaluate(&rows);
    crate::out_line!("{}", targets::table(&table))?;
    let mut report = run::report(&plans[0], rows, None);
    report.settings =
        serde_json::json!({"preset": "targets", "plans": plans.iter().map(run::settings).collect::<Vec<_>>()});
    report.targets = Some(table);
    std::fs::write(json, serde_json::to_vec_pretty(&report)?)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", json.display()))?;
    crate::out_line!("figures written to {}", json.display())?;
    Ok(ExitCode::SUCCESS)
}

/// A row's child process (`bench --row` / `--long-row` with `--server`): one row, one JSON line.
async fn child_row(
    row: Option<crate::bench::rowproc::RowSpec>,
    long: Option<crate::bench::long::LongShape>,
    url: &str,
    plan: &crate::bench::run::Plan,
) -> anyhow::Result<ExitCode> {
    match (row, long) {
        (Some(spec), _) => crate::bench::rowproc::serve_row(spec, url, plan).await?,
        (None, Some(shape)) => crate::bench::rowproc::serve_long(shape, url).await?,
        (None, None) => {
            crate::err_line!("error: --server is for a bench row's child process: give --row or --long-row with it");
            return Ok(ExitCode::from(super::exit::USAGE));
        }
    }
    Ok(ExitCode::SUCCESS)
}
