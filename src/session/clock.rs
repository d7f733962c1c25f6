//! This machine's clock against true time, from the kernel's NTP state (`adjtimex` with no
//! modes: a read, allowed unprivileged), for a shard's report (issue 27): cells start at the
//! same wall-clock instants on every shard only as far as their clocks agree.

use crate::report::shard::ClockReading;

/// Above this offset or error bound a shard's clock is said to be off, ms.
pub(crate) const CLOCK_WARN_MS: f64 = 1.0;

/// The kernel's "clock not synchronised" status bit (uapi linux/timex.h `STA_UNSYNC`).
const STA_UNSYNC: i32 = 0x0040;
/// The kernel's "offset in nanoseconds" status bit (`STA_NANO`); microseconds without it.
const STA_NANO: i32 = 0x2000;
/// `adjtimex`'s return value for an unsynchronised clock (`TIME_ERROR`).
const TIME_ERROR: i32 = 5;

/// The figures of one `adjtimex` read, as the kernel gives them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct NtpState {
    /// The call's return value: the clock state (`TIME_OK` 0 ... `TIME_ERROR` 5).
    pub state: i32,
    /// `status` bits.
    pub status: i32,
    /// `offset`: microseconds, nanoseconds with `STA_NANO`.
    pub offset: i64,
    /// `maxerror`, microseconds.
    pub maxerror: i64,
    /// `esterror`, microseconds.
    pub esterror: i64,
}

/// Reads the kernel's NTP state; None where the call fails (e.g. a sandbox that forbids it).
pub(crate) fn read_ntp() -> Option<NtpState> {
    // SAFETY: `timex` is plain data, valid when zeroed; `modes` 0 asks adjtimex only to fill
    // it in (nothing is adjusted), and the pointer is to a live, writable local.
    let (state, t) = unsafe {
        let mut t: libc::timex = std::mem::zeroed();
        let state = libc::adjtimex(&mut t);
        (state, t)
    };
    // `c_long` fields: 64-bit here, 32-bit on 32-bit targets, hence the casts.
    #[allow(clippy::unnecessary_cast)]
    let s = NtpState {
        state,
        status: t.status,
        offset: t.offset as i64,
        maxerror: t.maxerror as i64,
        esterror: t.esterror as i64,
    };
    (state >= 0).then_some(s)
}

/// The report's reading of `s`.
pub(crate) fn reading(s: NtpState) -> ClockReading {
    let offset_ms = if s.status & STA_NANO != 0 { s.offset as f64 / 1e6 } else { s.offset as f64 / 1e3 };
    let synced = s.status & STA_UNSYNC == 0 && s.state != TIME_ERROR;
    ClockReading {
        source: "adjtimex".into(),
        synced,
        // An unsynchronised kernel keeps no measured offset (its 0 is no reading), so none is
        // written; the error bounds still are.
        offset_ms: synced.then_some(offset_ms),
        max_error_ms: Some(s.maxerror as f64 / 1e3),
        est_error_ms: Some(s.esterror as f64 / 1e3),
    }
}

/// This machine's clock now, when the kernel tells.
pub(crate) fn now() -> Option<ClockReading> {
    read_ntp().map(reading)
}

/// What a shard's report should warn about its clock (one line), if anything: unsynchronised,
/// or an offset or estimated error above [`CLOCK_WARN_MS`]; unreadable is said too.
pub(crate) fn warning(r: Option<&ClockReading>) -> Option<String> {
    let Some(r) = r else {
        return Some("this shard's clock offset is unknown (the kernel's NTP state could not be read)".into());
    };
    if !r.synced {
        return Some(
            "this shard's clock is not synchronised (kernel NTP state): cells start at its own idea of --start-at"
                .into(),
        );
    }
    let offset = r.offset_ms.unwrap_or(0.0).abs();
    let err = r.est_error_ms.unwrap_or(0.0);
    (offset > CLOCK_WARN_MS || err > CLOCK_WARN_MS).then(|| {
        format!(
            "this shard's clock is off by {offset:.3} ms (estimated error {err:.3} ms, above {CLOCK_WARN_MS} ms): shards' windows open that far apart"
        )
    })
}

/// The warning a sharded session (`cfg.shard`) starts with, if any: without `--start-at` its
/// cells are not aligned with the other shards' (and its default session id is the settings'
/// alone); with it, this machine's clock when off or unknown.
pub(crate) fn shard_warning(cfg: &crate::config::RunConfig) -> Option<String> {
    let shard = cfg.shard?;
    if cfg.start_at.is_none() {
        return Some(format!(
            "shard {}/{} runs without --start-at: its cells start when this process reaches them, not at the same instants as the other shards', so report merge adds figures of load that may not have reached the server at once (give every shard the same --start-at)",
            shard.index, shard.count
        ));
    }
    warning(now().as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(status: i32, offset: i64, esterror: i64) -> NtpState {
        NtpState { state: 0, status, offset, maxerror: 16_000, esterror }
    }

    #[test]
    fn offsets_are_read_in_their_unit_and_unsync_is_seen() {
        let r = reading(state(0, 250, 40));
        assert_eq!((r.offset_ms, r.est_error_ms, r.max_error_ms), (Some(0.25), Some(0.04), Some(16.0)));
        assert!(r.synced);
        assert_eq!(reading(state(STA_NANO, 250_000, 0)).offset_ms, Some(0.25));
        let unsynced = reading(state(STA_UNSYNC, 0, 0));
        assert!(!unsynced.synced && unsynced.offset_ms.is_none(), "no offset is read from an unsynchronised clock");
        assert!(!reading(NtpState { state: TIME_ERROR, ..state(0, 0, 0) }).synced);
    }

    #[test]
    fn warns_over_one_ms_unsynchronised_or_unknown() {
        assert_eq!(warning(Some(&reading(state(0, 900, 900)))), None);
        assert!(warning(Some(&reading(state(0, -1_500, 10)))).unwrap().contains("off by 1.500 ms"));
        assert!(warning(Some(&reading(state(0, 10, 2_000)))).unwrap().contains("estimated error 2.000 ms"));
        assert!(warning(Some(&reading(state(STA_UNSYNC, 0, 0)))).unwrap().contains("not synchronised"));
        assert!(warning(None).unwrap().contains("unknown"));
    }

    #[test]
    fn this_machine_answers_a_read() {
        // adjtimex with no modes is a read every Linux allows; a failure here means the call
        // or the struct is wrong, not that the clock is off.
        let s = read_ntp().expect("adjtimex read");
        assert!((0..=5).contains(&s.state), "{s:?}");
        assert!(s.maxerror >= 0 && s.esterror >= 0, "{s:?}");
    }
}
