//! End-to-end tests of `llm-decode-bench report FILE` (issue 11): the text format is byte for
//! byte what `run` printed at the end of the session; markdown, html and csv render through
//! the binary to stdout and to `--out`; bad files and flags are one line on stderr and exit 2
//! (README "Exit codes"), with nothing on stdout.

use crate::common;

use common::{cluster, validate};
use std::io::Read;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The committed example report.
const EXAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/report_example.json");
/// Longest wait for one run of the binary.
const PATIENCE: Duration = Duration::from_secs(120);

fn bin() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_llm-decode-bench"));
    cmd.env_remove("OPENAI_API_KEY").env_remove("NO_COLOR").stdin(Stdio::null());
    cmd
}

/// Runs `cmd` to its end (killed after [`PATIENCE`]), capturing stdout and stderr.
fn output(mut cmd: Command) -> Output {
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("binary starts");
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = pipe.read_to_end(&mut buf);
            buf
        })
    };
    let out = drain(Box::new(child.stdout.take().expect("stdout piped")));
    let err = drain(Box::new(child.stderr.take().expect("stderr piped")));
    let deadline = Instant::now() + PATIENCE;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the binary did not exit within {PATIENCE:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output { status, stdout: out.join().expect("stdout read"), stderr: err.join().expect("stderr read") }
}

/// `report` with `args`, to its end.
pub(crate) fn report(args: &[&str]) -> Output {
    let mut cmd = bin();
    cmd.arg("report").args(args);
    output(cmd)
}

pub(crate) fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).expect("UTF-8 output")
}

