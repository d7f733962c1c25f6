//! Per-shard health for the observer: a shard is stale when its series vanish from the server
//! (its scrape failed: Prometheus marks the series stale) or when, while it runs a cell, its
//! heartbeat has not advanced for longer than the stale limit; a shard that reported
//! `session_finished` has ended, not gone stale (docs/metrics.md, "For an observer").

use std::collections::BTreeMap;

/// What the server shows of one shard at one poll.
#[derive(Debug, Clone, PartialEq)]
pub struct ShardSeen {
    /// The shard's `session` label.
    pub session: String,
    /// `heartbeat_timestamp_seconds`, seconds since the epoch.
    pub heartbeat_unix: f64,
    /// `session_finished` is 1.
    pub finished: bool,
    /// Some cell's `cell_active` is 1.
    pub active: bool,
}

/// One shard's state as the observer tracks it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ShardState {
    /// The shard's session id.
    pub session: String,
    /// Its last heartbeat seen, seconds since the epoch.
    pub heartbeat_unix: f64,
    /// Observer time at which the heartbeat last advanced (or was first seen), seconds since the epoch.
    #[serde(skip)]
    pub advanced_at: f64,
    /// Whether it runs a cell (last seen).
    pub active: bool,
    /// It reported `session_finished`.
    pub finished: bool,
    /// It is stale now.
    pub stale: bool,
    /// Observer time at which it went stale, seconds since the epoch.
    #[serde(skip)]
    pub stale_since: Option<f64>,
}

/// A change of a shard's health, as headless prints it and the JSON report records it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum HealthEvent {
    /// First seen.
    Joined {
        /// Shard index label.
        shard: String,
        /// Its session id.
        session: String,
    },
    /// Went stale: `age_s` seconds since its heartbeat last advanced; `vanished` when its series are gone.
    Stale {
        /// Shard index label.
        shard: String,
        /// Seconds since its heartbeat last advanced, as the observer saw it.
        age_s: f64,
        /// Its series are gone from the server (a failed scrape).
        vanished: bool,
    },
    /// Reports again after being stale.
    Back {
        /// Shard index label.
        shard: String,
    },
    /// Reported `session_finished`.
    Finished {
        /// Shard index label.
        shard: String,
    },
}

/// Every shard seen, and the limit past which a silent shard is stale.
#[derive(Debug, Clone, PartialEq)]
pub struct Health {
    /// A running shard whose heartbeat has not advanced for this long is stale, seconds.
    pub stale_after_s: f64,
    /// Shards by index label.
    pub shards: BTreeMap<String, ShardState>,
}

impl Health {
    /// No shard yet; `stale_after_s` as [`stale_after_s`] gives it.
    pub fn new(stale_after_s: f64) -> Health {
        Health { stale_after_s, shards: BTreeMap::new() }
    }

    /// Takes one poll's view of the shards at observer time `now_unix`; returns what changed.
    pub fn update(&mut self, seen: &BTreeMap<String, ShardSeen>, now_unix: f64) -> Vec<HealthEvent> {
        let mut events = Vec::new();
        for (shard, s) in seen {
            let st = self.shards.entry(shard.clone()).or_insert_with(|| {
                events.push(HealthEvent::Joined { shard: shard.clone(), session: s.session.clone() });
                ShardState {
                    session: s.session.clone(),
                    heartbeat_unix: s.heartbeat_unix,
                    advanced_at: now_unix,
                    active: s.active,
                    finished: false,
                    stale: false,
                    stale_since: None,
                }
            });
            if s.heartbeat_unix > st.heartbeat_unix {
                (st.heartbeat_unix, st.advanced_at) = (s.heartbeat_unix, now_unix);
            }
            st.active = s.active;
            if s.finished && !st.finished {
                st.finished = true;
                events.push(HealthEvent::Finished { shard: shard.clone() });
            }
        }
        for (shard, st) in &mut self.shards {
            let present = seen.contains_key(shard);
            let silent = now_unix - st.advanced_at;
            let stale = !st.finished && (!present || (st.active && silent > self.stale_after_s));
            match (st.stale, stale) {
                (false, true) => {
                    (st.stale, st.stale_since) = (true, Some(now_unix));
                    events.push(HealthEvent::Stale { shard: shard.clone(), age_s: silent, vanished: !present });
                }
                (true, false) => {
                    (st.stale, st.stale_since) = (false, None);
                    events.push(HealthEvent::Back { shard: shard.clone() });
                }
                _ => {}
            }
        }
        events
    }

    /// Shards neither stale nor finished.
    pub fn up(&self) -> usize {
        self.shards.values().filter(|s| !s.stale && !s.finished).count()
    }

    /// Stale shards.
    pub fn stale(&self) -> usize {
        self.shards.values().filter(|s| s.stale).count()
    }

    /// Shards that reported `session_finished`.
    pub fn finished(&self) -> usize {
        self.shards.values().filter(|s| s.finished).count()
    }

    /// True once at least one shard was seen and each has finished or been stale for longer
    /// than `give_up_s` seconds; with `None` (`--observe-give-up 0`) a stale shard holds the
    /// observer open until it comes back, the timeout or a signal.
    pub fn all_done(&self, now_unix: f64, give_up_s: Option<f64>) -> bool {
        let given_up = |t: f64| give_up_s.is_some_and(|g| now_unix - t > g);
        let done = |s: &ShardState| s.finished || s.stale_since.is_some_and(given_up);
        !self.shards.is_empty() && self.shards.values().all(done)
    }

    /// Each stale shard and the seconds left before the observer gives up on it (0 once
    /// past), by shard; empty with `None` (never giving up).
    pub fn giving_up(&self, now_unix: f64, give_up_s: Option<f64>) -> Vec<(String, f64)> {
        let Some(g) = give_up_s else { return Vec::new() };
        let left = |t: f64| (g - (now_unix - t)).max(0.0);
        self.shards.iter().filter_map(|(n, s)| Some((n.clone(), left(s.stale_since?)))).collect()
    }
}

/// The stale limit for a scrape interval: three scrapes and one more second (the heartbeat
/// itself moves every 250 ms; a scrape shows it up to one interval late).
pub fn stale_after_s(scrape_interval_s: f64) -> f64 {
    3.0 * scrape_interval_s + 1.0
}
