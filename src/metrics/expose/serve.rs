//! The listener of `run --metrics-listen ADDR`: bound before any load (a bad or taken address is
//! a usage error), then served on its own task until the process exits. `GET /metrics` renders
//! the page on the request's task; any other path is 404.

use super::Exposition;
use super::text::{CONTENT_TYPE, render};
use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use std::net::SocketAddr;
use std::sync::Arc;

/// `--metrics-listen`'s value: `IP:PORT` (port 0: the system picks one).
pub fn parse_listen(s: &str) -> Result<SocketAddr, String> {
    s.trim().parse().map_err(|_| format!("`{s}` is not IP:PORT (e.g. 0.0.0.0:9464, or 127.0.0.1:0 for any free port)"))
}

/// Binds `addr` now, so a taken or foreign address fails before any load.
pub fn bind(addr: SocketAddr) -> Result<std::net::TcpListener, String> {
    let l =
        std::net::TcpListener::bind(addr).map_err(|e| format!("--metrics-listen {addr}: cannot listen there ({e})"))?;
    l.set_nonblocking(true).map_err(|e| format!("--metrics-listen {addr}: {e}"))?;
    Ok(l)
}

async fn metrics(State(expo): State<Arc<Exposition>>) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, CONTENT_TYPE)], render(&expo))
}

async fn not_found() -> impl IntoResponse {
    (StatusCode::NOT_FOUND, "not found: this listener serves GET /metrics\n")
}

/// Serves `expo` on `listener` (bound by [`bind`]) from a task of the current runtime, until
/// the runtime ends; returns the bound address.
pub fn spawn(listener: std::net::TcpListener, expo: Arc<Exposition>) -> std::io::Result<SocketAddr> {
    let listener = tokio::net::TcpListener::from_std(listener)?;
    let addr = listener.local_addr()?;
    let app = Router::new().route("/metrics", get(metrics)).fallback(not_found).with_state(expo);
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::warn!("--metrics-listen {addr}: the listener stopped: {e}");
        }
    });
    Ok(addr)
}
