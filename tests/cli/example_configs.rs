//! Every ready config in `examples/configs/` parses into a run configuration exactly as
//! `run --config FILE` reads it, and says how to start its target and how to run it.

use clap::{CommandFactory, Parser};
use llm_decode_bench::cli::{Cli, Command, config_file};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

fn configs() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/configs");
    let mut all: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("examples/configs exists")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    all.sort();
    all
}

#[test]
fn every_example_config_parses_and_says_how_to_start_its_target() {
    let all = configs();
    let names: Vec<String> = all.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
    for want in ["vllm-one", "sglang.toml", "llamacpp", "aibrix", "vllm-router", "sglang-router"] {
        assert!(names.iter().any(|n| n.contains(want)), "no {want} config in {names:?}");
    }
    for path in all {
        let argv: Vec<OsString> = vec!["llm-decode-bench".into(), "run".into(), "--config".into(), path.clone().into()];
        let argv = config_file::expand(&Cli::command(), argv).unwrap_or_else(|e| panic!("{e}"));
        let cli = Cli::try_parse_from(argv).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let Some(Command::Run(run)) = cli.command else { panic!("{}: not a run", path.display()) };
        let cfg = run.to_config().unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(!cfg.metrics.is_empty(), "{}: names its replicas' metrics pages", path.display());
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("# Start the target: "), "{}: how to start the target", path.display());
        let rel = format!(
            "# Run: llm-decode-bench run --config examples/configs/{}",
            path.file_name().unwrap().to_string_lossy()
        );
        assert!(text.contains(&rel), "{}: how to run it", path.display());
        if cfg.plans.iter().any(|p| p.as_str() == "routing") {
            assert!(cfg.routing.gateway_metrics.is_some(), "{}: routing needs the gateway's counters", path.display());
        }
    }
}
