//! The bench server's frames (src/bench/server.rs) through the SSE decoder and `eventsource-stream`.

use super::*;

/// The tokens a stream's events read back to: each data event's content (or text) and its
/// usage `completion_tokens`, and whether `[DONE]` was seen.
fn read_back(events: &[Ev]) -> (Vec<String>, Vec<u64>, bool) {
    let (mut text, mut usage, mut done) = (Vec::new(), Vec::new(), false);
    for e in events {
        match e {
            Ev::Data(d) => {
                let v: serde_json::Value = serde_json::from_str(d).expect("JSON data");
                let c = &v["choices"][0];
                if let Some(t) = c["delta"]["content"].as_str().or(c["text"].as_str()).filter(|t| !t.is_empty()) {
                    text.push(t.to_owned());
                }
                usage.extend(v["usage"]["completion_tokens"].as_u64());
            }
            Ev::Done => done = true,
            Ev::Error(e) => panic!("error event {e}"),
        }
    }
    (text, usage, done)
}

proptest! {
    /// The bench server's frames (src/bench/server.rs: 1, 16 or any number of events per frame,
    /// either chunk shape), further cut anywhere as TCP may, read back to the same tokens by
    /// this decoder and by `eventsource-stream`.
    #[test]
    fn bench_server_frames_read_back_to_the_same_tokens(
        tokens in 1u64..40,
        per_frame in prop_oneof![Just(1usize), Just(16), 1usize..40],
        vllm in any::<bool>(),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..6),
    ) {
        use crate::bench::template::{Flavor, Template};
        let t = if vllm {
            crate::bench::shape::vllm_chat("m", 3, tokens, &crate::bench::shape::request_id(tokens), 1_764_979_200)
        } else {
            Template::build(Flavor::Chat, "m", 3, tokens)
        };
        let mut frames = Vec::new();
        let mut from = 0;
        while from < t.events() {
            let to = t.batch_end(from, 65_536, per_frame);
            prop_assert!(to - from <= per_frame && to > from);
            frames.push(t.stamped(from, to, 1_764_979_200_123_456_789).to_vec());
            from = to;
        }
        prop_assert_eq!(frames.len(), t.events().div_ceil(per_frame));
        let body = frames.concat();
        let mut chunks = Vec::new();
        for f in &frames {
            chunks.extend(split(f, &cuts));
        }
        let refs: Vec<&[u8]> = chunks.iter().map(Vec::as_slice).collect();
        let ours = decode(&refs);
        prop_assert_eq!(&ours, &reference(&chunks));
        prop_assert_eq!(&ours, &decode(&[&body]));
        let (text, usage, done) = read_back(&ours);
        prop_assert!(done);
        prop_assert_eq!(text, vec![" tok".to_owned(); tokens as usize]);
        let lead = u64::from(vllm);
        let want: Vec<u64> = (1 - lead..=tokens).chain([tokens]).collect();
        prop_assert_eq!(usage, want);
    }
}
