//! One row, one process: the bench runs every client row (raw, tool, tool+monitor) and the
//! long-context row as a child of its own binary (`bench --row MODE:STREAMS:CLIENT --server URL`,
//! `bench --long-row STREAMS:TOKENS:ROUNDS --server URL`, both hidden), so CPU time, RSS, HWM and
//! KiB per stream are of that row alone: a row no longer reuses the heap an earlier, bigger row
//! freed. The child takes its idle baseline before it connects and prints its figures as one
//! JSON line on stdout, after the prefix `row ` or `long `.

use super::figures::{Client, Row};
use super::long::{LongFigures, LongShape};
use super::run::Plan;
use super::server::Mode;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

/// A client row as the child's `--row` names it: `MODE:STREAMS:CLIENT`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowSpec {
    /// Server mode.
    pub mode: Mode,
    /// Concurrent streams.
    pub streams: u32,
    /// Which client.
    pub client: Client,
}

impl RowSpec {
    /// `firehose:64:tool+monitor` and the like.
    pub fn arg(&self) -> String {
        format!("{}:{}:{}", mode_name(self.mode), self.streams, self.client.name())
    }
}

fn mode_name(m: Mode) -> &'static str {
    match m {
        Mode::Firehose => "firehose",
        Mode::Paced => "paced",
    }
}

/// Parses `MODE:STREAMS:CLIENT` (clap value parser of `--row`).
pub(crate) fn parse_row(s: &str) -> Result<RowSpec, String> {
    let bad = || format!("`{s}` is not MODE:STREAMS:CLIENT (e.g. firehose:64:tool)");
    let mut it = s.split(':');
    let (Some(m), Some(n), Some(c), None) = (it.next(), it.next(), it.next(), it.next()) else { return Err(bad()) };
    let mode = match m {
        "firehose" => Mode::Firehose,
        "paced" => Mode::Paced,
        _ => return Err(bad()),
    };
    let streams = n.parse::<u32>().ok().filter(|n| *n > 0).ok_or_else(bad)?;
    let client = Client::ALL.into_iter().find(|k| k.name() == c).ok_or_else(bad)?;
    Ok(RowSpec { mode, streams, client })
}

/// Parses `STREAMS:TOKENS:ROUNDS` (clap value parser of `--long-row`).
pub(crate) fn parse_long(s: &str) -> Result<LongShape, String> {
    let bad = || format!("`{s}` is not STREAMS:TOKENS:ROUNDS (e.g. 64:131072:10), each at least 1");
    let v: Vec<usize> =
        s.split(':').map(|p| p.parse::<usize>().ok().filter(|n| *n > 0)).collect::<Option<_>>().ok_or_else(bad)?;
    let [streams, tokens, rounds] = v[..] else { return Err(bad()) };
    Ok(LongShape { streams, tokens, rounds })
}

/// Longest a row's child may take: its window, the tool's warmup and settle, and slack.
fn child_timeout(window: Duration, streams: u32) -> Duration {
    window * 3 + Duration::from_secs(120) + Duration::from_millis(10 * u64::from(streams))
}

/// Runs `exe bench ARGS`, waits at most `timeout`, and parses the stdout line after `prefix`.
async fn child_json<T: serde::de::DeserializeOwned>(
    exe: &Path,
    args: &[String],
    prefix: &str,
    timeout: Duration,
) -> anyhow::Result<T> {
    let mut child = std::process::Command::new(exe)
        .arg("bench")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| anyhow::anyhow!("cannot start a bench row ({}): {e}", exe.display()))?;
    let what = args.join(" ");
    let mut pipe = child.stdout.take().ok_or_else(|| anyhow::anyhow!("bench row: no stdout"))?;
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut pipe, &mut text);
        text
    });
    let deadline = tokio::time::Instant::now() + timeout;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if tokio::time::Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            anyhow::bail!("bench row `{what}` did not end within {} s", timeout.as_secs());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let stdout = reader.join().unwrap_or_default();
    let line = stdout.lines().find_map(|l| l.strip_prefix(prefix));
    match line {
        Some(json) if status.success() => Ok(serde_json::from_str(json)?),
        _ => anyhow::bail!("bench row `{what}` failed ({status}); its stdout: {stdout}"),
    }
}

fn plan_args(plan: &Plan) -> Vec<String> {
    let window = format!("{}ms", plan.window.as_millis().max(1));
    let interval = plan.interval.as_micros().to_string();
    let tokens = plan.tokens.to_string();
    ["--window", &window, "--tokens", &tokens, "--interval-us", &interval].map(String::from).to_vec()
}

/// Measures one client row in a child process against the bench server at `url`.
pub(crate) async fn measure(
    exe: &Path,
    url: &str,
    mode: Mode,
    streams: u32,
    client: Client,
    plan: &Plan,
) -> anyhow::Result<Row> {
    let spec = RowSpec { mode, streams, client };
    let mut args = vec!["--row".to_string(), spec.arg(), "--server".to_string(), url.to_string()];
    args.extend(plan_args(plan));
    child_json(exe, &args, "row ", child_timeout(plan.window, streams)).await
}

/// Measures the long-context row in a child process against the bench server at `url`.
pub(crate) async fn measure_long(exe: &Path, url: &str, shape: LongShape) -> anyhow::Result<LongFigures> {
    let spec = format!("{}:{}:{}", shape.streams, shape.tokens, shape.rounds);
    let args = ["--long-row", &spec, "--server", url].map(String::from);
    let timeout = Duration::from_secs(120) + Duration::from_millis((shape.streams * shape.rounds) as u64 * 50);
    child_json(exe, &args, "long ", timeout).await
}

/// The child's side of `--row`: measures the row in this process, prints `row JSON`.
pub(crate) async fn serve_row(spec: RowSpec, url: &str, plan: &Plan) -> anyhow::Result<()> {
    let http = crate::net::client_builder().no_proxy().build()?;
    let row = match spec.client {
        Client::Raw => super::run::raw_row(url, &http, spec.mode, spec.streams, plan).await?,
        Client::Run => super::whole::run_row(url, &http, spec.mode, spec.streams, plan).await?,
        c => super::run::tool_row(url, &http, spec.mode, spec.streams, c, plan).await?,
    };
    crate::out_line!("row {}", serde_json::to_string(&row)?)?;
    Ok(())
}

/// The child's side of `--long-row`: measures the long-context row, prints `long JSON`.
pub(crate) async fn serve_long(shape: LongShape, url: &str) -> anyhow::Result<()> {
    let f = super::long::run(shape, url).await?;
    crate::out_line!("long {}", serde_json::to_string(&f)?)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_specs_round_trip_and_bad_ones_are_refused() {
        for c in Client::ALL {
            let spec = RowSpec { mode: Mode::Paced, streams: 64, client: c };
            assert_eq!(parse_row(&spec.arg()), Ok(spec));
        }
        for bad in ["firehose:64", "x:64:raw", "paced:0:raw", "paced:64:nope", "paced:64:raw:1"] {
            assert!(parse_row(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_long("64:131072:10"), Ok(LongShape { streams: 64, tokens: 131_072, rounds: 10 }));
        assert!(parse_long("64:0:10").is_err() && parse_long("64:1").is_err());
    }
}
