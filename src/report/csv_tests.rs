//! Tests of the csv format: one row per cell or phase, or per request; RFC 4180 quoting.

use super::*;
use crate::report::tests_example::full_report;
use crate::report::tests_shapes::{interrupted, rerun, routing_only, shapes, with_burst};

/// Splits RFC 4180 text into records of fields (quoted fields may hold commas, quotes, CRLF).
fn parse(text: &str) -> Vec<Vec<String>> {
    let (mut records, mut record, mut field) = (Vec::new(), Vec::new(), String::new());
    let mut chars = text.chars().peekable();
    let mut quoted = false;
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => field.push(c),
            (false, '"') if field.is_empty() => quoted = true,
            (false, ',') => record.push(std::mem::take(&mut field)),
            (false, '\r') => {
                assert_eq!(chars.next(), Some('\n'), "CR without LF in {text:?}");
                record.push(std::mem::take(&mut field));
                records.push(std::mem::take(&mut record));
            }
            (false, c) => {
                assert!(c != '\n', "bare LF in {text:?}");
                field.push(c);
            }
        }
    }
    assert!(!quoted && field.is_empty() && record.is_empty(), "text does not end in CRLF: {text:?}");
    records
}

/// The records of `text` as maps from column name to value, checking the header is `columns`.
fn read(text: &str, columns: &[&str]) -> Vec<std::collections::BTreeMap<String, String>> {
    let records = parse(text);
    assert_eq!(records[0], columns, "header");
    let header = &records[0];
    records[1..]
        .iter()
        .map(|r| {
            assert_eq!(r.len(), header.len(), "ragged record {r:?}");
            header.iter().cloned().zip(r.iter().cloned()).collect()
        })
        .collect()
}

#[test]
fn quoting_follows_rfc_4180() {
    assert_eq!(quote("plain"), "plain");
    assert_eq!(quote("a,b"), "\"a,b\"");
    assert_eq!(quote("say \"hi\""), "\"say \"\"hi\"\"\"");
    assert_eq!(quote("two\nlines"), "\"two\nlines\"");
    assert_eq!(quote("cr\r"), "\"cr\r\"");
    assert_eq!(quote(""), "");
    let text = table(&["a", "b"], &[vec![("a", "x,\"y\"\r\nz".to_string()), ("b", "2".to_string())]]);
    assert_eq!(text, "a,b\r\n\"x,\"\"y\"\"\r\nz\",2\r\n");
    assert_eq!(parse(&text), [vec!["a", "b"], vec!["x,\"y\"\r\nz", "2"]]);
}

#[test]
fn the_full_report_has_a_row_per_cell_burst_and_phase() {
    let rows = read(&render(&full_report()), &CELL_COLUMNS);
    let kinds: Vec<(&str, &str)> = rows.iter().map(|r| (r["kind"].as_str(), r["label"].as_str())).collect();
    let want = [
        ("decode", "ctx=16k conc=4"),
        ("decode", "ctx=16k conc=8"),
        ("burst", "ctx=16k conc=4"),
        ("routing", "r1-hot90-prefix-cache"),
    ];
    assert_eq!(kinds, want);
    let measured = &rows[1];
    assert_eq!((measured["status"].as_str(), measured["attempts"].as_str()), ("measured", "2"));
    assert_eq!((measured["aggregate_tps"].as_str(), measured["per_request_tps"].as_str()), ("564.8", "70.6"));
    assert_eq!((measured["ttft_p50_ms"].as_str(), measured["itl_p50_ms"].as_str()), ("721.5", "19.5"));
    assert_eq!((measured["e2e_p90_ms"].as_str(), measured["errors"].as_str()), ("141250", "2"));
    assert_eq!((measured["capacity_limited"].as_str(), measured["capacity_limit"].as_str()), ("true", "max_num_seqs"));
    assert_eq!((measured["ctx"].as_str(), measured["conc"].as_str(), measured["route"].as_str()), ("16384", "8", ""));
    let burst = &rows[2];
    assert_eq!(
        (burst["requests"].as_str(), burst["success"].as_str(), burst["output_tps"].as_str()),
        ("4", "3", "307.2")
    );
    assert_eq!((burst["e2e_p50_ms"].as_str(), burst["itl_p50_ms"].as_str()), ("3750", "13.5"));
    let phase = &rows[3];
    assert_eq!(
        (phase["scenario"].as_str(), phase["route"].as_str(), phase["round"].as_str()),
        ("hot90", "prefix-cache", "r1")
    );
    assert_eq!((phase["good"].as_str(), phase["requests"].as_str(), phase["attempts"].as_str()), ("61", "96", "2"));
    assert_eq!((phase["ttft_p50_ms"].as_str(), phase["ttft_p95_ms"].as_str()), ("2125", "11500"));
    assert_eq!((phase["ttft_p90_ms"].as_str(), phase["tpot_p50_ms"].as_str()), ("", "62.5"));
    assert_eq!((phase["cache_hit_ratio"].as_str(), phase["output_tps"].as_str()), ("0.9375", "180.5"));
    assert_eq!(phase["ctx"], "");
}

