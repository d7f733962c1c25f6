//! `run --observe`: a session that sends no load and watches a sharded one through a
//! Prometheus server (src/metrics/observe/). Every poll sends the queries of
//! [`Queries::all`](crate::metrics::observe::Queries::all) together, prints one line per
//! active cell and one per change of a shard's health, and records both for the JSON report
//! (`--out`, else `sessions/observe-<unix>.json`), written atomically when it ends: once every
//! shard seen reported `session_finished` or has been stale for `--observe-give-up` (never
//! with 0), at `--observe-timeout`, or on a signal.

pub(crate) mod lines;
pub(crate) mod monitor;
pub(crate) mod record;
pub(crate) mod replicas;

use super::headless::Printer;
use super::session;
use crate::cli::run::RunArgs;
use crate::load::backend::HttpBackend;
use crate::metrics::observe::clock::Clock;
use crate::metrics::observe::{ClientSource, Health, View, health};
use crate::metrics::poller::PollerHandle;
use crate::metrics::prom_poller::DEFAULT_SCRAPE_INTERVAL_S;
use crate::metrics::promql::PromServer;
use crate::signal::Signals;
use record::{EventAt, ObserverReport};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Longest wait for one answer of the server.
const QUERY_TIMEOUT: Duration = Duration::from_secs(5);

/// Most poll errors kept in the report.
const MAX_ERRORS: usize = 100;

fn now_unix() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}

/// `--observe-give-up` as the title says it.
fn give_up_text(give_up_s: Option<f64>) -> String {
    give_up_s.map_or_else(|| "never given up on".into(), |g| format!("given up on after {g} s stale"))
}

/// Runs the observer; bad flags exit 2 and a server that does not answer 3, before the first poll.
pub(crate) async fn run(args: RunArgs, source: ClientSource) -> anyhow::Result<ExitCode> {
    let out = args.out.clone().unwrap_or_else(|| {
        let dir = args.result_dir.clone().unwrap_or_else(|| PathBuf::from(crate::report::writer::DEFAULT_DIR));
        dir.join(format!("observe-{}.json", now_unix() as u64))
    });
    let checked = session::check_out(Some(&out), None, args.overwrite, None)
        .and_then(|()| session::check_log_file(args.log_file.as_deref(), Some(&out)));
    if let Err(e) = checked {
        return Ok(session::usage(&e));
    }
    let backend = HttpBackend::new(crate::net::client_builder().build()?);
    if args.prom.replica_selector.is_some() && !args.metrics_url.is_empty() {
        return Ok(session::usage(
            "--replica-selector and --metrics-url are exclusive: the replicas come from one or the other",
        ));
    }
    let server = PromServer::new(&source.url, "").map_err(anyhow::Error::msg)?;
    let read = server.configured_interval(&backend, QUERY_TIMEOUT).await;
    let scrape_s = read.unwrap_or(DEFAULT_SCRAPE_INTERVAL_S);
    let source = source.with_window(scrape_s);
    let first = match source.poll(&backend, QUERY_TIMEOUT).await {
        Ok(view) => view,
        Err(e) => {
            let url = crate::net::redact_url(&source.url);
            crate::err_line!("error: the Prometheus server at {url} does not answer the observer's queries: {e}");
            return Ok(ExitCode::from(super::exit::PREFLIGHT));
        }
    };
    let replicas = match replicas::start(&args, scrape_s) {
        Ok(r) => r,
        Err(e) => return Ok(session::usage(&e)),
    };
    let sources = Sources { client: &source, backend: &backend, replicas: replicas.as_ref() };
    let mut obs = Observing::new(&source, scrape_s, args.observing.give_up_s());
    let assumed = if read.is_some() { "" } else { " (could not be read: assumed)" };
    let title = format!(
        "observing {} on {}: scrape interval {scrape_s} s{assumed}, rates over {} s, a shard stale after {} s, {}; report: {}",
        source.queries.selector,
        obs.report.prometheus,
        source.queries.window_s,
        obs.health.stale_after_s,
        give_up_text(obs.give_up_s),
        out.display()
    );
    let every = Duration::from_secs_f64(scrape_s).max(args.poll_interval);
    let timeout = args.observing.observe_timeout;
    let printer = session::printer(args.headless, args.log_file.as_deref())?;
    let ended_by = match printer {
        Some(mut printer) => {
            printer.line(&title);
            printer.line("this observer sends nothing to the shards: they run their own plan (no pause, skip or knob)");
            let now = obs.clock.now_unix();
            obs.step_printed(&first, now, &mut printer);
            let ended_by = watch(&mut obs, &sources, every, timeout, &mut printer).await?;
            printer.line(&format!("observer ended ({ended_by}); report: {}", out.display()));
            ended_by
        }
        None => {
            let shown = monitor::Shown { title, report_path: out.display().to_string() };
            monitor::watch(&mut obs, &sources, (every, timeout), shown, &first).await?
        }
    };
    obs.report.ended_by = ended_by;
    obs.report.ended_unix = obs.clock.now_unix();
    obs.report.shards = obs.health.shards.clone();
    if let Err(e) = obs.report.write(&out) {
        crate::err_line!("error: the observer's report could not be written to {}: {e}", out.display());
        return Ok(ExitCode::from(super::exit::REPORT_NOT_SAVED));
    }
    Ok(ExitCode::SUCCESS)
}

