use super::*;
use crate::load::sample::{ErrorKind, Mark, Outcome};
use std::time::Duration;

/// Session `session`'s turn `turn`, sent `at_ms` after `t0`: its first token 100 ms later,
/// 10 tokens 10 ms apart, `prompt` prompt tokens.
fn turn(t0: Instant, session: u32, turn: u32, at_ms: u64, prompt: u64) -> RequestSample {
    let mut s = RequestSample::new(session, t0 + Duration::from_millis(at_ms));
    s.tag = turn;
    for k in 0..10u64 {
        s.marks.push(Mark { at_us: 100_000 + k * 10_000, tokens: k + 1 });
    }
    s.output_tokens = 10;
    s.ended_at = s.sent_at + Duration::from_millis(200);
    (s.prompt_tokens, s.outcome) = (Some(prompt), Outcome::Completed(None));
    s
}

fn col(t: &ExtensionTable, row: usize, name: &str) -> Option<f64> {
    let i = t.columns.iter().position(|c| c.name == name).unwrap();
    t.rows[row].values[i]
}

#[test]
fn each_turn_may_share_its_previous_turn_and_the_answer_only_when_sent_back() {
    let t0 = Instant::now();
    let s = vec![turn(t0, 0, 0, 0, 100), turn(t0, 0, 1, 300, 250), turn(t0, 1, 0, 0, 80), turn(t0, 0, 2, 600, 400)];
    assert_eq!(shareable(&s, History::Dataset), vec![0, 100, 0, 250]);
    assert_eq!(shareable(&s, History::Model), vec![0, 110, 0, 260]);
}

#[test]
fn counters_go_to_the_requests_that_can_share_in_their_interval_and_the_rest_where_room_is_left() {
    let t0 = Instant::now();
    // First tokens at 100 ms (a, b: first turns) and 1100 ms (c: a second turn sharing 100).
    let s = vec![turn(t0, 0, 0, 0, 100), turn(t0, 1, 0, 0, 300), turn(t0, 0, 1, 1000, 400)];
    let share = shareable(&s, History::Dataset);
    assert_eq!(share, [0, 0, 100]);
    let at = |ms: u64| t0 + Duration::from_millis(ms);
    let iv = |from, to, hits| Interval { from: at(from), to: at(to), hits, queries: 0.0 };
    // c's 90 hits were counted by the server before the client saw its first token: they fall
    // in the first turns' interval, where nobody can share; they still land on c.
    let (each, moved) = apportion(&s, &share, &[iv(0, 1050, 90.0), iv(1050, 1500, 0.0)], false);
    assert_eq!(each, vec![(0.0, 100.0), (0.0, 300.0), (90.0, 400.0)]);
    assert_eq!(moved, 90.0, "placed outside their interval");
    // In its own interval: not moved. Lookups are each request's prompt tokens.
    let (each, moved) = apportion(&s, &share, &[iv(0, 500, 0.0), iv(900, 1500, 100.0)], false);
    assert_eq!((each[2], moved), ((100.0, 400.0), 0.0));
    // Hits beyond every request's room (a warm cache) are spread by prompt tokens: 80 of 800.
    let (each, _) = apportion(&s, &share, &[iv(900, 1500, 180.0)], false);
    assert_eq!((each[0].0, each[1].0, each[2].0), (10.0, 30.0, 140.0));
    // Counted at the end (llama.cpp): every request ends 200 ms after its send.
    let (end, moved) = apportion(&s, &share, &[iv(1150, 1250, 60.0)], true);
    assert_eq!((end[2].0, moved), (60.0, 0.0));
    let (each, _) = apportion(&s, &share, &[iv(0, 1050, 90.0)], false);
    let table = table(&s, History::Dataset, &each, &Slo { ttft: Some(Duration::from_secs(1)), tpot: None, e2e: None });
    assert_eq!(table.key, "turn");
    assert_eq!(table.rows.iter().map(|r| r.key).collect::<Vec<_>>(), [1, 2]);
    assert_eq!(col(&table, 0, "requests"), Some(2.0));
    assert_eq!(col(&table, 0, "prompt_tokens_mean"), Some(200.0));
    assert_eq!(col(&table, 0, "prefix_hit_ratio"), Some(0.0), "a cold first turn stays cold");
    assert_eq!(col(&table, 0, "expected_prefix_hit_ratio"), Some(0.0));
    assert_eq!(col(&table, 1, "prefix_hit_ratio"), Some(0.225));
    assert_eq!(col(&table, 1, "expected_prefix_hit_ratio"), Some(0.25), "100 of turn 2's 400 tokens were turn 1's");
    assert_eq!(col(&table, 0, "ttft_p50_ms"), Some(100.0));
    assert_eq!(col(&table, 0, "tpot_p50_ms"), Some(10.0));
    assert_eq!(col(&table, 0, "goodput"), Some(1.0));
    assert_eq!(col(&table, 0, "prefix_hits_from_usage"), Some(0.0));
}

#[test]
fn usage_cached_tokens_win_when_every_request_of_the_turn_has_them_and_errors_count_against_goodput() {
    let t0 = Instant::now();
    let mut a = turn(t0, 0, 0, 0, 100);
    let mut b = turn(t0, 1, 0, 0, 100);
    (a.cached_tokens, b.cached_tokens) = (Some(0), Some(50));
    let mut failed = turn(t0, 2, 0, 0, 100);
    failed.outcome = Outcome::Failed { kind: ErrorKind::ServerError, detail: "boom".into() };
    let slo = Slo { ttft: Some(Duration::from_millis(50)), tpot: None, e2e: None };
    let t = table(&[a.clone(), b, failed], History::Dataset, &[], &slo);
    assert_eq!(col(&t, 0, "prefix_hit_ratio"), Some(0.25));
    assert_eq!(col(&t, 0, "prefix_hits_from_usage"), Some(1.0));
    assert_eq!(col(&t, 0, "cut_by_errors"), Some(1.0));
    assert_eq!(col(&t, 0, "goodput"), Some(0.0), "TTFT 100 ms misses a 50 ms bound");
    // One request without cached tokens: the counters' share decides (none here).
    let t = table(&[a, turn(t0, 1, 0, 0, 100)], History::Dataset, &[(5.0, 100.0), (5.0, 100.0)], &slo);
    assert_eq!((col(&t, 0, "prefix_hit_ratio"), col(&t, 0, "prefix_hits_from_usage")), (Some(0.05), Some(0.0)));
}