/// `run --headless` of a decode matrix (one column over max_model_len, skipped), its bursts
/// and a routing comparison, against a two-replica cluster; returns the run's stdout.
fn run_session(c: &llm_decode_bench::sim::Cluster, out: &Path) -> Vec<u8> {
    let info = c.info();
    let mut cmd = bin();
    cmd.args(["run", "--headless", "--plan", "decode,routing", "--base-url", &info.gateway.url]);
    for r in &info.replicas {
        cmd.args(["--replica", &format!("{}={}", r.name, r.metrics_url)]);
    }
    cmd.args(["--gateway-metrics", &info.gateway.metrics_url])
        .args(["--ctx", "0,256k", "--conc", "1,2", "--window", "1s", "--settle", "200ms", "--warmup-timeout", "20s"])
        .args(["--min-stream-tokens", "1024", "--poll-interval", "100ms", "--run-burst", "--burst-tokens", "32"])
        .args(["--scenarios", "cold-uniform,hot90", "--routes", "random,prefix-cache", "--rounds", "1"])
        .args(["--count", "16", "--rps", "25", "--output", "16", "--prompt-tokens", "1000"])
        .arg("--out")
        .arg(out);
    let run = output(cmd);
    assert_eq!(run.status.code(), Some(0), "run failed:\n{}", text(&run.stderr));
    run.stdout
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_is_byte_for_byte_what_the_run_printed() {
    let c = cluster(2, 25.0, |cfg| cfg.dev_mode = true).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("session.json");
    let printed = run_session(&c, &path);
    c.shutdown();
    let saved = validate(&path);
    assert!(saved.decode.is_some() && saved.burst.is_some() && saved.phases.len() == 4, "{saved:?}");
    let printed_text = text(&printed);
    for want in ["Aggregate tok/s", "Burst output tok/s", "Scenario hot90", "∅"] {
        assert!(printed_text.contains(want), "no {want:?} in what the run printed:\n{printed_text}");
    }
    let file = path.to_str().expect("a UTF-8 path");
    let again = report(&[file, "--format", "text"]);
    assert_eq!(again.status.code(), Some(0), "{}", text(&again.stderr));
    assert_eq!(text(&again.stdout), printed_text, "report --format text differs from the run's output");
    assert_eq!(again.stdout, printed, "byte for byte");
    let default = report(&[file]);
    assert_eq!(default.stdout, printed, "text is the default format");
    let to_file = dir.path().join("tables.txt");
    let written = report(&[file, "--out", to_file.to_str().expect("UTF-8")]);
    assert_eq!((written.status.code(), written.stdout.len()), (Some(0), 0), "{}", text(&written.stderr));
    assert_eq!(std::fs::read(&to_file).expect("written"), printed, "--out holds the same bytes");
    let ascii = text(&report(&[file, "--ascii"]).stdout);
    assert!(ascii.contains("+------------+") && !ascii.contains('╭'), "{ascii}");
}

#[test]
fn every_format_renders_the_example_to_stdout_and_to_out() {
    let dir = tempfile::tempdir().expect("tempdir");
    let formats =
        [("markdown", "# llm-decode-bench v"), ("html", "<!doctype html"), ("csv", "kind,label,"), ("vllm", "[")];
    for (format, first) in formats {
        let shown = report(&[EXAMPLE, "--format", format]);
        assert_eq!(shown.status.code(), Some(0), "{format}: {}", text(&shown.stderr));
        let body = text(&shown.stdout);
        assert!(body.to_ascii_lowercase().starts_with(first), "{format}:\n{body}");
        assert!(body.ends_with('\n'), "{format} ends in a newline");
        let out = dir.path().join("nested").join(format!("example.{format}"));
        let written = report(&[EXAMPLE, "--format", format, "--out", out.to_str().expect("UTF-8")]);
        assert_eq!((written.status.code(), written.stdout.len()), (Some(0), 0), "{}", text(&written.stderr));
        assert_eq!(std::fs::read(&out).expect("written"), shown.stdout, "{format}: --out holds what stdout had");
    }
    let md = text(&report(&[EXAMPLE, "--format", "markdown"]).stdout);
    assert!(md.contains("| 16k | 0.0 (2e) | 564.8 (2e) (7/8)\\*seq!<br>722/20 |"), "{md}");
    let csv = text(&report(&[EXAMPLE, "--format", "csv"]).stdout);
    assert_eq!(csv.lines().count(), 5, "a header, two decode cells, a burst, a phase:\n{csv}");
    assert!(csv.contains("\r\nrouting,r1-hot90-prefix-cache,"), "{csv}");
    let requests = text(&report(&[EXAMPLE, "--format", "csv", "--per-request"]).stdout);
    assert!(requests.starts_with("kind,label,ctx,conc,attempt,attempt_status,worker,"), "{requests}");
    assert_eq!(requests.lines().count(), 11, "ten requests:\n{requests}");
    let vllm = report(&[EXAMPLE, "--format", "vllm", "--percentiles", "50,99.9"]);
    let rows: serde_json::Value = serde_json::from_slice(&vllm.stdout).expect("JSON");
    assert!(rows[0]["p99.9_ttft_ms"].is_number() || rows[0]["p99.9_ttft_ms"].is_null(), "{}", rows[0]);
    assert!(rows[0].get("p99.9_ttft_ms").is_some() && rows[0].get("median_ttft_ms").is_some(), "{}", rows[0]);
    assert_eq!(report(&[EXAMPLE, "--format", "vllm", "--percentiles", "101"]).status.code(), Some(2));
}

#[test]
fn an_unfinished_session_renders_with_a_note() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(EXAMPLE).expect("fixture")).expect("JSON");
    value["complete"] = false.into();
    value["decode"]["cells"][1]["status"] = "pending".into();
    value["decode"]["cells"][1]["attempts"][1]["status"] = "stopped".into();
    let path = dir.path().join("stopped.json");
    std::fs::write(&path, serde_json::to_vec(&value).expect("JSON")).expect("written");
    let file = path.to_str().expect("UTF-8");
    for format in ["text", "markdown", "html", "csv"] {
        let shown = report(&[file, "--format", format]);
        assert_eq!(shown.status.code(), Some(0), "{format}: {}", text(&shown.stderr));
        assert!(text(&shown.stderr).contains("unfinished session (complete: false)"), "{format}");
        assert!(!shown.stdout.is_empty(), "{format}");
    }
    let tables = text(&report(&[file]).stdout);
    assert!(tables.contains("│ 16k        │ 0.0 (2e) │ · │"), "the stopped cell is not run:\n{tables}");
    let csv = text(&report(&[file, "--format", "csv"]).stdout);
    assert!(csv.contains("decode,ctx=16k conc=8,16384,16k,8,,,,pending,2,stopped,,"), "{csv}");
}

