//! Fault injection: each fault kind occurs at roughly its configured rate (request faults on
//! loopback, the timing ones in process on the paused clock).

use crate::common;

use common::*;
use std::collections::HashMap;
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Outcome {
    Ok,
    Status(u16),
    Reset,
    Stall,
    Malformed,
}

fn classify(s: &Streamed) -> Outcome {
    match s.status {
        200 if s.broken => Outcome::Reset,
        200 if !s.done => Outcome::Stall,
        200 if s.malformed > 0 => Outcome::Malformed,
        200 => Outcome::Ok,
        code => Outcome::Status(code),
    }
}

#[tokio::test]
async fn request_faults_occur_at_their_rates() {
    let spec = "reset=0.12,http500=0.08,http503=0.08,http429=0.08,stall=0.12,malformed=0.12";
    let c = cluster(1, 50.0, |cfg| cfg.faults = spec.parse().unwrap()).await;
    // A fresh connection per request: a kept-alive one the server is closing after a reset
    // fault could fail the next send (hyper's IncompleteMessage), which is not what is counted.
    let http = llm_decode_bench::net::client_builder().no_proxy().pool_max_idle_per_host(0).build().unwrap();
    let url = format!("{}/v1/completions", c.info().replicas[0].url);
    let n = 300;
    let tasks: Vec<_> = (0..n)
        .map(|i| {
            let (http, url) = (http.clone(), url.clone());
            tokio::spawn(async move {
                stream(&http, &url, &[], &completion_body(&format!("f{i}"), 20), Duration::from_secs(3)).await
            })
        })
        .collect();
    let mut counts: HashMap<Outcome, usize> = HashMap::new();
    for t in tasks {
        *counts.entry(classify(&t.await.unwrap())).or_default() += 1;
    }
    let rate = |o| *counts.get(&o).unwrap_or(&0) as f64 / f64::from(n);
    // Binomial standard deviation at n=300 is under 0.02; allow about 3.5 of them.
    for (o, want) in [
        (Outcome::Reset, 0.12),
        (Outcome::Status(500), 0.08),
        (Outcome::Status(503), 0.08),
        (Outcome::Status(429), 0.08),
        (Outcome::Stall, 0.12),
        (Outcome::Malformed, 0.12),
        (Outcome::Ok, 0.40),
    ] {
        assert!((rate(o) - want).abs() < 0.07, "{o:?}: {} vs {want} ({counts:?})", rate(o));
    }
}

/// In process on the paused clock: a slow page takes exactly its delay and any other none, so
/// a busy machine cannot make a plain page look slow.
#[tokio::test(start_paused = true)]
async fn metrics_faults_occur_at_their_rates() {
    let delay = Duration::from_millis(600);
    let c = inproc_cluster(1, 50.0, |cfg| {
        cfg.faults = "metrics-fail=0.3,metrics-slow=0.2".parse().unwrap();
        cfg.metrics_slow_delay = delay;
    });
    let backend = c.backend();
    let url = c.info().replicas[0].metrics_url.clone();
    let n = 200;
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let (backend, url) = (backend.clone(), url.clone());
            tokio::spawn(async move {
                let t0 = tokio::time::Instant::now();
                let (status, _) = get_via(&*backend, &url).await;
                (status, t0.elapsed())
            })
        })
        .collect();
    let (mut failed, mut slow) = (0, 0);
    for t in tasks {
        let (status, took) = t.await.unwrap();
        assert!(took == Duration::ZERO || took == delay, "a page took {took:?}");
        if status == 500 {
            failed += 1;
        } else if took == delay {
            slow += 1;
        }
    }
    assert!((f64::from(failed) / f64::from(n) - 0.3).abs() < 0.1, "failed {failed}/{n}");
    assert!((f64::from(slow) / f64::from(n) - 0.2).abs() < 0.1, "slow {slow}/{n}");
}

/// A stream that goes silent after its first tokens fails `stalled` once the idle timeout
/// has passed, also while a much longer first-token timeout is set (as decode cells set it):
/// the soak (benches/soak.sh) saw stalled streams held until the window cut them.
#[tokio::test(start_paused = true)]
async fn a_stall_fails_after_the_idle_timeout_even_with_a_first_token_timeout() {
    use llm_decode_bench::load::live::LiveCounters;
    use llm_decode_bench::load::request::{BodyOptions, BodyTemplate, Endpoint};
    use llm_decode_bench::load::sample::{ErrorKind, RequestSample};
    use llm_decode_bench::load::stream::{StreamSpec, run_stream};
    let c = inproc_cluster(1, 1.0, |cfg| cfg.faults = "stall=1".parse().unwrap());
    let url = format!("{}{}", c.info().replicas[0].url, Endpoint::Chat.path());
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(reqwest::header::CONTENT_TYPE, "application/json".parse().unwrap());
    let idle = Duration::from_secs(2);
    let spec = StreamSpec {
        url: &url,
        headers: &headers,
        served_by: &[],
        first_token_timeout: Some(Duration::from_secs(120)),
        queued_waits: true,
        idle_timeout: idle,
        expected_chunks: 64,
    };
    let opts =
        BodyOptions { endpoint: Endpoint::Chat, model: c.info().model.clone(), max_tokens: 64, ignore_eos: true };
    let body = BodyTemplate::new(&opts, "hello there").render("");
    let (live, cancel) = (LiveCounters::default(), tokio_util::sync::CancellationToken::new());
    let s = run_stream(&*c.backend(), &spec, body, RequestSample::new(0, tokio::time::Instant::now()), &cancel, &live)
        .await;
    assert_eq!(s.error_kind(), Some(ErrorKind::Stalled), "{:?}", s.outcome);
    let quiet = s.ended_at - s.last_token_at().expect("tokens before the stall");
    assert!(quiet >= idle && quiet < idle + Duration::from_millis(500), "failed after {quiet:?} of silence");
}
