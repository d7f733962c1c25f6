//! Shared HTTP helpers: client construction (TLS provider, no Nagle), one-line error chains,
//! URLs reduced to `host:port` or stripped of credentials, and the check that a URL is http(s).

use std::sync::{Once, OnceLock};

static TLS_INIT: Once = Once::new();

/// Whether this system has no CA certificates to verify https:// servers with, checked once.
static NO_CA_STORE: OnceLock<bool> = OnceLock::new();

/// Installs the process-wide rustls crypto provider (ring) once; reqwest needs it for HTTPS.
pub fn init_tls() {
    TLS_INIT.call_once(|| {
        // Another library may have installed one already; either way a provider exists.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// A reqwest client builder with the TLS provider installed, Nagle disabled (streamed chunks
/// reach the client as soon as the server writes them) and redirects never followed: a 3xx
/// is an answer of its own (`redirected`), so no request, body or key goes to another origin
/// and no other server is measured in the target's name.
///
/// On a system without CA certificates (e.g. a `FROM scratch` image) a client with the
/// platform's verifier cannot even be built, which would fail http:// targets too: the builder
/// then trusts no root at all, so http:// works and an https:// handshake fails (preflight
/// says why: [`ca_store_missing`]).
pub fn client_builder() -> reqwest::ClientBuilder {
    init_tls();
    let b = reqwest::Client::builder().tcp_nodelay(true).redirect(reqwest::redirect::Policy::none());
    match ca_store_missing() {
        true => b.tls_certs_only(Vec::<reqwest::Certificate>::new()),
        false => b,
    }
}

/// True when the system has no CA certificates (a client with the platform's verifier cannot be
/// built for want of them); checked once per process.
pub fn ca_store_missing() -> bool {
    *NO_CA_STORE.get_or_init(|| {
        init_tls();
        match reqwest::Client::builder().build() {
            Ok(_) => false,
            Err(e) => describe_chain(&e).contains("No CA certificates"),
        }
    })
}

/// An error and its causes in one line, each cause once (reqwest repeats them), without the
/// URL (which may carry credentials).
pub fn describe_error(e: reqwest::Error) -> String {
    describe_chain(&e.without_url())
}

/// Any error and its causes in one line, each cause once.
pub fn describe_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut msg = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !msg.contains(&text) {
            msg = format!("{msg}: {text}");
        }
        source = cause.source();
    }
    msg
}

/// `host:port` of a URL: scheme, userinfo and path removed.
pub fn host_port(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    authority.rsplit_once('@').map_or(authority, |(_, h)| h)
}

/// A URL with any `user:password@` removed, for messages and reports.
pub fn redact_url(url: &str) -> String {
    let Some(scheme_end) = url.find("://").map(|i| i + 3) else { return url.to_string() };
    let rest = &url[scheme_end..];
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    match authority.rfind('@') {
        Some(at) => format!("{}{}", &url[..scheme_end], &rest[at + 1..]),
        None => url.to_string(),
    }
}

/// Accepts `http://` and `https://` URLs with a host.
pub fn check_url(s: &str) -> Result<(), String> {
    let ok = (s.starts_with("http://") || s.starts_with("https://"))
        && s.split_once("://").is_some_and(|(_, r)| !r.is_empty());
    if !ok {
        return Err(format!("`{s}` is not an http(s) URL"));
    }
    // A sweep's `{name}` placeholders (`http://127.0.0.1:{port}`) stand for a number here.
    let filled = fill_placeholders(s);
    match reqwest::Url::parse(&filled) {
        Ok(u) if u.host_str().is_some_and(|h| !h.is_empty()) => Ok(()),
        Ok(_) => Err(format!("`{s}` names no host")),
        Err(e) => Err(format!("`{s}` is not a valid URL ({e})")),
    }
}

/// `s` with every `{name}` replaced by `1`.
fn fill_placeholders(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else { break };
        out.push_str(&rest[..open]);
        out.push('1');
        rest = &rest[open + close + 1..];
    }
    out.push_str(rest);
    out
}

/// A replica's base URL from its metrics URL (`.../metrics` removed).
pub fn replica_base(metrics_url: &str) -> String {
    let t = metrics_url.trim_end_matches('/');
    t.strip_suffix("/metrics").unwrap_or(t).to_string()
}

/// A loopback port that refuses connections while the returned socket lives: bound and never
/// listening, so no other process can take the port meanwhile. For tests of refused targets.
#[cfg(test)]
pub(crate) fn refused_port() -> (tokio::net::TcpSocket, u16) {
    let held = tokio::net::TcpSocket::new_v4().expect("a TCP socket");
    held.bind(std::net::SocketAddr::from(([127, 0, 0, 1], 0))).expect("bind a loopback port");
    let port = held.local_addr().expect("its address").port();
    (held, port)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_must_parse_with_a_host() {
        for good in ["http://h:8001", "https://10.0.0.2/v1", "http://[::1]:8000", "http://127.0.0.1:{port}"] {
            assert_eq!(check_url(good), Ok(()), "{good}");
        }
        for bad in ["http://[::1", "http://h:99999", "http://", "ftp://h", "h:8000", "http://a b"] {
            assert!(check_url(bad).is_err(), "{bad}");
        }
        assert!(check_url("http://[::1").unwrap_err().contains("not a valid URL"));
    }

    #[test]
    fn bases_from_metrics_urls() {
        assert_eq!(replica_base("http://h:8001/metrics"), "http://h:8001");
        assert_eq!(replica_base("http://h:8001/metrics/"), "http://h:8001");
        assert_eq!(replica_base("http://h:9090/prom"), "http://h:9090/prom");
    }
}
