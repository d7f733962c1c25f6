//! Tests of the report sink: the writer thread, coalesced saves, the final write.
use super::*;
use crate::report::tests_schema::minimal_report;
use std::path::Path;
use std::sync::mpsc;

/// A report whose warnings are `[tag]`.
fn tagged(tag: &str) -> SessionReport {
    SessionReport { warnings: vec![tag.to_string()], ..minimal_report() }
}

/// The tag of the report on disk at `path`.
fn tag_on_disk(path: &Path) -> String {
    let text = std::fs::read_to_string(path).expect("report written");
    let report: SessionReport = serde_json::from_str(&text).expect("a whole report");
    report.warnings.concat()
}

/// A job building `tagged(tag)` that records its tag in `ran` when it runs.
fn job(tag: &str, ran: &Arc<Mutex<Vec<String>>>) -> ReportJob {
    let (tag, ran) = (tag.to_string(), Arc::clone(ran));
    Box::new(move || {
        ran.lock().expect("ran").push(tag.clone());
        tagged(&tag)
    })
}

/// A job that tells `started` it runs, then waits for `release` before building.
fn gate(tag: &str, ran: &Arc<Mutex<Vec<String>>>) -> (ReportJob, mpsc::Receiver<()>, mpsc::Sender<()>) {
    let (started_tx, started_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let inner = job(tag, ran);
    let gated: ReportJob = Box::new(move || {
        let _ = started_tx.send(());
        let _ = release_rx.recv();
        inner()
    });
    (gated, started_rx, release_tx)
}

/// A sink whose write outcomes arrive on the returned channel.
fn sink_at(path: PathBuf) -> (ReportSink, mpsc::Receiver<SaveOutcome>) {
    let (tx, rx) = mpsc::channel();
    let on_write = move |o: &SaveOutcome| {
        let copy = SaveOutcome {
            path: o.path.clone(),
            result: o.result.as_ref().map(|_| ()).map_err(|e| std::io::Error::new(e.kind(), e.to_string())),
            fallback: o
                .fallback
                .as_ref()
                .map(|f| f.as_ref().cloned().map_err(|e| std::io::Error::other(e.to_string()))),
        };
        let _ = tx.send(copy);
    };
    (ReportSink::spawn(ReportWriter::new(Some(path)), on_write).expect("thread"), rx)
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(dir).expect("dir").map(|e| e.expect("entry").file_name().to_string_lossy().into()).collect();
    names.sort();
    names
}

#[tokio::test]
async fn the_newest_submission_wins() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("r.json");
    let (sink, outcomes) = sink_at(path.clone());
    let ran = Arc::default();
    let (first, started, release) = gate("0", &ran);
    sink.submit(first);
    started.recv().expect("the first job runs");
    for n in 1..=50 {
        sink.submit(job(&n.to_string(), &ran));
    }
    release.send(()).expect("released");
    for _ in 0..2 {
        assert!(outcomes.recv().expect("a write").result.is_ok());
    }
    assert_eq!(tag_on_disk(&path), "50");
    assert_eq!(*ran.lock().expect("ran"), ["0", "50"], "only the newest pending job ran");
    assert_eq!(sink.stats(), SinkStats { submitted: 51, superseded: 49 });
    let (report, outcome) = sink.finish(job("last", &ran)).await;
    assert!(outcome.result.is_ok());
    assert_eq!((report, tag_on_disk(&path)), (tagged("last"), "last".to_string()));
    let gone = outcomes.try_recv().unwrap_err();
    assert_eq!(
        gone,
        mpsc::TryRecvError::Disconnected,
        "the final write is returned, not reported: the callback is gone"
    );
    assert_eq!(names_in(dir.path()), ["r.json"], "no temporary file left");
}

