//! A system without CA certificates (a `FROM scratch` image): http:// targets still run, an
//! https:// target is refused before load with the reason. `SSL_CERT_FILE` / `SSL_CERT_DIR`
//! pointing at nothing stand in for the missing store (the platform verifier reads them).

use crate::common;
use common::{bin, cluster};

/// `run` of `base` with an empty CA store, a 1 s window at conc 1.
async fn run_without_cas(base: &str, out: &std::path::Path) -> std::process::Output {
    let empty = tempfile::tempdir().unwrap();
    let mut cmd = bin();
    cmd.env("SSL_CERT_FILE", empty.path().join("none.pem")).env("SSL_CERT_DIR", empty.path());
    cmd.args(["run", "--headless", "--base-url", base, "--ctx", "0", "--conc", "1", "--window", "1s", "--out"])
        .arg(out);
    common::output(cmd).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_runs_and_https_is_refused_with_its_reason_when_there_is_no_ca_store() {
    let c = cluster(1, 25.0, |_| {}).await;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let http = run_without_cas(&c.info().replicas[0].url, &out).await;
    assert!(http.status.success(), "{}", String::from_utf8_lossy(&http.stderr));
    assert!(out.exists());
    let https = run_without_cas("https://127.0.0.1:9", &dir.path().join("s.json")).await;
    let stderr = String::from_utf8_lossy(&https.stderr);
    assert_eq!(https.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("has no CA certificates"), "{stderr}");
}
