//! End-to-end: the HTML report draws in a real browser. A page rendered from the committed
//! example report (with a few minutes of replica series and operator actions added) is opened
//! in headless Chromium with every background connection disabled: it is screenshotted (a
//! non-blank PNG), and its DOM, dumped after load by a probe script added to a copy of the page,
//! shows every chart laid out, no error and nothing fetched; Chromium logs no console message.
//! The same for several reports on one page (each report's charts and one Pareto chart).
//! Needs `/usr/bin/chromium` (Debian's `chromium`; `.ci/run` installs it) and fails without it.

use llm_decode_bench::report::html::{render, render_many};
use llm_decode_bench::report::json::{ActionRecord, SeriesPoint, SessionReport};
use llm_decode_bench::report::pareto::Source;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The committed example report.
const EXAMPLE: &str = include_str!("../fixtures/report_example.json");
/// Where Debian installs Chromium.
const CHROMIUM: &str = "/usr/bin/chromium";
/// Longest a Chromium run may take.
const TIMEOUT: Duration = Duration::from_secs(90);

/// Records errors and fetched resources, then writes what it saw on `<html data-probe>` at load.
const PROBE: &str = "<script>
window.__errors = [];
window.addEventListener('error', function (e) { window.__errors.push(String(e.message || e.type)); }, true);
window.addEventListener('load', function () {
  var charts = Array.prototype.slice.call(document.querySelectorAll('svg.chart'));
  var drawn = charts.filter(function (s) { var r = s.getBoundingClientRect(); return r.width > 100 && r.height > 50; });
  var fetched = performance.getEntriesByType('resource').length;
  document.documentElement.setAttribute('data-probe',
    'charts=' + charts.length + ' drawn=' + drawn.length + ' fetched=' + fetched + ' errors=' + window.__errors.length);
});
</script>
";

/// The example report with two replicas' series over two minutes and a few operator actions.
fn report() -> SessionReport {
    let mut report: SessionReport = serde_json::from_str(EXAMPLE).expect("fixture parses");
    for (k, name) in ["r0", "r1"].into_iter().enumerate() {
        let points = (0..120).map(|t| {
            let phase = f64::from(t) / 12.0 + k as f64;
            SeriesPoint {
                t_s: f64::from(t),
                running: Some((4.0 + 4.0 * phase.sin()).round()),
                waiting: Some((2.0 * phase.cos()).max(0.0).round()),
                kv_usage: Some(0.45 + 0.4 * phase.sin()),
                generation_tokens: Some(f64::from(t) * 500.0),
                prefix_hits_tokens: None,
                preemptions: None,
            }
        });
        report.replica_series.insert(name.into(), points.collect());
    }
    for (at_s, action, cell) in [(20.0, "pause", Some("ctx=16k conc=8")), (31.5, "resume", None), (90.0, "quit", None)]
    {
        report.actions.push(ActionRecord { at_s, action: action.into(), cell: cell.map(String::from) });
    }
    report
}

/// Runs Chromium headless on `page` with `extra` arguments; returns (stdout, stderr). Fails the
/// test when Chromium is missing, does not finish in time or exits non-zero.
fn chromium(page: &Path, profile: &Path, extra: &[String]) -> (String, String) {
    assert!(
        Path::new(CHROMIUM).exists(),
        "{CHROMIUM} not found: this test needs headless Chromium (apt-get install -y chromium; .ci/run installs it)"
    );
    let mut cmd = Command::new(CHROMIUM);
    cmd.args(["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"])
        .args(["--disable-background-networking", "--disable-component-update", "--disable-sync"])
        .args(["--disable-default-apps", "--disable-extensions", "--no-pings", "--disable-domain-reliability"])
        .arg("--host-resolver-rules=MAP * ~NOTFOUND")
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(["--enable-logging=stderr", "--v=0", "--window-size=1400,3000"])
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("chromium starts");
    let (mut out, mut err) = (child.stdout.take().expect("stdout"), child.stderr.take().expect("stderr"));
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait on chromium") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("chromium did not finish within {TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let (stdout, stderr) = (reader.join().expect("stdout reader"), err_reader.join().expect("stderr reader"));
    assert!(status.success(), "chromium exited with {status}:\n{stderr}");
    (stdout, stderr)
}

/// Console messages Chromium logged (`...:CONSOLE(line)] "message", source: ...`).
fn console_lines(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| l.contains(":CONSOLE")).collect()
}

