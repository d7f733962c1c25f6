//! Issue 21 item 4: every numeric flag of `run`, `sim`, `bench`, `bench-server`, `compare`
//! and the demo, and every numeric key of a `run --config` file, driven with extreme values
//! (0, negative, 1e-300, 1e300, NaN, inf, u64::MAX and values next to the limits). Each gives
//! a one-line error from the parse and check functions, or a configuration from which
//! everything derived before and during the load (the plan and its ETA, arrival schedules and
//! gaps, knob steps, timeouts, the simulator's step costs) is computed without a panic.

use super::Cli;
use crate::config::RunConfig;
use clap::{CommandFactory, Parser};
use proptest::prelude::*;
use rand::SeedableRng;
use std::collections::BTreeSet;
use std::time::Duration;

/// Numeric flags of `run`; with [`RUN_OTHER`], every flag (checked by a test).
const RUN_NUMERIC: &str = "ctx conc window warmup-timeout settle kv-oversubscribe burst-tokens max-tokens \
    min-stream-tokens idle-timeout first-token-timeout poll-interval rounds count rps request-rate burstiness \
    knob-step output prompt-tokens families priming-candidates slo-ttft slo-tpot goodput seed scenarios port \
    random-range-ratio sharegpt-output-len custom-output-len prefix-repetition-prefix-len \
    prefix-repetition-suffix-len prefix-repetition-num-prefixes prefix-repetition-output-len replay-speed \
    num-conversations turns turn-input-len think-time slo-attainment slo-start-load slo-max-load slo-resolution \
    slo-repeats server-timeout server-grace num-runs shard shards start-at metrics-linger observe-timeout request-timeout priming-slot \
    observe-give-up";
/// The flags of `run` that take no number.
const RUN_OTHER: &str = "overwrite base-url model metrics-url prometheus replica-selector gateway-metrics no-metrics plan \
    endpoint api-key-env api-key run-burst stop-at-knee served-by-header out result-dir result-filename \
    save-result host backend ignore-eos dataset-name metric-percentiles percentile-metrics \
    tokenizer dataset-path config routes arrival ascii headless log-file resume baseline allow-errors help version \
    trust-remote-code num-warmups profile temperature top-p top-k min-p append-result random-prefix-len label \
    ready-check-timeout-sec save-detailed request-id-prefix metadata tokenizer-mode logprobs use-beam-search \
    served-model-name disable-tqdm history session-header slo-search server-cmd server-param server-params \
    source-addrs session-id metrics-listen observe client-selector drain";
/// Numeric flags of `sim`.
const SIM_NUMERIC: &str = "port replicas slot-ctx max-num-seqs max-num-batched-tokens kv-blocks block-size \
    max-model-len stream-interval speed step-base-ms step-per-seq-ms step-per-prefill-token-us \
    step-per-ctx-token-ns frontend-delay-ms faults metrics-slow-delay prefix-block-bytes imbalance-abs \
    stddev-factor seed";
/// The flags of `sim` that take no number.
const SIM_OTHER: &str = "overwrite host model engine metrics-dialect gateway-mode router-policy router-overcount dev-mode enable-prompt-tokens-details ready-file no-gateway help version";
/// Numeric flags of `bench`, `bench-server`, `compare` and the demo, as `SUBCOMMAND:FLAG` (`:FLAG`: the demo's).
const OTHER_NUMERIC: &str = "bench:streams bench:window bench:tokens bench:interval-us bench:long-tokens \
    bench:long-streams bench:long-rounds bench-server:port bench-server:interval-us bench-server:tokens \
    bench:events-per-frame bench-server:max-model-len bench-server:batch-bytes bench-server:events-per-frame \
    compare:threshold compare:percentiles :demo-speed :demo-window";
/// The extremes every numeric flag is given (durations get a unit, composite flags a key).
const EXTREMES: &str = "0 -1 1e-300 1e300 NaN inf -inf 18446744073709551615 18446744073709551616 \
    9223372036854775807 4294967295 4294967296 65535 65536 0.0009 0.001 1000000 1000001 1e15 64m 65m 1073741824 \
    86400000 86400001";
/// Extreme durations.
const DURATIONS: &str = "0s 1ns 1ms 999ms 1s 365days 366days 1e300s 18446744073709551615s -1s";

