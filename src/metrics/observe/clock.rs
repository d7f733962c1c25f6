//! The observer's clock: seconds since the epoch read once at start and carried forward on
//! tokio's monotonic clock, so shard health and the give-up countdown (`--observe-give-up`)
//! follow one clock that tests can pause and advance.

use tokio::time::Instant;

/// Wall-clock seconds at a start instant, carried forward monotonically.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    unix0: f64,
    at0: Instant,
}

impl Clock {
    /// A clock reading the system's wall clock now.
    pub fn start() -> Clock {
        let unix0 = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64());
        Clock { unix0, at0: Instant::now() }
    }

    /// Seconds since the epoch now: the start's reading plus tokio's elapsed time.
    pub fn now_unix(&self) -> f64 {
        self.unix0 + self.at0.elapsed().as_secs_f64()
    }
}

/// What the monitor shows of a stale shard's countdown: `shard 1 stale: giving up in 42 s`
/// (whole seconds, rounded up so it reaches 0 only when the observer gives up).
pub fn give_up_note(shard: &str, left_s: f64) -> String {
    format!("shard {shard} stale: giving up in {} s", left_s.max(0.0).ceil() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::observe::Health;
    use crate::metrics::observe::health::ShardSeen;
    use std::collections::BTreeMap;
    use std::time::Duration;

    fn seen(beat: f64) -> ShardSeen {
        ShardSeen { session: "s-1".into(), heartbeat_unix: beat, finished: false, active: true }
    }

    /// On tokio's paused clock: shard 1's series vanish, the countdown runs down with the
    /// clock, and the observer is done only past the give-up time.
    #[tokio::test(start_paused = true)]
    async fn the_give_up_countdown_follows_the_clock_and_ends_the_observer_past_it() {
        let clock = Clock::start();
        let mut h = Health::new(4.0);
        let t0 = clock.now_unix();
        h.update(&BTreeMap::from([("0".to_string(), seen(t0)), ("1".to_string(), seen(t0))]), t0);
        let mut fin = seen(t0);
        fin.finished = true;
        h.update(&BTreeMap::from([("0".to_string(), fin)]), clock.now_unix());
        let give_up = Some(60.0);
        tokio::time::advance(Duration::from_secs(18)).await;
        let now = clock.now_unix();
        let notes: Vec<String> = h.giving_up(now, give_up).iter().map(|(s, l)| give_up_note(s, *l)).collect();
        assert_eq!(notes, ["shard 1 stale: giving up in 42 s"]);
        assert!(!h.all_done(now, give_up));
        tokio::time::advance(Duration::from_millis(42_500)).await;
        assert!(h.all_done(clock.now_unix(), give_up), "past 60 s the stale shard no longer holds it");
        assert!(!h.all_done(clock.now_unix(), None), "--observe-give-up 0 waits");
        assert_eq!(give_up_note("1", 0.2), "shard 1 stale: giving up in 1 s");
    }
}
