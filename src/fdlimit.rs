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
        "{streams} concurrent streams need about {need} open files but the hard limit is {limit} (ulimit -Hn); raise it or lower --conc"
    ))
}

/// Raises the limit (saying so on stderr when it did) and checks it allows `streams`.
pub(crate) fn prepare(streams: u64) -> Result<(), String> {
    if let Some((from, to)) = raise_to_hard() {
        crate::err_line!("raised the open-file limit from {from} to {to} (one socket per stream)");
    }
    match limits() {
        Some((soft, _)) => check(streams, soft),
        None => Ok(()),
    }
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
    fn raising_ends_at_the_hard_limit() {
        raise_to_hard();
        let (soft, hard) = limits().expect("readable on unix");
        assert_eq!(soft, hard, "the soft limit is the hard one after raising");
        assert_eq!(raise_to_hard(), None, "nothing to raise a second time");
    }
}
