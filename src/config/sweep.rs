//! The engine-config sweep (`run --server-cmd`, issue 25 part 1): command templates with
//! `{NAME}` placeholders, the parameter sets they are expanded with (the cartesian product of
//! every `--server-param`, or the sets of a `--server-params` file), and the checks that run
//! before any server starts.
//!
//! A placeholder is `{NAME}` with NAME an identifier (`[A-Za-z_][A-Za-z0-9_]*`) not preceded by
//! `$`: `${HOME}` and `{"a": 1}` stay as written for the shell; `{{` and `}}` are literal braces.
//! `{port}` is the free loopback port the tool picks for each set. Values are substituted as
//! written (not quoted): the shell sees them.

use std::collections::BTreeMap;
use std::time::Duration;

/// The placeholder the tool fills with a free loopback port per set.
pub const PORT: &str = "port";

/// One piece of a template: text as written, or a placeholder.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    Slot(String),
}

/// A string with `{NAME}` placeholders, parsed once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    raw: String,
    pieces: Vec<Piece>,
}

fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The identifier of a placeholder opening at `rest` (just after `{`) and its length with the
/// closing brace; None when `rest` does not start one.
fn slot_at(rest: &str) -> Option<(&str, usize)> {
    let end = rest.find(|c: char| !is_ident(c))?;
    let name = &rest[..end];
    let starts = name.chars().next().is_some_and(is_ident_start);
    (starts && rest[end..].starts_with('}')).then_some((name, end + 1))
}

impl Template {
    /// Parses `raw`.
    pub fn parse(raw: &str) -> Template {
        let mut pieces = Vec::new();
        let mut text = String::new();
        let mut rest = raw;
        while let Some(c) = rest.chars().next() {
            let after = &rest[c.len_utf8()..];
            if (c == '{' && after.starts_with('{')) || (c == '}' && after.starts_with('}')) {
                text.push(c);
                rest = &after[1..];
                continue;
            }
            if c == '{'
                && !text.ends_with('$')
                && let Some((name, len)) = slot_at(after)
            {
                pieces.push(Piece::Text(std::mem::take(&mut text)));
                pieces.push(Piece::Slot(name.to_string()));
                rest = &after[len..];
                continue;
            }
            text.push(c);
            rest = after;
        }
        pieces.push(Piece::Text(text));
        pieces.retain(|p| *p != Piece::Text(String::new()));
        Template { raw: raw.to_string(), pieces }
    }

    /// The template as given.
    pub fn raw(&self) -> &str {
        &self.raw
    }

    /// The placeholder names it uses, in order of first use.
    pub fn names(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for p in &self.pieces {
            if let Piece::Slot(n) = p
                && !out.contains(&n.as_str())
            {
                out.push(n);
            }
        }
        out
    }

    /// True when it has a placeholder.
    pub fn has_slots(&self) -> bool {
        self.pieces.iter().any(|p| matches!(p, Piece::Slot(_)))
    }

    /// The template with every placeholder replaced by its value in `values`; a name missing
    /// there is kept as `{NAME}` (the checks refuse such a template before any expansion).
    pub fn expand(&self, values: &BTreeMap<String, String>) -> String {
        self.pieces
            .iter()
            .map(|p| match p {
                Piece::Text(t) => t.clone(),
                Piece::Slot(n) => values.get(n).cloned().unwrap_or_else(|| format!("{{{n}}}")),
            })
            .collect()
    }
}

/// One parameter set: a value per parameter name.
pub type ParamSet = BTreeMap<String, String>;

/// A checked parameter name: an identifier other than `port`.
pub fn check_name(name: &str, whence: &str) -> Result<(), String> {
    let ok = name.chars().next().is_some_and(is_ident_start) && name.chars().all(is_ident);
    match (ok, name == PORT) {
        (false, _) => Err(format!("{whence}: `{name}` is not a parameter name (letters, digits and _)")),
        (true, true) => Err(format!("{whence}: {{port}} is the port the tool picks for each set, not a parameter")),
        (true, false) => Ok(()),
    }
}

/// Parses one `--server-param NAME=V1,V2,...` into its name and values.
pub fn parse_param(arg: &str) -> Result<(String, Vec<String>), String> {
    let Some((name, values)) = arg.split_once('=') else {
        return Err(format!("--server-param `{arg}`: write NAME=VALUE[,VALUE...], e.g. max_num_seqs=8,16"));
    };
    let name = name.trim();
    check_name(name, "--server-param")?;
    let values: Vec<String> = values.split(',').map(|v| v.trim().to_string()).collect();
    if values.iter().any(String::is_empty) {
        return Err(format!("--server-param {name}: an empty value (write e.g. {name}=8,16)"));
    }
    Ok((name.to_string(), values))
}

/// Every combination of the values of `params`, the first parameter varying slowest.
pub fn cartesian(params: &[(String, Vec<String>)]) -> Vec<ParamSet> {
    let mut sets = vec![ParamSet::new()];
    for (name, values) in params {
        sets = sets
            .into_iter()
            .flat_map(|set| {
                values.iter().map(move |v| {
                    let mut next = set.clone();
                    next.insert(name.clone(), v.clone());
                    next
                })
            })
            .collect();
    }
    sets
}

