//! `run --source-addrs ADDR[,ADDR...]` (issue 26): local addresses the load's stream
//! connections bind to, in turn, so one box can hold more connections to one target than one
//! address's ephemeral ports allow (`crate::oslimits`). Checked here, before any load: an
//! address that does not parse or cannot be bound on this machine is one line and exit 2.

use clap::Args;
use std::net::{IpAddr, SocketAddr, TcpListener, ToSocketAddrs};

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
    /// The addresses, each once, every one bindable here and of a family the target has;
    /// `base_url` is the target.
    pub fn addrs(&self, base_url: &str) -> Result<Vec<IpAddr>, String> {
        let mut out: Vec<IpAddr> = Vec::with_capacity(self.source_addrs.len());
        for a in &self.source_addrs {
            if out.contains(a) {
                return Err(format!("--source-addrs: {a} is given twice"));
            }
            if a.is_unspecified() {
                return Err(format!("--source-addrs: {a} is no address of its own (the system would pick one)"));
            }
            check_bindable(*a)?;
            out.push(*a);
        }
        if !out.is_empty() {
            check_target(base_url, &out)?;
        }
        Ok(out)
    }
}

/// Whether the stream path, the one that binds source addresses, takes `base_url`, and the
/// target has an address of each source's family.
fn check_target(base_url: &str, sources: &[IpAddr]) -> Result<(), String> {
    let url = reqwest::Url::parse(base_url).map_err(|e| format!("--source-addrs: unparsable target ({e})"))?;
    if url.scheme() != "http" {
        return Err(
            "--source-addrs needs an http:// target (https streams go through reqwest, which binds one address)".into(),
        );
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("--source-addrs: the target URL carries credentials (user:password@), which only reqwest sends, from one address; give the key with --api-key instead".into());
    }
    if let Some(var) = crate::load::proxy_env::ProxyEnv::from_env().for_url(base_url) {
        return Err(format!(
            "--source-addrs: a proxy is set (${var}) and NO_PROXY does not list the target, so streams go through the proxy; unset it or list the host in NO_PROXY"
        ));
    }
    let families = target_families(&url)?;
    match sources.iter().find(|a| !families.contains(&a.is_ipv4())) {
        Some(a) => Err(format!(
            "--source-addrs: {a} is {} but the target {} has no {} address",
            family(a.is_ipv4()),
            url.host_str().unwrap_or("?"),
            family(a.is_ipv4())
        )),
        None => Ok(()),
    }
}

/// The address families (true: IPv4) the target's host has: the literal's, or what a name
/// resolves to.
fn target_families(url: &reqwest::Url) -> Result<Vec<bool>, String> {
    let host = url.host_str().ok_or("--source-addrs: no host in the target URL")?;
    if let Ok(ip) = host.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>() {
        return Ok(vec![ip.is_ipv4()]);
    }
    let port = url.port_or_known_default().unwrap_or(80);
    let addrs = (host, port).to_socket_addrs().map_err(|e| format!("--source-addrs: cannot resolve {host} ({e})"))?;
    Ok(addrs.map(|a| a.is_ipv4()).collect())
}

/// `IPv4` or `IPv6`.
fn family(v4: bool) -> &'static str {
    if v4 { "IPv4" } else { "IPv6" }
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
        let creds = flag(&["127.0.0.1"]).addrs("http://u:p@127.0.0.1:8000").unwrap_err();
        assert!(creds.starts_with("--source-addrs: the target URL carries credentials"), "{creds}");
        let any = flag(&["0.0.0.0"]).addrs("http://127.0.0.1:8000").unwrap_err();
        assert!(any.starts_with("--source-addrs: 0.0.0.0 is no address of its own"), "{any}");
    }

    #[test]
    fn a_source_of_a_family_the_target_lacks_is_refused() {
        if check_bindable("::1".parse().unwrap()).is_err() {
            return; // no IPv6 loopback on this machine: nothing to compare
        }
        let v6 = flag(&["127.0.0.1", "::1"]).addrs("http://127.0.0.1:8000").unwrap_err();
        assert_eq!(v6, "--source-addrs: ::1 is IPv6 but the target 127.0.0.1 has no IPv6 address");
        let v4 = flag(&["127.0.0.1"]).addrs("http://[::1]:8000").unwrap_err();
        assert_eq!(v4, "--source-addrs: 127.0.0.1 is IPv4 but the target [::1] has no IPv4 address");
        assert!(flag(&["::1"]).addrs("http://[::1]:8000").is_ok());
    }
}
