use super::*;
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand_distr::{Binomial, Distribution};

fn cfg(mode: SearchMode, start: f64, max: f64, resolution: Resolution) -> SloSearchConfig {
    SloSearchConfig { mode, target: 0.99, start, max, resolution, repeats: 3 }
}

fn conc(max: f64) -> SloSearchConfig {
    cfg(SearchMode::Concurrency, 1.0, max, Resolution::Absolute(1.0))
}

fn rate(max: f64) -> SloSearchConfig {
    cfg(SearchMode::Rate, 0.5, max, Resolution::Relative(0.05))
}

/// Runs `search` to its end with `oracle` (load, repeat) -> tally; returns every probe made.
fn run(search: &mut Search, mut oracle: impl FnMut(f64, u32) -> Proportion) -> Vec<(Step, Judged)> {
    let mut probes = Vec::new();
    while let Some(step) = search.next() {
        let judged = search.record(oracle(step.load, step.repeat));
        probes.push((step, judged));
        assert!(probes.len() < 1000, "the search ends");
    }
    probes
}

/// A clean verdict: 1000 requests, all good below or at `capacity`, none above.
fn monotone(capacity: f64) -> impl FnMut(f64, u32) -> Proportion {
    move |load, _| Proportion::new(if load <= capacity { 1000 } else { 0 }, 1000)
}

#[test]
fn a_concurrency_search_finds_every_capacity_exactly() {
    for capacity in 1..=200u32 {
        let mut s = Search::new(conc(256.0));
        let probes = run(&mut s, monotone(f64::from(capacity)));
        let c = f64::from(capacity);
        assert_eq!(s.bracket(), (Some(c), Some(c + 1.0)), "capacity {capacity}");
        assert_eq!(s.ending(), Some(Ending::Bracketed));
        assert!(probes.iter().all(|(st, _)| st.repeat == 1), "clean verdicts are never repeated");
        assert!(probes.len() <= most_probes(&conc(256.0)), "{capacity}: {} probes", probes.len());
    }
}

#[test]
fn a_rate_search_closes_within_its_resolution_around_the_capacity() {
    for i in 0..300 {
        let capacity = 0.6 + f64::from(i) * 0.37;
        let mut s = Search::new(rate(200.0));
        run(&mut s, monotone(capacity));
        let (Some(pass), Some(fail)) = s.bracket() else { panic!("{capacity}: {:?}", s.bracket()) };
        assert!(pass <= capacity && capacity < fail, "{pass} <= {capacity} < {fail}");
        assert!(fail <= pass * 1.05 * (1.0 + 1e-9), "one step of 5%: {pass} .. {fail}");
    }
    // An absolute step of 0.25 requests/s.
    let mut s = Search::new(cfg(SearchMode::Rate, 1.0, 64.0, Resolution::Absolute(0.25)));
    run(&mut s, monotone(10.1));
    let (Some(pass), Some(fail)) = s.bracket() else { panic!() };
    assert!(pass <= 10.1 && 10.1 < fail && fail - pass <= 0.25, "{pass} .. {fail}");
}

#[test]
fn everything_passing_stops_at_the_highest_load() {
    let mut s = Search::new(conc(48.0));
    let probes = run(&mut s, monotone(1e9));
    let loads: Vec<f64> = probes.iter().map(|(st, _)| st.load).collect();
    assert_eq!(loads, [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 48.0], "doubling, capped at the highest");
    assert_eq!((s.bracket(), s.ending()), ((Some(48.0), None), Some(Ending::AllPassed)));
    assert_eq!(s.next(), None);
}

#[test]
fn the_lowest_load_failing_ends_at_once() {
    let mut s = Search::new(rate(100.0));
    let probes = run(&mut s, monotone(0.1));
    assert_eq!(probes.len(), 1);
    assert_eq!(probes[0].1.verdict, Some(false));
    assert_eq!((s.bracket(), s.ending()), ((None, Some(0.5)), Some(Ending::NonePassed)));
}

#[test]
fn a_small_probe_cannot_tell_99_percent_and_is_repeated_then_pooled() {
    // 96 of 96: the interval's low end is 0.962, below the 0.99 target.
    let mut s = Search::new(conc(8.0));
    let probes = run(&mut s, |load, _| Proportion::new(if load <= 3.0 { 96 } else { 40 }, 96));
    let at = |load: f64| probes.iter().filter(|(st, _)| st.load == load).collect::<Vec<_>>();
    let two = at(2.0);
    assert_eq!(two.iter().map(|(st, _)| st.repeat).collect::<Vec<_>>(), [1, 2, 3]);
    assert_eq!(two.iter().map(|(_, j)| j.verdict).collect::<Vec<_>>(), [None, None, Some(true)]);
    assert_eq!(two[2].1.pooled, Proportion::new(288, 288), "decided on every request at the load");
    assert_eq!(at(4.0).len(), 1, "40 of 96 fails outright");
    assert_eq!(s.bracket(), (Some(3.0), Some(4.0)));
}

#[test]
fn a_noisy_oracle_is_repeated_near_the_boundary_only_and_lands_within_one_step() {
    // True attainment: 1 up to 9 streams, 0.995 at 10 (the capacity), 0.985 at 11, 0.5 above.
    let truth = |load: f64| match load as u32 {
        0..=9 => 1.0,
        10 => 0.995,
        11 => 0.985,
        _ => 0.5,
    };
    let mut repeated_runs = 0;
    for seed in 0..200u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut s = Search::new(conc(64.0));
        let probes = run(&mut s, |load, _| {
            let good = Binomial::new(1000, truth(load)).unwrap().sample(&mut rng);
            Proportion::new(good, 1000)
        });
        let repeated: Vec<f64> = probes.iter().filter(|(st, _)| st.repeat > 1).map(|(st, _)| st.load).collect();
        assert!(repeated.iter().all(|l| *l == 10.0 || *l == 11.0), "seed {seed}: repeats at {repeated:?}");
        repeated_runs += usize::from(!repeated.is_empty());
        let (Some(pass), Some(fail)) = s.bracket() else { panic!("seed {seed}: {:?}", s.bracket()) };
        assert!((9.0..=11.0).contains(&pass) && fail == pass + 1.0, "seed {seed}: [{pass}, {fail}]");
    }
    assert!(repeated_runs > 150, "most runs repeat a probe at the boundary: {repeated_runs} of 200");
}

#[test]
fn the_probe_bound_holds_when_every_load_is_repeated() {
    // Every verdict straddles the target: each load takes all its repeats.
    let unsure = |capacity: f64| move |load: f64, _| Proportion::new(if load <= capacity { 96 } else { 94 }, 96);
    let cases = [
        conc(96.0),
        conc(1000.0),
        cfg(SearchMode::Concurrency, 3.0, 7.0, Resolution::Relative(0.1)),
        rate(256.0),
        cfg(SearchMode::Rate, 0.01, 1e4, Resolution::Relative(0.01)),
        cfg(SearchMode::Rate, 1.0, 100.0, Resolution::Absolute(0.5)),
    ];
    for c in cases {
        let bound = most_probes(&c);
        for i in 0..60 {
            let capacity = c.start + (c.max - c.start) * f64::from(i) / 59.0;
            let mut s = Search::new(c.clone());
            let n = run(&mut s, unsure(capacity)).len();
            assert!(n <= bound, "{c:?} at {capacity}: {n} probes, bound {bound}");
            assert!(n % 3 == 0, "every load probed three times");
        }
    }
}