/// Polls every `every` until every shard is done, `timeout` passes, or a signal; returns why it ended.
async fn watch(
    obs: &mut Observing,
    sources: &Sources<'_>,
    every: Duration,
    timeout: Option<Duration>,
    printer: &mut Printer,
) -> anyhow::Result<String> {
    let mut signals = Signals::new()?;
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick.tick().await;
    let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
    let until = async move {
        match deadline {
            Some(d) => tokio::time::sleep_until(d).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(until);
    loop {
        if obs.all_done() {
            return Ok("all_shards_done".into());
        }
        tokio::select! {
            _ = tick.tick() => {
                match sources.client.poll(sources.backend, QUERY_TIMEOUT).await {
                    Ok(view) => obs.step_printed(&view, obs.clock.now_unix(), printer),
                    Err(e) => printer.line(&obs.failed(e)),
                }
                if let Some(line) = sources.replica_line() {
                    printer.line(&line);
                }
            },
            _ = &mut until => return Ok("timeout".into()),
            s = signals.recv() => return Ok(s.name().to_string()),
        }
    }
}

/// Where the observer reads: the shards' client series, and the replicas when named.
pub(crate) struct Sources<'a> {
    /// The Prometheus server and the client selector.
    pub client: &'a ClientSource,
    /// The HTTP client of the queries.
    pub backend: &'a HttpBackend,
    /// The replicas' reader (`--metrics-url`, or `--replica-selector`), if any.
    pub replicas: Option<&'a PollerHandle>,
}

impl Sources<'_> {
    /// The replicas' line of the latest reading, if they are read.
    pub(crate) fn replica_line(&self) -> Option<String> {
        self.replicas.and_then(|h| replicas::line(&h.latest()))
    }
}

/// The observer's state between polls.
pub(crate) struct Observing {
    /// Every shard's health.
    pub health: Health,
    /// What the report will hold.
    pub report: ObserverReport,
    /// The clock of health and give-up.
    pub clock: Clock,
    /// `--observe-give-up`, seconds; `None` never gives up on a stale shard.
    pub give_up_s: Option<f64>,
}

impl Observing {
    /// Nothing seen yet; a stale shard is given up on after `give_up_s` (never with `None`).
    pub(crate) fn new(source: &ClientSource, scrape_s: f64, give_up_s: Option<f64>) -> Observing {
        let clock = Clock::start();
        let report = ObserverReport {
            schema_version: record::OBSERVER_SCHEMA_VERSION,
            kind: "observer",
            version: crate::version::VERSION.to_string(),
            prometheus: crate::net::redact_url(&source.url),
            client_selector: source.queries.selector.clone(),
            scrape_interval_s: scrape_s,
            rate_window_s: source.queries.window_s,
            give_up_s,
            started_unix: clock.now_unix(),
            ended_unix: 0.0,
            ended_by: String::new(),
            cells: Default::default(),
            totals: Default::default(),
            shards: Default::default(),
            events: Vec::new(),
            poll_errors: Vec::new(),
        };
        Observing { health: Health::new(health::stale_after_s(scrape_s)), report, clock, give_up_s }
    }

    /// Every shard seen has finished or been given up on, now.
    pub(crate) fn all_done(&self) -> bool {
        self.health.all_done(self.clock.now_unix(), self.give_up_s)
    }

    /// The stale shards' countdowns now (seconds left before they are given up on).
    pub(crate) fn countdown(&self) -> Vec<(String, f64)> {
        self.health.giving_up(self.clock.now_unix(), self.give_up_s)
    }

    /// Takes one poll: the lines of the health changes, then one line per active cell.
    pub(crate) fn step(&mut self, view: &View, now: f64) -> (Vec<String>, Vec<String>) {
        let mut changes = Vec::new();
        for event in self.health.update(&view.shards, now) {
            changes.push(lines::event_line(&event));
            self.report.events.push(EventAt { at_unix: now, event });
        }
        let active = view.cells.iter().filter(|(_, c)| c.is_active());
        let cells = active.map(|(cell, c)| lines::cell_line(cell, c, &self.health)).collect();
        self.report.take(view);
        (changes, cells)
    }

    /// [`Self::step`] with every line printed.
    fn step_printed(&mut self, view: &View, now: f64, printer: &mut Printer) {
        let (changes, cells) = self.step(view, now);
        changes.iter().chain(&cells).for_each(|l| printer.line(l));
    }

    /// A poll that failed: kept in the report; the line to show.
    pub(crate) fn failed(&mut self, e: String) -> String {
        let line = format!("warning: poll failed: {e}");
        if self.report.poll_errors.len() < MAX_ERRORS {
            self.report.poll_errors.push(e);
        }
        line
    }
}
