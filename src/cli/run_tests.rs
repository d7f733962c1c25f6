//! Building blocks for unit tests elsewhere in the crate, and the tests of `run`'s flags.

use super::RunArgs;
use crate::config::RunConfig;
use crate::load::request::Endpoint;
use crate::report::kind::ExperimentKind;
use clap::Parser;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Parser)]
struct Wrapper {
    #[command(flatten)]
    run: RunArgs,
}

/// `run --base-url http://127.0.0.1:9 ARGS...` parsed and checked, or its one-line error.
fn parse(args: &[&str]) -> Result<RunConfig, String> {
    let mut all = vec!["x", "--base-url", "http://127.0.0.1:9"];
    all.extend_from_slice(args);
    Wrapper::try_parse_from(all).map_err(|e| e.to_string()).and_then(|w| w.run.to_config())
}

/// The configuration `run --base-url http://127.0.0.1:9` parses to.
pub(crate) fn config() -> RunConfig {
    Wrapper::parse_from(["x", "--base-url", "http://127.0.0.1:9"]).run.to_config().unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn defaults_are_the_seeds() {
    let c = config();
    assert_eq!(c.ctx, vec![0, 16_384, 32_768, 65_536, 131_072]);
    assert_eq!(c.conc, vec![1, 2, 4, 8, 16]);
    assert_eq!((c.routing.count, c.routing.rps, c.routing.rounds, c.routing.families), (96, 1.6, 2, 8));
    assert_eq!(c.routing.scenarios.len(), 4);
    assert_eq!(c.decode.kv_oversubscribe, 4.0);
}

#[test]
fn vllm_bench_serve_flags_map_onto_ours() {
    let c = parse(&[
        "--max-concurrency",
        "8",
        "--request-rate",
        "4",
        "--num-prompts",
        "64",
        "--random-input-len",
        "256",
        "--random-output-len",
        "128",
        "--goodput",
        "ttft:500",
        "tpot:50",
        "--save-result",
    ])
    .unwrap();
    assert_eq!((c.conc, c.ctx, c.routing.count, c.routing.rps, c.routing.output), (vec![8], vec![256], 64, 4.0, 128));
    let slo = c.routing.slo;
    assert_eq!(
        (slo.ttft, slo.tpot, slo.e2e),
        (Some(Duration::from_millis(500)), Some(Duration::from_millis(50)), None)
    );
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let c = parse(&["--result-dir", d, "--result-filename", "r.json"]).unwrap();
    assert_eq!(c.out, Some(dir.path().join("r.json")));
    let c = parse(&["--result-dir", d]).unwrap();
    assert_eq!((c.out, c.out_dir.as_deref()), (None, Some(dir.path())), "a default name in DIR, chosen at the start");
    let c = parse(&["--result-dir", d, "--out", "x.json"]).unwrap();
    assert_eq!(c.out, Some(PathBuf::from("x.json")), "--out wins");
    assert!(parse(&["--goodput", "itl:5"]).unwrap_err().starts_with("--goodput: "));
}

#[test]
fn bad_values_are_one_line_errors() {
    // Each bad command line, and what its message must name (the flag, the value or the bound).
    let cases: [(&[&str], &[&str]); 8] = [
        (&["--ctx", "16q"], &["--ctx", "'16q'"]),
        (&["--conc", "0"], &["--conc", "'0'", "at least 1"]),
        (&["--window", "0s"], &["--window", "longer than 0"]),
        (&["--families", "20", "--priming-candidates", "16"], &["--priming-candidates", "--families"]),
        (&["--scenarios", "lukewarm"], &["--scenarios", "'lukewarm'", "hot90"]),
        (&["--rps=-1"], &["--rps", "between 0.001 and 1000000"]),
        (&["--poll-interval", "10ms"], &["--poll-interval", "50ms"]),
        (&["--first-token-timeout", "0s"], &["--first-token-timeout", "longer than 0"]),
    ];
    for (args, names) in cases {
        let Err(msg) = parse(args) else { panic!("{args:?} accepted") };
        let mut lines = msg.lines().filter(|l| !l.trim().is_empty());
        let first = lines.next().unwrap_or_default();
        for name in names {
            assert!(first.contains(name), "{args:?}: {first:?} does not name {name}");
        }
        // Clap may add its usage hint; the message itself is the one line above.
        let rest: Vec<&str> = lines.collect();
        assert!(rest.iter().all(|l| l.starts_with("For more information")), "{args:?}: {msg:?}");
    }
    assert!(parse(&["--ctx", "4k,4k", "--conc", "1"]).is_ok());
}

#[test]
fn request_rates_sweep_and_one_finite_rate_is_the_routing_rate() {
    use crate::config::Rate;
    let c = parse(&["--request-rate", "1,4,16,inf", "--burstiness", "0.5"]).unwrap();
    let want = vec![Rate::PerSecond(1.0), Rate::PerSecond(4.0), Rate::PerSecond(16.0), Rate::Inf];
    assert_eq!((c.rates, c.burstiness, c.routing.rps), (want, 0.5, 1.6));
    assert!(config().rates.is_empty(), "closed loop unless asked");
    assert_eq!(parse(&["--request-rate", "3"]).unwrap().routing.rps, 3.0);
    assert!(parse(&["--request-rate", "0"]).unwrap_err().contains("positive"));
    assert!(parse(&["--burstiness", "0"]).unwrap_err().contains("--burstiness"));
    assert!(parse(&["--burstiness", "-1"]).unwrap_err().contains("--burstiness must be between 0.001 and 1000"));
    let empty = parse(&["--plan", "serve", "--random-input-len", "0"]).unwrap_err();
    assert!(empty.contains("--random-input-len 0"), "{empty}");
    assert!(parse(&["--plan", "serve", "--random-input-len", "0,256"]).is_ok(), "the 0 cell is skipped, 256 runs");
}

#[test]
fn the_session_slo_and_where_it_came_from() {
    use crate::config::SloSource;
    let c = parse(&[]).unwrap();
    assert_eq!((c.slo.ttft, c.slo.tpot, c.slo_source), (Some(Duration::from_secs(2)), None, SloSource::Default));
    assert!(!c.settings().contains_key("goodput"), "the default SLO is not a setting");
    let c = parse(&["--slo-tpot", "40ms"]).unwrap();
    assert_eq!(
        (c.slo.ttft, c.slo.tpot, c.slo_source),
        (Some(Duration::from_secs(2)), Some(Duration::from_millis(40)), SloSource::SloFlags)
    );
    assert_eq!(c.settings()["goodput"], "ttft:2000 tpot:40");
    let c = parse(&["--goodput", "e2el:900", "--slo-ttft", "1s"]).unwrap();
    assert_eq!((c.slo.ttft, c.slo.e2e, c.slo_source), (None, Some(Duration::from_millis(900)), SloSource::Goodput));
    assert_eq!(c.routing.slo, c.slo, "routing judges against the same SLO");
    assert!(parse(&["--slo-ttft", "0s"]).unwrap_err().contains("--slo-ttft"));
}

#[test]
fn stop_at_knee_is_off_unless_asked() {
    assert!(!config().decode.stop_at_knee);
    assert!(parse(&["--stop-at-knee"]).unwrap().decode.stop_at_knee);
}

#[test]
fn the_serve_plan_takes_vllm_bench_serve_flags_and_plans_one_cell_per_len_conc_and_rate() {
    use crate::cell::spec::CellSpec;
    use crate::config::{PlanKind, Rate};
    use crate::experiment::Experiment;
    let args = [
        "x",
        "--base-url",
        "http://127.0.0.1:9",
        "--plan",
        "serve",
        "--random-input-len",
        "0,1k",
        "--max-concurrency",
        "2,8",
        "--num-prompts",
        "50",
        "--random-output-len",
        "64",
        "--request-rate",
        "1,inf",
        "--goodput",
        "ttft:500",
        "--seed",
        "3",
    ];
    let c = Wrapper::parse_from(args).run.to_config().unwrap();
    assert_eq!(c.plans, vec![PlanKind::Serve]);
    assert_eq!((c.serve.num_prompts, c.serve.output_len, c.serve.seed), (50, 64, 3));
    assert_eq!(c.serve.goodput.and_then(|g| g.ttft), Some(Duration::from_millis(500)));
    let cells = crate::experiment::serve::Serve::new(&c).cells();
    assert_eq!(cells.len(), 8, "2 lens x 2 concurrencies x 2 rates");
    assert_eq!(cells[4].spec, CellSpec::grid_at(ExperimentKind::Serve, 1024, 2, Some(Rate::PerSecond(1.0))));
    assert_eq!(cells[7].label, "serve in=1k conc=8 rate=inf");
    assert!(cells[..4].iter().all(|c| c.skip.is_some()) && cells[4..].iter().all(|c| c.skip.is_none()));
    let none =
        Wrapper::parse_from(["x", "--base-url", "http://127.0.0.1:9", "--plan", "serve"]).run.to_config().unwrap();
    assert_eq!(none.serve.goodput, None, "no --goodput: no request_goodput");
    let rates = crate::experiment::serve::Serve::new(&none).cells();
    assert!(rates.iter().all(|c| matches!(c.spec.key, crate::cell::spec::CellKey::Grid { rate: Some(Rate::Inf), .. })));
}

#[test]
fn an_output_length_of_zero_is_refused_before_any_load() {
    for flag in ["--max-tokens", "--burst-tokens", "--output", "--random-output-len"] {
        let e = parse(&[flag, "0"]).expect_err(flag);
        let named = if flag == "--random-output-len" { "--output" } else { flag };
        assert!(e.contains("at least 1 token") && e.contains(named), "{flag}: {e}");
        assert!(parse(&[flag, "1"]).is_ok(), "{flag} 1 runs");
    }
}

#[test]
fn the_range_ratio_is_vllms_and_only_for_the_serve_plan() {
    use crate::config::serve::RangeRatio;
    let c = parse(&["--plan", "serve", "--random-range-ratio", "0.25"]).unwrap();
    assert_eq!(c.serve.range_ratio, RangeRatio::new(0.25).unwrap());
    assert_eq!(c.settings()["random-range-ratio"], "0.25", "a setting --resume checks");
    assert_eq!(parse(&["--plan", "serve"]).unwrap().serve.range_ratio, RangeRatio::FIXED);
    assert!(!parse(&["--plan", "serve"]).unwrap().settings().contains_key("random-range-ratio"));
    for bad in ["1", "1.5", "-0.1", "x"] {
        let e = parse(&["--plan", "serve", "--random-range-ratio", bad]).expect_err(bad);
        assert!(e.contains("--random-range-ratio") && e.lines().count() <= 4, "{bad}: {e}");
    }
    let e = parse(&["--random-range-ratio", "0.25"]).unwrap_err();
    assert_eq!(e, "--random-range-ratio spreads the serve experiment's lengths: add --plan serve");
}

#[test]
fn vllm_names_for_the_model_the_endpoint_and_no_progress_bar() {
    let c = parse(&["--model", "meta/llama", "--served-model-name", "llama"]).unwrap();
    assert_eq!(c.model.as_deref(), Some("llama"), "the name requests carry wins, as in vLLM");
    assert_eq!(parse(&["--model", "m"]).unwrap().model.as_deref(), Some("m"));
    for (path, want) in [("/v1/completions", Endpoint::Completions), ("/v1/chat/completions", Endpoint::Chat)] {
        assert_eq!(parse(&["--endpoint", path]).unwrap().endpoint, want, "{path}");
    }
    let w = Wrapper::parse_from(["x", "--base-url", "http://127.0.0.1:9", "--disable-tqdm"]);
    assert!(w.run.vllm.disable_tqdm && !w.run.headless);
}

#[test]
fn a_session_without_seed_draws_its_own_and_uses_it_everywhere() {
    let (a, b) = (config(), config());
    assert_eq!(a.routing.seed, a.serve.seed, "one seed for the whole session");
    assert_ne!(a.serve.seed, b.serve.seed, "two sessions, two seeds (a 1 in 2^32 chance of a clash)");
    let serve = parse(&["--plan", "serve"]).unwrap();
    assert_eq!(serve.settings()["seed"], serve.serve.seed.to_string(), "recorded, so --resume restores it");
    let given = parse(&["--seed", "7"]).unwrap();
    assert_eq!((given.routing.seed, given.serve.seed), (7, 7));
}

#[test]
fn prefix_repetition_needs_the_serve_plan_and_enough_prompts() {
    let serve = ["--plan", "serve", "--dataset-name", "prefix_repetition"];
    let c = parse(&[&serve[..], &["--prefix-repetition-num-prefixes", "4", "--count", "8"]].concat()).unwrap();
    let p = c.serve.prefix_repetition.expect("the workload");
    assert_eq!((p.num_prefixes, p.prefix_len, c.serve.output_len), (4, 256, 128), "vLLM's output length 128");
    let e = parse(&["--dataset-name", "prefix_repetition"]).unwrap_err();
    assert!(e.contains("feeds the serve experiment: add --plan serve"), "{e}");
    let e = parse(&[&serve[..], &["--count", "4"]].concat()).unwrap_err();
    assert!(e.contains("--num-prompts 4 is fewer than --prefix-repetition-num-prefixes 10"), "{e}");
    let e = parse(&[&serve[..], &["--random-range-ratio", "0.5"]].concat()).unwrap_err();
    assert!(e.contains("prefix_repetition has its own"), "{e}");
    let e = parse(&["--plan", "serve", "--prefix-repetition-prefix-len", "8"]).unwrap_err();
    assert!(e.starts_with("--prefix-repetition-* flags"), "{e}");
}

#[test]
fn a_trace_is_read_before_any_load_and_its_flags_go_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.jsonl");
    let line = |ts: u32| format!("{{\"timestamp\": {ts}, \"input_length\": 600, \"output_length\": 9}}\n");
    std::fs::write(&path, (0..5).map(|i| line(i * 100)).collect::<String>()).unwrap();
    let p = path.to_str().unwrap();
    let trace = ["--plan", "serve", "--dataset-name", "mooncake_trace", "--dataset-path", p];
    let session = |extra: &[&str]| {
        let mut all = vec!["x", "--base-url", "http://127.0.0.1:9"];
        all.extend_from_slice(&trace);
        all.extend_from_slice(extra);
        Wrapper::try_parse_from(all).map_err(|e| e.to_string()).and_then(|w| w.run.to_session()).map(|(c, _)| c)
    };
    let c = session(&["--count", "3", "--replay-speed", "2"]).unwrap();
    let t = c.serve.trace.as_ref().expect("the trace");
    assert_eq!((t.trace.requests.len(), t.trace.entries, c.serve.num_prompts, c.serve.output_len), (3, 5, 3, 9));
    assert_eq!(t.offset(2), Duration::from_millis(100), "200 ms of the trace at twice its pace");
    assert_eq!(c.settings()["replay-speed"], "2");
    let e = session(&["--request-rate", "4"]).unwrap_err();
    assert!(e.contains("arrives on the trace's own schedule"), "{e}");
    let e = parse(&["--plan", "serve", "--dataset-name", "azure_trace"]).unwrap_err();
    assert!(e.contains("--dataset-name azure_trace reads a file: add --dataset-path FILE"), "{e}");
    let e = parse(&["--plan", "serve", "--replay-speed", "2"]).unwrap_err();
    assert!(e.starts_with("--replay-speed paces a trace"), "{e}");
    let e = parse(&["--dataset-name", "mooncake_trace", "--dataset-path", p]).unwrap_err();
    assert!(e.contains("feeds the serve experiment: add --plan serve"), "{e}");
    std::fs::write(&path, "{\"timestamp\": 1}\n").unwrap();
    let e = session(&[]).unwrap_err();
    assert!(e.contains("(mooncake_trace): line 1: missing field") && !e.contains('\n'), "{e}");
}

