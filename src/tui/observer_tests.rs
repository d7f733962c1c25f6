//! The observer's screen on a `TestBackend`: the session monitor's panels fed from summed
//! figures (the matrix, the live panel, the replicas with KV usage and running/waiting), the
//! shard strip with a stale shard and its give-up countdown, the keys note; and the keys the
//! observer refuses to act on.

use super::*;
use crate::metrics::engine::EngineSample;
use crate::metrics::observe::health::ShardSeen;
use crate::metrics::observe::{CellFigures, Health, HealthEvent, Latency};
use crate::metrics::poller::ReplicaView;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use std::time::Duration;

fn replica(name: &str, running: f64, waiting: f64, kv: f64) -> ReplicaView {
    let sample =
        EngineSample { running: Some(running), waiting: Some(waiting), kv_usage: Some(kv), ..Default::default() };
    ReplicaView { name: name.into(), sample: Some(sample), stale: false, ..Default::default() }
}

/// Two shards (shard 1 gone stale), a finished cell and a running one over three polls, two
/// replicas; every instant an offset of one base, so the drawing does not depend on the clock.
fn screen() -> ObserverScreen {
    let base = Instant::now();
    let session = ObservedSession {
        prometheus: "http://127.0.0.1:9090".into(),
        selector: r#"job="shards",session="s-1""#.into(),
        report_path: "sessions/observe-1.json".into(),
        started: base,
    };
    let mut s = ObserverScreen::new(session);
    let mut health = Health::new(4.0);
    let seen = |beat| ShardSeen { session: "s-1".into(), heartbeat_unix: beat, finished: false, active: true };
    health.update(&BTreeMap::from([("0".into(), seen(1.0)), ("1".into(), seen(1.0))]), 1.0);
    let events = health.update(&BTreeMap::from([("0".into(), seen(2.0))]), 2.0);
    assert!(matches!(&events[..], [HealthEvent::Stale { .. }]));
    let mut active = CellFigures {
        running: 3.0,
        in_flight: 4.0,
        active_shards: 1.0,
        started: 12.0,
        completed: 8.0,
        tokens: 5120.0,
        ..CellFigures::default()
    };
    active.quantiles.insert((Latency::Ttft, 500), 0.0123);
    active.quantiles.insert((Latency::Ttft, 900), 0.0456);
    let mut done = CellFigures { started: 8.0, completed: 8.0, ..CellFigures::default() };
    done.errors.insert("stalled".into(), 1.0);
    let mut ran = done.clone();
    (ran.active_shards, ran.tok_s) = (2.0, Some(640.0));
    let polls = [(ran, None), (done.clone(), Some(400.0)), (done.clone(), Some(800.0)), (done, Some(812.5))];
    for (i, (first, tok)) in polls.into_iter().enumerate() {
        let mut cells = BTreeMap::from([("ctx=0 conc=2".to_string(), first)]);
        if let Some(tok) = tok {
            cells.insert("ctx=0 conc=4".into(), CellFigures { tok_s: Some(tok), ..active.clone() });
        }
        let view = View { at_unix: i as f64, cells, shards: BTreeMap::new() };
        s.take(&view, &health.shards, base + Duration::from_secs(i as u64 + 1));
    }
    let replicas = vec![replica("sim-a", 4.0, 0.0, 0.12), replica("sim-b", 2.0, 1.0, 0.5)];
    s.set_replicas(Arc::new(MetricsSnapshot { seq: 4, at: base, replicas, gateway: None }));
    s.note("shard 1 stale: its series are gone from the server (heartbeat 1.0 s ago)".into(), true);
    s.countdown = health.giving_up(20.0, Some(60.0));
    s.refresh(base + Duration::from_secs(6));
    s
}

fn render(s: &ObserverScreen, w: u16, h: u16) -> String {
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| draw(f, s)).unwrap();
    let buf = t.backend().buffer().clone();
    let rows = (0..buf.area.height).map(|y| (0..buf.area.width).map(|x| buf[(x, y)].symbol()).collect::<String>());
    rows.map(|r| r.trim_end().to_string()).collect::<Vec<_>>().join("\n")
}

#[test]
fn the_screen_is_the_session_monitor_fed_from_summed_figures() {
    let text = render(&screen(), 120, 38);
    insta::assert_snapshot!(text);
    assert!(text.lines().nth(1).is_some_and(|l| l.contains(NOT_SENT)), "{text}");
    assert!(text.contains("0 up") && text.contains("1 ~stale"), "{text}");
    assert!(text.contains("shard 1 stale: giving up in 42 s"), "the countdown from 60 s, stale since 2.0: {text}");
    assert!(text.contains("Live: ctx=0 conc=4") && text.contains("812.5"), "{text}");
    assert!(text.contains("12 sent · 8 done · 4 in flight · 0 failed"), "{text}");
    assert!(text.contains("640.0"), "the ended cell shows the median of its polls while it ran: {text}");
    assert!(text.contains("sim-a") && text.contains("sim-b"), "the replicas panel: {text}");
    assert!(text.contains(":9090") && text.contains("sessions/observe-1.json"), "the header: {text}");
    assert!(!text.contains(" p pause"), "the observer's key bar lists no key it refuses: {text}");
}

#[test]
fn a_narrow_terminal_draws_the_compact_monitor_under_the_strip() {
    let text = render(&screen(), 80, 26);
    insta::assert_snapshot!(text);
    assert!(text.contains("1 ~stale") && text.contains("Live: ctx=0 conc=4"), "{text}");
}

#[test]
fn control_keys_are_refused_with_a_note_others_act_and_q_quits() {
    let mut s = screen();
    assert_eq!(s.key(Action::Quit).as_deref(), Some("quit"));
    for (a, k) in [(Action::TogglePause, "p"), (Action::Skip, "s"), (Action::KnobUp, "+"), (Action::Save, "w")] {
        assert_eq!(s.key(a), None);
        assert_eq!(s.app.notice, Some(not_sent_note(k)));
    }
    let text = render(&s, 120, 38);
    assert!(text.contains("» `w` not sent: the observer does not control the shards"), "{text}");
    assert_eq!(s.key(Action::ToggleHelp), None);
    assert_eq!((s.app.mode, s.app.notice.as_deref()), (Mode::Help, None));
    assert!(render(&s, 120, 38).contains("Keys"), "the monitor's own help");
}
