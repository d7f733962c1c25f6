//! Minimal parser for OpenAI-compatible streaming chunks: token usage, text size, finish, errors.
//!
//! Only the fields the load generator needs are declared; everything else is skipped.
//! Text is measured without being copied, and short strings borrow from the input.
//! Fields the generator merely peeks at (finish reason, error code) accept any JSON
//! type, so an unusual server does not turn a usable chunk into a parse error.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// What one streamed chunk tells the load generator.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChunkInfo {
    /// `usage.completion_tokens`, in tokens (cumulative when the server streams usage).
    pub completion_tokens: Option<u64>,
    /// `usage.prompt_tokens`, in tokens.
    pub prompt_tokens: Option<u64>,
    /// `usage.prompt_tokens_details.cached_tokens`: prompt tokens served from the prefix cache.
    pub cached_tokens: Option<u64>,
    /// Visible text in this chunk, in bytes of UTF-8: `delta.content` plus reasoning for
    /// chat, `text` for completions, summed over choices.
    pub content_bytes: usize,
    /// The chunk carried at least one choice (false for the final usage-only chunk).
    pub has_choices: bool,
    /// First non-null `finish_reason` among the choices.
    pub finish_reason: Option<FinishReason>,
    /// The chunk reports an error instead of (or besides) output.
    pub error: Option<StreamError>,
}

/// Why a choice stopped generating.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinishReason {
    /// Natural end: EOS token or a stop sequence.
    Stop,
    /// `max_tokens` or the context length was reached.
    Length,
    /// The server aborted the request.
    Abort,
    /// Anything else (`tool_calls`, `content_filter`, ...).
    Other,
}

impl FinishReason {
    /// Maps an OpenAI `finish_reason` string.
    pub fn from_name(name: &str) -> Self {
        match name {
            "stop" | "eos" => Self::Stop,
            "length" => Self::Length,
            "abort" => Self::Abort,
            _ => Self::Other,
        }
    }

    /// Lower-case name, as used in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stop => "stop",
            Self::Length => "length",
            Self::Abort => "abort",
            Self::Other => "other",
        }
    }
}

/// An error reported inside the stream.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StreamError {
    /// Human-readable message (empty when the server sent none).
    pub message: String,
    /// HTTP-like status code, when the server sent a numeric one (number or string).
    pub code: Option<u16>,
    /// Error class, e.g. `BadRequestError` (the JSON `type` field).
    pub kind: Option<String>,
}

/// A chunk that could not be parsed.
#[derive(Debug, thiserror::Error)]
pub enum ChunkError {
    /// Not JSON, or JSON of the wrong shape for a chunk.
    #[error("malformed stream chunk: {0}")]
    Json(#[from] serde_json::Error),
}

/// Extracts usage, text size, finish reason and error from one SSE `data` payload.
///
/// Handles chat (`chat.completion.chunk`) and legacy completions (`text_completion`),
/// `"usage": null`, the usage-only final chunk with `"choices": []`, and errors both
/// nested (`{"error": {...}}`) and flat (`{"object": "error", "message": ...}`).
///
/// The common shapes take a serde-free fast path (`chunk_fast.rs`); the rest, and anything it
/// is unsure of, the full serde parser.
pub fn parse_chunk(data: &[u8]) -> Result<ChunkInfo, ChunkError> {
    match fast::parse(data) {
        Some(info) => Ok(info),
        None => parse_chunk_full(data),
    }
}

/// The full parser alone (what the fast path must agree with).
fn parse_chunk_full(data: &[u8]) -> Result<ChunkInfo, ChunkError> {
    let raw: RawChunk<'_> = serde_json::from_slice(data)?;
    Ok(raw.into_info())
}

#[path = "chunk_fast.rs"]
mod fast;

#[path = "chunk_template.rs"]
mod template;
pub use template::ChunkReader;

#[derive(Deserialize)]
struct RawChunk<'a> {
    choices: Option<Choices>,
    usage: Option<Usage>,
    #[serde(borrow)]
    error: Option<ErrorField<'a>>,
    #[serde(borrow)]
    object: Option<Scalar<'a>>,
    #[serde(borrow)]
    message: Option<Scalar<'a>>,
    #[serde(borrow, rename = "type")]
    kind: Option<Scalar<'a>>,
    #[serde(borrow)]
    code: Option<Scalar<'a>>,
}

