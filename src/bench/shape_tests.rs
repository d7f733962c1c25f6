//! Tests of vLLM's chunk shape: the exact bytes of one frame of 1 and of 16 events.

use super::*;
use crate::load::chunk::parse_chunk;

const ID: &str = "chatcmpl-0123456789abcdef0123456789abcdef";

/// The head of every chunk, written out as vLLM sends it.
const HEAD: &str = "data: {\"id\":\"chatcmpl-0123456789abcdef0123456789abcdef\",\"object\":\"chat.completion.chunk\",\"created\":1764979200,\"model\":\"m\",";

fn role() -> String {
    format!(
        "{HEAD}\"choices\":[{{\"index\":0,\"delta\":{{\"role\":\"assistant\",\"content\":\"\"}},\"logprobs\":null,\"finish_reason\":null}}],\"usage\":{{\"prompt_tokens\":5,\"total_tokens\":5,\"completion_tokens\":0}}}}\n\n"
    )
}

fn token(k: u64) -> String {
    format!(
        "{HEAD}\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\" tok\"}},\"logprobs\":null,\"finish_reason\":null}}],\"usage\":{{\"prompt_tokens\":5,\"total_tokens\":{},\"completion_tokens\":{k}}}}}\n\n",
        5 + k
    )
}

fn frame(t: &Template, from: usize, events: usize) -> (String, usize) {
    let to = t.batch_end(from, 65_536, events);
    (String::from_utf8(t.stamped(from, to, 1).to_vec()).unwrap(), to)
}

#[test]
fn one_event_per_frame_is_one_chunk_exactly() {
    let t = vllm_chat("m", 5, 20, ID, 1_764_979_200);
    assert_eq!(t.events(), 23, "role, 20 tokens, final usage, [DONE]");
    assert_eq!(frame(&t, 0, 1), (role(), 1));
    assert_eq!(frame(&t, 1, 1), (token(1), 2));
    let last = format!(
        "{HEAD}\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\" tok\"}},\"logprobs\":null,\"finish_reason\":\"length\",\"stop_reason\":null}}],\"usage\":{{\"prompt_tokens\":5,\"total_tokens\":25,\"completion_tokens\":20}}}}\n\n"
    );
    assert_eq!(frame(&t, 20, 1), (last, 21));
    let usage = format!(
        "{HEAD}\"choices\":[],\"usage\":{{\"prompt_tokens\":5,\"total_tokens\":25,\"completion_tokens\":20}}}}\n\n"
    );
    assert_eq!(frame(&t, 21, 1), (usage, 22));
    assert_eq!(frame(&t, 22, 1), ("data: [DONE]\n\n".to_string(), 23));
}

#[test]
fn sixteen_events_per_frame_are_sixteen_chunks_back_to_back() {
    let t = vllm_chat("m", 5, 20, ID, 1_764_979_200);
    let want: String = std::iter::once(role()).chain((1..=15).map(token)).collect();
    assert_eq!(frame(&t, 0, 16), (want, 16));
    let (rest, end) = frame(&t, 16, 16);
    assert_eq!(end, 23, "the last frame holds what is left: 7 events");
    assert!(rest.starts_with(&token(16)) && rest.ends_with("\"completion_tokens\":20}}\n\ndata: [DONE]\n\n"));
    assert_eq!((t.tokens_in(0, 16), t.tokens_in(16, 23)), (15, 5));
}

#[test]
fn the_tools_parser_reads_every_chunk_and_no_stamp_is_found() {
    let t = vllm_chat("model-x", 7, 3, &request_id(42), 1_764_979_200);
    let all = String::from_utf8(t.stamped(0, t.events(), 1).to_vec()).unwrap();
    let events: Vec<&str> = all.split_inclusive("\n\n").collect();
    let data = |e: &str| e.strip_prefix("data: ").unwrap().trim_end().to_string();
    let tokens: Vec<Option<u64>> =
        events[..5].iter().map(|e| parse_chunk(data(e).as_bytes()).expect("a chunk").completion_tokens).collect();
    assert_eq!(tokens, [Some(0), Some(1), Some(2), Some(3), Some(3)]);
    assert!(events.iter().all(|e| super::super::template::stamp_of(e.as_bytes()).is_none()));
    let id = request_id(42);
    assert_eq!((id.len(), &id[..9]), (41, "chatcmpl-"), "vLLM's uuid length");
    assert_ne!(request_id(42), request_id(43));
    assert_eq!(ChunkShape::default().name(), "bench");
}
