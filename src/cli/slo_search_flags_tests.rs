use super::*;

fn shape(plans: &[PlanKind]) -> RunShape<'_> {
    RunShape { plans, slo: SloSource::Goodput, num_prompts: 96, rates_given: false, trace: None }
}

fn flags(mode: SearchMode) -> SloSearchFlags {
    SloSearchFlags { slo_search: Some(mode), ..Default::default() }
}

const SERVE: &[PlanKind] = &[PlanKind::Serve];

#[test]
fn defaults_per_mode() {
    let c = flags(SearchMode::Concurrency).config(shape(SERVE)).unwrap().unwrap();
    assert_eq!((c.target, c.start, c.max, c.resolution, c.repeats), (0.99, 1.0, 96.0, Resolution::Absolute(1.0), 3));
    let r = flags(SearchMode::Rate).config(shape(SERVE)).unwrap().unwrap();
    assert_eq!((r.max, r.resolution), (256.0, Resolution::Relative(0.05)));
    assert_eq!(SloSearchFlags::default().config(shape(SERVE)), Ok(None));
}

#[test]
fn the_search_needs_an_slo_the_serve_plan_and_its_own_load() {
    let f = flags(SearchMode::Concurrency);
    for source in [SloSource::Default, SloSource::Demo] {
        let e = f.config(RunShape { slo: source, ..shape(SERVE) }).unwrap_err();
        assert_eq!(e, "--slo-search needs the SLO it searches under: add --goodput (e.g. --goodput ttft:500 tpot:50)");
    }
    assert!(f.config(RunShape { slo: SloSource::SloFlags, ..shape(SERVE) }).is_ok(), "--slo-ttft names an SLO too");
    assert_eq!(
        f.config(shape(&[PlanKind::Decode])).unwrap_err(),
        "--slo-search probes the serve workload: add --plan serve"
    );
    let e = f.config(RunShape { rates_given: true, ..shape(SERVE) }).unwrap_err();
    assert!(e.starts_with("--request-rate sets the serve plan's fixed cells"), "{e}");
    let e = f.config(RunShape { trace: Some("mooncake_trace"), ..shape(SERVE) }).unwrap_err();
    assert!(e.starts_with("--dataset-name mooncake_trace replays on its own schedule"), "{e}");
    let stray = SloSearchFlags { slo_repeats: Some(2), ..Default::default() };
    assert_eq!(
        stray.config(shape(SERVE)).unwrap_err(),
        "--slo-repeats shapes the SLO search: add --slo-search concurrency|rate"
    );
}

#[test]
fn out_of_range_settings_are_one_line_errors_naming_the_flag() {
    let with = |f: SloSearchFlags| f.config(shape(SERVE)).unwrap_err();
    let c = || flags(SearchMode::Concurrency);
    for (f, flag) in [
        (SloSearchFlags { slo_attainment: Some(0.0), ..c() }, "--slo-attainment"),
        (SloSearchFlags { slo_attainment: Some(100.5), ..c() }, "--slo-attainment"),
        (SloSearchFlags { slo_attainment: Some(f64::NAN), ..c() }, "--slo-attainment"),
        (SloSearchFlags { slo_repeats: Some(0), ..c() }, "--slo-repeats"),
        (SloSearchFlags { slo_start_load: Some(1.5), ..c() }, "--slo-start-load"),
        (SloSearchFlags { slo_start_load: Some(0.0), ..c() }, "--slo-start-load"),
        (SloSearchFlags { slo_max_load: Some(f64::INFINITY), ..c() }, "--slo-max-load"),
        (SloSearchFlags { slo_start_load: Some(200.0), ..c() }, "--slo-max-load"),
        (SloSearchFlags { slo_resolution: Some(Resolution::Absolute(0.5)), ..c() }, "--slo-resolution"),
        (SloSearchFlags { slo_max_load: Some(2e6), ..flags(SearchMode::Rate) }, "--slo-max-load"),
    ] {
        let e = with(f);
        assert!(e.starts_with(flag) && !e.contains('\n'), "{flag}: {e}");
    }
    let rate = SloSearchFlags {
        slo_start_load: Some(0.25),
        slo_resolution: Some(Resolution::Absolute(0.1)),
        ..flags(SearchMode::Rate)
    };
    assert_eq!(rate.config(shape(SERVE)).unwrap().unwrap().start, 0.25, "a rate may be fractional");
}

