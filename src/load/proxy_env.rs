//! Whether the environment sends an `http://` URL through a proxy, as reqwest decides it: a
//! non-empty `http_proxy`, `HTTP_PROXY`, `all_proxy` or `ALL_PROXY` (an empty one is no proxy:
//! reqwest cannot parse it), unless `NO_PROXY` / `no_proxy` lists the host.
//!
//! `NO_PROXY` entries, comma-separated: `*` (every host), an IP address, a CIDR block
//! (`10.0.0.0/8`), or a domain matching itself and its subdomains (`example.com` and
//! `.example.com` alike). One answer serves the stream path (`super::h1`), the connection-reuse
//! probe (`super::reuse_probe`), `--source-addrs` and the preflight's messages, so they agree.

use std::net::IpAddr;

/// The variables naming a proxy for `http://` URLs, in the order reqwest reads them.
const PROXY_VARS: [&str; 4] = ["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"];

/// The proxy settings of the environment, read once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProxyEnv {
    /// The first proxy variable set and non-empty, if any.
    var: Option<&'static str>,
    /// `NO_PROXY` (or `no_proxy`), split at commas, trimmed, lower-cased, empty ones dropped.
    no_proxy: Vec<String>,
}

impl ProxyEnv {
    /// The settings of this process's environment.
    pub fn from_env() -> Self {
        let read = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let var = PROXY_VARS.iter().copied().find(|v| read(v).is_some());
        let no_proxy = read("NO_PROXY").or_else(|| read("no_proxy")).unwrap_or_default();
        Self::new(var, &no_proxy)
    }

    /// Settings of a proxy variable `var` (None: none set) and a `NO_PROXY` list.
    pub fn new(var: Option<&'static str>, no_proxy: &str) -> Self {
        let no_proxy = no_proxy.split(',').map(|e| e.trim().to_ascii_lowercase()).filter(|e| !e.is_empty()).collect();
        Self { var, no_proxy }
    }

    /// The variable whose proxy an `http://` request to `url` goes through (None: it goes
    /// straight to its host). Other schemes and unparsable URLs: None.
    pub fn for_url(&self, url: &str) -> Option<&'static str> {
        let var = self.var?;
        let u = reqwest::Url::parse(url).ok().filter(|u| u.scheme() == "http")?;
        let host = u.host_str()?.trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase();
        (!self.no_proxy.iter().any(|e| excludes(e, &host))).then_some(var)
    }
}

/// Whether the `NO_PROXY` entry `entry` (lower case) covers `host` (lower case, no brackets).
fn excludes(entry: &str, host: &str) -> bool {
    if entry == "*" {
        return true;
    }
    let ip: Option<IpAddr> = host.parse().ok();
    if let Some((net, bits)) = entry.split_once('/') {
        return match (ip, net.parse::<IpAddr>(), bits.parse::<u32>()) {
            (Some(ip), Ok(net), Ok(bits)) => in_block(ip, net, bits),
            _ => false,
        };
    }
    if let Ok(addr) = entry.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>() {
        return ip == Some(addr);
    }
    let domain = entry.trim_start_matches('.');
    host == domain || host.strip_suffix(domain).is_some_and(|rest| rest.ends_with('.'))
}

/// Whether `ip` lies in the block `net/bits` (both of one family).
fn in_block(ip: IpAddr, net: IpAddr, bits: u32) -> bool {
    let (a, b, width) = match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(b)) => (u128::from(u32::from(a)), u128::from(u32::from(b)), 32),
        (IpAddr::V6(a), IpAddr::V6(b)) => (u128::from(a), u128::from(b), 128),
        _ => return false,
    };
    if bits > width {
        return false;
    }
    let shift = width - bits;
    shift >= 128 || (a >> shift) == (b >> shift)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_proxy_variable_means_no_proxy() {
        assert_eq!(ProxyEnv::new(None, "").for_url("http://10.0.0.1:8000/v1"), None);
        let env = ProxyEnv::new(Some("http_proxy"), "");
        assert_eq!(env.for_url("http://10.0.0.1:8000/v1"), Some("http_proxy"));
        assert_eq!(env.for_url("https://10.0.0.1:8000/v1"), None, "https is not this variable's");
    }

    #[test]
    fn no_proxy_entries_exclude_hosts_domains_addresses_and_blocks() {
        let env = ProxyEnv::new(Some("http_proxy"), " 127.0.0.1, .svc.local,Example.COM ,10.0.0.0/8,::1,");
        for direct in [
            "http://127.0.0.1:8091",
            "http://router.svc.local:80",
            "http://svc.local",
            "http://example.com",
            "http://api.example.com/v1",
            "http://10.200.3.4:8000",
            "http://[::1]:8000",
        ] {
            assert_eq!(env.for_url(direct), None, "{direct}");
        }
        for proxied in ["http://127.0.0.2:8091", "http://notexample.com", "http://11.0.0.1", "http://[::2]:1"] {
            assert_eq!(env.for_url(proxied), Some("http_proxy"), "{proxied}");
        }
        assert_eq!(ProxyEnv::new(Some("ALL_PROXY"), "*").for_url("http://anything:1"), None);
    }

    #[test]
    fn blocks_compare_only_their_prefix_and_family() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert!(in_block(ip("192.168.1.7"), ip("192.168.0.0"), 16));
        assert!(!in_block(ip("192.169.1.7"), ip("192.168.0.0"), 16));
        assert!(in_block(ip("1.2.3.4"), ip("0.0.0.0"), 0));
        assert!(!in_block(ip("1.2.3.4"), ip("::"), 0), "families differ");
        assert!(!in_block(ip("1.2.3.4"), ip("1.2.3.4"), 33), "a prefix longer than the family");
        assert!(in_block(ip("fd00::1"), ip("fd00::"), 8));
    }
}
