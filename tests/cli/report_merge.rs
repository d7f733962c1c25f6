//! `report merge` on the binary: two fixture shard reports (`tests/fixtures/shard_*_of_2.json`:
//! two runs against the simulator, each one stream of a 2-stream cell, their `shard`
//! sections and shard settings set by hand while `run --shard` was not yet on this branch)
//! merged into one report that validates, adds up and renders in every format; the refusals.

use crate::common::validate;
use llm_decode_bench::report::json::SessionReport;
use llm_decode_bench::stats::Samples;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fixture(i: u32) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/shard_{i}_of_2.json"))
}

fn bin(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_llm-decode-bench")).args(args).output().expect("the binary runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn read(p: &Path) -> SessionReport {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn merge(files: &[&Path], out: &Path) -> Output {
    let mut args = vec!["report", "merge"];
    args.extend(files.iter().map(|f| s(f)));
    args.extend(["--out", s(out)]);
    bin(&args)
}

#[test]
fn two_shards_merge_into_one_report_that_adds_up_and_renders_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("m.json");
    let o = merge(&[&fixture(1), &fixture(0)], &out);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains("merged the reports of 2 of 2 shards (0 incomplete, 0 missing) of session fixture-s1"),
        "{err}"
    );
    let m = validate(&out);
    let shards = [read(&fixture(0)), read(&fixture(1))];
    assert!(m.shard.is_none() && m.complete);
    let sec = m.merge.as_ref().expect("a merge section");
    assert_eq!((sec.session_id.as_str(), sec.shard_count, sec.shards.len()), ("fixture-s1", 2, 2));
    let attempt = |r: &SessionReport| r.decode.as_ref().unwrap().cells[0].attempts[0].clone();
    let (a, parts) = (attempt(&m), shards.iter().map(attempt).collect::<Vec<_>>());
    assert_eq!(a.window_tokens, parts.iter().map(|p| p.window_tokens).sum::<u64>());
    assert_eq!(a.requested, 2);
    assert_eq!(a.request_samples.len(), parts.iter().map(|p| p.request_samples.len()).sum::<usize>());
    assert!((a.aggregate_tps - parts.iter().map(|p| p.aggregate_tps).sum::<f64>()).abs() < 1e-9);
    for p in &parts {
        // Each shard's own distributions give back its own summaries (the live path wrote them).
        let d = p.shard_dists.as_ref().expect("a shard writes its distributions");
        let mut own: Samples = d.ttft_ms.values.iter().copied().collect();
        let (own, theirs) = (own.summary().unwrap(), p.ttft_ms.unwrap());
        assert_eq!((own.count, own.p50, own.p99), (theirs.count, theirs.p50, theirs.p99));
        assert_eq!(d.itl_token_ms.count, p.itl_token_ms.unwrap().count);
    }
    let mut ttft: Samples = parts.iter().flat_map(|p| p.shard_dists.as_ref().unwrap().ttft_ms.values.clone()).collect();
    let (got, want) = (a.ttft_ms.unwrap(), ttft.summary().unwrap());
    assert_eq!((got.count, got.p50, got.p99), (want.count, want.p50, want.p99));
    let tokens: u64 = parts.iter().map(|p| p.itl_token_ms.unwrap().count).sum();
    assert_eq!(a.itl_token_ms.unwrap().count, tokens, "every shard's per-token gaps");
    for format in ["text", "markdown", "csv", "html", "vllm"] {
        let o = bin(&["report", s(&out), "--format", format]);
        assert_eq!(o.status.code(), Some(0), "{format}: {}", text(&o.stderr));
        assert!(!o.stdout.is_empty(), "{format}");
    }
    let md = text(&bin(&["report", s(&out), "--format", "markdown"]).stdout);
    assert!(md.contains(&format!("{:.1}", a.aggregate_tps)), "the merged tok/s is shown:\n{md}");
    let o = bin(&["compare", s(&fixture(0)), s(&out)]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("decode ctx=0 conc=2"), "{}", text(&o.stdout));
}

#[test]
fn a_missing_or_unfinished_shard_is_recorded_and_noted() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("m.json");
    let o = merge(&[&fixture(1)], &out);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("note: shard 0/2 is missing"), "{}", text(&o.stderr));
    let m = validate(&out);
    assert!(!m.complete);
    assert_eq!(serde_json::to_value(m.merge.unwrap().shards[0].status).unwrap(), "missing");
    let mut killed = read(&fixture(0));
    killed.complete = false;
    let killed_path = dir.path().join("killed.json");
    std::fs::write(&killed_path, serde_json::to_vec(&killed).unwrap()).unwrap();
    let out2 = dir.path().join("m2.json");
    let o = merge(&[&killed_path, &fixture(1)], &out2);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("did not finish"), "{}", text(&o.stderr));
    let st = validate(&out2).merge.unwrap().shards;
    assert_eq!(serde_json::to_value(st[0].status).unwrap(), "incomplete");
}

/// Exit 2 with one line on stderr containing `want`, and no file written.
fn refused(o: &Output, want: &str, out: &Path) {
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains(want), "{want}: {err}");
    assert!(!out.exists() || std::fs::read_to_string(out).unwrap() == "keep", "nothing written");
}

#[test]
fn other_reports_sessions_and_outputs_are_refused_before_writing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("m.json");
    refused(&merge(&[&fixture(0), &fixture(0)], &out), "shard 0 is given twice", &out);
    let plain = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report_example.json");
    refused(&merge(&[&fixture(0), &plain], &out), "not a shard report", &out);
    let mut other = read(&fixture(1));
    other.shard.as_mut().unwrap().session_id = "another".into();
    let other_path = dir.path().join("other.json");
    std::fs::write(&other_path, serde_json::to_vec(&other).unwrap()).unwrap();
    refused(&merge(&[&fixture(0), &other_path], &out), "shard of session `another`", &out);
    let mut window = read(&fixture(1));
    window.plan.settings.insert("window".into(), "2s".into());
    std::fs::write(&other_path, serde_json::to_vec(&window).unwrap()).unwrap();
    refused(&merge(&[&fixture(0), &other_path], &out), "`window=2s`", &out);
    std::fs::write(&out, "keep").unwrap();
    refused(&merge(&[&fixture(0), &fixture(1)], &out), "--overwrite", &out);
    refused(&merge(&[&fixture(0), &fixture(1)], &fixture(1)), "is the report being read", &out);
    let o = bin(&["report", "merge", s(&fixture(0))]);
    assert_eq!(o.status.code(), Some(2), "--out is required");
}