#[test]
fn a_tokenizer_file_is_read_with_the_dataset_before_any_load() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.jsonl");
    std::fs::write(&path, "{\"prompt\": \"hello there\"}\n").unwrap();
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tokenizer");
    let custom = ["--plan", "serve", "--dataset-name", "custom", "--dataset-path", path.to_str().unwrap()];
    let session = |tokenizer: &str| {
        let mut all = vec!["x", "--base-url", "http://127.0.0.1:9", "--tokenizer", tokenizer];
        all.extend_from_slice(&custom);
        Wrapper::try_parse_from(all).map_err(|e| e.to_string()).and_then(|w| w.run.to_session()).map(|(c, _)| c)
    };
    let c = session(fixture).unwrap();
    let t = c.serve.dataset.as_ref().and_then(|d| d.tokenizer.as_ref()).expect("the file is read");
    assert!(t.path.ends_with("tokenizer/tokenizer.json"), "{}", t.path.display());
    assert_eq!(c.settings()["tokenizer-sha256"], t.sha256, "--resume continues under the same file only");
    let e = session(dir.path().to_str().unwrap()).unwrap_err();
    assert!(e.contains("no tokenizer.json in this directory") && !e.contains('\n'), "{e}");
    let e = parse(&["--plan", "serve", "--tokenizer", fixture]).unwrap_err();
    assert!(e.starts_with("--tokenizer counts the text prompts of --dataset-name sharegpt|custom"), "{e}");
}
