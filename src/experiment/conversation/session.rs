//! One conversation as a session: turn k waits the user's think time, then sends the history
//! so far (the dataset's answers, or the model's own with `--history model`) plus the next
//! user message to `/v1/chat/completions`, and waits for the whole answer before the next turn.
//! A failed turn ends the session (there is no answer to go on from); its later turns are not
//! sent. Each request's sample names its session (`worker`) and turn (`tag`).

use super::script::Script;
use crate::config::conversation::{History, ThinkTime};
use crate::load::sample::RequestSample;
use crate::load::stream::StreamSpec;
use crate::load::stream_limit::run_stream_within;
use crate::load::worker::WorkerCtx;
use bytes::Bytes;
use rand::SeedableRng;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::json;
use tokio::sync::mpsc::UnboundedSender;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// What every session of an attempt shares.
#[derive(Debug, Clone)]
pub(crate) struct SessionShape {
    /// The model asked.
    pub model: String,
    /// `max_tokens` of every turn, sent with `ignore_eos`.
    pub max_tokens: u64,
    /// The history each turn sends.
    pub history: History,
    /// The pause before each turn after the first.
    pub think: ThinkTime,
    /// The header naming the session on each request, if any.
    pub header: Option<HeaderName>,
    /// Tells this attempt's session ids from every other's (the attempt's seed).
    pub id_base: u64,
}

/// The chat body of one turn: `messages` (role, text) in order.
pub(crate) fn chat_body(model: &str, messages: &[(&str, &str)], max_tokens: u64) -> Bytes {
    let messages: Vec<_> = messages.iter().map(|(role, text)| json!({"role": role, "content": text})).collect();
    let body = json!({
        "model": model,
        "messages": messages,
        "max_tokens": max_tokens,
        "ignore_eos": true,
        "stream": true,
        "stream_options": {"include_usage": true, "continuous_usage_stats": true},
    });
    Bytes::from(body.to_string())
}

/// The headers of session `index`: the attempt's, plus the session header when asked.
fn headers(ctx: &WorkerCtx, shape: &SessionShape, index: u32) -> HeaderMap {
    let mut h = ctx.headers.clone();
    if let Some(name) = &shape.header {
        let id = format!("conv-{:x}-{index}", shape.id_base);
        h.insert(name.clone(), HeaderValue::from_str(&id).expect("hex digits and a dash are a header value"));
    }
    h
}

/// Runs conversation `index` (`script`) turn by turn until its last turn, its first failed
/// one or `cancel`; each turn's sample goes to `tx` as it ends.
pub(crate) async fn run_session(
    ctx: &WorkerCtx,
    shape: &SessionShape,
    index: u32,
    script: &Script,
    tx: &UnboundedSender<RequestSample>,
    cancel: &CancellationToken,
) {
    let headers = headers(ctx, shape, index);
    let spec = StreamSpec { headers: &headers, ..ctx.spec() };
    let mut rng = rand::rngs::StdRng::seed_from_u64(shape.id_base ^ u64::from(index).rotate_left(32));
    let mut said: Vec<(&'static str, String)> = Vec::new();
    for (k, user) in script.users.iter().enumerate() {
        if k > 0 {
            let pause = shape.think.draw(&mut rng);
            tokio::select! {
                _ = cancel.cancelled() => return,
                _ = tokio::time::sleep(pause) => {}
            }
        }
        if cancel.is_cancelled() {
            return;
        }
        said.push(("user", user.clone()));
        let messages: Vec<(&str, &str)> = said.iter().map(|(r, t)| (*r, t.as_str())).collect();
        let body = chat_body(&shape.model, &messages, shape.max_tokens);
        let mut sample = RequestSample::new(index, Instant::now());
        sample.tag = k as u32;
        if shape.history == History::Model {
            sample.text = Some(String::new());
        }
        let mut sample = run_stream_within(ctx, &spec, body, sample, cancel).await;
        let failed = !sample.completed();
        let answer = match shape.history {
            History::Model => sample.text.take().unwrap_or_default(),
            History::Dataset => script.answers.get(k).cloned().unwrap_or_default(),
        };
        if tx.send(sample).is_err() || failed {
            return;
        }
        said.push(("assistant", answer));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_turn_body_is_a_streamed_chat_request_with_its_history() {
        let b = chat_body("m\"x", &[("user", "hi"), ("assistant", "yo\n"), ("user", "more")], 7);
        let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
        assert_eq!(v["model"], "m\"x");
        assert_eq!(v["messages"].as_array().unwrap().len(), 3);
        assert_eq!(v["messages"][1]["role"], "assistant");
        assert_eq!(v["messages"][1]["content"], "yo\n");
        assert_eq!(
            (v["max_tokens"].as_u64(), v["ignore_eos"].as_bool(), v["stream"].as_bool()),
            (Some(7), Some(true), Some(true))
        );
        assert_eq!(v["stream_options"]["include_usage"], true);
    }
}