proptest::proptest! {
    /// Any values: a one-line error, or a search that ends within the probes it is sized for.
    #[test]
    fn any_settings_are_refused_in_one_line_or_search_to_an_end(
        concurrency in proptest::bool::ANY,
        attainment in proptest::option::of(proptest::num::f64::ANY),
        start in proptest::option::of(proptest::num::f64::ANY),
        max in proptest::option::of(proptest::num::f64::ANY),
        step in proptest::option::of((proptest::bool::ANY, proptest::num::f64::POSITIVE)),
        repeats in proptest::option::of(proptest::num::u32::ANY),
        capacity in 0.0f64..1e7,
    ) {
        let mode = if concurrency { SearchMode::Concurrency } else { SearchMode::Rate };
        let resolution = step.and_then(|(pct, v)| {
            let text = if pct { format!("{}%", v.min(100.0)) } else { v.to_string() };
            text.parse().ok()
        });
        let f = SloSearchFlags {
            slo_search: Some(mode),
            slo_attainment: attainment,
            slo_start_load: start,
            slo_max_load: max,
            slo_resolution: resolution,
            slo_repeats: repeats,
        };
        match f.config(shape(SERVE)) {
            Err(e) => proptest::prop_assert!(!e.is_empty() && !e.contains('\n'), "{e:?}"),
            Ok(c) => {
                let c = c.unwrap();
                let bound = crate::experiment::slo_search::search::most_probes(&c);
                let mut s = crate::experiment::slo_search::search::Search::new(c);
                let mut n = 0;
                while let Some(step) = s.next() {
                    let good = if step.load <= capacity { 100 } else { 0 };
                    s.record(crate::stats::Proportion::new(good, 100));
                    n += 1;
                    proptest::prop_assert!(n <= bound, "{n} probes, sized for {bound}");
                }
            }
        }
    }
}

#[test]
fn the_recorded_settings_read_back_as_the_same_flags() {
    use clap::Parser;
    let settings = |extra: &[String]| {
        let base = ["x", "run", "--base-url", "http://127.0.0.1:9", "--plan", "serve", "--goodput", "ttft:500"];
        let argv: Vec<String> = base.iter().map(|s| s.to_string()).chain(extra.iter().cloned()).collect();
        let Ok(crate::cli::Cli { command: Some(crate::cli::Command::Run(run)), .. }) =
            crate::cli::Cli::try_parse_from(argv)
        else {
            panic!("{extra:?}: refused")
        };
        run.to_config().expect("taken").settings()
    };
    let given =
        ["--slo-search", "rate", "--slo-attainment", "97.3", "--slo-start-load", "0.7", "--slo-resolution", "7%"];
    let first = settings(&given.map(String::from));
    assert_eq!(first["slo-search"], "rate");
    assert_eq!((first["slo-attainment"].as_str(), first["slo-resolution"].as_str()), ("97.3", "7%"));
    // What `--resume` restores: every recorded slo-* setting as its flag.
    let restored: Vec<String> =
        first.iter().filter(|(k, _)| k.starts_with("slo-")).map(|(k, v)| format!("--{k}={v}")).collect();
    assert_eq!(restored.len(), 6);
    let slo = |s: std::collections::BTreeMap<String, String>| {
        s.into_iter().filter(|(k, _)| k.starts_with("slo-")).collect::<Vec<_>>()
    };
    assert_eq!(slo(settings(&restored)), slo(first));
}
