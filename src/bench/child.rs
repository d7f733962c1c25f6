//! The bench server as a child process: spawned from this binary (`bench-server`), its address
//! read from its first stdout line, its own CPU read from `/bench/stats`; killed on drop.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// Longest wait for the child's `listening` line.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// A running `bench-server` child.
#[derive(Debug)]
pub struct ServerProcess {
    child: Child,
    /// Base URL, `http://127.0.0.1:PORT`.
    pub url: String,
}

/// What `/bench/stats` says.
#[derive(Debug, Clone, Copy, Default, serde::Deserialize)]
pub struct ServerStats {
    /// CPU time of the server process so far, ns.
    pub cpu_ns: u64,
    /// Streaming requests so far.
    pub requests: u64,
    /// Streams open now.
    pub active: i64,
    /// SSE events written so far.
    pub events: u64,
    /// Token events written so far.
    pub tokens: u64,
}

impl ServerProcess {
    /// Starts `exe bench-server --port 0 --until-stdin-closes ARGS...` and waits for its address.
    pub fn spawn(exe: &Path, args: &[String]) -> anyhow::Result<Self> {
        let mut child = Command::new(exe)
            .args(["bench-server", "--port", "0", "--until-stdin-closes"])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| anyhow::anyhow!("cannot start the bench server ({}): {e}", exe.display()))?;
        let stdout = child.stdout.take().ok_or_else(|| anyhow::anyhow!("bench server: no stdout"))?;
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            let first = lines.next().and_then(Result::ok);
            let _ = tx.send(first);
            // Drain the rest so the child never blocks on a full pipe.
            for _ in lines {}
        });
        let line = match rx.recv_timeout(START_TIMEOUT) {
            Ok(Some(line)) => line,
            _ => {
                let _ = child.kill();
                anyhow::bail!("the bench server did not say where it listens within {} s", START_TIMEOUT.as_secs());
            }
        };
        let url = line.strip_prefix("listening ").map(str::to_string);
        let url = url.ok_or_else(|| anyhow::anyhow!("bench server: unexpected first line {line:?}"))?;
        Ok(Self { child, url })
    }

    /// The child's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Its counters and CPU time now.
    pub async fn stats(&self, client: &reqwest::Client) -> anyhow::Result<ServerStats> {
        stats_at(client, &self.url).await
    }
}

/// The counters and CPU time of the bench server at `url` now (`GET /bench/stats`).
pub async fn stats_at(client: &reqwest::Client, url: &str) -> anyhow::Result<ServerStats> {
    let r = client.get(format!("{url}/bench/stats")).timeout(Duration::from_secs(10)).send().await?;
    Ok(r.error_for_status()?.json().await?)
}

/// The bench server's figures since its last `POST /bench/mark` (`GET /bench/window`).
pub(crate) async fn window_at(client: &reqwest::Client, url: &str) -> anyhow::Result<super::marks::WindowFigures> {
    let r = client.get(format!("{url}/bench/window")).timeout(Duration::from_secs(10)).send().await?;
    Ok(r.error_for_status()?.json().await?)
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
