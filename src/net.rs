//! Shared HTTP client construction (TLS provider set-up, sane defaults).

use std::sync::Once;

static TLS_INIT: Once = Once::new();

/// Installs the process-wide rustls crypto provider (ring) once; reqwest needs it for HTTPS.
pub fn init_tls() {
    TLS_INIT.call_once(|| {
        // Another library may have installed one already; either way a provider exists.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// A reqwest client builder with the TLS provider installed and Nagle disabled, so streamed
/// chunks reach the client as soon as the server writes them.
pub fn client_builder() -> reqwest::ClientBuilder {
    init_tls();
    reqwest::Client::builder().tcp_nodelay(true)
}
