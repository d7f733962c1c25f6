//! Secrets out of what a sweep prints and saves: the server command (`--api-key sk-…`,
//! `VLLM_API_KEY=…`), the lines of its log (vLLM logs its `non-default args`, `api_key`
//! included on some versions), and the values read from that log. The session's own key and
//! bearer tokens go through `load::scrub` as every server text does.

use crate::load::request::ApiKey;
use crate::load::scrub::Scrubber;

/// What a secret is replaced with.
const MASK: &str = "***";

/// True for a flag, variable or dictionary key that names a secret: one of its words (split
/// at `-`, `_` and the like) is `key`, `token`, `secret`, ... (`--api-key`, `VLLM_API_KEY`,
/// `hf_token`; not `--tokenizer` or `max_num_batched_tokens`).
pub(crate) fn is_secret_name(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    let secret = ["key", "apikey", "token", "secret", "password", "passwd", "credential", "credentials"];
    n.split(|c: char| !c.is_ascii_alphanumeric()).any(|w| secret.contains(&w))
}

/// `word` with the value of a secret `--flag=VALUE` or `NAME=VALUE` masked; None otherwise.
fn masked_assignment(word: &str) -> Option<String> {
    let (name, value) = word.split_once('=')?;
    let bare = name.trim_start_matches('-');
    let flag_or_var = name.starts_with("--") || bare.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    (flag_or_var && is_secret_name(bare) && !value.is_empty()).then(|| format!("{name}={MASK}"))
}

/// `text` (a shell command or a log line) with the values of secret flags (`--api-key X`,
/// `--hf-token=X`), secret variables (`VLLM_API_KEY=X`), secret dictionary entries
/// (`'api_key': [...]`), `key` and bearer tokens masked.
pub(crate) fn mask(text: &str, key: Option<&ApiKey>) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut hide_next = false;
    for word in text.split(' ') {
        if hide_next && !word.is_empty() {
            out.push(MASK.into());
            hide_next = false;
            continue;
        }
        match masked_assignment(word) {
            Some(m) => out.push(m),
            None => {
                hide_next = word.starts_with("--") && is_secret_name(word) && !word.contains('=');
                out.push(word.to_string());
            }
        }
    }
    let joined = mask_dict_entries(&out.join(" "));
    Scrubber::new(key).text(&joined).into_owned()
}

/// `'api_key': ['sk-1', 'sk-2']` → `'api_key': ***`: a quoted secret key's value, up to the
/// next `,` or `}` outside brackets and quotes.
fn mask_dict_entries(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = find_secret_key(rest) {
        let (head, tail) = rest.split_at(at);
        out.push_str(head);
        out.push_str(MASK);
        rest = &tail[value_len(tail)..];
    }
    out.push_str(rest);
    out
}

/// Where the value of the first `'name': ` entry with a secret name starts.
fn find_secret_key(text: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = text[from..].find(['\'', '"']).map(|i| i + from) {
        let q = text[i..].chars().next()?;
        let close = text[i + 1..].find(q).map(|j| i + 1 + j)?;
        let name = &text[i + 1..close];
        let after = &text[close + 1..];
        if let Some(value) = after.strip_prefix(": ")
            && is_secret_name(name)
            && !value.starts_with(MASK)
        {
            return Some(close + 3);
        }
        from = close + 1;
    }
    None
}

/// Length of the value at the start of `text`: to a `,` or `}` outside brackets and quotes.
fn value_len(text: &str) -> usize {
    let (mut depth, mut quote) = (0i32, None);
    for (i, c) in text.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '[' | '(' | '{') => depth += 1,
            (None, ']' | ')') => depth -= 1,
            (None, '}') if depth == 0 => return i,
            (None, '}') => depth -= 1,
            (None, ',') if depth == 0 => return i,
            _ => {}
        }
    }
    text.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_in_commands_and_logs_are_masked() {
        let key = ApiKey::new("sk-session-key-0123".into());
        let cmd = "VLLM_API_KEY=abc vllm serve m --port 9 --api-key sk-x --hf-token=hf_y --max-num-seqs 8 sk-session-key-0123";
        assert_eq!(
            mask(cmd, Some(&key)),
            "VLLM_API_KEY=*** vllm serve m --port 9 --api-key *** --hf-token=*** --max-num-seqs 8 ***"
        );
        let line = "INFO non-default args: {'model': 'm', 'api_key': ['sk-a', 'sk-b'], 'max_num_seqs': 8}";
        assert_eq!(mask(line, None), "INFO non-default args: {'model': 'm', 'api_key': ***, 'max_num_seqs': 8}");
        assert_eq!(mask("Authorization: Bearer abcdefgh12345", None), "Authorization: Bearer ***");
        assert_eq!(mask("plain --port 8000 x=y", None), "plain --port 8000 x=y");
        let kept = "--tokenizer t --max-num-batched-tokens 2048 {'max_num_batched_tokens': 8}";
        assert_eq!(mask(kept, None), kept);
    }
}
