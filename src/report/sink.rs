//! The report writer task, off the load path: the runner submits jobs that build the report
//! and never waits; one thread of the sink's own builds, serialises and writes the newest job
//! and drops the older ones still pending (latest wins).
//!
//! A plain thread rather than `spawn_blocking`: a blocking task that lives as long as the
//! session would stop tokio's paused clock from advancing on its own in tests.

use super::fallback::SaveLog;
use super::frame::ReportFrame;
use super::json::SessionReport;
use super::writer::ReportWriter;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use tokio::sync::oneshot;

/// Builds the report to write; runs on the sink's thread, so it should capture only cheap
/// handles (`Arc`s, a clone of the session state).
pub(crate) type ReportJob = Box<dyn FnOnce() -> SessionReport + Send + 'static>;

/// Called on the sink's thread after every write of a submitted job (not of the final one,
/// whose outcome [`ReportSink::finish`] returns).
pub(crate) type OnWrite = Box<dyn FnMut(&SaveOutcome) + Send + 'static>;

/// How one save went.
#[derive(Debug)]
pub(crate) struct SaveOutcome {
    /// The report file.
    pub path: PathBuf,
    /// Whether the file was written (an error names what failed).
    pub result: std::io::Result<()>,
    /// When it was not: where the report went instead (its fallback file), or why not.
    pub fallback: Option<std::io::Result<PathBuf>>,
}

/// The final report and how its write went, or the panic that stopped it.
type FinalResult = std::thread::Result<(SessionReport, SaveOutcome)>;

/// What the thread is asked to do next.
#[derive(Default)]
struct Slot {
    /// The newest submitted job not yet started.
    pending: Option<ReportJob>,
    /// The session's last job and where its result goes.
    last: Option<(ReportJob, oneshot::Sender<FinalResult>)>,
    /// False once the sink is finished or dropped: the thread ends when nothing is left.
    open: bool,
    /// Jobs submitted so far.
    submitted: u64,
    /// Submitted jobs dropped for a newer one.
    superseded: u64,
}

/// State shared by the handle and the thread.
struct Shared {
    slot: Mutex<Slot>,
    wake: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Slot> {
        self.slot.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Submission counts of a sink.
#[cfg(test)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct SinkStats {
    /// Jobs submitted with [`ReportSink::submit`].
    pub submitted: u64,
    /// Of those, jobs dropped unrun because a newer one arrived first.
    pub superseded: u64,
}

/// Handle of the writer thread of one report file.
pub(crate) struct ReportSink {
    writer: ReportWriter,
    shared: Arc<Shared>,
    log: Arc<SaveLog>,
}

impl ReportSink {
    /// Starts the writer thread for `writer`'s file; `on_write` hears of every submitted
    /// job's write (from that thread).
    #[cfg(test)]
    pub(crate) fn spawn(
        writer: ReportWriter,
        on_write: impl FnMut(&SaveOutcome) + Send + 'static,
    ) -> std::io::Result<Self> {
        Self::spawn_framed(writer, None, on_write)
    }

    /// [`ReportSink::spawn`], writing each report inside `frame` when given (the reports the
    /// jobs build, and the final one returned, stay the session's own).
    pub(crate) fn spawn_framed(
        writer: ReportWriter,
        frame: Option<ReportFrame>,
        on_write: impl FnMut(&SaveOutcome) + Send + 'static,
    ) -> std::io::Result<Self> {
        let shared =
            Arc::new(Shared { slot: Mutex::new(Slot { open: true, ..Slot::default() }), wake: Condvar::new() });
        let log = Arc::new(SaveLog::default());
        let out = Output { writer: writer.clone(), log: Arc::clone(&log), frame };
        let thread_shared = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("report-writer".into())
            .spawn(move || writer_loop(&thread_shared, &out, Box::new(on_write)))?;
        Ok(ReportSink { writer, shared, log })
    }

    /// How the writes went so far (shared: it keeps counting after this call).
    pub(crate) fn log(&self) -> Arc<SaveLog> {
        Arc::clone(&self.log)
    }

    /// The writer of the report file.
    pub(crate) fn writer(&self) -> &ReportWriter {
        &self.writer
    }

    /// Queues `job` to be built and written; replaces a job still waiting. Never blocks on
    /// the write. Ignored once the sink is finished.
    pub(crate) fn submit(&self, job: ReportJob) {
        let older = {
            let mut slot = self.shared.lock();
            if !slot.open {
                return;
            }
            slot.submitted += 1;
            let older = slot.pending.replace(job);
            slot.superseded += u64::from(older.is_some());
            older
        };
        self.shared.wake.notify_one();
        drop(older);
    }

