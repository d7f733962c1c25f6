//! Classifying failed responses into error kinds (docs/protocol.md §3.6, §3.7).

use super::backend::{BackendError, BackendResponse};
use super::limits::{ERROR_BODY_KEEP, ERROR_BODY_WAIT};
use super::sample::{ErrorKind, Outcome};
use super::scrub::Scrubber;
use reqwest::header::LOCATION;
use serde_json::Value;
use std::error::Error as StdError;

/// A failed outcome with a one-line detail.
pub(crate) fn failure(kind: ErrorKind, detail: &str) -> Outcome {
    Outcome::Failed { kind, detail: first_line(detail) }
}

/// The first line of `text`, cut to 300 bytes (at a character boundary, with `…`).
fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    if line.len() > 300 { format!("{}…", &line[..floor_char(line, 300)]) } else { line.to_string() }
}

fn floor_char(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The message and `param` of an OpenAI-style error body, nested or flat.
fn error_fields(body: &[u8]) -> (String, Option<String>) {
    let Ok(v) = serde_json::from_slice::<Value>(body) else {
        // An HTML page (a proxy's 404, a login page) is named by its title, not its first line.
        let text = String::from_utf8_lossy(body);
        return (super::client::html_summary(&text).unwrap_or_else(|| text.trim().to_string()), None);
    };
    let e = v.get("error").filter(|e| e.is_object()).unwrap_or(&v);
    let msg = e.get("message").and_then(Value::as_str).or_else(|| v.get("error").and_then(Value::as_str));
    let param = e.get("param").or_else(|| e.get("parameter")).and_then(Value::as_str).map(str::to_string);
    (msg.map_or_else(|| String::from_utf8_lossy(body).trim().to_string(), str::to_string), param)
}

/// The message of an error body (OpenAI-style JSON, nested or flat, else its text): one line of
/// at most 300 bytes.
pub(crate) fn error_message(body: &[u8]) -> String {
    first_line(&error_fields(body).0)
}

/// True for vLLM's context-length refusals, whatever the release's wording: status 400 and
/// a message naming the context length, or `param` `input_tokens` / `input_text`.
pub(crate) fn is_context_overflow(status: u16, message: &str, param: Option<&str>) -> bool {
    let m = message.to_ascii_lowercase();
    status == 400 && (m.contains("context length") || matches!(param, Some("input_tokens" | "input_text")))
}

/// The outcome of a non-2xx response.
pub(crate) fn classify_status(status: u16, body: &[u8]) -> Outcome {
    let (message, param) = error_fields(body);
    let kind = match status {
        _ if is_context_overflow(status, &message, param.as_deref()) => ErrorKind::ContextOverflow,
        401 | 403 => ErrorKind::Unauthorized,
        429 => ErrorKind::RateLimited,
        503 => ErrorKind::Overloaded,
        400..=499 => ErrorKind::BadRequest,
        _ => ErrorKind::ServerError,
    };
    failure(kind, &format!("HTTP {status}: {message}"))
}

/// The outcome of an exchange that failed before any answer: `oversized` for a response head
/// larger than the client reads (8 KiB on the load's stream path to `http://` targets,
/// `super::h1::READ_BUF_MAX`; about 400 KiB through reqwest; or over 100 header lines), else
/// `connect`.
pub(crate) fn send_failure(e: &BackendError) -> Outcome {
    let mut link: Option<&(dyn StdError + 'static)> = Some(e);
    while let Some(err) = link {
        let own = matches!(
            err.downcast_ref::<super::own_h1_head::HeadError>(),
            Some(super::own_h1_head::HeadError::TooLarge(_))
        );
        if own || err.downcast_ref::<hyper::Error>().is_some_and(hyper::Error::is_parse_too_large) {
            return failure(ErrorKind::Oversized, &format!("response head too large: {}", e.describe()));
        }
        link = err.source();
    }
    failure(ErrorKind::Connect, &e.describe())
}

/// The outcome of a non-success answer: a redirect (never followed), else the kind its status
/// and the start of its body say (at most [`ERROR_BODY_KEEP`] bytes, read for at most
/// [`ERROR_BODY_WAIT`]).
pub(crate) async fn refusal(resp: BackendResponse, scrub: &Scrubber<'_>) -> Outcome {
    let status = resp.status().as_u16();
    if (300..400).contains(&status) {
        let location = resp.headers().get(LOCATION).and_then(|v| v.to_str().ok()).map(|l| scrub.text(l).into_owned());
        return redirect(status, location.as_deref());
    }
    let (body, _) = resp.head_of_body(ERROR_BODY_KEEP, ERROR_BODY_WAIT).await;
    classify_status(status, &scrub.bytes(body))
}

/// The outcome of a 3xx answer, never followed: the request, and its key, go nowhere else.
/// `location` is the answer's `Location` header, named without credentials.
pub(crate) fn redirect(status: u16, location: Option<&str>) -> Outcome {
    let to = location.map_or("no Location".to_string(), |l| format!("to {}", crate::net::redact_url(l)));
    failure(ErrorKind::Redirected, &format!("HTTP {status}: a redirect {to}, not followed"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(status: u16, body: &str) -> ErrorKind {
        match classify_status(status, body.as_bytes()) {
            Outcome::Failed { kind, .. } => kind,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn context_overflow_in_every_known_wording() {
        let bodies = [
            r#"{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens in the messages, Please reduce the length of the messages.","type":"BadRequestError","param":null,"code":400}"#,
            r#"{"error":{"message":"'max_tokens' or 'max_completion_tokens' is too large: 900. This model's maximum context length is 1024 tokens and your request has 200 input tokens (900 > 1024 - 200).","type":"BadRequestError","param":null,"code":400}}"#,
            r#"{"error":{"message":"You passed 10 input tokens and requested 5 output tokens.","type":"BadRequestError","param":"input_tokens","code":400}}"#,
        ];
        for b in bodies {
            assert_eq!(kind(400, b), ErrorKind::ContextOverflow, "{b}");
        }
    }

    #[test]
    fn statuses_map_to_kinds() {
        assert_eq!(kind(400, r#"{"error":{"message":"bad n"}}"#), ErrorKind::BadRequest);
        assert_eq!(kind(404, "not found"), ErrorKind::BadRequest);
        assert_eq!(kind(401, r#"{"error":{"message":"Incorrect API key"}}"#), ErrorKind::Unauthorized);
        assert_eq!(kind(403, "forbidden"), ErrorKind::Unauthorized);
        assert_eq!(kind(429, "{}"), ErrorKind::RateLimited);
        assert_eq!(kind(503, "{}"), ErrorKind::Overloaded);
        assert_eq!(kind(500, "<html>oops</html>"), ErrorKind::ServerError);
        assert_eq!(kind(502, ""), ErrorKind::ServerError);
    }

    #[test]
    fn a_redirect_names_where_it_points_without_credentials() {
        let Outcome::Failed { kind, detail } = redirect(307, Some("http://u:secret@other:9/v1/x")) else { panic!() };
        assert_eq!(kind, ErrorKind::Redirected);
        assert_eq!(detail, "HTTP 307: a redirect to http://other:9/v1/x, not followed");
        assert!(
            matches!(redirect(302, None), Outcome::Failed { detail, .. } if detail.ends_with("no Location, not followed"))
        );
    }

    #[test]
    fn details_are_one_bounded_line() {
        let long = "x".repeat(1000) + "\nsecond line";
        let Outcome::Failed { detail, .. } = failure(ErrorKind::Connect, &long) else { panic!() };
        assert!(detail.len() < 310 && !detail.contains('\n'));
    }

    #[test]
    fn an_html_page_is_named_by_its_title() {
        let page = "<!DOCTYPE html>\n<html><head><title>404 Not Found</title></head><body>nginx</body></html>";
        let Outcome::Failed { kind, detail } = classify_status(404, page.as_bytes()) else { panic!() };
        assert_eq!(kind, ErrorKind::BadRequest);
        assert_eq!(detail, "HTTP 404: an HTML page titled \"404 Not Found\" (not an OpenAI API answer)");
    }
}