#[tokio::test]
async fn finish_drops_the_pending_job_and_returns_the_final_report() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("r.json");
    let (sink, outcomes) = sink_at(path.clone());
    let ran = Arc::default();
    let (first, started, release) = gate("0", &ran);
    sink.submit(first);
    started.recv().expect("the first job runs");
    sink.submit(job("1", &ran));
    let done = sink.finish(job("final", &ran));
    sink.submit(job("too late", &ran));
    release.send(()).expect("released");
    let (report, outcome) = done.await;
    assert_eq!(report, tagged("final"));
    assert_eq!((outcome.path.as_path(), outcome.result.is_ok()), (path.as_path(), true));
    assert_eq!(tag_on_disk(&path), "final");
    assert_eq!(*ran.lock().expect("ran"), ["0", "final"]);
    assert_eq!(sink.stats(), SinkStats { submitted: 2, superseded: 1 });
    assert_eq!(outcomes.iter().count(), 1, "only the first job's write was reported");
}

#[tokio::test]
async fn write_errors_and_panics_are_reported() {
    let dir = tempfile::tempdir().expect("tempdir");
    let blocker = dir.path().join("file");
    std::fs::write(&blocker, "x").expect("seeded");
    let (sink, outcomes) = sink_at(blocker.join("sink-errors.json"));
    sink.submit(Box::new(|| tagged("a")));
    let failed = outcomes.recv().expect("an outcome");
    assert!(failed.result.is_err(), "a write under a file fails");
    assert_eq!(failed.path, blocker.join("sink-errors.json"));
    let fallback = failed.fallback.expect("a failed write falls back").expect("to the temp dir");
    assert_eq!(tag_on_disk(&fallback), "a");
    sink.submit(Box::new(|| panic!("assembly bug")));
    let panicked = outcomes.recv().expect("an outcome");
    let message = panicked.result.expect_err("a panic is an error").to_string();
    assert!(message.contains("panicked"), "{message}");
    let (report, outcome) = sink.finish(Box::new(|| tagged("b"))).await;
    assert_eq!(report, tagged("b"), "the thread outlived the panic");
    assert!(outcome.result.is_err());
    assert_eq!(outcome.fallback.expect("fell back").expect("written"), fallback);
    assert_eq!(tag_on_disk(&fallback), "b", "the final report is in the fallback file");
    let record = sink.log().get();
    assert_eq!((record.writes, record.failures, record.last_failed), (2, 2, true), "the panic wrote nothing");
    assert_eq!(record.fallback.as_deref(), Some(fallback.as_path()));
    assert_eq!(names_in(dir.path()), ["file"]);
    std::fs::remove_file(fallback).expect("removed");
}

#[tokio::test]
async fn a_panic_of_the_final_job_reaches_the_caller() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (sink, _outcomes) = sink_at(dir.path().join("r.json"));
    let done = tokio::spawn(sink.finish(Box::new(|| panic!("final assembly bug"))));
    let err = done.await.expect_err("the future panicked");
    assert!(err.is_panic());
}

#[test]
fn dropping_the_sink_writes_what_is_pending() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("r.json");
    let (sink, outcomes) = sink_at(path.clone());
    let ran = Arc::default();
    let (first, started, release) = gate("0", &ran);
    sink.submit(first);
    started.recv().expect("the first job runs");
    sink.submit(job("1", &ran));
    drop(sink);
    release.send(()).expect("released");
    assert_eq!(outcomes.iter().count(), 2, "both writes happen, then the thread ends");
    assert_eq!(tag_on_disk(&path), "1");
}

#[tokio::test]
async fn two_sinks_in_one_directory_do_not_clash() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
    let (sink_a, out_a) = sink_at(a.clone());
    let (sink_b, out_b) = sink_at(b.clone());
    for n in 0..30 {
        sink_a.submit(Box::new(move || tagged(&format!("a{n}"))));
        sink_b.submit(Box::new(move || tagged(&format!("b{n}"))));
    }
    let (ra, rb) = tokio::join!(sink_a.finish(Box::new(|| tagged("a"))), sink_b.finish(Box::new(|| tagged("b"))));
    assert!(ra.1.result.is_ok() && rb.1.result.is_ok());
    assert!(out_a.iter().chain(out_b.iter()).all(|o| o.result.is_ok()), "every write succeeded");
    assert_eq!((tag_on_disk(&a), tag_on_disk(&b)), ("a".to_string(), "b".to_string()));
    assert_eq!(names_in(dir.path()), ["a.json", "b.json"]);
}
