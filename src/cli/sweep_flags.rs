//! The flags of the engine-config sweep (`run --server-cmd`, issue 25 part 1): the server
//! command, its parameters (`--server-param`, cartesian) or a file of parameter sets
//! (`--server-params`), the wait for a started server and the grace before SIGKILL.

use crate::config::MetricsEndpoint;
use crate::config::sweep::{ParamSet, SweepConfig, Template, Templates, cartesian, parse_param, parse_sets};
use crate::units::parse_duration;
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

/// The target of a sweep when `--base-url` is not given.
pub(crate) const DEFAULT_BASE: &str = "http://127.0.0.1:{port}";

/// `--server-cmd`, `--server-param`, `--server-params`, `--server-timeout`, `--server-grace`.
#[derive(Debug, Clone, Args)]
pub struct SweepFlags {
    /// Start the server under test for each parameter set with `sh -c CMD` (its own process
    /// group, output to a log beside the report), run the plan against it, then stop it.
    /// `{port}` is a free loopback port picked per set; `{NAME}` is a --server-param; `{{` and
    /// `}}` are literal braces; `${VAR}` is left to the shell.
    #[arg(long, value_name = "CMD")]
    pub server_cmd: Option<String>,
    /// NAME=V1,V2,...: the values of the `{NAME}` placeholder; repeat for more parameters (every
    /// combination runs, the first parameter varying slowest).
    #[arg(long, value_name = "NAME=VALUES")]
    pub server_param: Vec<String>,
    /// A file of parameter sets instead of --server-param: a JSON array of objects, or one JSON
    /// object a line (`{"max_num_seqs": 8}`).
    #[arg(long, value_name = "FILE")]
    pub server_params: Option<PathBuf>,
    /// Longest wait for a started server to answer /health and then /v1/models (a vLLM CPU
    /// engine takes minutes to start).
    #[arg(long, value_parser = parse_duration, default_value = "10m")]
    pub server_timeout: Duration,
    /// Wait after SIGTERM to the server's process group before SIGKILL.
    #[arg(long, value_parser = parse_duration, default_value = "10s")]
    pub server_grace: Duration,
}

