//! Hostile metrics pages (a gzip bomb, HTML, a page with no engine series) and hostile answers
//! at preflight (a 1 GB model list, a redirect, an error body that never ends): a page is
//! named and polled less often, never a lost target; preflight ends with one clear line.

use super::server::{Request, Server, handler, head, normal, write_flood};
use super::stream::gzip_bomb;
use super::{Ran, SECRET, run_against, spawn_measured};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

fn metrics_gets(s: &Server, path: &str) -> Vec<Request> {
    s.requests(|r| r.method == "GET" && r.path == path)
}

#[test]
fn a_gzip_bomb_on_metrics_is_an_unusable_page_read_to_its_cap_and_backed_off() {
    let bomb = Arc::new(gzip_bomb(4096));
    let h = handler(move |req, mut sock| {
        let bomb = Arc::clone(&bomb);
        async move {
            if req.path != "/metrics" {
                return normal(req, sock).await;
            }
            let headers = [("content-type", "text/plain"), ("content-encoding", "gzip")];
            let _ = sock.write_all(&head("200 OK", &headers)).await;
            let _ = sock.write_all(&bomb).await;
        }
    });
    let s = Server::start(h);
    let metrics = format!("--metrics-url=r={}/metrics", s.base);
    let ran = run_against(&s.base, &[&metrics]);
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let report = ran.report();
    let why = "a page over 4 MiB (read no further)";
    let at_start =
        report.warnings.iter().any(|w| w.starts_with("metrics of r unavailable at start") && w.contains(why));
    assert!(at_start, "{:?}", report.warnings);
    let polled =
        report.warnings.iter().any(|w| w.starts_with(&format!("replica r: its metrics page is unusable ({why})")));
    assert!(polled, "{:?}", report.warnings);
    assert!(!report.warnings.iter().any(|w| w.contains("target lost")), "{:?}", report.warnings);
    let gets = metrics_gets(&s, "/metrics");
    assert_eq!(gets[0].header("accept-encoding"), Some("gzip"), "pages are fetched compressed");
    assert_backed_off(&ran, gets.len());
    ran.assert_went_on();
    ran.assert_clean();
}

/// At 100 ms a run of several seconds would poll dozens of times; backed off, a handful.
fn assert_backed_off(ran: &Ran, gets: usize) {
    let every_poll = (ran.took.as_millis() / 100) as usize;
    assert!(gets * 3 < every_poll, "{gets} page reads in {:?}", ran.took);
}

#[test]
fn an_html_page_and_one_without_engine_series_are_named_not_lost() {
    let h = handler(|req, mut sock| async move {
        let (ct, body) = match req.path.as_str() {
            "/html" => ("text/html", "<!DOCTYPE html><html><body>Sign in</body></html>".to_string()),
            "/other" => {
                ("text/plain", "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 1\n".repeat(20_000))
            }
            _ => return normal(req, sock).await,
        };
        let len = body.len().to_string();
        let _ = sock.write_all(&head("200 OK", &[("content-type", ct), ("content-length", &len)])).await;
        let _ = sock.write_all(body.as_bytes()).await;
    });
    let s = Server::start(h);
    let (html, other) = (format!("--metrics-url=a={}/html", s.base), format!("--metrics-url=b={}/other", s.base));
    let ran = run_against(&s.base, &[&html, &other]);
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let w = ran.report().warnings;
    let has = |needle: &str| w.iter().any(|x| x.contains(needle));
    assert!(
        has("replica a: its metrics page is unusable (not a metrics page (HTML; content-type text/html))"),
        "{w:?}"
    );
    assert!(has("replica b: its metrics page is unusable (no engine series (20000 samples"), "{w:?}");
    assert!(!has("target lost") && !has("metrics polls failed"), "{w:?}");
    assert_backed_off(&ran, metrics_gets(&s, "/html").len());
    assert_backed_off(&ran, metrics_gets(&s, "/other").len());
    ran.assert_went_on();
    ran.assert_clean();
}

/// `run` against `base` whose preflight must fail: exit 3 and one line (after the notice
/// that it waits, if it waited long).
fn preflight_fails(base: &str) -> (Ran, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_llm-decode-bench"));
    cmd.args(["run", "--headless", "--no-metrics", "--base-url", base]);
    let ran = spawn_measured(cmd);
    assert_eq!(ran.code, Some(3), "a preflight failure: {}", ran.stderr);
    let said = |l: &&str| !l.trim().is_empty() && !l.starts_with("preflight: waiting for");
    let lines: Vec<&str> = ran.stderr.lines().filter(said).collect();
    assert_eq!(lines.len(), 1, "one line: {}", ran.stderr);
    let line = lines[0].to_string();
    (ran, line)
}

/// A server whose `/v1/models` is `models`, everything else [`normal`].
fn models_server<F, Fut>(models: F) -> Server
where
    F: Fn(Request, TcpStream) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let models = Arc::new(models);
    Server::start(handler(move |req, sock| {
        let models = Arc::clone(&models);
        async move {
            match req.path == "/v1/models" {
                true => models(req, sock).await,
                false => normal(req, sock).await,
            }
        }
    }))
}

#[test]
fn a_one_gigabyte_model_list_fails_preflight_at_its_cap() {
    let s = models_server(|_, mut sock| async move {
        let len = (1u64 << 30).to_string();
        let _ =
            sock.write_all(&head("200 OK", &[("content-type", "application/json"), ("content-length", &len)])).await;
        let _ = sock.write_all(b"{\"data\": [{\"id\": \"").await;
        write_flood(&mut sock, b'm', 1 << 30).await;
    });
    let (ran, line) = preflight_fails(&s.base);
    let want = format!("preflight: {}/v1/models answered something unexpected: an answer over 32 MiB", s.base);
    assert_eq!(line, format!("error: {want} (read no further)"));
    ran.assert_clean();
}

#[test]
fn a_redirected_model_list_fails_preflight_and_nothing_follows_it() {
    let elsewhere = Server::start(handler(normal));
    let to = format!("{}/v1/models?key={SECRET}", elsewhere.base);
    let s = models_server(move |_, mut sock| {
        let to = to.clone();
        async move {
            let _ = sock.write_all(&head("302 Found", &[("location", &to), ("content-length", "0")])).await;
        }
    });
    let (ran, line) = preflight_fails(&s.base);
    let want = format!(
        "{}/v1/models answered HTTP 302: a redirect to {}/v1/models?key=***, not followed",
        s.base, elsewhere.base
    );
    assert!(line.ends_with(&want), "{line}");
    assert!(elsewhere.requests(|_| true).is_empty(), "nothing went to the other origin");
    ran.assert_clean();
}

#[test]
fn an_error_body_that_never_ends_is_cut_at_its_deadline() {
    let s = models_server(|req, mut sock| async move {
        let _ = sock.write_all(&head("500 Internal Server Error", &[("content-type", "text/plain")])).await;
        let auth = req.header("authorization").unwrap_or_default().to_string();
        let _ = sock.write_all(format!("upstream busy ({auth})").as_bytes()).await;
        tokio::time::sleep(Duration::from_secs(3600)).await;
    });
    let (ran, line) = preflight_fails(&s.base);
    assert!(line.ends_with("/v1/models answered HTTP 500: upstream busy (Bearer ***)"), "{line}");
    assert!(ran.took < Duration::from_secs(15), "the body was waited for {:?}", ran.took);
    ran.assert_clean();
}
