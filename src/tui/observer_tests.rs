//! The observer's screen on a `TestBackend`: two shards (one stale), two cells (one active),
//! the not-sent note; and the keys the observer refuses to act on.

use super::*;
use crate::metrics::observe::health::ShardSeen;
use crate::metrics::observe::{Health, HealthEvent};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

fn screen() -> ObserverScreen {
    let mut s = ObserverScreen {
        title: r#"observing job="shards",session="s-1" on http://127.0.0.1:9090 (scrape 1 s, rates over 4 s)"#.into(),
        replicas: "replicas: sim-a running 4, waiting 0, KV 12%".into(),
        ..ObserverScreen::default()
    };
    let mut health = Health::new(4.0);
    let seen = |beat| ShardSeen { session: "s-1".into(), heartbeat_unix: beat, finished: false, active: true };
    health.update(&BTreeMap::from([("0".into(), seen(1.0)), ("1".into(), seen(1.0))]), 1.0);
    let events = health.update(&BTreeMap::from([("0".into(), seen(2.0))]), 2.0);
    assert!(matches!(&events[..], [HealthEvent::Stale { .. }]));
    let mut active =
        CellFigures { tok_s: Some(0.0), running: 3.0, active_shards: 1.0, started: 12.0, ..CellFigures::default() };
    active.quantiles.insert((Latency::Ttft, 500), 0.0123);
    active.quantiles.insert((Latency::Ttft, 990), 0.0456);
    active.quantiles.insert((Latency::Itl, 500), 0.0031);
    let done = CellFigures {
        started: 8.0,
        completed: 8.0,
        errors: BTreeMap::from([("stalled".into(), 1.0)]),
        ..CellFigures::default()
    };
    for (i, tok) in [400.0, 800.0, 812.5].into_iter().enumerate() {
        active.tok_s = Some(tok);
        let view = View {
            at_unix: i as f64,
            cells: BTreeMap::from([("ctx=0 conc=2".into(), done.clone()), ("ctx=0 conc=4".into(), active.clone())]),
            shards: BTreeMap::new(),
        };
        s.take(&view, &health.shards);
    }
    s.note("shard 1 stale: its series are gone from the server (heartbeat 1.0 s ago)".into());
    s.note(not_sent_note('p'));
    s
}

fn render(s: &ObserverScreen) -> String {
    let mut t = Terminal::new(TestBackend::new(120, 24)).unwrap();
    t.draw(|f| draw(f, s)).unwrap();
    let buf = t.backend().buffer().clone();
    let rows = (0..buf.area.height).map(|y| (0..buf.area.width).map(|x| buf[(x, y)].symbol()).collect::<String>());
    rows.map(|r| r.trim_end().to_string()).collect::<Vec<_>>().join("\n")
}

#[test]
fn the_screen_shows_shards_cells_the_rate_and_the_not_sent_note() {
    let text = render(&screen());
    insta::assert_snapshot!(text);
    assert!(text.contains(NOT_SENT) && text.contains("replicas: sim-a running 4"));
    assert!(text.contains("0 up") && text.contains("1 ~stale"), "{text}");
    assert!(text.contains("812.5") && text.contains("12.3 / 45.6"), "{text}");
    assert_eq!(screen().history["ctx=0 conc=4"], [400, 800, 813]);
    assert!(!screen().history.contains_key("ctx=0 conc=2"), "inactive cells add no point");
}

#[test]
fn control_keys_are_refused_with_a_note_and_q_quits() {
    assert_eq!(key_action('q'), Some(true));
    for c in ['p', 's', 'k', '+', '-'] {
        assert_eq!(key_action(c), Some(false), "{c}");
    }
    assert_eq!(key_action('x'), None);
    assert!(not_sent_note('s').contains("not sent"));
}