impl RawChunk<'_> {
    fn into_info(self) -> ChunkInfo {
        let choices = self.choices.unwrap_or_default();
        let usage = self.usage.unwrap_or_default();
        let flat_error = self.object.as_ref().and_then(Scalar::as_str) == Some("error");
        let error = match self.error {
            Some(ErrorField::Object(e)) => Some(stream_error(e.message, e.kind, e.code)),
            Some(ErrorField::Message(message)) => {
                Some(StreamError { message: message.into_owned(), ..StreamError::default() })
            }
            None if flat_error => Some(stream_error(self.message, self.kind, self.code)),
            None => None,
        };
        ChunkInfo {
            completion_tokens: usage.completion_tokens,
            prompt_tokens: usage.prompt_tokens,
            cached_tokens: usage.prompt_tokens_details.and_then(|d| d.cached_tokens),
            content_bytes: choices.content_bytes,
            has_choices: choices.count > 0,
            finish_reason: choices.finish_reason,
            error,
        }
    }
}

fn stream_error(message: Option<Scalar<'_>>, kind: Option<Scalar<'_>>, code: Option<Scalar<'_>>) -> StreamError {
    let text = |s: Option<Scalar<'_>>| s.and_then(Scalar::into_string);
    StreamError {
        code: code.as_ref().and_then(Scalar::as_status),
        message: text(message).unwrap_or_default(),
        kind: text(kind),
    }
}

#[derive(Deserialize, Default)]
struct Usage {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    prompt_tokens_details: Option<PromptTokensDetails>,
}

#[derive(Deserialize)]
struct PromptTokensDetails {
    cached_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct RawChoice<'a> {
    delta: Option<Delta>,
    text: Option<TextLen>,
    #[serde(borrow)]
    finish_reason: Option<Scalar<'a>>,
}

#[derive(Deserialize)]
struct Delta {
    content: Option<TextLen>,
    reasoning_content: Option<TextLen>,
    /// Newer vLLM name for `reasoning_content`; servers in transition may send both.
    reasoning: Option<TextLen>,
}

impl Delta {
    fn visible_bytes(&self) -> usize {
        let len = |t: &Option<TextLen>| t.as_ref().map_or(0, |t| t.0);
        len(&self.content) + len(&self.reasoning_content).max(len(&self.reasoning))
    }
}

/// The `choices` array folded into totals while it is read, without storing it.
#[derive(Default)]
struct Choices {
    count: usize,
    content_bytes: usize,
    finish_reason: Option<FinishReason>,
}

impl<'de> Deserialize<'de> for Choices {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_seq(ChoicesVisitor)
    }
}

struct ChoicesVisitor;

impl<'de> Visitor<'de> for ChoicesVisitor {
    type Value = Choices;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of choices")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Choices, A::Error> {
        let mut acc = Choices::default();
        while let Some(choice) = seq.next_element::<RawChoice<'de>>()? {
            acc.count += 1;
            let delta = choice.delta.as_ref().map_or(0, Delta::visible_bytes);
            let text = choice.text.map_or(0, |t| t.0);
            acc.content_bytes = acc.content_bytes.saturating_add(delta + text);
            if acc.finish_reason.is_none() {
                let name = choice.finish_reason.as_ref().and_then(Scalar::as_str);
                acc.finish_reason = name.map(FinishReason::from_name);
            }
        }
        Ok(acc)
    }
}

