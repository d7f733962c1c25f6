//! `report FILE...` with several files (issue 25): html is one page with each report's sections
//! and one Pareto chart over all of them, its sources told apart by their folders when the
//! stems clash; text and markdown render each report in turn under a `==> FILE <==` line, as
//! each alone would; csv and vllm take one file; a bad file or `--out` is exit 2 with nothing
//! written.

use super::report_cmd::{report, text};

/// The committed example report.
const EXAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/report_example.json");

/// A copy of the example in `dir/b/` (the same stem), of another model.
fn other(dir: &std::path::Path) -> String {
    let mut value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(EXAMPLE).expect("fixture")).expect("JSON");
    value["model"] = "other-model".into();
    std::fs::create_dir_all(dir.join("b")).expect("dir");
    let path = dir.join("b").join("report_example.json");
    std::fs::write(&path, serde_json::to_vec(&value).expect("JSON")).expect("written");
    path.to_str().expect("UTF-8").to_string()
}

#[test]
fn several_files_make_one_html_page_with_one_pareto_chart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let copy = other(dir.path());
    let shown = report(&[EXAMPLE, &copy, "--format", "html"]);
    assert_eq!(shown.status.code(), Some(0), "{}", text(&shown.stderr));
    let page = text(&shown.stdout);
    assert!(page.starts_with("<!doctype html>") && page.trim_end().ends_with("</html>"));
    for want in [
        "<h1>2 session reports",
        "<h2 class=\"source\" id=\"s1\">fixtures/report_example ",
        "<h2 class=\"source\" id=\"s2\">b/report_example ",
        "<section id=\"s1-decode\">",
        "<section id=\"s2-burst\">",
        "<td>b/report_example</td><td>decode</td>",
        "other-model",
    ] {
        assert!(page.contains(want), "no {want:?}");
    }
    assert_eq!(page.matches("<section id=\"pareto\">").count(), 1, "one chart over both");
    assert!(!page.contains("<script") && !page.contains("<link") && !page.contains(" src=\""), "self-contained");
    let out = dir.path().join("both.html");
    let written = report(&[EXAMPLE, &copy, "--format", "html", "--out", out.to_str().expect("UTF-8")]);
    assert_eq!((written.status.code(), written.stdout.len()), (Some(0), 0), "{}", text(&written.stderr));
    assert_eq!(std::fs::read(&out).expect("written"), shown.stdout, "--out holds what stdout had");
}

#[test]
fn text_and_markdown_render_each_file_in_turn() {
    let dir = tempfile::tempdir().expect("tempdir");
    let copy = other(dir.path());
    for format in ["text", "markdown"] {
        let (a, b) = (report(&[EXAMPLE, "--format", format]), report(&[&copy, "--format", format]));
        let (a, b) = (text(&a.stdout), text(&b.stdout));
        assert!(!a.is_empty() && !b.is_empty(), "{format}");
        let both = report(&[EXAMPLE, &copy, "--format", format]);
        assert_eq!(both.status.code(), Some(0), "{}", text(&both.stderr));
        let want = format!("==> {EXAMPLE} <==\n\n{a}\n==> {copy} <==\n\n{b}");
        assert_eq!(text(&both.stdout), want, "{format}: each report as alone, under its heading");
        let out = dir.path().join(format!("both.{format}"));
        let written = report(&[EXAMPLE, &copy, "--format", format, "--out", out.to_str().expect("UTF-8")]);
        assert_eq!(written.status.code(), Some(0), "{}", text(&written.stderr));
        assert_eq!(std::fs::read_to_string(&out).expect("written"), want, "{format} to --out");
    }
}

#[test]
fn several_files_refuse_csv_vllm_and_bad_input_with_nothing_written() {
    let dir = tempfile::tempdir().expect("tempdir");
    let copy = other(dir.path());
    let bad = dir.path().join("notes.json");
    std::fs::write(&bad, "<html>").expect("written");
    let bad = bad.to_str().expect("UTF-8");
    let out = dir.path().join("page.html");
    let out_s = out.to_str().expect("UTF-8");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec![EXAMPLE, &copy, "--format", "csv"], "--format csv takes one FILE (2 given)"),
        (vec![EXAMPLE, &copy, "--format", "vllm"], "--format vllm takes one FILE (2 given)"),
        (vec![EXAMPLE, &copy, "--format", "html", "--out", &copy], "is the report being read"),
        (vec![EXAMPLE, bad, "--format", "html", "--out", out_s], "notes.json"),
        (vec![EXAMPLE, bad], "not JSON"),
    ];
    for (args, says) in cases {
        let shown = report(&args);
        let stderr = text(&shown.stderr);
        assert_eq!(shown.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says) && stderr.lines().count() == 1, "{args:?}: {stderr}");
        assert!(shown.stdout.is_empty(), "{args:?} printed {:?}", text(&shown.stdout));
    }
    assert!(!out.exists(), "nothing written when a file is bad");
    assert!(
        std::fs::read_to_string(&copy).expect("kept").contains("other-model"),
        "a report read is never overwritten"
    );
    let none = report(&["--format", "html"]);
    assert_eq!(none.status.code(), Some(2), "FILE is required: {}", text(&none.stderr));
}