#[test]
fn unfinished_cells_and_phases_have_rows_without_figures() {
    let rows = read(&render(&interrupted()), &CELL_COLUMNS);
    let stopped = rows.iter().find(|r| r["label"] == "ctx=16k conc=8").expect("the stopped cell");
    assert_eq!((stopped["status"].as_str(), stopped["attempts"].as_str()), ("pending", "2"));
    assert_eq!((stopped["last_attempt_status"].as_str(), stopped["aggregate_tps"].as_str()), ("stopped", ""));
    let never = rows.iter().find(|r| r["label"] == "ctx=16k conc=16").expect("the cell not run");
    assert_eq!((never["attempts"].as_str(), never["last_attempt_status"].as_str()), ("0", ""));
    let phase = rows.iter().find(|r| r["label"] == "r1-hot90-prefix-cache").expect("the stopped phase");
    assert_eq!((phase["status"].as_str(), phase["good"].as_str()), ("stopped", ""));
    let rows = read(&render(&with_burst()), &CELL_COLUMNS);
    let skipped = rows.iter().find(|r| r["kind"] == "burst" && r["conc"] == "8").expect("the skipped burst");
    assert_eq!((skipped["status"].as_str(), skipped["output_tps"].as_str()), ("skipped", ""));
}

#[test]
fn rerun_cells_show_their_last_attempt_and_count_them_all() {
    let rows = read(&render(&rerun()), &CELL_COLUMNS);
    let cell = &rows[0];
    assert_eq!((cell["attempts"].as_str(), cell["aggregate_tps"].as_str()), ("3", "600.25"));
    assert_eq!(
        (rows[1]["status"].as_str(), rows[1]["last_attempt_status"].as_str()),
        ("skipped_by_operator", "skipped_by_operator")
    );
    let phase = rows.iter().find(|r| r["kind"] == "routing").expect("the phase");
    assert_eq!((phase["attempts"].as_str(), phase["good"].as_str()), ("2", "70"));
    let routing = rows_of(&routing_only());
    assert_eq!(routing.len(), 4);
    assert!(routing.iter().all(|r| r["attempts"] == "1" && r["kind"] == "routing"));
}

fn rows_of(report: &SessionReport) -> Vec<std::collections::BTreeMap<String, String>> {
    read(&render(report), &CELL_COLUMNS)
}

#[test]
fn every_shape_parses_back_with_every_column() {
    for (name, report) in shapes() {
        let decode = report.decode.as_ref().map_or(0, |d| d.cells.len());
        let burst = report.burst.as_ref().map_or(0, |b| b.cells.len());
        let serve = report.serve.as_ref().map_or(0, |s| s.cells.len());
        let rows = rows_of(&report);
        assert!(rows.len() >= decode + burst + report.phases.len() + serve, "{name}");
        let requests = read(&render_requests(&report), &REQUEST_COLUMNS);
        let samples =
            report.decode.iter().flat_map(|d| &d.cells).flat_map(|c| &c.attempts).map(|a| a.request_samples.len());
        let bursts =
            report.burst.iter().flat_map(|b| &b.cells).flat_map(|c| &c.attempts).map(|a| a.request_samples.len());
        let serves =
            report.serve.iter().flat_map(|s| &s.cells).flat_map(|c| &c.attempts).map(|a| a.request_samples.len());
        assert_eq!(requests.len(), samples.chain(bursts).chain(serves).sum::<usize>(), "{name}");
    }
}

#[test]
fn per_request_rows_carry_their_attempt() {
    let rows = read(&render_requests(&full_report()), &REQUEST_COLUMNS);
    assert_eq!(rows.len(), 3 + 3 + 3 + 1, "three attempts of three requests, one burst request");
    let paused = &rows[3];
    assert_eq!((paused["label"].as_str(), paused["attempt"].as_str()), ("ctx=16k conc=8", "1"));
    assert_eq!((paused["attempt_status"].as_str(), paused["worker"].as_str()), ("paused", "0"));
    assert_eq!(
        (paused["ttft_ms"].as_str(), paused["e2e_ms"].as_str(), paused["outcome"].as_str()),
        ("480", "56500", "completed")
    );
    assert_eq!((paused["http_status"].as_str(), paused["served_by"].as_str()), ("200", "r0"));
    assert_eq!(rows[9]["kind"], "burst");
    assert_eq!(rows[5]["outcome"], "stalled");
}