/// Byte length of a JSON string, measured without keeping a copy; other values count 0.
struct TextLen(usize);

impl<'de> Deserialize<'de> for TextLen {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let scalar = deserializer.deserialize_any(ScalarVisitor { keep_text: false })?;
        Ok(TextLen(match scalar {
            Scalar::Len(n) => n,
            _ => 0,
        }))
    }
}

/// A JSON value reduced to what the parser looks at; arrays and objects are skipped.
enum Scalar<'a> {
    Str(Cow<'a, str>),
    /// Length in bytes of a string whose text was not kept.
    Len(usize),
    Unsigned(u64),
    Signed(i64),
    Float(f64),
    Other,
}

impl Scalar<'_> {
    fn as_str(&self) -> Option<&str> {
        match self {
            Scalar::Str(s) => Some(s),
            _ => None,
        }
    }

    fn into_string(self) -> Option<String> {
        match self {
            Scalar::Str(s) => Some(s.into_owned()),
            _ => None,
        }
    }

    /// Interprets the value as an HTTP-like status code.
    fn as_status(&self) -> Option<u16> {
        match self {
            Scalar::Str(s) => s.trim().parse().ok(),
            Scalar::Unsigned(n) => u16::try_from(*n).ok(),
            Scalar::Signed(n) => u16::try_from(*n).ok(),
            Scalar::Float(f) if f.fract() == 0.0 && (0.0..=65535.0).contains(f) => Some(*f as u16),
            _ => None,
        }
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Scalar<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ScalarVisitor { keep_text: true })
    }
}

struct ScalarVisitor {
    /// Keep string contents; otherwise only their length is recorded.
    keep_text: bool,
}

impl<'de> Visitor<'de> for ScalarVisitor {
    type Value = Scalar<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Scalar<'de>, E> {
        Ok(if self.keep_text { Scalar::Str(Cow::Borrowed(v)) } else { Scalar::Len(v.len()) })
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Scalar<'de>, E> {
        Ok(if self.keep_text { Scalar::Str(Cow::Owned(v.to_owned())) } else { Scalar::Len(v.len()) })
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Scalar<'de>, E> {
        Ok(Scalar::Unsigned(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Scalar<'de>, E> {
        Ok(Scalar::Signed(v))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Scalar<'de>, E> {
        Ok(Scalar::Float(v))
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Scalar<'de>, E> {
        Ok(Scalar::Other)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Scalar<'de>, E> {
        Ok(Scalar::Other)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Scalar<'de>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Scalar::Other)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Scalar<'de>, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Scalar::Other)
    }
}

/// The `error` member: an object (OpenAI style) or a bare message string.
/// Any other JSON type makes the chunk malformed.
enum ErrorField<'a> {
    Object(ErrorObject<'a>),
    Message(Cow<'a, str>),
}

#[derive(Deserialize)]
struct ErrorObject<'a> {
    #[serde(borrow)]
    message: Option<Scalar<'a>>,
    #[serde(borrow, rename = "type")]
    kind: Option<Scalar<'a>>,
    #[serde(borrow)]
    code: Option<Scalar<'a>>,
}

impl<'de: 'a, 'a> Deserialize<'de> for ErrorField<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ErrorFieldVisitor)
    }
}

struct ErrorFieldVisitor;

impl<'de> Visitor<'de> for ErrorFieldVisitor {
    type Value = ErrorField<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an error object or message")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<ErrorField<'de>, A::Error> {
        let object = ErrorObject::deserialize(de::value::MapAccessDeserializer::new(map))?;
        Ok(ErrorField::Object(object))
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<ErrorField<'de>, E> {
        Ok(ErrorField::Message(Cow::Borrowed(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<ErrorField<'de>, E> {
        Ok(ErrorField::Message(Cow::Owned(v.to_owned())))
    }
}

#[cfg(test)]
#[path = "chunk_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "chunk_fast_tests.rs"]
mod fast_tests;
