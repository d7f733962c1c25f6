//! The runner's control plane and what it publishes: commands in, events and live views out.

use crate::load::live::LiveTotals;
use std::collections::BTreeMap;
use std::time::Duration;
use tokio::time::Instant;

/// Index of a cell in the session plan.
pub type CellId = usize;

/// What an operator (or a signal) asks the runner to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// Stop the load at once; the running cell's attempt is kept as paused.
    Pause,
    /// Resume: the paused cell runs again from warmup.
    Resume,
    /// Skip a cell: the running one (None) or a pending one.
    Skip(Option<CellId>),
    /// Queue a finished cell to run again next.
    Rerun(CellId),
    /// Write the report now.
    Save,
    /// End the session after recording the running cell as stopped.
    Stop,
    /// Turn the running decode cell's load up or down by one step (`+` / `-`).
    Knob(Knob),
}

/// A step of the load knob.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Knob {
    /// `+`: more streams (closed loop) or a higher rate (open loop).
    Up,
    /// `-`: fewer streams or a lower rate.
    Down,
}

impl Knob {
    /// `+` or `-`.
    pub fn sign(self) -> &'static str {
        match self {
            Self::Up => "+",
            Self::Down => "-",
        }
    }
}

/// Where the runner's knob steps reach the running attempt: an attempt that has a knob takes
/// the receiver once; one that has none leaves it, and the runner's sends then fail.
#[derive(Debug)]
pub struct KnobInbox(std::sync::Mutex<Option<tokio::sync::mpsc::UnboundedReceiver<Knob>>>);

impl KnobInbox {
    /// An inbox and the sender that feeds it.
    pub fn channel() -> (tokio::sync::mpsc::UnboundedSender<Knob>, Self) {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        (tx, Self(std::sync::Mutex::new(Some(rx))))
    }

    /// An inbox nothing feeds (tests, attempts run outside the runner).
    pub fn closed() -> Self {
        Self(std::sync::Mutex::new(None))
    }

    /// True once an attempt took the receiver.
    pub fn taken(&self) -> bool {
        self.0.lock().map(|r| r.is_none()).unwrap_or(true)
    }

    /// The receiver, for the one attempt that takes it.
    pub fn take(&self) -> Option<tokio::sync::mpsc::UnboundedReceiver<Knob>> {
        self.0.lock().ok().and_then(|mut r| r.take())
    }
}

/// One load level of the knob walk as the live panel plots it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LevelPoint {
    /// The load: `8` streams or `4/s`.
    pub load: String,
    /// Aggregate tok/s of the level (so far, for the current one).
    pub tps: f64,
}

/// What the runner reports as it goes (for the log panel and the progress printer).
#[derive(Debug, Clone, PartialEq)]
pub enum RunnerEvent {
    /// A cell attempt started.
    CellStarted {
        /// The cell.
        cell: CellId,
        /// 1-based attempt number.
        attempt: u32,
        /// With repetitions (`--num-runs`), which run of the cell's round this attempt is.
        run: Option<crate::report::runs::round::RunProgress>,
    },
    /// The running cell moved to another phase.
    Phase {
        /// The cell.
        cell: CellId,
        /// The new phase.
        phase: Phase,
    },
    /// A cell attempt ended; its outcome is in the session snapshot.
    CellFinished {
        /// The cell.
        cell: CellId,
        /// One-line summary.
        summary: String,
    },
    /// A message for the log.
    Log(String),
    /// The report was written.
    Saved(String),
    /// The session is over.
    Finished,
}

/// Phase of the running cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Phase {
    /// No cell running.
    #[default]
    Idle,
    /// Waiting for the engine to admit the requested concurrency.
    Warming,
    /// Inside the measurement window.
    Measuring,
    /// Priming caches (routing phases).
    Priming,
    /// Waiting for outstanding requests after the window or schedule.
    Draining,
    /// Load stopped by the operator.
    Paused,
}

impl Phase {
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Idle => "idle",
            Self::Warming => "warming",
            Self::Measuring => "measuring",
            Self::Priming => "priming",
            Self::Draining => "draining",
            Self::Paused => "paused",
        }
    }
}

