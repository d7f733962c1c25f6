//! The single box's limits on concurrent streams besides open files (`crate::fdlimit`): the
//! ephemeral port range, which caps the connections from one source address to one target, and
//! the SYN backlog, which a target on this machine needs when thousands of streams connect at
//! once. Sysctls are system-wide: the tool never changes them; its messages name them.

use std::net::IpAddr;

/// Where Linux keeps the ephemeral port range (`net.ipv4.ip_local_port_range`).
const PORT_RANGE: &str = "/proc/sys/net/ipv4/ip_local_port_range";

/// Ports of a range written `FIRST LAST` (as the sysctl prints it), None when unreadable.
pub(crate) fn ports_in(text: &str) -> Option<u64> {
    let mut it = text.split_whitespace().map(str::parse::<u64>);
    let (first, last) = (it.next()?.ok()?, it.next()?.ok()?);
    (last >= first).then(|| last - first + 1)
}

/// Streams each source address carries when `streams` are spread over `sources` addresses
/// (0: the system picks one address).
pub(crate) fn per_source(streams: u64, sources: usize) -> u64 {
    streams.div_ceil(sources.max(1) as u64)
}

/// Why `streams` connections to one target do not fit `ports` ephemeral ports per source
/// address over `sources` addresses, if so. Each connection from one address to one target
/// takes a port of its own.
pub(crate) fn check_ports(streams: u64, sources: usize, ports: u64) -> Result<(), String> {
    let per = per_source(streams, sources);
    if per <= ports {
        return Ok(());
    }
    let need = streams.div_ceil(ports.max(1));
    let spread = match sources {
        0 => format!("{streams} local ports of one source address"),
        n => format!("{per} local ports of each of {n} --source-addrs"),
    };
    Err(format!(
        "{streams} concurrent streams to one target need {spread}, but one address has {ports} ephemeral ports \
         (net.ipv4.ip_local_port_range); give at least {need} addresses with --source-addrs (e.g. 127.0.0.1,127.0.0.2 \
         for a loopback target) or widen the range"
    ))
}

/// Checks the port range of this machine against `streams` over `sources` (a range it cannot
/// read passes: not Linux, or no /proc).
pub(crate) fn check(streams: u64, sources: &[IpAddr]) -> Result<(), String> {
    match std::fs::read_to_string(PORT_RANGE).ok().as_deref().and_then(ports_in) {
        Some(ports) => check_ports(streams, sources.len(), ports),
        None => Ok(()),
    }
}

/// A sysctl's number, None when unreadable.
pub(crate) fn sysctl(path: &str) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_port_range_reads_as_its_count() {
        assert_eq!(ports_in("32768\t60999\n"), Some(28_232));
        assert_eq!(ports_in("1024 1024"), Some(1));
        assert_eq!(ports_in("60999 32768"), None);
        assert_eq!(ports_in("x 2"), None);
        assert_eq!(ports_in("7"), None);
    }

    #[test]
    fn streams_spread_evenly_rounding_up() {
        assert_eq!(per_source(32_768, 0), 32_768);
        assert_eq!(per_source(32_768, 2), 16_384);
        assert_eq!(per_source(32_769, 2), 16_385);
        assert_eq!(per_source(5, 3), 2);
    }

    #[test]
    fn streams_over_one_address_s_ports_need_more_addresses() {
        assert_eq!(check_ports(28_232, 0, 28_232), Ok(()));
        let e = check_ports(28_233, 0, 28_232).unwrap_err();
        assert!(e.contains("28233 concurrent streams") && e.contains("28233 local ports of one source address"), "{e}");
        assert!(e.contains("at least 2 addresses with --source-addrs") && e.contains("ip_local_port_range"), "{e}");
        assert_eq!(check_ports(32_768, 2, 28_232), Ok(()));
        let e = check_ports(60_000, 2, 28_232).unwrap_err();
        assert!(
            e.contains("30000 local ports of each of 2 --source-addrs") && e.contains("at least 3 addresses"),
            "{e}"
        );
        assert!(!e.contains('\n'));
    }
}