/// The words of a list above.
fn words(list: &'static str) -> Vec<&'static str> {
    list.split_whitespace().collect()
}

/// The values tried for `flag`: the extremes, shaped as the flag takes them.
fn values(flag: &str) -> Vec<String> {
    let dur = flag.contains("window")
        || flag.contains("timeout")
        || flag.contains("settle")
        || flag.contains("delay")
        || flag.starts_with("slo-")
        || flag == "poll-interval"
        || flag == "server-grace"
        || flag == "metrics-linger"
        || flag == "priming-slot"
        || flag == "observe-give-up";
    let shaped = |v: &str| match flag {
        "goodput" => format!("ttft:{v}"),
        "faults" => format!("reset={v}"),
        "scenarios" => format!("hot{v}"),
        "knob-step" => format!("{v}%"),
        "percentiles" => format!("50,{v}"),
        _ => v.to_string(),
    };
    let mut out: Vec<String> = words(EXTREMES).into_iter().map(shaped).collect();
    if dur {
        out.extend(words(DURATIONS).into_iter().map(str::to_string));
    }
    if flag == "knob-step" {
        out.extend(words(EXTREMES).into_iter().map(str::to_string));
    }
    out
}

/// A usage error: its message (without clap's usage hint) is one non-empty line.
fn assert_one_line(args: &[String], msg: &str) {
    let lines: Vec<&str> = msg.lines().filter(|l| !l.trim().is_empty()).collect();
    let hint = |l: &&str| l.starts_with("For more information") || l.starts_with("Usage:") || l.starts_with("  ");
    assert!(!lines.is_empty(), "{args:?}: an empty error");
    assert!(lines[1..].iter().all(hint), "{args:?}: not one line: {msg:?}");
}

/// `llm-decode-bench ARGS` parsed by clap; `None` (after checking the error) when refused.
fn clap(args: &[String]) -> Option<Cli> {
    let argv = std::iter::once("llm-decode-bench".to_string()).chain(args.iter().cloned());
    match Cli::try_parse_from(argv) {
        Ok(cli) => Some(cli),
        Err(e) => {
            assert_one_line(args, &e.to_string());
            None
        }
    }
}

/// `run` with `args`: a one-line error, or a configuration whose derived figures are sane.
fn run(args: &[String]) {
    let mut all = vec!["run".to_string(), "--base-url".into(), "http://127.0.0.1:9".into()];
    all.extend_from_slice(args);
    let Some(Cli { command: Some(super::Command::Run(mut run)), .. }) = clap(&all) else { return };
    // The same flags under a sweep: its own checks say one line too.
    run.sweep.server_cmd = Some("sim --port {port}".into());
    if let Err(e) = run.sweep.sweep(None, false, &run.metrics_url, false) {
        assert!(!e.is_empty() && !e.contains('\n'), "{all:?} under --server-cmd: {e:?}");
    }
    run.sweep.server_cmd = None;
    match run.to_config() {
        Ok(cfg) => derived(&cfg),
        Err(e) => assert!(!e.is_empty() && !e.contains('\n'), "{all:?}: {e:?}"),
    }
}

/// What a session derives from `cfg`, computed as it would be: none of it may panic, and the
/// durations stay within a year.
fn derived(cfg: &RunConfig) {
    for kv in [None, Some(0), Some(u64::MAX)] {
        let (cells, eta) = crate::session::plan::dry_plan(cfg, kv);
        assert!(cells.iter().all(|(_, p)| p.is_none_or(|p| p.is_finite() && p >= 0.0)), "{cells:?}");
        assert!(eta.is_none_or(|e| e <= crate::units::LONGEST * 1000), "{eta:?}");
    }
    let mut rng = rand::rngs::StdRng::seed_from_u64(cfg.routing.seed);
    for rate in cfg.rates.iter().copied().chain([crate::config::Rate::Inf]) {
        let _ = crate::load::open_loop::gap(&mut rng, rate, cfg.burstiness);
        let offsets = crate::experiment::serve::schedule::arrival_offsets(64, rate, cfg.burstiness, cfg.routing.seed);
        assert!(offsets.iter().all(|o| *o <= crate::units::LONGEST));
        for up in [true, false] {
            let _ = cfg.decode.knob_step.rate(rate, up);
        }
    }
    let n = cfg.routing.count.min(4096);
    let _ = crate::experiment::routing::schedule::arrivals(n, cfg.routing.rps, cfg.routing.arrival, cfg.routing.seed);
    let _ = crate::experiment::routing::plan::phases(&cfg.routing);
    for (&conc, up) in cfg.conc.iter().zip([true, false].iter().cycle()) {
        let _ = cfg.decode.knob_step.conc(conc, *up);
    }
    for &ctx in &cfg.ctx {
        let _ = cfg.first_token_limit(ctx);
        let _ = crate::experiment::decode::fit::fit(
            Some(131_072),
            ctx,
            crate::experiment::decode::fit::Wanted::decode(cfg),
        )
        .max_tokens();
    }
    let _ = (cfg.slo.describe(), cfg.slo.goodput_arg(), cfg.settings());
}

/// `sim` with `args`: a one-line error, or a cluster configuration whose step costs compute.
fn sim(args: &[String]) {
    let all: Vec<String> = std::iter::once("sim".to_string()).chain(args.iter().cloned()).collect();
    let Some(Cli { command: Some(super::Command::Sim(sim)), .. }) = clap(&all) else { return };
    match sim.to_config() {
        Ok(cfg) => {
            let p = &cfg.engine;
            let kv = p.kv_capacity_tokens();
            let step = p.step_cost(p.max_num_seqs, p.max_num_batched_tokens, kv);
            let _ = p.wall(step);
            let _ = crate::sim::llamacpp::engine_params(&cfg);
        }
        Err(e) => assert!(!e.is_empty() && !e.contains('\n'), "{all:?}: {e:?}"),
    }
}

/// `bench`, `bench-server`, `compare` or the demo with `args`: a one-line error or flags taken.
fn other(sub: &str, args: &[String]) {
    let mut all: Vec<String> = [sub].iter().filter(|s| !s.is_empty()).map(|s| s.to_string()).collect();
    if sub == "compare" {
        all.extend(["a.json".into(), "b.json".into()]);
    }
    all.extend_from_slice(args);
    let Some(cli) = clap(&all) else { return };
    if cli.command.is_none()
        && let Err(e) = cli.demo.check()
    {
        assert!(!e.is_empty() && !e.contains('\n'), "{all:?}: {e:?}");
    }
}

fn flag(name: &str, value: &str) -> Vec<String> {
    vec![format!("--{name}={value}")]
}

#[test]
fn every_flag_of_run_and_sim_is_listed_numeric_or_not() {
    let cli = Cli::command();
    for (name, numeric, other) in [("run", RUN_NUMERIC, RUN_OTHER), ("sim", SIM_NUMERIC, SIM_OTHER)] {
        let listed: BTreeSet<&str> = words(numeric).into_iter().chain(words(other)).collect();
        for arg in cli.find_subcommand(name).expect("subcommand").get_arguments() {
            let long = arg.get_long().unwrap_or(arg.get_id().as_str());
            assert!(listed.contains(long), "{name} --{long} is new: list it as numeric or not");
        }
    }
}

#[test]
fn every_numeric_flag_at_every_extreme_is_an_error_or_works() {
    let every_plan = ["--plan=decode,routing,serve".to_string(), "--run-burst".into()];
    for name in words(RUN_NUMERIC) {
        for v in values(name) {
            run(&flag(name, &v));
            run(&[every_plan.to_vec(), flag(name, &v)].concat());
        }
    }
    for name in words(SIM_NUMERIC) {
        for v in values(name) {
            sim(&flag(name, &v));
        }
    }
    for (sub, name) in words(OTHER_NUMERIC).into_iter().filter_map(|w| w.split_once(':')) {
        for v in values(name) {
            other(sub, &flag(name, &v));
        }
    }
}

#[test]
fn the_two_panics_of_issue_21_and_the_short_window_are_one_line_errors() {
    let err = |args: &[&str]| {
        let all: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let mut argv = vec!["x", "run", "--base-url", "http://127.0.0.1:9"];
        argv.extend_from_slice(args);
        let Ok(Cli { command: Some(super::Command::Run(run)), .. }) = Cli::try_parse_from(argv) else {
            panic!("{all:?}: clap refused")
        };
        run.to_config().expect_err("refused")
    };
    let clap_err = |args: &[&str]| {
        let argv = [&["x", "run", "--base-url", "http://127.0.0.1:9"], args].concat();
        Cli::try_parse_from(argv).err().map(|e| e.to_string()).unwrap_or_default()
    };
    assert!(clap_err(&["--plan", "serve", "--request-rate", "1e-300"]).contains("from 0.001 to 1000000 requests/s"));
    assert!(err(&["--goodput", "ttft:1e300"]).contains("at most 86400000 (a day)"));
    let e = err(&["--window", "1ms"]);
    assert!(e.contains("--window 1ms is shorter than 4 metric polls (1s at --poll-interval 250ms)"), "{e}");
    assert!(err(&["--window", "199ms", "--poll-interval", "50ms"]).contains("200ms"));
    let ok = |args: &[&str]| {
        let argv = [&["x", "run", "--base-url", "http://127.0.0.1:9"], args].concat();
        let Ok(Cli { command: Some(super::Command::Run(run)), .. }) = Cli::try_parse_from(argv) else { panic!() };
        run.to_config()
    };
    assert!(ok(&["--window", "200ms", "--poll-interval", "50ms"]).is_ok());
    assert!(ok(&["--window", "1s"]).is_ok());
    // The serve plan at the slowest rate: its planned length saturates, no panic.
    let cfg = ok(&["--plan", "serve", "--request-rate", "0.001", "--count", "1000000"]).expect("taken");
    let (cells, eta) = crate::session::plan::dry_plan(&cfg, None);
    assert!(cells.iter().all(|(_, p)| p.is_some_and(|p| p <= crate::units::LONGEST.as_secs_f64())), "{cells:?}");
    assert!(eta.is_some());
}

#[test]
fn every_numeric_key_of_a_config_file_at_every_extreme_is_an_error_or_works() {
    let cli = Cli::command();
    let run_cmd = cli.find_subcommand("run").expect("run");
    let toml_values =
        ["0", "-1", "1e-300", "1e300", "nan", "inf", "-inf", "9223372036854775807", "-9223372036854775808"];
    for key in words(RUN_NUMERIC) {
        let strings = values(key).into_iter().map(|v| toml::Value::String(v).to_string());
        let lists = ["[0, 1e300]".to_string(), "[nan]".into(), "[]".into()];
        for value in toml_values.iter().map(|v| v.to_string()).chain(strings).chain(lists) {
            let text = format!("base-url = \"http://127.0.0.1:9\"\n{key} = {value}\n");
            let flags = match super::config_file::flags_from_toml(run_cmd, &text, &BTreeSet::new()) {
                Ok(flags) => flags,
                Err(e) => {
                    assert!(!e.contains('\n'), "{text}: {e:?}");
                    continue;
                }
            };
            run(&flags);
        }
    }
}

/// Random values of a numeric flag: any f64 or u64 as text, or one of the extremes.
fn any_value() -> impl Strategy<Value = String> {
    prop_oneof![
        proptest::num::f64::ANY.prop_map(|v| v.to_string()),
        proptest::num::f64::ANY.prop_map(|v| format!("{v:e}")),
        any::<u64>().prop_map(|v| v.to_string()),
        any::<i64>().prop_map(|v| v.to_string()),
        proptest::sample::select(words(EXTREMES)).prop_map(str::to_string),
        (any::<u32>(), proptest::sample::select(vec!["ms", "s", "m", "h", "days", "ns"]))
            .prop_map(|(n, u)| format!("{n}{u}")),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn run_with_random_extremes_never_panics(
        picks in proptest::collection::vec((proptest::sample::select(words(RUN_NUMERIC)), any_value()), 1..4)
    ) {
        let args: Vec<String> = picks.iter().flat_map(|(f, v)| flag(f, &shape(f, v))).collect();
        run(&args);
        run(&[vec!["--plan=decode,serve".to_string(), "--run-burst".into()], args].concat());
    }

    #[test]
    fn sim_with_random_extremes_never_panics(
        picks in proptest::collection::vec((proptest::sample::select(words(SIM_NUMERIC)), any_value()), 1..4)
    ) {
        let args: Vec<String> = picks.iter().flat_map(|(f, v)| flag(f, &shape(f, v))).collect();
        sim(&args);
    }
}

/// A random value shaped as `flag` takes it (a key for `--goodput`, a `%` for `--knob-step`, ...).
fn shape(flag: &str, v: &str) -> String {
    match flag {
        "goodput" => format!("tpot:{v}"),
        "faults" => format!("stall={v}"),
        "scenarios" => format!("hot{v}"),
        "knob-step" => format!("{v}%"),
        _ => v.to_string(),
    }
}

#[test]
fn durations_from_figures_saturate() {
    assert_eq!(
        crate::experiment::serve::attempt::planned(u32::MAX, u64::MAX, 1, crate::config::Rate::Inf),
        crate::units::LONGEST
    );
    assert_eq!(
        crate::experiment::serve::attempt::planned(1, 1, 1, crate::config::Rate::PerSecond(1e-300)),
        crate::units::LONGEST
    );
    let p = crate::sim::params::EngineParams { speed: 1e-300, ..Default::default() };
    assert_eq!(p.wall(Duration::from_secs(1)), crate::units::LONGEST);
    assert!(p.step_cost(usize::MAX, usize::MAX, usize::MAX) > Duration::ZERO);
}