/// A checked sweep: the templates, the parameter names in order, and the sets.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepConfig {
    /// The command that starts the server (`--server-cmd`), run with `sh -c`.
    pub server_cmd: Template,
    /// The target (`--base-url`, default `http://127.0.0.1:{port}`).
    pub base_url: Template,
    /// The replicas' metrics pages (`--metrics-url`), as templates.
    pub metrics: Vec<(Template, Template)>,
    /// Parameter names in the order given.
    pub names: Vec<String>,
    /// The sets, in run order.
    pub sets: Vec<ParamSet>,
    /// Longest wait for a started server to answer `/health` and `/v1/models`.
    pub ready_timeout: Duration,
    /// Wait after SIGTERM before SIGKILL.
    pub grace: Duration,
}

/// The templates of a sweep, before its sets are known.
#[derive(Debug, Clone)]
pub struct Templates {
    /// `--server-cmd`.
    pub server_cmd: Template,
    /// `--base-url`.
    pub base_url: Template,
    /// `--metrics-url` as (name, url).
    pub metrics: Vec<(Template, Template)>,
}

impl Templates {
    /// Every placeholder name of the templates, with the flag that uses it.
    fn used(&self) -> Vec<(&str, &'static str)> {
        let mut out: Vec<(&str, &'static str)> = Vec::new();
        out.extend(self.server_cmd.names().into_iter().map(|n| (n, "--server-cmd")));
        out.extend(self.base_url.names().into_iter().map(|n| (n, "--base-url")));
        for (name, url) in &self.metrics {
            out.extend(name.names().into_iter().chain(url.names()).map(|n| (n, "--metrics-url")));
        }
        out
    }

    /// Checks the templates against the parameter `names` and builds the sweep: every
    /// placeholder is `{port}` or a parameter, every parameter is used, and there is a set.
    pub fn check(
        self,
        names: Vec<String>,
        sets: Vec<ParamSet>,
        ready: Duration,
        grace: Duration,
    ) -> Result<SweepConfig, String> {
        if self.server_cmd.raw().trim().is_empty() {
            return Err("--server-cmd is empty".into());
        }
        let used = self.used();
        if let Some((n, flag)) = used.iter().find(|(n, _)| *n != PORT && !names.iter().any(|k| k == n)) {
            return Err(format!(
                "{flag}: unknown placeholder {{{n}}} (give --server-param {n}=VALUES, or write {{{{{n}}}}} for literal braces)"
            ));
        }
        if let Some(n) = names.iter().find(|k| !used.iter().any(|(u, _)| u == k)) {
            return Err(format!(
                "--server-param {n}: no {{{n}}} placeholder in --server-cmd, --base-url or --metrics-url uses it"
            ));
        }
        if sets.is_empty() {
            return Err("the sweep has no parameter set".into());
        }
        if ready.is_zero() {
            return Err("--server-timeout must be longer than 0".into());
        }
        Ok(SweepConfig {
            server_cmd: self.server_cmd,
            base_url: self.base_url,
            metrics: self.metrics,
            names,
            sets,
            ready_timeout: ready,
            grace,
        })
    }
}

impl SweepConfig {
    /// The values of set `i` with `port`: what its templates are expanded with.
    pub fn values(&self, i: usize, port: u16) -> ParamSet {
        let mut v = self.sets[i].clone();
        v.insert(PORT.into(), port.to_string());
        v
    }

    /// `max_num_seqs=16, block_size=32`: set `i` as people read it, in parameter order.
    pub fn describe(&self, i: usize) -> String {
        describe(&self.names, &self.sets[i])
    }
}

pub use crate::report::sweep::describe;

/// The parameter sets of a `--server-params` file: a JSON array of objects, or one JSON object
/// a line (blank lines and lines starting with `#` skipped); values are strings, numbers or
/// booleans. Returns the names (in order of first appearance; alphabetical within one object)
/// and the sets; `whence` names the
/// file in errors.
pub fn parse_sets(text: &str, whence: &str) -> Result<(Vec<String>, Vec<ParamSet>), String> {
    let objects: Vec<serde_json::Value> = match text.trim_start().starts_with('[') {
        true => serde_json::from_str(text).map_err(|e| format!("{whence}: not a JSON array of objects ({e})"))?,
        false => text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
            .map(|(i, l)| {
                serde_json::from_str(l).map_err(|e| format!("{whence} line {}: not a JSON object ({e})", i + 1))
            })
            .collect::<Result<_, _>>()?,
    };
    let mut names: Vec<String> = Vec::new();
    let mut sets = Vec::new();
    for (i, o) in objects.iter().enumerate() {
        let at = format!("{whence}: set {}", i + 1);
        let map = o.as_object().ok_or_else(|| format!("{at} is not a JSON object"))?;
        let mut set = ParamSet::new();
        for (k, v) in map {
            check_name(k, &at)?;
            let value = match v {
                serde_json::Value::String(s) => s.trim().to_string(),
                serde_json::Value::Number(n) => n.to_string(),
                serde_json::Value::Bool(b) => b.to_string(),
                _ => return Err(format!("{at}: {k} must be a string, number or boolean")),
            };
            if value.is_empty() {
                return Err(format!("{at}: {k} is empty"));
            }
            if !names.contains(k) {
                names.push(k.clone());
            }
            set.insert(k.clone(), value);
        }
        sets.push(set);
    }
    if let Some((i, n)) =
        sets.iter().enumerate().find_map(|(i, s)| names.iter().find(|n| !s.contains_key(*n)).map(|n| (i, n)))
    {
        return Err(format!("{whence}: set {} has no {n} (every set names every parameter)", i + 1));
    }
    Ok((names, sets))
}

#[cfg(test)]
#[path = "sweep_tests.rs"]
mod tests;
