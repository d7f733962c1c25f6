//! The SLO search panel's view of a finished search, read back from its attempt (its `probes`
//! table, labels and figures): the monitor shows it once the search ended, whatever live view
//! it last caught (the last one a probe published cannot hold that probe's own verdict).

use crate::cell::search_live::{ProbeLive, SearchLive};
use crate::config::slo_search::SearchMode;
use crate::report::extension::{ExtensionAttempt, figure};

/// The finished search `a` as the panel shows it; None when `a` is not an SLO search's.
pub fn from_attempt(a: &ExtensionAttempt) -> Option<SearchLive> {
    let t = a.tables.get("probes")?;
    let col = |name: &str| t.columns.iter().position(|c| c.name == name);
    let [load, repeat, requests, met, low, high, pass] =
        ["load", "repeat", "pooled_requests", "pooled_attainment", "attainment_low", "attainment_high", "pass"]
            .map(col);
    let mode = match a.labels.get("mode")?.as_str() {
        "concurrency" => SearchMode::Concurrency,
        "rate" => SearchMode::Rate,
        _ => return None,
    };
    let done = t.rows.iter().map(|r| {
        let v = |i: Option<usize>| i.and_then(|i| r.values.get(i).copied().flatten());
        ProbeLive {
            load: v(load).unwrap_or(0.0),
            repeat: v(repeat).unwrap_or(1.0) as u32,
            requests: v(requests).unwrap_or(0.0) as u64,
            attainment: v(met),
            interval: (v(low).unwrap_or(0.0), v(high).unwrap_or(1.0)),
            verdict: v(pass).map(|p| p > 0.5),
        }
    });
    Some(SearchLive {
        mode: mode.as_str(),
        unit: mode.unit(),
        slo: a.labels.get("slo").cloned().unwrap_or_default(),
        target: figure(a, "target_attainment")?,
        last_pass: figure(a, "last_pass"),
        first_fail: figure(a, "first_fail"),
        running: None,
        done: done.collect(),
        ended: a.labels.get("outcome").cloned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::slo_search::{Resolution, SloSearchConfig};
    use crate::experiment::slo_search::probe::Probe;
    use crate::experiment::slo_search::report::{Outcome, attempt};
    use crate::experiment::slo_search::search::{Ending, Judged, Step};
    use crate::stats::Proportion;

    #[test]
    fn a_finished_attempt_reads_back_as_its_final_view() {
        let probe = |load, repeat, hits, verdict| Probe {
            step: Step { load, repeat },
            tally: Proportion::new(hits, 40),
            judged: Judged { pooled: Proportion::new(hits, 40), interval: (0.8, 0.99), verdict },
            goodput: 1.0,
            duration_s: 1.0,
            ttft_ms: [None, None],
            tpot_ms: [None, None],
            output_tokens: 10,
            output_tps: 10.0,
            failed: 0,
        };
        let cfg = SloSearchConfig {
            mode: SearchMode::Rate,
            target: 0.9,
            start: 1.0,
            max: 8.0,
            resolution: Resolution::Relative(0.05),
            repeats: 3,
        };
        let out =
            Outcome { cfg, slo: "ttft:150".into(), bracket: (Some(4.0), Some(4.2)), ending: Some(Ending::Bracketed) };
        let probes = [probe(4.0, 1, 36, None), probe(4.2, 1, 20, Some(false))];
        let a = attempt((1, 0.0, 2.0), &probes, Default::default(), None, &out);
        let v = from_attempt(&a).expect("an SLO search's attempt");
        assert_eq!((v.mode, v.unit, v.slo.as_str(), v.target), ("rate", "req/s", "ttft:150", 0.9));
        assert_eq!((v.last_pass, v.first_fail, v.running), (Some(4.0), Some(4.2), None));
        assert_eq!(v.ended.as_deref(), Some("bracketed"));
        let expect = |load, verdict, attainment| ProbeLive {
            load,
            repeat: 1,
            requests: 40,
            attainment: Some(attainment),
            interval: (0.8, 0.99),
            verdict,
        };
        assert_eq!(v.done, [expect(4.0, None, 0.9), expect(4.2, Some(false), 0.5)]);
        let mut other = a.clone();
        other.tables.clear();
        assert_eq!(from_attempt(&other), None);
    }
}