impl SweepFlags {
    /// A sweep flag given without `--server-cmd`, by its name.
    fn stray(&self) -> Option<&'static str> {
        match (self.server_param.is_empty(), &self.server_params) {
            (false, _) => Some("--server-param"),
            (true, Some(_)) => Some("--server-params"),
            (true, None) => None,
        }
    }

    /// The names and sets of `--server-param` (cartesian) or `--server-params`.
    fn sets(&self) -> Result<(Vec<String>, Vec<ParamSet>), String> {
        if let Some(path) = &self.server_params {
            if !self.server_param.is_empty() {
                return Err("--server-params FILE lists whole sets: drop --server-param".into());
            }
            let whence = format!("--server-params {}", path.display());
            let text = std::fs::read_to_string(path).map_err(|e| format!("{whence}: {e}"))?;
            return parse_sets(&text, &whence);
        }
        let params = self.server_param.iter().map(|p| parse_param(p)).collect::<Result<Vec<_>, _>>()?;
        let mut names: Vec<String> = Vec::new();
        for (n, _) in &params {
            if names.contains(n) {
                return Err(format!("--server-param {n} is given twice: list its values once (e.g. {n}=8,16)"));
            }
            names.push(n.clone());
        }
        Ok((names, cartesian(&params)))
    }

    /// The sweep these flags ask for, checked against the target flags: None without
    /// `--server-cmd`. `base_url` is `--base-url` as given, `host_port` whether vLLM's
    /// `--host`/`--port` were given, `metrics` the `--metrics-url`s; `resume` whether
    /// `--resume` was given (a sweep cannot be continued).
    pub fn sweep(
        &self,
        base_url: Option<&str>,
        host_port: bool,
        metrics: &[MetricsEndpoint],
        resume: bool,
    ) -> Result<Option<SweepConfig>, String> {
        let Some(cmd) = &self.server_cmd else {
            if let Some(flag) = self.stray() {
                return Err(format!("{flag} gives the values of --server-cmd's placeholders: add --server-cmd"));
            }
            let templated = base_url.is_some_and(|b| Template::parse(b).has_slots())
                || metrics.iter().any(|m| Template::parse(&m.url).has_slots());
            return match templated {
                true => Err("--base-url / --metrics-url have a {placeholder}: only with --server-cmd".into()),
                false => Ok(None),
            };
        };
        if resume {
            return Err("--resume cannot continue a sweep (--server-cmd): run the sweep again".into());
        }
        if host_port {
            return Err("--server-cmd picks the port: drop --host/--port (or give --base-url with {port})".into());
        }
        let server_cmd = Template::parse(cmd);
        let given = base_url.map(Template::parse);
        // The server the tool starts listens on {port}: a fixed --base-url would measure
        // whatever else listens there (and its health check would pass at once).
        if server_cmd.names().contains(&"port") && given.as_ref().is_some_and(|b| !b.names().contains(&"port")) {
            return Err(
                "--base-url must contain {port} when --server-cmd does: the target is the server the tool starts \
                        (e.g. --base-url http://127.0.0.1:{port})"
                    .into(),
            );
        }
        let templates = Templates {
            server_cmd,
            base_url: Template::parse(base_url.unwrap_or(DEFAULT_BASE)),
            metrics: metrics.iter().map(|m| (Template::parse(&m.name), Template::parse(&m.url))).collect(),
        };
        let (names, sets) = self.sets()?;
        templates.check(names, sets, self.server_timeout, self.server_grace).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Only {
        #[command(flatten)]
        f: SweepFlags,
    }

    fn flags(args: &[&str]) -> SweepFlags {
        Only::try_parse_from([&["x"], args].concat()).expect("flags parse").f
    }

    #[test]
    fn the_sets_are_the_product_of_the_params() {
        let f = flags(&[
            "--server-cmd",
            "s --port {port} --a {a} --b {b}",
            "--server-param",
            "a=1,2",
            "--server-param",
            "b=x,y",
        ]);
        let sweep = f.sweep(None, false, &[], false).unwrap().expect("a sweep");
        assert_eq!(sweep.sets.len(), 4);
        assert_eq!(sweep.names, ["a", "b"]);
        assert_eq!(sweep.base_url.raw(), DEFAULT_BASE);
        assert_eq!(sweep.grace, Duration::from_secs(10));
        let m = MetricsEndpoint { name: "r".into(), url: "http://127.0.0.1:{port}/metrics".into() };
        assert!(flags(&["--server-cmd", "s {port}"]).sweep(Some("http://h:{port}"), false, &[m], false).is_ok());
    }

    #[test]
    fn bad_combinations_are_one_line() {
        let err = |args: &[&str], base: Option<&str>, hp: bool, resume: bool| {
            flags(args).sweep(base, hp, &[], resume).unwrap_err()
        };
        assert!(err(&["--server-param", "a=1"], None, false, false).contains("add --server-cmd"));
        assert!(err(&[], Some("http://h:{port}"), false, false).contains("only with --server-cmd"));
        assert!(err(&["--server-cmd", "s {port}"], None, false, true).contains("--resume"));
        assert!(err(&["--server-cmd", "s {port}"], None, true, false).contains("--host/--port"));
        let twice = ["--server-cmd", "s {a}", "--server-param", "a=1", "--server-param", "a=2"];
        assert!(err(&twice, None, false, false).contains("given twice"));
        let both = ["--server-cmd", "s {a}", "--server-param", "a=1", "--server-params", "f.json"];
        assert!(err(&both, None, false, false).contains("drop --server-param"));
        assert!(err(&["--server-cmd", "s {a}"], None, false, false).contains("unknown placeholder {a}"));
        assert!(flags(&[]).sweep(Some("http://h:8000"), true, &[], false).unwrap().is_none());
        let fixed = err(&["--server-cmd", "s --port {port}"], Some("http://127.0.0.1:8000"), false, false);
        assert!(fixed.contains("--base-url must contain {port}"), "{fixed}");
        let own_port =
            flags(&["--server-cmd", "s --port 9000"]).sweep(Some("http://127.0.0.1:9000"), false, &[], false);
        assert!(own_port.is_ok(), "a command with a fixed port of its own may name it: {own_port:?}");
    }
}
