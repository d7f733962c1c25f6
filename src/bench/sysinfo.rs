//! What the bench instrument reads of its own process: CPU time, resident memory, and the
//! open-file limit it raises so 10,000 streams fit.

use std::time::Duration;

/// CPU time of this process so far (user + system, all threads): `CLOCK_PROCESS_CPUTIME_ID`,
/// the same sum `getrusage(RUSAGE_SELF)` reports, at nanosecond resolution.
pub fn process_cpu() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Duration::new(t.tv_sec.max(0) as u64, t.tv_nsec.clamp(0, 999_999_999) as u32)
}

/// Resident memory of this process, KiB: `VmRSS` (now) and `VmHWM` (peak) of
/// `/proc/self/status`. None where that file is missing (not Linux).
pub fn rss_kib() -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/self/status").ok()?;
    let field = |name: &str| {
        let line = text.lines().find(|l| l.starts_with(name))?;
        line[name.len()..].trim().trim_end_matches("kB").trim().parse::<u64>().ok()
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}

/// Raises the soft open-file limit (`RLIMIT_NOFILE`) to the hard limit; returns the soft limit
/// in force afterwards (None when unlimited). Every stream is a socket: the common default of
/// 1,024 would fail a 10,000-stream cell at connect.
pub fn raise_nofile() -> Option<u64> {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let lim = getrlimit(Resource::Nofile);
    if lim.current != lim.maximum {
        let raised = rustix::process::Rlimit { current: lim.maximum, maximum: lim.maximum };
        if setrlimit(Resource::Nofile, raised).is_err() {
            return lim.current;
        }
    }
    getrlimit(Resource::Nofile).current
}

/// Unix time now, nanoseconds (the clock the bench server stamps its events with).
pub fn unix_ns() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_its_own_process() {
        let a = process_cpu();
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        assert!(x != 1);
        assert!(process_cpu() > a, "CPU time moves");
        let (rss, hwm) = rss_kib().expect("/proc/self/status");
        assert!(rss > 0 && hwm >= rss);
        assert!(raise_nofile().is_none_or(|n| n >= 64));
        assert!(unix_ns() > 1_600_000_000_000_000_000);
    }
}
