//! Cost of the per-token hot path: SSE decoding plus chunk parsing of vLLM-style chat chunks
//! with continuous usage, fed in network-sized reads, through a stream's chunk reader (which
//! learns the stream's chunk shape) and through `parse_chunk` alone. Prints ns per chunk and
//! allocations per chunk. Run: `cargo bench --bench hot_path`.

use llm_decode_bench::load::chunk::{ChunkReader, parse_chunk};
use llm_decode_bench::load::sse::{SseDecoder, SseEvent};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Counts allocations so the bench can report allocations per chunk.
struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// `chunks` chunks of one stream; with `new_ids`, every chunk has its own id (the template
/// never matches: its worst case).
fn stream(chunks: usize, new_ids: bool) -> Vec<u8> {
    let mut out = Vec::new();
    for i in 1..=chunks {
        let id = if new_ids { format!("{:04x}", i % 0x10000) } else { "9f2c".to_string() };
        out.extend_from_slice(format!(
            "data: {{\"id\":\"chatcmpl-{id}\",\"object\":\"chat.completion.chunk\",\"created\":1795974014,\"model\":\"Qwen3.8-27B-FP8\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\" token\"}},\"logprobs\":null,\"finish_reason\":null}}],\"usage\":{{\"prompt_tokens\":16384,\"total_tokens\":{},\"completion_tokens\":{i}}}}}\n\n",
            16384 + i
        ).as_bytes());
    }
    out
}

fn run(body: &[u8], read: usize, template: bool) -> (u64, u64) {
    let mut dec = SseDecoder::new();
    let mut reader = ChunkReader::new();
    let (mut tokens, mut chunks) = (0u64, 0u64);
    for part in body.chunks(read) {
        let _ = dec.feed(part, |ev| {
            if let SseEvent::Data(d) = ev
                && let Ok(c) = if template { reader.parse(d) } else { parse_chunk(d) }
            {
                tokens = c.completion_tokens.unwrap_or(tokens);
                chunks += 1;
            }
        });
    }
    (tokens, chunks)
}

fn main() {
    let n = 200_000;
    let body = stream(n, false);
    let missing = stream(n, true);
    let cases = [64usize, 1024, 16 * 1024].into_iter().flat_map(|r| [(r, true, false), (r, false, false)]);
    for (read, template, new_ids) in cases.chain([(16 * 1024, true, true), (16 * 1024, false, true)]) {
        let body = if new_ids { &missing } else { &body };
        let mut best = f64::MAX;
        let mut allocs = 0;
        for _ in 0..5 {
            let a0 = ALLOCS.load(Ordering::Relaxed);
            let t0 = Instant::now();
            let (tokens, chunks) = run(body, read, template);
            let dt = t0.elapsed().as_secs_f64();
            allocs = ALLOCS.load(Ordering::Relaxed) - a0;
            assert_eq!((tokens, chunks), (n as u64, n as u64));
            best = best.min(dt);
        }
        println!(
            "reads of {read:>5} B, {:<18} {:<14} {:>6.0} ns/chunk, {:>5.2} M chunks/s, {:.3} allocations/chunk",
            if template { "chunk reader:" } else { "parse_chunk alone:" },
            if new_ids { "(new id each)" } else { "" },
            best * 1e9 / n as f64,
            n as f64 / best / 1e6,
            allocs as f64 / n as f64
        );
    }
}
