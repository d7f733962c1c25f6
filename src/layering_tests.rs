//! The layering of the top-level modules (README, "Architecture"): each uses only those above
//! it. Reads `src/`, collects every `crate::<module>` path of production code (use statements
//! and inline paths; not `#[cfg(test)]` items, test files, comments or string literals) and
//! names each edge that goes up the order, as `a -> b (file:line)`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The top-level modules by layer, lowest first: the order README's "Architecture" lists.
/// A module uses modules of earlier layers; within a layer only one way (no cycle).
const LAYERS: &[&[&str]] = &[
    &["stdio", "text_safe", "net", "units", "signal", "fdlimit", "oslimits", "version"],
    &["load"],
    &["metrics"],
    &["stats"],
    &["dataset"],
    &["report"],
    &["config"],
    &["cell"],
    &["experiment"],
    &["session"],
    &["tui"],
    &["sim"],
    &["bench"],
    &["cli", "cmd"],
];

/// One use of top-level module `to` by code of top-level module `from`.
#[derive(Debug, Clone, PartialEq)]
struct Edge {
    from: String,
    to: String,
    /// `path/under/src.rs:line`.
    at: String,
}

/// `src` with comments, string and char literals blanked to spaces; newlines are kept, so line
/// numbers stay.
fn strip(src: &str) -> String {
    let c: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let blank = |out: &mut String, s: &[char]| out.extend(s.iter().map(|&ch| if ch == '\n' { '\n' } else { ' ' }));
    let mut i = 0;
    while i < c.len() {
        let rest = &c[i..];
        let end = if rest.starts_with(&['/', '/']) {
            rest.iter().position(|&ch| ch == '\n').map_or(c.len(), |n| i + n)
        } else if rest.starts_with(&['/', '*']) {
            let (mut j, mut depth) = (i, 0);
            while j < c.len() {
                if c[j..].starts_with(&['/', '*']) {
                    (depth, j) = (depth + 1, j + 2);
                } else if c[j..].starts_with(&['*', '/']) {
                    (depth, j) = (depth - 1, j + 2);
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            j
        } else if let Some((open, hashes)) = raw_string_open(&c, i) {
            // r"..", r#".."#, br"..", cr"..": up to a quote followed by as many `#`.
            let closes = |q: usize| c[q + 1..].iter().take(hashes).filter(|&&h| h == '#').count() == hashes;
            (open..c.len()).find(|&q| c[q] == '"' && closes(q)).map_or(c.len(), |q| q + 1 + hashes)
        } else if c[i] == '"' {
            let mut j = i + 1;
            while j < c.len() && c[j] != '"' {
                j += if c[j] == '\\' { 2 } else { 1 };
            }
            j + 1
        } else if c[i] == '\'' && c.get(i + 1) == Some(&'\\') {
            c[i + 2..].iter().position(|&ch| ch == '\'').map_or(c.len(), |n| i + 3 + n)
        } else if c[i] == '\'' && c.get(i + 2) == Some(&'\'') {
            i + 3
        } else {
            out.push(c[i]);
            i += 1;
            continue;
        };
        let end = end.min(c.len());
        blank(&mut out, &c[i..end]);
        i = end;
    }
    out
}

/// When a raw string literal opens at `i` (`r`, `br` or `cr`, then `#`s and a quote): the
/// index just after its opening quote, and the number of `#`.
fn raw_string_open(c: &[char], i: usize) -> Option<(usize, usize)> {
    if i > 0 && (c[i - 1].is_alphanumeric() || c[i - 1] == '_') {
        return None;
    }
    let mut j = i;
    if matches!(c.get(j), Some('b' | 'c')) {
        j += 1;
    }
    if c.get(j) != Some(&'r') {
        return None;
    }
    let hashes = c[j + 1..].iter().take_while(|&&ch| ch == '#').count();
    j += 1 + hashes;
    (c.get(j) == Some(&'"')).then_some((j + 1, hashes))
}

/// `code` (already [`strip`]ped) with every item under `#[cfg(test)]` blanked: up to its `;`
/// or the end of its first brace block.
fn blank_cfg_test(code: &str) -> String {
    const ATTR: &str = "#[cfg(test)]";
    let mut bytes = code.as_bytes().to_vec();
    let mut from = 0;
    while let Some(at) = code[from..].find(ATTR).map(|n| from + n) {
        let (mut j, mut braces, mut nest) = (at + ATTR.len(), 0i32, 0i32);
        while j < bytes.len() {
            match bytes[j] {
                b'{' => braces += 1,
                b'}' => {
                    braces -= 1;
                    if braces == 0 {
                        j += 1;
                        break;
                    }
                }
                b'(' | b'[' => nest += 1,
                b')' | b']' => nest -= 1,
                b';' if braces == 0 && nest == 0 => {
                    j += 1;
                    break;
                }
                _ => {}
            }
            j += 1;
        }
        for b in &mut bytes[at..j.min(code.len())] {
            if *b != b'\n' {
                *b = b' ';
            }
        }
        from = j.min(code.len());
    }
    String::from_utf8(bytes).expect("whole characters were blanked")
}

/// The names right after each `crate::` in `code` (each name of a `crate::{..}` group), with
/// their 1-based lines.
fn crate_refs(code: &str) -> Vec<(String, usize)> {
    let b = code.as_bytes();
    let ident = |ch: u8| ch.is_ascii_alphanumeric() || ch == b'_';
    let name_at = |mut j: usize| {
        while j < b.len() && b[j].is_ascii_whitespace() {
            j += 1;
        }
        let start = j;
        while j < b.len() && ident(b[j]) {
            j += 1;
        }
        code[start..j].to_string()
    };
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = code[from..].find("crate").map(|n| from + n) {
        from = at + 5;
        if (at > 0 && ident(b[at - 1])) || b.get(at + 5).is_some_and(|&ch| ident(ch)) {
            continue;
        }
        let after = code[from..].trim_start();
        let Some(path) = after.strip_prefix("::") else { continue };
        let line = code[..at].matches('\n').count() + 1;
        let path_at = code.len() - path.len();
        if path.trim_start().starts_with('{') {
            let open = path_at + path.find('{').expect("a group");
            let (mut j, mut depth, mut item) = (open + 1, 1, open + 1);
            while j < b.len() && depth > 0 {
                match b[j] {
                    b'{' => depth += 1,
                    b'}' => depth -= 1,
                    b',' if depth == 1 => {
                        out.push((name_at(item), line));
                        item = j + 1;
                    }
                    _ => {}
                }
                j += 1;
            }
            out.push((name_at(item), line));
        } else {
            out.push((name_at(path_at), line));
        }
    }
    out.retain(|(name, _)| !name.is_empty() && name != "self");
    out
}

/// Test-only by name: `*_tests.rs`, `tests.rs`, `tests_*.rs`, or under a `tests/` or `fixtures/` folder.
fn is_test_file(rel: &Path) -> bool {
    let name = rel.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let in_test_dir = rel.parent().is_some_and(|p| p.iter().any(|c| c == "tests" || c == "fixtures"));
    name.ends_with("_tests.rs") || name == "tests.rs" || name.starts_with("tests_") || in_test_dir
}

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read src/").map(|e| e.expect("a dir entry").path()) {
        if entry.is_dir() {
            out.extend(rust_files(&entry));
        } else if entry.extension().is_some_and(|e| e == "rs") {
            out.push(entry);
        }
    }
    out.sort();
    out
}

