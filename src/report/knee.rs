//! A row's knee as the report keeps it (`decode.knees`, re-exported by `json`) and how it
//! reads in the tables and logs: `knee at conc 8 (ctx 0): tok/s +1.8% (noise ±3.0%), TTFT p50 +240%`.

use serde::{Deserialize, Serialize};

/// The knee of one row of a load sweep: where throughput stopped rising while TTFT or the
/// queue kept rising, with the evidence.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RowKnee {
    /// Context size of the row, tokens.
    pub ctx: u64,
    /// Context label.
    pub ctx_label: String,
    /// The row's load axis: `conc` (closed loop) or `rate` (open loop).
    pub axis: String,
    /// The knee cell's concurrency (closed loop), or the row's in-flight cap (open loop).
    pub at_conc: Option<u32>,
    /// The knee cell's rate label (open loop), e.g. `4/s`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_rate: Option<String>,
    /// The knee and its evidence.
    pub knee: crate::stats::knee::Knee,
}

impl RowKnee {
    /// Where the knee is: `knee at conc 8 (ctx 0)`, `knee at rate 4/s (ctx 0, conc 8)`.
    pub fn place(&self) -> String {
        match (&self.at_rate, self.at_conc) {
            (Some(r), Some(c)) => format!("knee at rate {r} (ctx {}, conc {c})", self.ctx_label),
            (Some(r), None) => format!("knee at rate {r} (ctx {})", self.ctx_label),
            _ => format!("knee at conc {} (ctx {})", self.knee.at, self.ctx_label),
        }
    }

    /// The footnote: [`RowKnee::place`], then the evidence.
    pub fn footnote(&self) -> String {
        format!("{}: {}", self.place(), self.knee.evidence())
    }
}

/// Mark of a cell `--stop-at-knee` did not run (the text tables and the monitor).
pub(crate) const PAST_KNEE: &str = "»";
/// Legend line explaining [`PAST_KNEE`], shown when a matrix contains it.
pub(crate) const PAST_KNEE_LEGEND: &str =
    "» = not run: past its row's knee (--stop-at-knee); the reason is in JSON timeout_reason";

#[cfg(test)]
mod tests {
    use super::{PAST_KNEE, PAST_KNEE_LEGEND};
    use crate::report::json::SessionReport;
    use crate::report::skip::SkipKind;
    use crate::report::tests_example::{full_knee, full_report};
    use serde_json::Value;

    fn schema_errors(report: &SessionReport) -> Vec<String> {
        let schema: Value = serde_json::from_str(include_str!("../../assets/session-report.schema.json")).unwrap();
        let validator = jsonschema::draft202012::new(&schema).expect("schema compiles");
        let instance = serde_json::to_value(report).unwrap();
        validator.iter_errors(&instance).map(|e| format!("{e} at {}", e.instance_path)).collect()
    }

    #[test]
    fn knees_and_saturation_validate_and_read_back() {
        let mut report = full_report();
        let decode = report.decode.as_mut().unwrap();
        let open = full_knee();
        let mut closed = open.clone();
        (closed.axis, closed.at_rate, closed.ctx_label) = ("conc".into(), None, "0".into());
        let mut repeated = closed.clone();
        (repeated.knee.within_noise, repeated.knee.noise_interval) = (true, Some("95% CI of 3 runs each".into()));
        decode.knees = vec![open, closed, repeated];
        assert!(decode.cells[0].attempts[0].saturation.is_some(), "the example has a saturation test");
        assert_eq!(schema_errors(&report), Vec::<String>::new());
        let back: SessionReport = serde_json::from_value(serde_json::to_value(&report).unwrap()).unwrap();
        assert_eq!(back, report);
        let k = &report.decode.as_ref().unwrap().knees;
        assert_eq!(k[0].footnote(), "knee at rate inf (ctx 16k, conc 8): tok/s +0.9% (noise ±2.0%), queue 0.0→1.1");
        assert_eq!(k[1].place(), "knee at conc 8 (ctx 0)");
        assert_eq!(k[2].knee.evidence(), "tok/s +0.9% (within noise ±2.0%, 95% CI of 3 runs each), queue 0.0→1.1");
        let json = serde_json::to_value(&k[1]).unwrap();
        assert!(json["knee"].get("within_noise").is_none() && json["knee"].get("noise_interval").is_none(), "{json}");
    }

    #[test]
    fn the_text_tables_mark_the_knee_and_name_its_evidence() {
        let mut report = full_report();
        let plain = crate::report::tables::render_text(&report, true, false);
        assert!(!plain.contains("K: knee"), "no knee, no mark:\n{plain}");
        // The example's matrix is closed loop: its knee is on the conc axis.
        let knee = super::RowKnee { axis: "conc".into(), at_rate: None, ..full_knee() };
        report.decode.as_mut().unwrap().knees = vec![knee];
        let text = crate::report::tables::render_text(&report, true, false);
        let marked: Vec<&str> = text.lines().filter(|l| l.starts_with("| 16k ") && l.contains(" K |")).collect();
        assert_eq!(marked.len(), 2, "aggregate and summary matrices:\n{text}");
        assert!(marked[0].contains("564.8 (2e) (7/8)*seq! K |"), "{text}");
        let note = "K: knee at conc 8 (ctx 16k): tok/s +0.9% (noise ±2.0%), queue 0.0→1.1";
        assert!(text.contains(note), "{text}");
        // A rate knee names a column this closed-loop matrix does not have: no mark.
        report.decode.as_mut().unwrap().knees = vec![full_knee()];
        let text = crate::report::tables::render_text(&report, true, false);
        assert!(!text.contains(" K |"), "{text}");
    }

    #[test]
    fn a_cell_past_the_knee_is_not_shown_as_a_kv_misfit() {
        use crate::report::status::CellOutcome;
        let mut report = full_report();
        let cell = &mut report.decode.as_mut().unwrap().cells[1];
        (cell.status, cell.attempts) = (CellOutcome::Skipped, Vec::new());
        // A report written before `skip` was kept: the reason tells.
        cell.timeout_reason = Some("past the knee at conc 8 (ctx 16k) (--stop-at-knee)".into());
        let legend = PAST_KNEE_LEGEND.split(';').next().unwrap();
        let shows_past_knee = |report: &SessionReport| {
            let text = crate::report::tables::render_text(report, true, false);
            let marked = text.lines().any(|l| l.contains(&format!(" {PAST_KNEE} |")));
            (marked && text.contains(legend) && !text.contains("∅"), text)
        };
        let (yes, text) = shows_past_knee(&report);
        assert!(yes, "{text}");
        // A current report: the recorded kind decides, whatever the text.
        let cell = &mut report.decode.as_mut().unwrap().cells[1];
        (cell.skip, cell.timeout_reason) = (Some(SkipKind::PastKnee), Some("past the knee".into()));
        let (yes, text) = shows_past_knee(&report);
        assert!(yes, "{text}");
        report.decode.as_mut().unwrap().cells[1].skip = Some(SkipKind::KvCache);
        let (yes, text) = shows_past_knee(&report);
        assert!(!yes && text.contains("∅"), "{text}");
    }
}
