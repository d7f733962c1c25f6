//! Preflight's calibration of one prompt per context size, with a deadline on every count: a
//! `/tokenize` call or a one-token probe request waits at most the first-token timeout of its
//! prompt (`--first-token-timeout`, default 120 s + 2 ms per prompt token; `/tokenize` at most
//! [`REQUEST_TIMEOUT`]), and the first count that gets no answer ends preflight with its name.

use super::facts::Prompt;
use crate::config::RunConfig;
use crate::load::calibrate::{CalibrateOptions, CountError, TokenCounter, calibrate_many};
use crate::load::client::{ApiClient, REQUEST_TIMEOUT, redact_url};
use crate::load::counters::{CountMethod, ServerCounter};
use crate::load::request::Endpoint;
use crate::load::wait::{TRANSPORT_MARGIN, Wait};
use std::time::Duration;

/// Bytes per token assumed when sizing a count's deadline before the server has counted.
const BYTES_PER_TOKEN: u64 = 4;

/// `~4095 prompt tokens`, or `a short prompt`.
fn prompt_of(tokens: u64) -> String {
    match tokens {
        0 | 1 => "a short prompt".into(),
        n => format!("~{n} prompt tokens"),
    }
}

/// The server's token counter, each count bounded and named while it waits.
pub(crate) struct BoundedCounter<'a> {
    /// The counter it bounds.
    pub counter: ServerCounter,
    cfg: &'a RunConfig,
}

impl<'a> BoundedCounter<'a> {
    /// `counter`, each count given the deadline `cfg` sets for its prompt.
    pub(crate) fn new(counter: ServerCounter, cfg: &'a RunConfig) -> Self {
        Self { counter, cfg }
    }
}

/// The wait of one count of `text` by `method`: what it is and its deadline.
fn count_wait(client: &ApiClient, endpoint: Endpoint, method: CountMethod, text: &str, cfg: &RunConfig) -> Wait {
    let tokens = text.len() as u64 / BYTES_PER_TOKEN;
    let limit = cfg.first_token_limit(tokens);
    match method {
        CountMethod::Tokenize => Wait::new(
            format!("POST {} (token count of {})", redact_url(&client.url("/tokenize")), prompt_of(tokens)),
            limit.min(REQUEST_TIMEOUT),
        ),
        CountMethod::Usage => Wait::new(
            format!("POST {} (calibration probe of {})", redact_url(&client.url(endpoint.path())), prompt_of(tokens)),
            limit,
        ),
    }
}

/// The hint after an unanswered count: which flag sets its deadline.
const DEADLINE_FLAG: &str = "--first-token-timeout sets this deadline";

impl TokenCounter for BoundedCounter<'_> {
    async fn count(&self, text: &str) -> Result<u64, CountError> {
        let c = &self.counter;
        let wait = count_wait(&c.client, c.endpoint, c.method, text, self.cfg);
        let bounded = ServerCounter { client: c.client.with_timeout(wait.limit + TRANSPORT_MARGIN), ..c.clone() };
        match wait.run(bounded.count(text)).await {
            Ok(r) => r,
            Err(e) => Err(CountError::NoAnswer(format!("{e}; {DEADLINE_FLAG}"))),
        }
    }
}

/// Picks `/tokenize` when the server answers it for a short text within its deadline, else
/// probe requests' usage (said on stderr when `/tokenize` did not answer in time).
async fn detect(client: &ApiClient, model: &str, cfg: &RunConfig) -> ServerCounter {
    detect_among(client, &[], model, cfg).await
}

/// Picks the first of `base` and then `others` whose `/tokenize` answers a short text within
/// its deadline (routers often do not proxy it, their replicas do), else probe requests' usage
/// through `base`. A `/tokenize` that does not answer in time is said on stderr.
pub(crate) async fn detect_among(
    base: &ApiClient,
    others: &[ApiClient],
    model: &str,
    cfg: &RunConfig,
) -> ServerCounter {
    let counter = |client: &ApiClient, method| ServerCounter {
        client: client.clone(),
        model: model.to_string(),
        endpoint: cfg.endpoint,
        method,
    };
    let candidates: Vec<&ApiClient> = std::iter::once(base).chain(others).collect();
    for (i, client) in candidates.iter().enumerate() {
        let wait = count_wait(client, cfg.endpoint, CountMethod::Tokenize, "probe", cfg);
        let bounded = client.with_timeout(wait.limit + TRANSPORT_MARGIN);
        match wait.run(bounded.tokenize(model, cfg.endpoint, "probe")).await {
            Ok(Ok(_)) => return counter(client, CountMethod::Tokenize),
            Ok(Err(_)) => {}
            Err(e) if i + 1 < candidates.len() => crate::err_line!("preflight: {e}; trying the next server"),
            Err(e) => {
                crate::err_line!("preflight: {e}; counting prompt tokens with one-token probe requests instead")
            }
        }
    }
    counter(base, CountMethod::Usage)
}

/// Calibrates one prompt per context size of `ctx` (within 1%), using `/tokenize` when the
/// server has it, else probe requests' usage. A count that gets no answer in time fails
/// preflight, naming what was waited for.
pub(crate) async fn calibrate_prompts(
    client: &ApiClient,
    model: &str,
    cfg: &RunConfig,
    ctx: &[u64],
) -> anyhow::Result<(Vec<Prompt>, Vec<String>)> {
    let counter = BoundedCounter::new(detect(client, model, cfg).await, cfg);
    let opts = CalibrateOptions { tolerance: 0.01, max_probes: 10, overhead_tokens: 0 };
    let results = calibrate_many(&counter, ctx, 0x5eed_0001, &opts).await;
    let mut prompts = Vec::new();
    let mut warnings = Vec::new();
    for (target, r) in ctx.iter().zip(results) {
        let c = r.map_err(|e| anyhow::anyhow!("preflight: cannot calibrate a {target}-token prompt: {e}"))?;
        let method = if c.extrapolated { "extrapolated" } else { counter.counter.method.as_str() };
        if !c.converged && !c.extrapolated {
            warnings.push(format!("prompt for ctx {target} reached {} tokens, not within 1%", c.tokens));
        }
        let (text, tokens, method) = (c.text.into(), c.tokens, method.to_string());
        prompts.push(Prompt { ctx: *target, text, tokens, method, form_tokens: None });
    }
    // What every request has around its text: the most decode's requests share in a prefix
    // cache besides their nonce (experiment::decode::prefix). Counted once a text was (the
    // counter answers); an empty text needs no form (it is all form and nonce).
    if prompts.iter().any(|p| !p.text.is_empty()) {
        let form_tokens = counter.count("").await.ok();
        prompts.iter_mut().for_each(|p| p.form_tokens = form_tokens);
    }
    Ok((prompts, warnings))
}

/// The deadline of the connection-reuse probe (a one-token streamed request): the
/// first-token timeout of a short prompt, at most [`PROBE_TIMEOUT`](crate::load::reuse_probe::PROBE_TIMEOUT).
pub(crate) fn reuse_probe_limit(cfg: &RunConfig) -> Duration {
    cfg.first_token_limit(1).min(crate::load::reuse_probe::PROBE_TIMEOUT)
}
