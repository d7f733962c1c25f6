//! End-to-end `compare` (issue 11): sessions run in process on the paused clock (their figures
//! the engine model's, whatever the machine's load), compared with themselves (exit 0, no
//! change) and against a session of a slowed simulator (speed 5 instead of 25: exit 1, the
//! regression named). Bad input exits 2 in one line.

use crate::common;

use common::{bin, output, paused_decode_session, validate};
use std::path::{Path, PathBuf};

async fn compare(base: &Path, new: &Path, extra: &[&str]) -> (Option<i32>, String, String) {
    let mut cmd = bin();
    cmd.arg("compare").arg(base).arg(new).args(extra);
    let o = output(cmd).await;
    (o.status.code(), String::from_utf8_lossy(&o.stdout).into(), String::from_utf8_lossy(&o.stderr).into())
}

/// Two sessions at ctx 0, conc 1 and 2: the simulator at speed 25, then at speed 5.
async fn sessions(dir: &Path) -> (PathBuf, PathBuf) {
    let (fast, slow) = (dir.join("fast.json"), dir.join("slow.json"));
    for (speed, out) in [(25.0, &fast), (5.0, &slow)] {
        let report = paused_decode_session(speed, vec![0], vec![1, 2], out).await;
        assert!(report.complete && validate(out) == report, "the file holds the final report");
    }
    (fast, slow)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn itself_is_no_change_and_a_slowed_simulator_regresses() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (fast, slow) = sessions(dir.path()).await;

    let (code, out, err) = compare(&fast, &fast, &[]).await;
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.trim_end().ends_with("figures the same") && out.contains("no change: 2 cells"), "{out}");
    assert!(!out.contains("REGRESSION") && err.is_empty(), "{out}{err}");

    let (code, out, err) = compare(&fast, &slow, &[]).await;
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(out.contains("REGRESSION") && out.contains("regression(s) beyond 5%"), "{out}");
    let regressed = out.lines().filter(|l| l.contains("aggregate tok/s") && l.contains("worse  REGRESSION")).count();
    assert_eq!(regressed, 2, "both cells' aggregate tok/s: {out}");

    let (code, json, _) = compare(&fast, &slow, &["--format", "json", "--percentiles", "50,90,99.9"]).await;
    assert_eq!(code, Some(1));
    let v: serde_json::Value = serde_json::from_str(&json).expect("compare writes JSON");
    assert_eq!((v["verdict"].as_str(), v["regressions"].as_u64()), (Some("regression"), Some(2)));
    let agg = &v["cells"][0]["figures"][0];
    assert_eq!((agg["name"].as_str(), agg["unit"].as_str()), (Some("aggregate_tok_s"), Some("tok/s")));
    assert!(agg["delta_pct"].as_f64().expect("a delta") < -50.0, "5x slower: {agg}");
    let names: Vec<&str> =
        v["cells"][0]["figures"].as_array().unwrap().iter().filter_map(|f| f["name"].as_str()).collect();
    assert!(names.contains(&"p99.9_ttft_ms") && names.contains(&"p90_tpot_ms"), "{names:?}");
    let ttft = v["cells"][1]["figures"].as_array().unwrap().iter().find(|f| f["name"] == "p50_ttft_ms").unwrap();
    assert_eq!(ttft["better"], "lower");

    // The other way round it is faster: better, and no regression.
    let (code, out, _) = compare(&slow, &fast, &["--format", "markdown"]).await;
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("| better |") && out.contains("**no regression beyond 5%"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_one_line_and_exit_2() {
    let dir = tempfile::tempdir().expect("tempdir");
    let foreign = dir.path().join("vllm.json");
    std::fs::write(&foreign, r#"{"backend":"vllm","completed":64}"#).expect("written");
    let missing = dir.path().join("missing.json");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report_example.json");
    let cases: [(&Path, &Path, &[&str], &str); 4] = [
        (&missing, &fixture, &[], "base report: cannot read"),
        (&fixture, &foreign, &[], "new report"),
        (&fixture, &fixture, &["--threshold=-3%"], "--threshold"),
        (&fixture, &fixture, &["--percentiles", "50,x"], "--percentiles"),
    ];
    for (base, new, extra, needle) in cases {
        let (code, out, err) = compare(base, new, extra).await;
        assert_eq!(code, Some(2), "{extra:?}: {out}{err}");
        assert!(out.is_empty(), "nothing on stdout: {out}");
        assert!(err.lines().next().unwrap_or("").contains(needle), "{needle}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    let (_, _, err) = compare(&fixture, &foreign, &[]).await;
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(err.contains("not an llm-decode-bench session report"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reports_with_no_cell_in_common_do_not_pass_the_gate() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report_example.json");
    let mut other: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&fixture).expect("fixture")).expect("JSON");
    for cell in other["decode"]["cells"].as_array_mut().expect("cells") {
        cell["conc"] = 999.into();
    }
    for cell in other["burst"]["cells"].as_array_mut().expect("cells") {
        cell["conc"] = 999.into();
    }
    for p in other["phases"].as_array_mut().expect("phases") {
        p["phase"] = "r9-elsewhere".into();
    }
    let moved = dir.path().join("moved.json");
    std::fs::write(&moved, serde_json::to_vec(&other).expect("JSON")).expect("written");
    let (code, out, err) = compare(&fixture, &moved, &[]).await;
    assert_eq!(code, Some(2), "{out}{err}");
    assert!(out.contains("only in base") && out.contains("only in new"), "the one-sided cells are listed: {out}");
    assert!(err.contains("no cell in common: nothing was compared"), "{err}");
    assert!(!out.contains("no regression") && out.contains("nothing compared"), "stdout agrees with exit 2: {out}");
}