/// The production code of the library under `src`: `(path under src, top-level module, code
/// stripped of comments, literals and `#[cfg(test)]` items)`.
fn production_files(src: &Path) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for path in rust_files(src) {
        let rel = path.strip_prefix(src).expect("under src/");
        let top = rel.iter().next().and_then(|c| c.to_str()).expect("a name").trim_end_matches(".rs").to_string();
        if matches!(top.as_str(), "lib" | "main" | "build") || is_test_file(rel) {
            continue;
        }
        let code = blank_cfg_test(&strip(&std::fs::read_to_string(&path).expect("read a source file")));
        if !code.contains("#![cfg(test)]") {
            out.push((rel.display().to_string(), top, code));
        }
    }
    out
}

/// Every use of one top-level module by another in the production code under `src`. A
/// `#[macro_export]` macro (`crate::err_line!`) counts as a use of the module defining it.
/// Panics on a `crate::` name that is neither a top-level module nor such a macro.
fn production_edges(src: &Path, modules: &BTreeSet<String>) -> Vec<Edge> {
    let files = production_files(src);
    let mut homes: BTreeMap<String, String> = modules.iter().map(|m| (m.clone(), m.clone())).collect();
    for (_, top, code) in &files {
        for (n, _) in code.match_indices("#[macro_export]") {
            let rest = code[n..].split_once("macro_rules!").map_or("", |(_, r)| r).trim_start();
            let name: String = rest.chars().take_while(|ch| ch.is_alphanumeric() || *ch == '_').collect();
            homes.insert(name, top.clone());
        }
    }
    let mut edges = Vec::new();
    for (rel, top, code) in &files {
        for (name, line) in crate_refs(code) {
            let at = format!("{rel}:{line}");
            let to = homes.get(&name).unwrap_or_else(|| panic!("`crate::{name}` ({at}) is no top-level module"));
            if to != top {
                edges.push(Edge { from: top.clone(), to: to.clone(), at });
            }
        }
    }
    edges
}