#[test]
fn every_column_a_row_fills_is_a_column() {
    for (name, report) in shapes() {
        let mut filled: Vec<Row> = Vec::new();
        filled.extend(report.decode.iter().flat_map(|d| d.cells.iter().map(decode_row)));
        filled.extend(report.burst.iter().flat_map(|b| b.cells.iter().map(burst_row)));
        filled.extend(routing_rows(&report));
        for (col, _) in filled.iter().flatten() {
            assert!(CELL_COLUMNS.contains(col), "{name}: {col} is not a column");
        }
    }
    assert_eq!(ms(Some(0.07)), "70");
    assert_eq!((num(f64::NAN), opt(None)), (String::new(), String::new()));
}

#[test]
fn snapshot_of_the_full_report() {
    let text = format!("{}\n{}", render(&full_report()), render_requests(&full_report()));
    insta::assert_snapshot!("csv_full_report", text.replace("\r\n", "\n"));
}

#[test]
fn open_loop_cells_of_one_ctx_and_conc_are_told_apart_by_rate() {
    use crate::load::rate::Rate;
    let mut report = crate::report::tests_example::full_report();
    for (cell, rate) in report.decode.as_mut().unwrap().cells.iter_mut().zip([Rate::PerSecond(4.0), Rate::Inf]) {
        (cell.conc, cell.rate) = (8, Some(rate));
    }
    let rows = read(&render(&report), &CELL_COLUMNS);
    let decode: Vec<_> = rows.iter().filter(|r| r["kind"] == "decode").collect();
    let seen: Vec<(&str, &str)> = decode.iter().map(|r| (r["label"].as_str(), r["rate"].as_str())).collect();
    assert_eq!(seen, [("ctx=16k conc=8 rate=4", "4"), ("ctx=16k conc=8 rate=inf", "inf")]);
    let closed = read(&render(&crate::report::tests_example::full_report()), &CELL_COLUMNS);
    assert!(closed.iter().all(|r| r["rate"].is_empty()), "closed loop: no rate");
}

#[test]
fn serve_cells_have_rows_with_their_rate_and_their_requests() {
    let report = crate::report::tests_shapes::with_serve();
    let rows = read(&render(&report), &CELL_COLUMNS);
    let keys: Vec<_> = rows.iter().map(|r| (r["kind"].as_str(), r["label"].as_str(), r["rate"].as_str())).collect();
    assert_eq!(keys, [("serve", "ctx=1k conc=2 rate=inf", "inf"), ("serve", "ctx=1k conc=2 rate=4", "4")]);
    let m = &rows[0];
    assert_eq!(
        (m["status"].as_str(), m["attempts"].as_str(), m["last_attempt_status"].as_str()),
        ("measured", "2", "measured")
    );
    assert_eq!((m["requests"].as_str(), m["success"].as_str(), m["errors"].as_str()), ("2", "1", "1"));
    assert_eq!(
        (m["output_tps"].as_str(), m["duration_s"].as_str(), m["output_tokens"].as_str()),
        ("51.2", "2.5", "128")
    );
    assert_eq!((m["ttft_p50_ms"].as_str(), m["ttft_p90_ms"].as_str(), m["ttft_p99_ms"].as_str()), ("85", "", "90.5"));
    assert_eq!((m["itl_p50_ms"].as_str(), m["tpot_p99_ms"].as_str(), m["e2e_p50_ms"].as_str()), ("7", "8", "1006"));
    let skipped = &rows[1];
    assert_eq!((skipped["status"].as_str(), skipped["output_tps"].as_str()), ("skipped", ""));

    let requests = read(&render_requests(&report), &REQUEST_COLUMNS);
    assert_eq!(requests.len(), 4, "two requests in each of two attempts");
    let first = &requests[0];
    assert_eq!(
        (first["kind"].as_str(), first["label"].as_str(), first["rate"].as_str()),
        ("serve", "ctx=1k conc=2 rate=inf", "inf")
    );
    assert_eq!((first["ctx"].as_str(), first["conc"].as_str(), first["attempt"].as_str()), ("1024", "2", "1"));
    assert_eq!(requests[1]["outcome"], "server_error");
}

#[test]
fn numbers_lose_float_noise_and_keep_their_digits() {
    assert_eq!(num(0.1 + 0.2), "0.3");
    assert_eq!(num(1.3190000000000002), "1.319");
    assert_eq!(num(123456.789), "123456.789");
    assert_eq!(num(0.000012345), "0.000012345");
    assert_eq!(num(2.0), "2");
    assert_eq!(num(f64::NAN), "");
}
