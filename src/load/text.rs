//! The answer text of a streamed chunk, for the requests that keep it (`RequestSample::text`):
//! a chat chunk's `delta.content` or a completions chunk's `text`, of every choice. Reasoning
//! text is not part of the answer a client sends back, so it is left out.

use serde::Deserialize;
use std::borrow::Cow;

#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(borrow, default)]
    choices: Vec<Choice<'a>>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(borrow, default)]
    delta: Option<Delta<'a>>,
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(borrow, default)]
    content: Option<Cow<'a, str>>,
}

/// Appends the answer text the event `data` carries to `out`; data that is not a chunk adds
/// nothing (the token accounting judges it).
pub(crate) fn append(data: &[u8], out: &mut String) {
    let Ok(chunk) = serde_json::from_slice::<Chunk<'_>>(data) else { return };
    for c in chunk.choices {
        if let Some(t) = c.delta.and_then(|d| d.content) {
            out.push_str(&t);
        }
        if let Some(t) = c.text {
            out.push_str(&t);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::append;

    fn text(events: &[&str]) -> String {
        let mut out = String::new();
        events.iter().for_each(|e| append(e.as_bytes(), &mut out));
        out
    }

    #[test]
    fn chat_and_completion_text_is_joined_and_the_rest_adds_nothing() {
        let chat = [
            r#"{"choices":[{"delta":{"role":"assistant"}}]}"#,
            r#"{"choices":[{"delta":{"content":"Hel"}}]}"#,
            r#"{"choices":[{"delta":{"content":"lo \"you\"\n"},"finish_reason":null}]}"#,
            r#"{"choices":[{"delta":{"reasoning_content":"hidden"}}]}"#,
            r#"{"choices":[],"usage":{"completion_tokens":3}}"#,
            "not json",
        ];
        assert_eq!(text(&chat), "Hello \"you\"\n");
        assert_eq!(text(&[r#"{"choices":[{"text":"a\u00e9"}]}"#, r#"{"choices":[{"text":"b"}]}"#]), "aéb");
    }
}
