//! `run --config FILE`: a TOML file holding any flag of `run`, keyed by the flag's long name
//! (`window = "10s"`, `conc = [1, 4, 16]`, `headless = true`). Its settings are turned into
//! flags placed before the command line's, and a flag given on the command line wins; an
//! unknown key is an error naming it. Everything is then parsed by clap as if typed, so a value
//! from the file is checked exactly as the same flag would be.

use clap::{ArgAction, Command};
use std::collections::BTreeSet;
use std::ffi::OsString;

/// The `run` arguments the file may not set.
const NOT_IN_FILE: [&str; 3] = ["config", "help", "version"];

/// `argv` with the settings of `run --config FILE` spliced in; unchanged without `--config`.
pub fn expand(cli: &Command, argv: Vec<OsString>) -> Result<Vec<OsString>, String> {
    let Some(run_at) = argv.iter().skip(1).position(|a| a == "run").map(|i| i + 1) else { return Ok(argv) };
    let Some(run) = cli.find_subcommand("run") else { return Ok(argv) };
    let user: Vec<String> = argv[run_at + 1..].iter().map(|a| a.to_string_lossy().into_owned()).collect();
    let Some(path) = flag_value(&user, "--config") else { return Ok(argv) };
    let text = std::fs::read_to_string(&path).map_err(|e| format!("--config {path}: {e}"))?;
    let from_file = flags_from_toml(run, &text, &given(run, &user)).map_err(|e| format!("--config {path}: {e}"))?;
    let mut out = argv[..=run_at].to_vec();
    out.extend(from_file.into_iter().map(OsString::from));
    out.extend(argv[run_at + 1..].iter().cloned());
    Ok(out)
}

/// The value of `flag` (`--config`, `--resume`) among the `run` arguments.
pub(super) fn flag_value(args: &[String], flag: &str) -> Option<String> {
    let mut it = args.iter();
    let with_eq = format!("{flag}=");
    while let Some(a) = it.next() {
        if a == "--" {
            return None;
        }
        if let Some(v) = a.strip_prefix(&with_eq) {
            return Some(v.to_string());
        }
        if a == flag {
            return it.next().cloned();
        }
    }
    None
}

/// The ids of the `run` arguments given on the command line (by long name or alias).
pub(super) fn given(run: &Command, args: &[String]) -> BTreeSet<String> {
    let longs = args.iter().take_while(|a| *a != "--").filter_map(|a| a.strip_prefix("--"));
    let names: Vec<&str> = longs.map(|l| l.split('=').next().unwrap_or(l)).collect();
    let known = run.get_arguments().filter(|arg| {
        let mut all = arg.get_long().into_iter().chain(arg.get_all_aliases().unwrap_or_default());
        all.any(|n| names.contains(&n))
    });
    known.map(|arg| arg.get_id().to_string()).collect()
}

/// The flags a config file's `text` stands for, leaving out those in `given`.
pub fn flags_from_toml(run: &Command, text: &str, given: &BTreeSet<String>) -> Result<Vec<String>, String> {
    let table: toml::Table = text.parse().map_err(|e: toml::de::Error| one_line(&e.to_string()))?;
    let mut out = Vec::new();
    for (key, value) in &table {
        let arg = run
            .get_arguments()
            .find(|a| a.get_long() == Some(key.as_str()) && !NOT_IN_FILE.contains(&key.as_str()))
            .ok_or_else(|| format!("unknown key `{key}` (not a flag of `run`; see `config --print-default`)"))?;
        if given.contains(arg.get_id().as_str()) {
            continue;
        }
        let flag = format!("--{key}");
        match (arg.get_action(), value) {
            (ArgAction::SetTrue, toml::Value::Boolean(true)) => out.push(flag),
            (ArgAction::SetTrue, toml::Value::Boolean(false)) => {}
            (ArgAction::SetTrue, _) => return Err(format!("`{key}` is a switch: true or false")),
            (_, toml::Value::Array(items)) => {
                for item in items {
                    out.extend([flag.clone(), scalar(key, item)?]);
                }
            }
            (_, v) => out.extend([flag, scalar(key, v)?]),
        }
    }
    Ok(out)
}