/// What breaks the order of `layers`: each edge to a later layer, and each edge of a cycle
/// inside one layer, as `a -> b (file:line)`.
fn violations(edges: &[Edge], layers: &[&[&str]]) -> Vec<String> {
    let layer = |m: &str| layers.iter().position(|l| l.contains(&m));
    let same: Vec<&Edge> = edges.iter().filter(|e| layer(&e.from) == layer(&e.to)).collect();
    // Whether `to` reaches `from` through edges inside their layer.
    let closes_cycle = |e: &Edge| {
        let (mut seen, mut todo) = (BTreeSet::new(), vec![e.to.as_str()]);
        while let Some(m) = todo.pop() {
            if m == e.from {
                return true;
            }
            if seen.insert(m) {
                todo.extend(same.iter().filter(|s| s.from == m).map(|s| s.to.as_str()));
            }
        }
        false
    };
    let bad = |e: &Edge| match (layer(&e.from), layer(&e.to)) {
        (Some(a), Some(b)) => b > a || (a == b && closes_cycle(e)),
        _ => true,
    };
    edges.iter().filter(|e| bad(e)).map(|e| format!("{} -> {} ({})", e.from, e.to, e.at)).collect()
}

/// The modules `lib.rs` declares outside `#[cfg(test)]`.
fn declared_modules(src: &Path) -> BTreeSet<String> {
    let lib = blank_cfg_test(&strip(&std::fs::read_to_string(src.join("lib.rs")).expect("read lib.rs")));
    let decl = |l: &str| {
        let l = l.trim();
        let l = l.strip_prefix("pub(crate) ").or_else(|| l.strip_prefix("pub ")).unwrap_or(l);
        l.strip_prefix("mod ")?.strip_suffix(';').map(str::to_string)
    };
    lib.lines().filter_map(decl).collect()
}

#[test]
fn top_level_modules_use_only_those_above_them() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let modules = declared_modules(&src);
    let listed: BTreeSet<String> = LAYERS.iter().flat_map(|l| l.iter().map(|m| m.to_string())).collect();
    assert_eq!(modules, listed, "LAYERS must list every top-level module of lib.rs once (and README's order with it)");
    let edges = production_edges(&src, &modules);
    assert!(edges.len() > 100, "the scan found only {} edges", edges.len());
    let bad = violations(&edges, LAYERS);
    assert!(
        bad.is_empty(),
        "{} use(s) against the module order (LAYERS, README \"Architecture\"):\n{}",
        bad.len(),
        bad.join("\n")
    );
}

#[test]
fn the_scan_skips_tests_comments_and_literals_and_reads_groups_and_inline_paths() {
    let src = "use crate::{config::Rate, load::{a, b}};\n\
        // crate::tui in a comment\n\
        /* crate::sim /* nested */ crate::cli */ let s = \"crate::cmd\";\n\
        let r = r#\"crate::bench \"quoted\"\"#; let c = '\"'; let l: &'static str = \"\";\n\
        #[cfg(test)]\n\
        mod tests { use crate::session; fn f() { crate::tui::x(); } }\n\
        fn f() -> Option<crate::report::X> { crate::err_line!(\"{}\", 1); None }\n\
        #[cfg(test)]\n\
        use crate::experiment;\n\
        fn g() { my_crate::metrics::x(); }\n";
    let refs = crate_refs(&blank_cfg_test(&strip(src)));
    let want = [("config", 1), ("load", 1), ("report", 7), ("err_line", 7)];
    assert_eq!(refs, want.map(|(n, l)| (n.to_string(), l)));
    assert!(is_test_file(Path::new("load/sse_tests.rs")) && is_test_file(Path::new("tui/fixtures/fleet.rs")));
    assert!(is_test_file(Path::new("metrics/tests_promql.rs")) && !is_test_file(Path::new("report/tables.rs")));
}

#[test]
fn an_edge_up_the_order_or_a_cycle_inside_a_layer_is_named() {
    let edge = |from: &str, to: &str, at: &str| Edge { from: from.into(), to: to.into(), at: at.into() };
    let layers: &[&[&str]] = &[&["net", "units"], &["load"], &["cli", "cmd"]];
    let fine =
        [edge("load", "net", "load/a.rs:3"), edge("cmd", "cli", "cmd/b.rs:1"), edge("units", "net", "units.rs:9")];
    assert!(violations(&fine, layers).is_empty());
    let bad =
        [edge("load", "cli", "load/a.rs:7"), edge("net", "units", "net.rs:2"), edge("units", "net", "units.rs:9")];
    let want = ["load -> cli (load/a.rs:7)", "net -> units (net.rs:2)", "units -> net (units.rs:9)"];
    assert_eq!(violations(&bad, layers), want);
}
