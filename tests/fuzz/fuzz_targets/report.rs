//! Fuzz target `report`: the saved-report loader (`src/report/load.rs`, `parse_report`).
//!
//! Checked: no panic on any bytes; every error is one line; a report that loads writes back
//! (as `--out` does, `serde_json`) to bytes that load to an equal report, and writing that
//! one again gives the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use llm_decode_bench::report::load::parse_report;

fuzz_target!(|data: &[u8]| {
    match parse_report(data) {
        Ok(report) => {
            let bytes = serde_json::to_vec_pretty(&report).expect("a loaded report serialises");
            let back = parse_report(&bytes).unwrap_or_else(|e| panic!("written back, it does not load: {e}"));
            assert_eq!(back, report, "written back, it loads different");
            assert_eq!(serde_json::to_vec_pretty(&back).expect("serialises"), bytes, "second write differs");
        }
        Err(e) => assert!(!e.to_string().contains('\n'), "error on two lines: {e}"),
    }
});