/// Width, height and the number of distinct scanlines of a PNG (zlib-inflated, filters kept:
/// enough to tell a drawn page from a blank one).
fn png_facts(png: &[u8]) -> (u32, u32, usize) {
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    let (width, height) = (be(&png[16..20]), be(&png[20..24]));
    let mut idat = Vec::new();
    let mut at = 8;
    while at + 8 <= png.len() {
        let len = be(&png[at..at + 4]) as usize;
        if &png[at + 4..at + 8] == b"IDAT" {
            idat.extend_from_slice(&png[at + 8..at + 8 + len]);
        }
        at += 12 + len;
    }
    let mut raw = Vec::new();
    flate2::read::ZlibDecoder::new(&idat[..]).read_to_end(&mut raw).expect("PNG data inflates");
    let stride = raw.len() / height.max(1) as usize;
    let mut rows: Vec<&[u8]> = raw.chunks(stride.max(1)).collect();
    rows.sort();
    rows.dedup();
    (width, height, rows.len())
}

#[test]
fn the_page_draws_in_headless_chromium() {
    let dir = tempfile::tempdir().expect("tempdir");
    let html = render(&report());
    assert!(!html.contains("<script") && !html.contains("<link"), "the page itself has no script or link");
    let page = dir.path().join("report.html");
    std::fs::write(&page, &html).expect("page written");
    let shot: PathBuf = dir.path().join("report.png");
    let (_, stderr) = chromium(&page, &dir.path().join("p1"), &[format!("--screenshot={}", shot.display())]);
    assert!(console_lines(&stderr).is_empty(), "console messages:\n{stderr}");
    let png = std::fs::read(&shot).expect("screenshot taken");
    assert!(png.len() > 50_000, "screenshot too small to hold the page: {} bytes", png.len());
    let (width, height, distinct_rows) = png_facts(&png);
    assert_eq!((width, height), (1400, 3000));
    assert!(distinct_rows > 400, "the screenshot looks blank: {distinct_rows} distinct rows");

    let probed = dir.path().join("probed.html");
    std::fs::write(&probed, html.replacen("</head>", &format!("{PROBE}</head>"), 1)).expect("probed page written");
    let (dom, stderr) = chromium(&probed, &dir.path().join("p2"), &["--dump-dom".to_string()]);
    assert!(console_lines(&stderr).is_empty(), "console messages:\n{stderr}");
    let charts = html.matches("<svg class=\"chart\"").count();
    assert!(charts >= 10, "expected every chart of the example, found {charts}");
    let want = format!("data-probe=\"charts={charts} drawn={charts} fetched=0 errors=0\"");
    assert!(dom.contains(&want), "probe: want {want}, DOM starts:\n{}", &dom[..dom.len().min(400)]);
    for id in ["decode", "burst", "pareto", "routing", "timelines", "actions"] {
        assert!(dom.contains(&format!("<section id=\"{id}\">")), "no {id} section in the DOM");
    }
}

/// Several reports on one page (`report --format html A.json B.json`): every chart of both
/// reports and the one Pareto chart over both lay out, nothing is fetched, nothing errs.
#[test]
fn several_reports_draw_as_one_page_in_headless_chromium() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (a, mut b) = (report(), report());
    b.model = "other-model".into();
    let sources = [Source { label: "a", report: &a }, Source { label: "b", report: &b }];
    let html = render_many(&sources);
    assert_eq!(html.matches("<section id=\"pareto\">").count(), 1);
    let probed = dir.path().join("probed.html");
    std::fs::write(&probed, html.replacen("</head>", &format!("{PROBE}</head>"), 1)).expect("probed page written");
    let (dom, stderr) = chromium(&probed, &dir.path().join("p"), &["--dump-dom".to_string()]);
    assert!(console_lines(&stderr).is_empty(), "console messages:\n{stderr}");
    let charts = html.matches("<svg class=\"chart\"").count();
    let single = render(&a).matches("<svg class=\"chart\"").count();
    assert_eq!(charts, 2 * single - 1, "each report's charts, and one Pareto chart instead of two");
    let want = format!("data-probe=\"charts={charts} drawn={charts} fetched=0 errors=0\"");
    assert!(dom.contains(&want), "probe: want {want}, DOM starts:\n{}", &dom[..dom.len().min(400)]);
    for id in ["pareto", "s1-decode", "s1-routing", "s2-decode", "s2-actions"] {
        assert!(dom.contains(&format!("<section id=\"{id}\">")), "no {id} section in the DOM");
    }
}
