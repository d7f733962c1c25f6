//! Which replica served each request: from a response header (`target-pod`, `x-worker-url` or
//! one the user names), else from per-replica counter deltas (which give per-replica counts
//! but no per-request attribution), and how many requests the client already had in flight
//! on a replica when the gateway chose it.

use crate::load::sample::RequestSample;
use crate::net::host_port;
use std::collections::BTreeMap;

/// A replica as the experiment knows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplicaRef {
    /// Name (from `--replica NAME=URL`).
    pub name: String,
    /// Base URL (the metrics URL without `/metrics`).
    pub base: String,
}

/// The replica a response header names: by replica name, or by a URL (or `host:port`) that
/// matches a replica's base URL. Unknown values are kept as given (still a verified name).
pub(crate) fn resolve(value: &str, replicas: &[ReplicaRef]) -> String {
    let v = value.trim();
    if let Some(r) = replicas.iter().find(|r| r.name == v) {
        return r.name.clone();
    }
    let hp = host_port(v);
    replicas.iter().find(|r| host_port(&r.base) == hp).map_or_else(|| v.to_string(), |r| r.name.clone())
}

/// The replica of every sample (None where the response named none).
pub(crate) fn attribute(samples: &[RequestSample], replicas: &[ReplicaRef]) -> Vec<Option<String>> {
    samples.iter().map(|s| s.served_by.as_deref().map(|v| resolve(v, replicas))).collect()
}

/// Per replica, the most requests the client already had in flight on it when the gateway
/// chose it for another one (the send time stands for the choice).
pub(crate) fn outstanding_peaks(samples: &[RequestSample], owners: &[Option<String>]) -> BTreeMap<String, u64> {
    let mut peaks: BTreeMap<String, u64> = BTreeMap::new();
    for (i, (s, owner)) in samples.iter().zip(owners).enumerate() {
        let Some(name) = owner else { continue };
        let busy = samples
            .iter()
            .zip(owners)
            .enumerate()
            .filter(|(j, (o, on))| {
                *j != i && on.as_ref() == Some(name) && o.sent_at <= s.sent_at && o.ended_at > s.sent_at
            })
            .count() as u64;
        let peak = peaks.entry(name.clone()).or_default();
        *peak = (*peak).max(busy);
    }
    peaks
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tokio::time::Instant;

    fn replicas() -> Vec<ReplicaRef> {
        vec![
            ReplicaRef { name: "sim-a".into(), base: "http://127.0.0.1:8001".into() },
            ReplicaRef { name: "sim-b".into(), base: "http://127.0.0.1:8002".into() },
        ]
    }

    #[test]
    fn headers_resolve_by_name_or_url() {
        let r = replicas();
        assert_eq!(resolve("sim-b", &r), "sim-b");
        assert_eq!(resolve("http://127.0.0.1:8001", &r), "sim-a");
        assert_eq!(resolve("http://127.0.0.1:8002/v1", &r), "sim-b");
        assert_eq!(resolve("127.0.0.1:8002", &r), "sim-b");
        assert_eq!(resolve("pod-x", &r), "pod-x");
    }

    #[test]
    fn outstanding_counts_overlapping_requests_on_the_same_replica() {
        let t = Instant::now();
        let mk = |start: u64, end: u64| {
            let mut s = RequestSample::new(0, t + Duration::from_secs(start));
            s.ended_at = t + Duration::from_secs(end);
            s
        };
        let samples = vec![mk(0, 10), mk(1, 3), mk(2, 5), mk(4, 6)];
        let owners = vec![Some("a".into()), Some("a".into()), Some("a".into()), Some("b".into())];
        let peaks = outstanding_peaks(&samples, &owners);
        assert_eq!(peaks.get("a"), Some(&2), "the third request found two in flight");
        assert_eq!(peaks.get("b"), Some(&0));
    }
}
