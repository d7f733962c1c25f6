//! Reading a saved session report back (for `--resume`, and any command that re-reads a
//! report): every way a file can be wrong is one line that says which.

use super::json::{SCHEMA_VERSION, SessionReport};
use std::path::Path;

/// The `tool.name` every report of ours carries.
pub(crate) const TOOL_NAME: &str = "llm-decode-bench";

/// Why a file is not a report this build can read; `Display` is one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum LoadError {
    /// The file could not be read.
    #[error("cannot read {path}: {reason}")]
    Unreadable {
        /// The file.
        path: String,
        /// The OS error.
        reason: String,
    },
    /// Not JSON at all.
    #[error("not JSON ({0})")]
    NotJson(String),
    /// JSON, but not written by this tool.
    #[error("not an llm-decode-bench session report ({0})")]
    Foreign(String),
    /// Written by this tool with another file format version.
    #[error("report schema version {found}, this build reads version {SCHEMA_VERSION}")]
    Version {
        /// The file's `schema_version`.
        found: u64,
    },
    /// Ours and of this version, but a field does not parse.
    #[error("damaged report: {0}")]
    Damaged(String),
}

/// Reads and checks the report at `path`.
pub(crate) fn load_report(path: &Path) -> Result<SessionReport, LoadError> {
    let text = std::fs::read(path)
        .map_err(|e| LoadError::Unreadable { path: path.display().to_string(), reason: e.to_string() })?;
    parse_report(&text)
}

/// Parses `bytes` as a session report: JSON first, then our tool name, then the version, then
/// every field (so a foreign file is named foreign, not "missing field").
pub(crate) fn parse_report(bytes: &[u8]) -> Result<SessionReport, LoadError> {
    let value: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| LoadError::NotJson(one_line(&e)))?;
    let Some(obj) = value.as_object() else {
        return Err(LoadError::Foreign(format!("top level is {}, not an object", kind(&value))));
    };
    match obj.get("tool").and_then(|t| t.get("name")).and_then(|n| n.as_str()) {
        Some(TOOL_NAME) => {}
        Some(other) => return Err(LoadError::Foreign(format!("written by {}", clip(other)))),
        None => return Err(LoadError::Foreign("no tool.name".into())),
    }
    match obj.get("schema_version").and_then(|v| v.as_u64()) {
        Some(v) if v == u64::from(SCHEMA_VERSION) => {}
        Some(found) => return Err(LoadError::Version { found }),
        None => return Err(LoadError::Damaged("no schema_version".into())),
    }
    serde_json::from_value(value).map_err(|e| LoadError::Damaged(one_line(&e)))
}

fn kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

fn one_line(e: &serde_json::Error) -> String {
    e.to_string().replace('\n', " ")
}

/// At most 40 characters of a foreign string, on one line.
fn clip(s: &str) -> String {
    let mut out: String = s.chars().take(40).filter(|c| !c.is_control()).collect();
    if s.chars().count() > 40 {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seed() -> SessionReport {
        crate::report::tests_schema::full_report()
    }

    #[test]
    fn a_written_report_loads_back_equal() {
        let r = seed();
        let bytes = serde_json::to_vec(&r).unwrap();
        assert_eq!(parse_report(&bytes).unwrap(), r);
    }

    #[test]
    fn each_wrong_file_is_named() {
        assert!(matches!(parse_report(b"<html>"), Err(LoadError::NotJson(_))));
        assert!(matches!(parse_report(b"[1,2]"), Err(LoadError::Foreign(m)) if m.contains("an array")));
        let vllm = br#"{"date":"20250101","backend":"vllm","completed":64}"#;
        assert!(matches!(parse_report(vllm), Err(LoadError::Foreign(m)) if m.contains("no tool.name")));
        let other = br#"{"tool":{"name":"guidellm"}}"#;
        assert!(matches!(parse_report(other), Err(LoadError::Foreign(m)) if m.contains("guidellm")));
        let mut v = serde_json::to_value(seed()).unwrap();
        v["schema_version"] = 1.into();
        let e = parse_report(&serde_json::to_vec(&v).unwrap()).unwrap_err();
        assert_eq!(e, LoadError::Version { found: 1 });
        v["schema_version"] = SCHEMA_VERSION.into();
        v["decode"] = "oops".into();
        assert!(matches!(parse_report(&serde_json::to_vec(&v).unwrap()), Err(LoadError::Damaged(_))));
    }

    #[test]
    fn errors_are_one_line() {
        let e = parse_report(b"{\n\"tool\": {\"name\": \"x\ny\"}}").unwrap_err();
        assert!(!e.to_string().contains('\n'), "{e}");
        let e = load_report(Path::new("/nonexistent/r.json")).unwrap_err();
        assert!(e.to_string().starts_with("cannot read /nonexistent/r.json"), "{e}");
    }
}