    /// Submission counts so far.
    #[cfg(test)]
    pub(crate) fn stats(&self) -> SinkStats {
        let slot = self.shared.lock();
        SinkStats { submitted: slot.submitted, superseded: slot.superseded }
    }

    /// Writes the session's last report: drops a job still waiting, lets a write in progress
    /// end, then builds and writes `job`; the future yields its report and outcome. The job
    /// is queued by this call (the future only waits), and later submissions are ignored.
    ///
    /// # Panics
    /// The future panics when the job panicked (with its payload), or when the sink was
    /// already finished (its thread has ended).
    pub(crate) fn finish(&self, job: ReportJob) -> impl Future<Output = (SessionReport, SaveOutcome)> + Send + 'static {
        let (tx, rx) = oneshot::channel();
        let older = {
            let mut slot = self.shared.lock();
            slot.open = false;
            slot.superseded += u64::from(slot.pending.is_some());
            slot.last = Some((job, tx));
            slot.pending.take()
        };
        self.shared.wake.notify_one();
        drop(older);
        async move {
            // Waited for on a blocking task: while one runs, tokio's paused test clock does not
            // jump ahead, so a slow final write cannot run a paused-clock session out of time.
            let got = tokio::task::spawn_blocking(move || rx.blocking_recv()).await;
            match got {
                Ok(Ok(Ok(done))) => done,
                Ok(Ok(Err(panic))) => std::panic::resume_unwind(panic),
                Ok(Err(_)) | Err(_) => panic!("the report writer thread ended before the final report"),
            }
        }
    }
}

impl Drop for ReportSink {
    /// Lets the thread end once it has written what is pending.
    fn drop(&mut self) {
        self.shared.lock().open = false;
        self.shared.wake.notify_one();
    }
}

/// What the thread takes next.
enum Next {
    Job(ReportJob),
    Last(ReportJob, oneshot::Sender<FinalResult>),
    Done,
}

fn next(shared: &Shared) -> Next {
    let slot = shared.lock();
    let mut slot = shared
        .wake
        .wait_while(slot, |s| s.pending.is_none() && s.last.is_none() && s.open)
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(job) = slot.pending.take() {
        return Next::Job(job);
    }
    match slot.last.take() {
        Some((job, tx)) => Next::Last(job, tx),
        None => Next::Done,
    }
}

/// Where the thread writes, and its record of how that went.
struct Output {
    writer: ReportWriter,
    log: Arc<SaveLog>,
    frame: Option<ReportFrame>,
}

fn writer_loop(shared: &Shared, out: &Output, mut on_write: OnWrite) {
    loop {
        match next(shared) {
            Next::Job(job) => {
                let outcome = match build_and_write(out, job) {
                    Ok((_, outcome)) => outcome,
                    Err(_) => SaveOutcome {
                        path: out.writer.path().to_path_buf(),
                        result: Err(std::io::Error::other("building the report panicked")),
                        fallback: None,
                    },
                };
                on_write(&outcome);
            }
            Next::Last(job, tx) => {
                // Not called for the final job: dropped before its outcome is sent, so whatever
                // it holds (the session's event sender) is gone once `finish` resolves. Dropped
                // after, a slow thread kept the event channel open past the runner's end, and a
                // paused-clock reader waiting for it to close saw its clock run out.
                drop(on_write);
                let _ = tx.send(build_and_write(out, job));
                return;
            }
            Next::Done => return,
        }
    }
}

/// Runs `job` and writes its report (to the fallback file when its path fails);
/// a panic of the job is caught.
fn build_and_write(out: &Output, job: ReportJob) -> FinalResult {
    let report = catch_unwind(AssertUnwindSafe(job))?;
    let (result, fallback) = match &out.frame {
        Some(frame) => out.writer.write_or_fallback(&catch_unwind(AssertUnwindSafe(|| frame.apply(&report)))?),
        None => out.writer.write_or_fallback(&report),
    };
    let fell_back = fallback.as_ref().and_then(|f| f.as_ref().ok());
    out.log.note(result.as_ref().err(), fell_back.map(PathBuf::as_path));
    let path = out.writer.path().to_path_buf();
    let outcome = SaveOutcome { path, result, fallback };
    Ok((report, outcome))
}

#[cfg(test)]
#[path = "sink_tests.rs"]
mod tests;
