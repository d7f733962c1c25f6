//! The observer's headless lines: one per poll per active cell, one per change of a shard's
//! health.

use crate::metrics::observe::{CellFigures, Health, HealthEvent, Latency};

/// A duration in seconds as ms with one decimal, or `-` when the window holds none.
fn ms(s: Option<f64>) -> String {
    s.map_or_else(|| "-".to_string(), |s| format!("{:.1} ms", s * 1e3))
}

/// `ctx=0 conc=4: 812.5 tok/s over 4 shards, running 4, TTFT p50 12.0 ms, ITL p50 3.1 ms; shards 4 up, 0 stale`.
pub(crate) fn cell_line(cell: &str, c: &CellFigures, health: &Health) -> String {
    let tok = c.tok_s.map_or_else(|| "- tok/s".to_string(), |t| format!("{t:.1} tok/s"));
    format!(
        "{cell}: {tok} summed over {} shard(s), running {}, TTFT p50 {}, ITL p50 {}; shards {} up, {} stale",
        c.active_shards,
        c.running,
        ms(c.quantile(Latency::Ttft, 0.5)),
        ms(c.quantile(Latency::Itl, 0.5)),
        health.up(),
        health.stale(),
    )
}

/// The line of a shard's health change.
pub(crate) fn event_line(ev: &HealthEvent) -> String {
    match ev {
        HealthEvent::Joined { shard, session } => format!("shard {shard} reporting (session {session})"),
        HealthEvent::Stale { shard, age_s, vanished: true } => {
            format!("shard {shard} stale: its series are gone from the server (heartbeat {age_s:.1} s ago)")
        }
        HealthEvent::Stale { shard, age_s, vanished: false } => {
            format!("shard {shard} stale: its heartbeat has not advanced for {age_s:.1} s while a cell runs")
        }
        HealthEvent::Back { shard } => format!("shard {shard} back: reporting again"),
        HealthEvent::Finished { shard } => format!("shard {shard} finished its session"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::observe::health::ShardSeen;
    use std::collections::BTreeMap;

    #[test]
    fn a_cell_line_names_the_summed_rate_the_medians_and_the_shards() {
        let mut h = Health::new(4.0);
        let seen = ShardSeen { session: "s".into(), heartbeat_unix: 1.0, finished: false, active: true };
        h.update(&BTreeMap::from([("0".into(), seen.clone()), ("1".into(), seen)]), 1.0);
        let mut c = CellFigures { tok_s: Some(812.54), running: 4.0, active_shards: 2.0, ..CellFigures::default() };
        c.quantiles.insert((Latency::Ttft, 500), 0.012);
        assert_eq!(
            cell_line("ctx=0 conc=4", &c, &h),
            "ctx=0 conc=4: 812.5 tok/s summed over 2 shard(s), running 4, TTFT p50 12.0 ms, ITL p50 -; shards 2 up, 0 stale"
        );
        let stale = HealthEvent::Stale { shard: "3".into(), age_s: 2.04, vanished: true };
        assert_eq!(event_line(&stale), "shard 3 stale: its series are gone from the server (heartbeat 2.0 s ago)");
    }
}
