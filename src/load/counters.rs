//! Token counters backed by the server: `POST /tokenize`, or a probe request's usage.

use super::calibrate::{CountError, TokenCounter};
use super::classify::is_context_overflow;
use super::client::{ApiClient, ClientError};
use super::request::Endpoint;

/// How prompt tokens are counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CountMethod {
    /// `POST /tokenize`.
    Tokenize,
    /// A one-token probe request's `usage.prompt_tokens`.
    Usage,
}

impl CountMethod {
    /// The report name.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Tokenize => "tokenize",
            Self::Usage => "usage",
        }
    }
}

/// Counts prompt tokens through the target server.
#[derive(Debug, Clone)]
pub(crate) struct ServerCounter {
    /// The server.
    pub client: ApiClient,
    /// Model name.
    pub model: String,
    /// The request form whose prompt is counted.
    pub endpoint: Endpoint,
    /// How.
    pub method: CountMethod,
}

fn count_error(e: ClientError) -> CountError {
    match &e {
        ClientError::Status { status, body, .. } if is_context_overflow(*status, body, None) => {
            CountError::TooLong(e.to_string())
        }
        _ => CountError::Failed(e.to_string()),
    }
}

impl TokenCounter for ServerCounter {
    async fn count(&self, text: &str) -> Result<u64, CountError> {
        let r = match self.method {
            CountMethod::Tokenize => self.client.tokenize(&self.model, self.endpoint, text).await,
            CountMethod::Usage => self.client.probe_prompt_tokens(&self.model, self.endpoint, text).await,
        };
        r.map_err(count_error)
    }
}
