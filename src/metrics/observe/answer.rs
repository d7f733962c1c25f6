//! Prometheus HTTP API answers of the observer's instant queries (`resultType: vector`).

use std::collections::BTreeMap;

use serde_json::Value;

use crate::metrics::promql::parse_value;

/// One element of an instant vector: its labels, the evaluation time and the value.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// The series' labels after aggregation (e.g. only `cell` after `sum by (cell)`).
    pub labels: BTreeMap<String, String>,
    /// Evaluation time, seconds since the epoch.
    pub at_unix: f64,
    /// The value (`NaN` when the server says so, e.g. a quantile of empty buckets).
    pub value: f64,
}

impl Point {
    /// The value of `label`, or `""` when the point has none.
    pub fn label(&self, label: &str) -> &str {
        self.labels.get(label).map_or("", String::as_str)
    }
}

/// The points of an API answer whose `resultType` is `vector`; an error names what is wrong.
pub fn parse_vector(body: &Value) -> Result<Vec<Point>, String> {
    if body["status"] != "success" {
        let why = body["error"].as_str().unwrap_or("no `status: success`");
        return Err(format!("not a successful Prometheus answer: {why}"));
    }
    let data = &body["data"];
    if data["resultType"] != "vector" {
        return Err(format!("expected a vector result, got {}", data["resultType"]));
    }
    let result = data["result"].as_array().ok_or("answer without `data.result`")?;
    result.iter().map(point).collect()
}

fn point(s: &Value) -> Result<Point, String> {
    let labels = s["metric"].as_object().into_iter().flatten();
    let labels = labels.filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string()))).collect();
    let pair = s["value"].as_array().filter(|p| p.len() == 2).ok_or("a vector element without `value: [t, v]`")?;
    let at_unix = pair[0].as_f64().ok_or("a sample time that is not a number")?;
    let text = pair[1].as_str().ok_or("a sample value that is not a string")?;
    let value = parse_value(text).ok_or_else(|| format!("sample value `{text}` is not a number"))?;
    Ok(Point { labels, at_unix, value })
}