#[test]
fn bad_files_and_flags_are_one_line_and_exit_2() {
    let dir = tempfile::tempdir().expect("tempdir");
    let write = |name: &str, body: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, body).expect("written");
        p.to_str().expect("UTF-8").to_string()
    };
    let not_json = write("notes.json", "<html>");
    let foreign = write("vllm.json", r#"{"date":"20250101","backend":"vllm","completed":64}"#);
    let old = write("old.json", r#"{"tool":{"name":"llm-decode-bench"},"schema_version":1}"#);
    let missing = dir.path().join("absent.json").to_str().expect("UTF-8").to_string();
    let here = dir.path().to_str().expect("UTF-8").to_string();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec![&missing], "cannot read"),
        (vec![&not_json], "not JSON"),
        (vec![&foreign], "not an llm-decode-bench session report"),
        (vec![&old], "schema version 1"),
        (vec![EXAMPLE, "--per-request"], "--per-request needs --format csv"),
        (vec![EXAMPLE, "--out", &here], "is a directory"),
        (vec![EXAMPLE, "--out", EXAMPLE], "is the report being read"),
        (vec![EXAMPLE, "--format", "pdf"], "invalid value 'pdf'"),
    ];
    for (args, says) in cases {
        let shown = report(&args);
        let stderr = text(&shown.stderr);
        assert_eq!(shown.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(shown.stdout.is_empty(), "{args:?} printed {:?}", text(&shown.stdout));
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
    for (file, name) in [(&not_json, "notes.json"), (&foreign, "vllm.json")] {
        let stderr = text(&report(&[file]).stderr);
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.starts_with("error: ") && stderr.contains(name), "names the file: {stderr}");
    }
    let untouched = std::fs::read_to_string(EXAMPLE).expect("fixture");
    assert!(untouched.starts_with('{'), "the report read is never overwritten");
}

#[test]
fn a_report_without_tables_says_so() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(EXAMPLE).expect("fixture")).expect("JSON");
    value["decode"] = serde_json::Value::Null;
    value["burst"] = serde_json::Value::Null;
    value["phases"] = serde_json::json!([]);
    value["phase_history"] = serde_json::json!([]);
    let path = dir.path().join("empty.json");
    std::fs::write(&path, serde_json::to_vec(&value).expect("JSON")).expect("written");
    let shown = report(&[path.to_str().expect("UTF-8")]);
    assert_eq!(shown.status.code(), Some(0), "{}", text(&shown.stderr));
    assert!(shown.stdout.is_empty(), "the run prints nothing either");
    assert!(text(&shown.stderr).contains("no tables to show"), "{}", text(&shown.stderr));
    let csv = report(&[path.to_str().expect("UTF-8"), "--format", "csv"]);
    assert_eq!(text(&csv.stdout).lines().count(), 1, "the header only");
}

/// `report FILE` with `COLUMNS=80` prints no line wider than 80 columns: a decode matrix of six
/// concurrencies (wider than 80 whole) is drawn as two tables, its context column in each;
/// without a width the tables stay whole, as `run` prints them into a file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tables_fit_80_columns_when_the_terminal_has_80() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("wide.json");
    common::paused_decode_session(25.0, vec![0, 1024, 6144], vec![1, 2, 4, 8, 16, 32], &path).await;
    let width = |s: &str| s.chars().count();
    let mut cmd = bin();
    cmd.env("COLUMNS", "80").arg("report").arg(&path);
    let narrow = text(&output(cmd).stdout);
    let widest = narrow.lines().map(width).max().unwrap_or(0);
    assert!(widest <= 80, "a line of {widest} columns:\n{narrow}");
    assert!(narrow.contains("(continued)"), "the wide matrix was split:\n{narrow}");
    let mut cmd = bin();
    cmd.env_remove("COLUMNS").arg("report").arg(&path);
    let whole = text(&output(cmd).stdout);
    assert!(whole.lines().map(width).max().unwrap_or(0) > 80 && !whole.contains("(continued)"), "{whole}");
}
