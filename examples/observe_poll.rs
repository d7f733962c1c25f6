//! How long one observer poll (`run --observe`, src/metrics/observe/) takes against a
//! Prometheus server at several bounds of queries in flight, interleaved round by round so
//! every bound sees the same load. Driven by `benches/observe_poll.sh`.
//!
//! Run: `cargo run --release --example observe_poll -- URL SELECTOR ROUNDS`

use llm_decode_bench::load::backend::HttpBackend;
use llm_decode_bench::metrics::observe::ClientSource;
use std::time::Duration;
use tokio::time::Instant;

/// Bounds compared: one at a time, a few, the observer's default, every query of a poll at once.
const BOUNDS: [usize; 4] = [1, 4, 8, 18];

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [url, sel, rounds] = &args[..] else { anyhow::bail!("usage: observe_poll URL SELECTOR ROUNDS") };
    let rounds: usize = rounds.parse()?;
    let source = ClientSource::new(url, sel).map_err(anyhow::Error::msg)?.with_window(1.0);
    let backend = HttpBackend::new(llm_decode_bench::net::client_builder().build()?);
    let first = source.poll(&backend, Duration::from_secs(5)).await.map_err(anyhow::Error::msg)?;
    println!("cells {}, shards {}", first.cells.len(), first.shards.len());
    let mut took: Vec<Vec<f64>> = vec![Vec::new(); BOUNDS.len()];
    for round in 0..rounds {
        for k in 0..BOUNDS.len() {
            // Rotate the order each round so no bound always follows another.
            let i = (k + round) % BOUNDS.len();
            let t = Instant::now();
            source.poll_with(&backend, Duration::from_secs(5), BOUNDS[i]).await.map_err(anyhow::Error::msg)?;
            took[i].push(t.elapsed().as_secs_f64() * 1e3);
        }
    }
    for (bound, mut ms) in BOUNDS.into_iter().zip(took) {
        ms.sort_by(f64::total_cmp);
        let at = |q: f64| ms[((ms.len() - 1) as f64 * q).round() as usize];
        println!("{bound:>2} in flight: poll p50 {:.1} ms, p90 {:.1} ms, max {:.1} ms", at(0.5), at(0.9), at(1.0));
    }
    Ok(())
}
