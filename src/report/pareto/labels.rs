//! Source labels of report files: each file's stem, told apart by its folders when two stems
//! are the same (reports carry no session id; `sessions/<timestamp>.json`, the default name,
//! is already one).

use std::path::{Component, Path};

/// One label per path: the file stem (`a` for `runs/a.json`); where stems clash, as many
/// parent folders as tell the paths apart (`x/session`, `y/session`); a path given twice gets
/// its occurrence after the first (`session (2)`).
pub fn file_labels(paths: &[&Path]) -> Vec<String> {
    let parts: Vec<Vec<String>> = paths.iter().map(|p| components(p)).collect();
    let suffix = |p: &[String], d: usize| p[p.len().saturating_sub(d)..].join("/");
    let bare: Vec<String> = (0..parts.len())
        .map(|i| {
            let clash = |d: usize| (0..parts.len()).any(|j| j != i && suffix(&parts[j], d) == suffix(&parts[i], d));
            let mut d = 1;
            while d < parts[i].len() && clash(d) {
                d += 1;
            }
            suffix(&parts[i], d)
        })
        .collect();
    (0..bare.len())
        .map(|i| match bare[..i].iter().filter(|l| **l == bare[i]).count() {
            0 => bare[i].clone(),
            seen => format!("{} ({})", bare[i], seen + 1),
        })
        .collect()
}

/// The folders of `path` and its file stem last (`..` kept, `.` dropped, a root as `""`, so
/// that joined with `/` it reads as the path did).
fn components(path: &Path) -> Vec<String> {
    let mut out: Vec<String> = path
        .parent()
        .into_iter()
        .flat_map(Path::components)
        .filter_map(|c| match c {
            Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
            Component::ParentDir => Some("..".into()),
            Component::RootDir => Some(String::new()),
            Component::Prefix(p) => Some(p.as_os_str().to_string_lossy().into_owned()),
            Component::CurDir => None,
        })
        .collect();
    let stem = path
        .file_stem()
        .or(path.file_name())
        .map_or_else(|| path.display().to_string(), |s| s.to_string_lossy().into_owned());
    out.push(stem);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(paths: &[&str]) -> Vec<String> {
        let paths: Vec<&Path> = paths.iter().map(Path::new).collect();
        file_labels(&paths)
    }

    #[test]
    fn stems_unless_they_clash() {
        assert_eq!(labels(&["runs/a.json", "b.json"]), ["a", "b"]);
        assert_eq!(labels(&["x/session.json", "y/session.json", "other.json"]), ["x/session", "y/session", "other"]);
        assert_eq!(labels(&["/r/x/s.json", "/q/x/s.json"]), ["r/x/s", "q/x/s"]);
        assert_eq!(labels(&["s.json", "x/s.json"]), ["s", "x/s"]);
        assert_eq!(labels(&["./s.json", "../s.json"]), ["s", "../s"]);
    }

    #[test]
    fn the_same_file_twice_gets_its_occurrence() {
        assert_eq!(labels(&["a.json", "a.json", "a.json"]), ["a", "a (2)", "a (3)"]);
        assert_eq!(labels(&["/t/a.json", "/t/a.json"]), ["/t/a", "/t/a (2)"]);
        assert_eq!(labels(&[]), Vec::<String>::new());
    }
}