fn scalar(key: &str, v: &toml::Value) -> Result<String, String> {
    match v {
        toml::Value::String(s) => Ok(s.clone()),
        toml::Value::Integer(i) => Ok(i.to_string()),
        toml::Value::Float(f) => Ok(f.to_string()),
        toml::Value::Boolean(b) => Ok(b.to_string()),
        _ => Err(format!("`{key}` takes a string, a number or a list of them")),
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A commented config holding every flag of `run` with its default (`config --print-default`);
/// flags without a default are commented out.
pub fn print_default(run: &Command) -> String {
    let mut out = String::from(
        "# llm-decode-bench run --config FILE: any flag of `run`, by its long name.\n\
         # Flags on the command line win over this file. Lists may be \"a,b\" or [\"a\", \"b\"].\n",
    );
    for arg in run.get_arguments() {
        let Some(long) = arg.get_long().filter(|l| !NOT_IN_FILE.contains(l)) else { continue };
        out.push('\n');
        let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
        for line in textwrap(&help, 96) {
            out.push_str(&format!("# {line}\n"));
        }
        let defaults: Vec<String> = arg.get_default_values().iter().map(|v| v.to_string_lossy().into_owned()).collect();
        out.push_str(&match (arg.get_action(), defaults.first()) {
            (ArgAction::SetTrue, _) => format!("{long} = false\n"),
            (_, Some(_)) => format!("{long} = {}\n", toml_string(&defaults.join(","))),
            (_, None) => format!("# {long} = \"\"\n"),
        });
    }
    out
}

fn toml_string(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// Splits `s` at spaces into lines of at most `width` characters (longer words stay whole).
fn textwrap(s: &str, width: usize) -> Vec<String> {
    let mut lines = vec![String::new()];
    for word in s.split_whitespace() {
        let last = lines.last_mut().expect("one line");
        if !last.is_empty() && last.chars().count() + 1 + word.chars().count() > width {
            lines.push(word.to_string());
        } else {
            if !last.is_empty() {
                last.push(' ');
            }
            last.push_str(word);
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command as Sub};
    use clap::{CommandFactory, Parser};

    fn parse(file: &str, args: &[&str]) -> Result<crate::config::RunConfig, String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(&path, file).unwrap();
        let mut argv: Vec<OsString> = ["llm-decode-bench", "run", "--config"].map(OsString::from).to_vec();
        argv.push(path.clone().into());
        argv.extend(args.iter().map(OsString::from));
        let argv = expand(&Cli::command(), argv)?;
        let cli = Cli::try_parse_from(argv).map_err(|e| e.to_string())?;
        let Some(Sub::Run(run)) = cli.command else { panic!("a run") };
        run.to_config()
    }

    #[test]
    fn the_file_sets_flags_and_the_command_line_wins() {
        let file = "base-url = \"http://127.0.0.1:9\"\nwindow = \"10s\"\nconc = [1, 4]\nheadless = true\n\
                    ctx = \"0,4k\"\nrun-burst = false\nrps = 3.5\n";
        let c = parse(file, &[]).unwrap();
        assert_eq!((c.window.as_secs(), c.conc.clone(), c.ctx.clone()), (10, vec![1, 4], vec![0, 4096]));
        assert!(!c.decode.run_burst && c.routing.rps == 3.5);
        let c = parse(file, &["--window", "20s", "--max-concurrency", "8"]).unwrap();
        assert_eq!((c.window.as_secs(), c.conc), (20, vec![8]), "flags and their aliases win");
        let c = parse(file, &["--window=5s"]).unwrap();
        assert_eq!(c.window.as_secs(), 5);
    }

    #[test]
    fn bad_files_are_named_errors() {
        let e = parse("base-url = \"http://127.0.0.1:9\"\nwindw = \"10s\"\n", &[]).unwrap_err();
        assert!(e.contains("unknown key `windw`") && e.starts_with("--config "), "{e}");
        let e = parse("headless = \"yes\"\n", &["--base-url", "http://127.0.0.1:9"]).unwrap_err();
        assert!(e.contains("`headless` is a switch"), "{e}");
        let e = parse("window = \n", &[]).unwrap_err();
        assert!(!e.contains('\n'), "one line: {e}");
        let e = parse("config = \"x.toml\"\n", &[]).unwrap_err();
        assert!(e.contains("unknown key `config`"), "{e}");
        let e = parse("base-url = \"http://127.0.0.1:9\"\nwindow = \"0s\"\n", &[]).unwrap_err();
        assert!(e.contains("--window"), "values are checked as flags are: {e}");
    }

    #[test]
    fn the_printed_default_config_changes_nothing() {
        let cli = Cli::command();
        let text = print_default(cli.find_subcommand("run").unwrap());
        let from_file = parse(&text, &["--base-url", "http://127.0.0.1:9"]).unwrap();
        let plain = crate::cli::run::tests_support::config();
        assert_eq!(from_file.settings(), plain.settings());
        // Each session draws its own seed when none is given.
        let (mut a, b) = (from_file.routing.clone(), plain.routing.clone());
        a.seed = b.seed;
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
        assert!(text.contains("\nwindow = \"30s\"\n") && text.contains("\n# base-url = \"\"\n"), "{text}");
        assert!(text.lines().all(|l| l.len() <= 110), "wrapped");
    }

    #[test]
    fn without_config_argv_is_untouched() {
        let argv: Vec<OsString> = ["x", "run", "--base-url", "http://h"].map(OsString::from).to_vec();
        assert_eq!(expand(&Cli::command(), argv.clone()).unwrap(), argv);
        let argv: Vec<OsString> = ["x", "sim", "--config", "y"].map(OsString::from).to_vec();
        assert_eq!(expand(&Cli::command(), argv.clone()).unwrap(), argv);
    }
}
