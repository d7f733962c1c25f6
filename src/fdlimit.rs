//! The open-file limit: every stream holds a socket, so a run of thousands of streams (and a
//! simulator serving them) raises its soft `RLIMIT_NOFILE` to the hard limit at start, and a
//! run asking for more streams than the hard limit allows fails before any load is sent.

/// File descriptors kept beside the streams: the log, the report, metrics polls, the terminal.
pub(crate) const SPARE_FDS: u64 = 64;

/// The open-file limits of the process, (soft, hard); `u64::MAX` stands for unlimited.
pub(crate) fn limits() -> Option<(u64, u64)> {
    let lim = rustix::process::getrlimit(rustix::process::Resource::Nofile);
    Some((lim.current.unwrap_or(u64::MAX), lim.maximum.unwrap_or(u64::MAX)))
}

/// Raises the soft open-file limit to the hard one. Returns (from, to) when it had to change,
/// None when it already was at the hard limit or could not be changed.
pub(crate) fn raise_to_hard() -> Option<(u64, u64)> {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let lim = getrlimit(Resource::Nofile);
    if lim.current == lim.maximum {
        return None;
    }
    let (from, to) = (lim.current.unwrap_or(u64::MAX), lim.maximum.unwrap_or(u64::MAX));
    let raised = Rlimit { current: lim.maximum, maximum: lim.maximum };
    setrlimit(Resource::Nofile, raised).ok().map(|()| (from, to))
}

/// Why `streams` concurrent streams cannot run under an open-file limit of `limit`, if so.
pub(crate) fn check(streams: u64, limit: u64) -> Result<(), String> {
    let need = streams + SPARE_FDS;
    if need <= limit {
        return Ok(());
    }
    Err(format!(
        "{streams} concurrent streams need about {need} open files but the hard limit is {limit} (ulimit -Hn) and this process may not raise it; raise it (as root, up to fs.nr_open) or lower --conc"
    ))
}

/// Where Linux keeps the most a hard open-file limit may be raised to (`fs.nr_open`).
const NR_OPEN: &str = "/proc/sys/fs/nr_open";

/// The hard limit to ask for when `need` files are over `hard`: `need`, when `fs.nr_open`
/// (`nr_open`) allows it; None when it does not (or `need` fits already).
pub(crate) fn hard_to_ask(need: u64, hard: u64, nr_open: Option<u64>) -> Option<u64> {
    (need > hard && nr_open.is_some_and(|n| need <= n)).then_some(need)
}

/// Raises both limits to `to` (a privileged process may raise its hard limit, up to
/// `fs.nr_open`). Returns whether it could.
fn raise_hard(to: u64) -> bool {
    use rustix::process::{Resource, Rlimit, setrlimit};
    setrlimit(Resource::Nofile, Rlimit { current: Some(to), maximum: Some(to) }).is_ok()
}

/// Raises the limit (saying so on stderr when it did) and checks it allows `streams`: the soft
/// limit goes to the hard one, and, when the streams need more and the process may (root),
/// the hard limit goes up to what they need, at most `fs.nr_open`.
pub(crate) fn prepare(streams: u64) -> Result<(), String> {
    if let Some((from, to)) = raise_to_hard() {
        crate::err_line!("raised the open-file limit from {from} to {to} (one socket per stream)");
    }
    let Some((soft, hard)) = limits() else { return Ok(()) };
    let ask = hard_to_ask(streams + SPARE_FDS, hard, crate::oslimits::sysctl(NR_OPEN));
    if let Some(to) = ask
        && raise_hard(to)
    {
        crate::err_line!(
            "raised the open-file hard limit from {hard} to {to} (one socket per stream; fs.nr_open allows it)"
        );
        return Ok(());
    }
    check(streams, soft)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_limit_below_the_streams_is_a_clear_error() {
        assert_eq!(check(1000, 1024 + SPARE_FDS), Ok(()));
        let e = check(10_000, 4096).unwrap_err();
        assert!(e.contains("10000 concurrent streams") && e.contains("4096") && e.contains("--conc"), "{e}");
    }

    #[test]
    fn the_hard_limit_is_asked_up_to_nr_open_only_when_needed() {
        assert_eq!(hard_to_ask(32_832, 20_000, Some(1_048_576)), Some(32_832));
        assert_eq!(hard_to_ask(20_000, 20_000, Some(1_048_576)), None, "fits already");
        assert_eq!(hard_to_ask(2_000_000, 20_000, Some(1_048_576)), None, "over fs.nr_open");
        assert_eq!(hard_to_ask(32_832, 20_000, None), None, "no /proc");
    }

    #[test]
    fn raising_ends_at_the_hard_limit() {
        raise_to_hard();
        let (soft, hard) = limits().expect("readable on unix");
        assert_eq!(soft, hard, "the soft limit is the hard one after raising");
        assert_eq!(raise_to_hard(), None, "nothing to raise a second time");
    }
}
