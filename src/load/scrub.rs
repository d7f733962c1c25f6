//! Secrets out of server text: every server text that is stored, printed or logged (error
//! bodies, SSE error events, discovery answers, response headers) passes through a
//! [`Scrubber`] where it enters, so an OpenAI-style `401` that echoes the key
//! (`Incorrect API key provided: Bearer sk-…`) leaves no trace of it in samples, reports,
//! the terminal or log files.

use super::request::ApiKey;
use bytes::Bytes;
use reqwest::header::{AUTHORIZATION, HeaderMap};
use std::borrow::Cow;

/// What a secret is replaced with.
pub(crate) const MASK: &str = "***";

/// Fewest characters after `Bearer ` that are taken for a token (shorter words are prose).
const MIN_TOKEN: usize = 8;

/// Removes the API key (raw and JSON-escaped) and any `Bearer <token>` from server text.
/// Its `Debug` never shows the key.
#[derive(Clone, Copy, Default)]
pub(crate) struct Scrubber<'a> {
    key: Option<&'a str>,
}

impl std::fmt::Debug for Scrubber<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.key.is_some() { "Scrubber(key)" } else { "Scrubber(no key)" })
    }
}

impl<'a> Scrubber<'a> {
    /// A scrubber of `key` (and of bearer tokens, which it masks even without a key).
    pub(crate) fn new(key: Option<&'a ApiKey>) -> Self {
        Self { key: key.map(ApiKey::secret).filter(|k| !k.is_empty()) }
    }

    /// A scrubber of the bearer token that `headers` send as `Authorization`.
    pub(crate) fn from_headers(headers: &'a HeaderMap) -> Self {
        let value = headers.get(AUTHORIZATION).and_then(|v| v.to_str().ok());
        let key = value.and_then(|v| v.get(..7).filter(|p| p.eq_ignore_ascii_case("bearer ")).map(|_| &v[7..]));
        Self { key: key.map(str::trim).filter(|k| !k.is_empty()) }
    }

    /// `text` without the key or bearer tokens (borrowed when there was nothing to remove).
    pub(crate) fn text<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let mut out = Cow::Borrowed(text);
        if let Some(key) = self.key {
            if out.contains(key) {
                out = Cow::Owned(out.replace(key, MASK));
            }
            let escaped = key.replace('/', "\\/");
            if escaped != key && out.contains(&escaped) {
                out = Cow::Owned(out.replace(&escaped, MASK));
            }
        }
        match mask_bearer(&out) {
            Some(masked) => Cow::Owned(masked),
            None => out,
        }
    }

    /// A response body without the key or bearer tokens (the same bytes when there was
    /// nothing to remove; otherwise lossy UTF-8).
    pub(crate) fn bytes(&self, body: Bytes) -> Bytes {
        let scrubbed = match self.text(&String::from_utf8_lossy(&body)) {
            Cow::Borrowed(_) => None,
            Cow::Owned(s) => Some(s),
        };
        scrubbed.map_or(body, Bytes::from)
    }
}

/// Characters of an RFC 6750 bearer token.
fn is_token(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'+' | b'/' | b'=')
}

/// Position of the next `bearer` (any case) at or after `from`.
fn find_bearer(text: &[u8], from: usize) -> Option<usize> {
    (from..text.len().saturating_sub(5)).find(|&i| text[i..i + 6].eq_ignore_ascii_case(b"bearer"))
}

/// `text` with the token after every `Bearer ` masked; None when there is none.
fn mask_bearer(text: &str) -> Option<String> {
    let b = text.as_bytes();
    let (mut out, mut copied, mut from) = (String::new(), 0, 0);
    while let Some(i) = find_bearer(b, from) {
        from = i + 6;
        if i > 0 && b[i - 1].is_ascii_alphanumeric() {
            continue;
        }
        let start = from + b[from..].iter().take_while(|c| matches!(c, b' ' | b'\t')).count();
        let end = start + b[start..].iter().take_while(|c| is_token(**c)).count();
        if start == from || end - start < MIN_TOKEN {
            continue;
        }
        out.push_str(&text[copied..start]);
        out.push_str(MASK);
        (copied, from) = (end, end);
    }
    (copied > 0).then(|| out + &text[copied..])
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    const KEY: &str = "sk-test-0123456789abcdef";

    #[test]
    fn the_key_and_bearer_tokens_are_masked() {
        let key = ApiKey::new(KEY.into());
        let s = Scrubber::new(Some(&key));
        let text = format!("Incorrect API key provided: Bearer {KEY}. You passed {KEY}; bearer\tabcdefgh1234 ok");
        let out = s.text(&text);
        assert!(!out.contains(KEY) && !out.contains("abcdefgh1234"), "{out}");
        assert_eq!(out, "Incorrect API key provided: Bearer ***. You passed ***; bearer\t*** ok");
    }

    #[test]
    fn json_escaped_keys_and_foreign_tokens_are_masked() {
        let key = ApiKey::new("sk/abc/def".into());
        let s = Scrubber::new(Some(&key));
        assert_eq!(s.text(r#"{"message":"bad key sk\/abc\/def"}"#), r#"{"message":"bad key ***"}"#);
        let none = Scrubber::default();
        assert_eq!(none.text("Authorization: Bearer eyJhbGciOi.J9x_y"), "Authorization: Bearer ***");
    }

    #[test]
    fn prose_and_clean_text_are_left_alone() {
        let s = Scrubber::default();
        for t in ["the bearer token is invalid", "Bearer", "unbearerable sk-1234567890", "HTTP 500: oops", ""] {
            assert!(matches!(s.text(t), Cow::Borrowed(_)), "{t}");
        }
        let body = Bytes::from_static(b"\xff not utf8");
        assert_eq!(s.bytes(body.clone()), body);
    }

    #[test]
    fn the_key_comes_from_the_authorization_header() {
        let mut h = HeaderMap::new();
        assert!(format!("{:?}", Scrubber::from_headers(&h)).contains("no key"));
        h.insert(AUTHORIZATION, HeaderValue::from_str(&format!("Bearer {KEY}")).unwrap());
        let s = Scrubber::from_headers(&h);
        assert!(!format!("{s:?}").contains(KEY));
        let body = s.bytes(Bytes::from(format!(r#"{{"error":{{"message":"key {KEY} is wrong"}}}}"#)));
        assert_eq!(&body[..], br#"{"error":{"message":"key *** is wrong"}}"#);
    }
}
