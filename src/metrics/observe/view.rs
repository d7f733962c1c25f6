//! One poll of the observer: the per-cell figures summed over shards and the per-shard view,
//! assembled from the answers of [`super::query::Queries`].

use std::collections::BTreeMap;

use super::answer::Point;
use super::health::ShardSeen;
use super::query::{Ask, Latency};

/// A cell's figures summed over every shard, as the server computes them.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct CellFigures {
    /// Output tokens per second over the rate window, summed over shards.
    pub tok_s: Option<f64>,
    /// Output tokens received so far.
    pub tokens: f64,
    /// Requests sent so far.
    pub started: f64,
    /// Requests the server finished so far.
    pub completed: f64,
    /// Failed requests so far, by kind.
    pub errors: BTreeMap<String, f64>,
    /// Streams past their first token now.
    pub running: f64,
    /// Requests sent and not ended now.
    pub in_flight: f64,
    /// Shards running an attempt of this cell now.
    pub active_shards: f64,
    /// Latency quantiles over the rate window, seconds: `(histogram, quantile)` to value;
    /// absent (or NaN, dropped) when the window holds no observation.
    #[serde(skip)]
    pub quantiles: BTreeMap<(Latency, u16), f64>,
}

impl CellFigures {
    /// The `q` quantile (0.5, 0.99) of `l`, seconds, when the window holds observations.
    pub fn quantile(&self, l: Latency, q: f64) -> Option<f64> {
        self.quantiles.get(&(l, permille(q))).copied()
    }

    /// True while some shard runs an attempt of the cell.
    pub fn is_active(&self) -> bool {
        self.active_shards > 0.0
    }
}

/// What one poll saw.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct View {
    /// The server's evaluation time, seconds since the epoch (the latest among the answers).
    pub at_unix: f64,
    /// Cells by label.
    pub cells: BTreeMap<String, CellFigures>,
    /// Shards by index label (only those whose heartbeat series the server holds now).
    pub shards: BTreeMap<String, ShardSeen>,
}

/// A quantile as an integer key (0.99 → 990).
pub fn permille(q: f64) -> u16 {
    (q * 1000.0).round() as u16
}

impl View {
    /// Assembles a view from each query's answer.
    pub fn from_answers(answers: &[(Ask, Vec<Point>)]) -> View {
        let mut v = View::default();
        for (ask, points) in answers {
            for p in points {
                v.at_unix = v.at_unix.max(p.at_unix);
                v.take(*ask, p);
            }
        }
        v
    }

    fn take(&mut self, ask: Ask, p: &Point) {
        let shard = p.label("shard").to_string();
        match ask {
            Ask::Heartbeat => {
                let s = self.shard(shard);
                (s.heartbeat_unix, s.session) = (p.value, p.label("session").to_string());
            }
            Ask::Finished => self.shard(shard).finished = p.value >= 1.0,
            Ask::ShardActive => self.shard(shard).active = p.value >= 1.0,
            _ => self.take_cell(ask, p),
        }
    }

    fn take_cell(&mut self, ask: Ask, p: &Point) {
        let c = self.cells.entry(p.label("cell").to_string()).or_default();
        let v = p.value;
        match ask {
            Ask::TokensPerSecond => c.tok_s = v.is_finite().then_some(v),
            Ask::Tokens => c.tokens = v,
            Ask::Started => c.started = v,
            Ask::Completed => c.completed = v,
            Ask::Errors => *c.errors.entry(p.label("kind").to_string()).or_default() += v,
            Ask::Running => c.running = v,
            Ask::InFlight => c.in_flight = v,
            Ask::ActiveShards => c.active_shards = v,
            Ask::Quantile(l, q) if v.is_finite() => _ = c.quantiles.insert((l, permille(q)), v),
            _ => {}
        }
    }

    fn shard(&mut self, shard: String) -> &mut ShardSeen {
        let blank = || ShardSeen { session: String::new(), heartbeat_unix: 0.0, finished: false, active: false };
        self.shards.entry(shard).or_insert_with(blank)
    }
}
