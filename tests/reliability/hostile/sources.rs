//! `run --source-addrs` (issue 26): the load's stream connections come from each given address
//! in turn, as the server sees them, and a bad list stops the run before any load.

use super::server::{Server, handler, normal};
use super::{Ran, run_against};
use std::collections::BTreeSet;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

/// A well-behaved server that notes the peer address of every load request.
fn noting_peers() -> (Server, Arc<Mutex<BTreeSet<IpAddr>>>) {
    let peers: Arc<Mutex<BTreeSet<IpAddr>>> = Arc::default();
    let noted = Arc::clone(&peers);
    let h = handler(move |req, sock| {
        if req.is_load()
            && let Ok(peer) = sock.peer_addr()
        {
            noted.lock().unwrap().insert(peer.ip());
        }
        normal(req, sock)
    });
    (Server::start(h), peers)
}

#[test]
fn streams_go_out_from_every_source_address() {
    let (s, peers) = noting_peers();
    let ran = run_against(&s.base, &["--source-addrs", "127.0.0.1,127.0.0.2"]);
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let seen: Vec<String> = peers.lock().unwrap().iter().map(ToString::to_string).collect();
    assert_eq!(seen, ["127.0.0.1", "127.0.0.2"], "peers of the load's streams");
    let settings = &ran.report().plan.settings;
    assert_eq!(settings.get("source-addrs").map(String::as_str), Some("127.0.0.1,127.0.0.2"));
    ran.assert_went_on();
    ran.assert_clean();
}

/// Exit 2 with one line naming the flag, and no request of any kind reached the server.
fn refused(extra: &[&str], says: &str) {
    let (s, _) = noting_peers();
    let ran: Ran = run_against(&s.base, extra);
    assert_eq!(ran.code, Some(2), "{extra:?}: {}", ran.stderr);
    let line = ran.stderr.lines().find(|l| l.contains(says));
    assert!(line.is_some(), "{extra:?}: no line says `{says}`: {}", ran.stderr);
    assert!(s.requests(|_| true).is_empty(), "{extra:?}: a request was sent");
}

#[test]
fn a_bad_source_address_list_stops_the_run_before_any_request() {
    refused(&["--source-addrs", "127.0.0.1,nonsense"], "`nonsense` is not an IP address");
    refused(&["--source-addrs", "203.0.113.7"], "cannot bind to 203.0.113.7 on this machine");
    refused(&["--source-addrs", "127.0.0.2,127.0.0.2"], "127.0.0.2 is given twice");
}