/// The running cell as the monitor shows it, published several times a second.
#[derive(Debug, Clone, Default)]
pub struct LiveAttempt {
    /// The running cell.
    pub cell: Option<CellId>,
    /// Its label.
    pub label: String,
    /// Current phase.
    pub phase: Phase,
    /// When the phase began.
    pub phase_started: Option<Instant>,
    /// Planned length of the phase (window, warmup timeout, schedule), if bounded.
    pub phase_len: Option<Duration>,
    /// Requested concurrency (or planned requests for open loop).
    pub requested: u32,
    /// Counters of the attempt.
    pub totals: LiveTotals,
    /// Output tokens per second over the last tick, tok/s.
    pub tps: f64,
    /// Recent tok/s values, oldest first.
    pub tps_history: Vec<f64>,
    /// TTFT p50 of the attempt so far, ms.
    pub ttft_p50_ms: Option<f64>,
    /// TTFT p90 of the attempt so far, ms.
    pub ttft_p90_ms: Option<f64>,
    /// Current inter-token latency estimate (streaming requests / tok/s), ms.
    pub itl_now_ms: Option<f64>,
    /// Failed requests by kind so far.
    pub errors: BTreeMap<crate::load::sample::ErrorKind, u64>,
    /// The latest one-line reason of each error kind (the server's message or the transport
    /// error, without secrets).
    pub error_examples: BTreeMap<crate::load::sample::ErrorKind, String>,
    /// Requests answered per replica so far (from response headers).
    pub served_by: BTreeMap<String, u64>,
    /// Per replica: gauges now and counters since the attempt started.
    pub replicas: Vec<ReplicaLive>,
    /// Prompt families of a routing phase: who owns each prefix, who served its requests.
    pub families: Vec<FamilyLive>,
    /// A conversation cell's sessions and turns so far (None for other experiments).
    pub conversation: Option<ConversationLive>,
    /// An SLO search's bracket and probes so far (None for other experiments).
    pub slo_search: Option<super::search_live::SearchLive>,
    /// Requests the attempt plans to send, when it plans a number (a serve cell's prompts, a
    /// conversation cell's turns): the live panel shows how far through them it is.
    pub planned_requests: Option<u64>,
    /// Where the attempt's prompts come from, when not the experiment's own (`sharegpt`, a
    /// trace's name, `conversations from sharegpt`).
    pub workload: Option<String>,
    /// Gateway routing-counter changes since the attempt started.
    pub routing: Vec<crate::metrics::CounterDelta>,
    /// Worst client event-loop lag over the last second, ms.
    pub client_lag_ms: Option<f64>,
    /// Verdicts against the session's SLO of the requests that ended so far (decode: in the
    /// window; burst: all), when the experiment judges them.
    pub goodput: Option<super::goodput::GoodputTally>,
    /// Of `goodput`'s judged requests, the streams still running, judged on their tokens so
    /// far (`load::live::LiveCounters::judge_so_far`); 0 where only ended requests count.
    pub goodput_running: u64,
    /// Load levels of the knob walk, oldest first (empty until the knob is used).
    pub levels: Vec<LevelPoint>,
}

/// One replica during the running attempt.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReplicaLive {
    /// Replica name.
    pub name: String,
    /// Running requests now.
    pub running: Option<f64>,
    /// Waiting requests now.
    pub waiting: Option<f64>,
    /// KV-cache usage now, fraction 0..1.
    pub kv_usage: Option<f64>,
    /// Prefix-cache hit ratio since the attempt started, 0..1.
    pub hit_ratio: Option<f64>,
    /// Preemptions since the attempt started.
    pub preemptions: Option<f64>,
    /// Requests the client saw answered by this replica in the attempt.
    pub requests: u64,
    /// Generated tokens per second between recent polls, oldest first, tok/s.
    pub tps_history: Vec<f64>,
    /// No fresh scrape: the numbers are old.
    pub stale: bool,
}

/// A conversation attempt as it runs: its sessions, and what each turn index did so far.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConversationLive {
    /// Conversations the attempt runs.
    pub sessions: u32,
    /// Of those, the ones whose last turn ended (or that a failed turn ended).
    pub sessions_done: u32,
    /// Per turn index, in order.
    pub turns: Vec<TurnLive>,
}

/// One turn index of a running conversation attempt.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TurnLive {
    /// 1-based turn.
    pub turn: u32,
    /// Requests of the turn that completed.
    pub done: u64,
    /// Requests of the turn that failed.
    pub failed: u64,
    /// Mean prompt tokens (the history sent), from usage.
    pub prompt_tokens_mean: Option<f64>,
    /// Median TTFT of the completed requests, ms.
    pub ttft_p50_ms: Option<f64>,
    /// Share of prompt tokens the server served from its cache, where usage says
    /// (`cached_tokens` on every completed request of the turn).
    pub cached_ratio: Option<f64>,
}

/// One prompt family of a routing phase.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FamilyLive {
    /// Family number (0 is the hot one in hot scenarios).
    pub family: u32,
    /// Replica that owns the family's prefix: the initial owner after priming, then the
    /// replica that served it most recently.
    pub owner: Option<String>,
    /// Requests of this family served per replica so far.
    pub served: BTreeMap<String, u64>,
    /// The family receives the hot fraction of the traffic.
    pub hot: bool,
}
