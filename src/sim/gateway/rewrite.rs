//! What the router modes change on the way through: the request body's `stream_options`
//! (typed with `include_usage` only, so `continuous_usage_stats` is lost) and the request id.

use bytes::Bytes;
use rand::Rng;
use serde_json::{Map, Value};

/// The body as vllm-router and sglang-router forward it: `stream_options` keeps only
/// `include_usage` (docs/protocol.md §8.1). Bodies that are not JSON objects, or carry no
/// other `stream_options` key, are passed on byte for byte.
pub fn strip_stream_options(body: Bytes) -> Bytes {
    let Ok(Value::Object(mut req)) = serde_json::from_slice::<Value>(&body) else { return body };
    let Some(Value::Object(opts)) = req.get("stream_options") else { return body };
    if opts.keys().all(|k| k == "include_usage") {
        return body;
    }
    let kept: Map<String, Value> =
        opts.iter().filter(|(k, _)| *k == "include_usage").map(|(k, v)| (k.clone(), v.clone())).collect();
    req.insert("stream_options".into(), Value::Object(kept));
    serde_json::to_vec(&Value::Object(req)).map_or(body, Bytes::from)
}

/// A fresh random request id in UUID v4 form (`8-4-4-4-12` lowercase hex).
pub fn fresh_request_id(rng: &mut impl Rng) -> String {
    let v: u128 = rng.random();
    let v = (v & !(0xf << 76) & !(0x3 << 62)) | (0x4 << 76) | (0x2 << 62);
    let hex = format!("{v:032x}");
    format!("{}-{}-{}-{}-{}", &hex[..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..])
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;
    use serde_json::json;

    fn strip(v: &Value) -> Value {
        let out = strip_stream_options(Bytes::from(v.to_string()));
        serde_json::from_slice(&out).unwrap_or_default()
    }

    #[test]
    fn continuous_usage_is_dropped_and_include_usage_kept() {
        let opts = json!({"include_usage": true, "continuous_usage_stats": true});
        let v = json!({"model": "m", "stream": true, "stream_options": opts});
        let out = strip(&v);
        assert_eq!(out["stream_options"], json!({"include_usage": true}));
        assert_eq!(out["model"], "m");
        assert_eq!(out["stream"], true);
        assert_eq!(strip(&json!({"stream_options": {"continuous_usage_stats": true}}))["stream_options"], json!({}));
    }

    #[test]
    fn other_bodies_pass_unchanged() {
        for raw in ["not json", "[1,2]", "{\"prompt\":\"x\"}", "{\"stream_options\":{\"include_usage\":false}}"] {
            assert_eq!(strip_stream_options(Bytes::from(raw)), Bytes::from(raw));
        }
    }

    #[test]
    fn request_ids_look_like_uuids() {
        let mut rng = StdRng::seed_from_u64(1);
        let (a, b) = (fresh_request_id(&mut rng), fresh_request_id(&mut rng));
        assert_ne!(a, b);
        let parts: Vec<usize> = a.split('-').map(str::len).collect();
        assert_eq!(parts, vec![8, 4, 4, 4, 12]);
        assert!(a.chars().all(|c| c == '-' || c.is_ascii_hexdigit()));
        assert_eq!(&a[14..15], "4");
    }
}
