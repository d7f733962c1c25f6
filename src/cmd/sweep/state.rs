//! The sweep as it stands: its `sweep` section (every set's status, server facts and nested
//! session report), the sweep's own actions and warnings, and the top-level report around
//! them, written atomically to the one report file before the first server starts, after
//! every set and on every exit path. While a set's session runs, its writer thread writes the
//! same file through a [`ReportFrame`] that nests the set's report as it stands.

use crate::config::RunConfig;
use crate::report::frame::ReportFrame;
use crate::report::json::{ActionRecord, SCHEMA_VERSION, SessionReport, TargetInfo, ToolInfo};
use crate::report::sweep::{SetStatus, SweepSection, SweepSet};
use crate::report::writer::{ReportWriter, now_rfc3339};
use crate::session::Prior;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

/// The sweep record, shared with the writer thread of the running set's session.
pub(crate) struct SweepState {
    /// Every set.
    pub section: SweepSection,
    /// Sweep events (`set 1 start`, `set 1 ready`, ...), seconds since the sweep started.
    actions: Vec<ActionRecord>,
    /// Things the reader should know (a set that failed).
    pub warnings: Vec<String>,
    /// The sweep was stopped (a signal, the operator quitting).
    pub stopped: bool,
    started: Instant,
    started_at: String,
    /// The plan every set runs, from the first set's configuration.
    plan: crate::report::json::PlanInfo,
    endpoint: String,
}

/// The state behind a lock.
#[derive(Clone)]
pub(crate) struct Shared(Arc<Mutex<SweepState>>);

impl Shared {
    /// A sweep of `section`'s sets, all pending, planned as `cfg` and `prior` say.
    pub(crate) fn new(section: SweepSection, cfg: &RunConfig, prior: &Prior) -> Self {
        let section_base = section.base_url.clone();
        let state = SweepState {
            section,
            actions: Vec::new(),
            warnings: Vec::new(),
            stopped: false,
            started: Instant::now(),
            started_at: now_rfc3339(),
            plan: plan_of(&section_base, cfg, prior),
            endpoint: cfg.endpoint.as_str().into(),
        };
        Self(Arc::new(Mutex::new(state)))
    }

    /// The state, locked.
    pub(crate) fn lock(&self) -> MutexGuard<'_, SweepState> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Set `i` (from 0), changed by `f`.
    pub(crate) fn set(&self, i: usize, f: impl FnOnce(&mut SweepSet)) {
        f(&mut self.lock().section.sets[i]);
    }

    /// Records a sweep event about set `i`.
    pub(crate) fn act(&self, action: &str, i: usize) {
        let mut st = self.lock();
        let at_s = st.started.elapsed().as_secs_f64();
        let cell = Some(st.section.title(&st.section.sets[i]));
        st.actions.push(ActionRecord { at_s, action: action.into(), cell });
    }

    /// The frame the session of set `i` writes its report in: the whole sweep, that set's
    /// report nested as it stands.
    pub(crate) fn frame(&self, i: usize) -> ReportFrame {
        let shared = self.clone();
        ReportFrame::new(move |report| {
            let mut st = shared.lock();
            st.section.sets[i].report = Some(Box::new(report.clone()));
            st.report()
        })
    }

    /// The report as it stands.
    pub(crate) fn report(&self) -> SessionReport {
        self.lock().report()
    }
}

impl SweepState {
    /// The top-level report: the sweep's facts, its events and warnings, and the sets.
    pub(crate) fn report(&self) -> SessionReport {
        let sets = &self.section.sets;
        let first = sets.iter().find_map(|s| s.report.as_deref());
        let complete = !self.stopped && sets.iter().all(|s| s.status.is_final());
        SessionReport {
            schema_version: SCHEMA_VERSION,
            tool: ToolInfo { name: "llm-decode-bench".into(), version: env!("CARGO_PKG_VERSION").into() },
            started_at: self.started_at.clone(),
            updated_at: now_rfc3339(),
            complete,
            model: first.map_or_else(|| "unknown".into(), |r| r.model.clone()),
            runtime: first.and_then(|r| r.runtime.clone()),
            gateway_version: None,
            replicas: 0,
            measured_phases: 0,
            planned_phases: 0,
            target: TargetInfo {
                base_url: self.section.base_url.clone(),
                endpoint: self.endpoint.clone(),
                max_model_len: None,
                kv_capacity_tokens: None,
                engine_dialect: first.map_or_else(|| "unknown".into(), |r| r.target.engine_dialect.clone()),
                replica_info: Vec::new(),
                connection_reuse: None,
            },
            plan: self.plan.clone(),
            calibration: Vec::new(),
            decode: None,
            burst: None,
            serve: None,
            extensions: Vec::new(),
            phases: Vec::new(),
            phase_history: Vec::new(),
            actions: self.actions.clone(),
            replica_series: Default::default(),
            replica_stale: Default::default(),
            warnings: self.warnings.clone(),
            metrics_source: None,
            halted: None,
            sweep: Some(self.section.clone()),
            shard: None,
            merge: None,
        }
    }

    /// Sets whose server or session failed.
    pub(crate) fn failed_sets(&self) -> usize {
        self.section.sets.iter().filter(|s| s.status.failed()).count()
    }

    /// True when a set's session halted on its own (src/cell/halt.rs).
    pub(crate) fn halted(&self) -> bool {
        self.section.sets.iter().any(|s| s.report.as_ref().is_some_and(|r| r.halted.is_some()))
    }
}

/// The plan every set runs, the target named by its template (`http://127.0.0.1:{port}`), not
/// by the first set's port.
fn plan_of(base: &str, cfg: &RunConfig, prior: &Prior) -> crate::report::json::PlanInfo {
    let mut plan = crate::session::assemble::plan_info_of(cfg, prior);
    if let Some(b) = plan.settings.get_mut("base-url") {
        *b = base.to_string();
    }
    plan
}

/// Writes the sweep report to `writer`'s file (its fallback file when that fails); the error,
/// with where the report went instead, when the file could not be written.
pub(crate) fn save(shared: &Shared, writer: &ReportWriter) -> Result<(), String> {
    let report = shared.report();
    match writer.write_or_fallback(&report) {
        (Ok(()), _) => Ok(()),
        (Err(e), Some(Ok(f))) => {
            Err(format!("cannot write {} ({e}); the report was saved to {}", shown(writer), f.display()))
        }
        (Err(e), _) => Err(format!("cannot write {} ({e}), nor its fallback file: the report is lost", shown(writer))),
    }
}

fn shown(writer: &ReportWriter) -> String {
    writer.path().display().to_string()
}

/// `<stem>.set-N.server.log` beside the report `path`.
pub(crate) fn log_path(path: &Path, n: usize) -> std::path::PathBuf {
    let stem = path.file_stem().map_or_else(|| "report".into(), |s| s.to_string_lossy().into_owned());
    path.with_file_name(format!("{stem}.set-{n}.server.log"))
}

/// Marks set `i` with `status` and says so as a sweep event.
pub(crate) fn mark(shared: &Shared, i: usize, status: SetStatus) {
    shared.set(i, |s| s.status = status);
    shared.act(status.as_str(), i);
}
