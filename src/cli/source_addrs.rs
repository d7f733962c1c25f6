//! `run --source-addrs ADDR[,ADDR...]` (issue 26): local addresses the load's stream
//! connections bind to, in turn, so one box can hold more connections to one target than one
//! address's ephemeral ports allow (`crate::oslimits`). Checked here, before any load: an
//! address that does not parse or cannot be bound on this machine is one line and exit 2.

use clap::Args;
use std::net::{IpAddr, SocketAddr, TcpListener};

/// `--source-addrs`.
#[derive(Debug, Clone, Default, Args)]
pub struct SourceAddrsFlag {
    /// Local IP addresses the streamed requests' connections bind to, spread evenly (request
    /// i goes out from address i mod N), e.g. `127.0.0.1,127.0.0.2` against a loopback target:
    /// each address has its own ephemeral ports (net.ipv4.ip_local_port_range), so N addresses
    /// hold N times as many connections to one target. Each must be an address of this
    /// machine. Needs an `http://` target without a proxy (the stream path that binds them)
    /// [default: the system picks]
    #[arg(long, value_name = "ADDR[,ADDR...]", value_delimiter = ',', value_parser = parse_addr)]
    pub source_addrs: Vec<IpAddr>,
}

impl SourceAddrsFlag {
    /// The addresses, each once, every one bindable here; `base_url` is the target.
    pub fn addrs(&self, base_url: &str) -> Result<Vec<IpAddr>, String> {
        let mut out: Vec<IpAddr> = Vec::with_capacity(self.source_addrs.len());
        for a in &self.source_addrs {
            if out.contains(a) {
                return Err(format!("--source-addrs: {a} is given twice"));
            }
            check_bindable(*a)?;
            out.push(*a);
        }
        if !out.is_empty() && !base_url.starts_with("http://") {
            return Err(
                "--source-addrs needs an http:// target (https streams go through reqwest, which binds one address)"
                    .into(),
            );
        }
        if !out.is_empty() && crate::load::h1::proxy_in_env() {
            return Err(
                "--source-addrs: a proxy is set (http_proxy or all_proxy), so streams go through it; unset it".into()
            );
        }
        Ok(out)
    }
}

/// One address of the list.
fn parse_addr(s: &str) -> Result<IpAddr, String> {
    s.trim().parse().map_err(|_| format!("`{s}` is not an IP address (e.g. 127.0.0.2 or ::1)"))
}

/// Whether a socket can bind to `addr` here (an address of another machine cannot).
fn check_bindable(addr: IpAddr) -> Result<(), String> {
    TcpListener::bind(SocketAddr::new(addr, 0))
        .map(drop)
        .map_err(|e| format!("--source-addrs: cannot bind to {addr} on this machine ({e})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flag(list: &[&str]) -> SourceAddrsFlag {
        SourceAddrsFlag { source_addrs: list.iter().map(|s| parse_addr(s).unwrap()).collect() }
    }

    #[test]
    fn loopback_addresses_are_taken_in_order() {
        let got = flag(&["127.0.0.2", "127.0.0.1"]).addrs("http://127.0.0.1:8000").unwrap();
        assert_eq!(got, ["127.0.0.2".parse::<IpAddr>().unwrap(), "127.0.0.1".parse().unwrap()]);
        assert_eq!(flag(&[]).addrs("https://x").unwrap(), Vec::<IpAddr>::new());
    }

    #[test]
    fn bad_lists_are_one_line_naming_the_flag_or_the_address() {
        assert!(parse_addr("300.1.1.1").unwrap_err().contains("`300.1.1.1` is not an IP address"));
        assert!(parse_addr("localhost").is_err());
        let twice = flag(&["127.0.0.1", "127.0.0.1"]).addrs("http://h").unwrap_err();
        assert_eq!(twice, "--source-addrs: 127.0.0.1 is given twice");
        // An address of the documentation range: never one of this machine.
        let foreign = flag(&["203.0.113.7"]).addrs("http://h").unwrap_err();
        assert!(foreign.starts_with("--source-addrs: cannot bind to 203.0.113.7 on this machine"), "{foreign}");
        let https = flag(&["127.0.0.1"]).addrs("https://h").unwrap_err();
        assert!(https.starts_with("--source-addrs needs an http:// target"), "{https}");
        assert!(!foreign.contains('\n') && !https.contains('\n'));
    }
}
