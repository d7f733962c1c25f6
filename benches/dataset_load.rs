//! Loading a ShareGPT-sized dataset in bounded memory (issue 24): writes a ShareGPT-layout
//! file of `DATASET_MB` MB (default 670, about 94,000 conversations as ShareGPT V3) to the
//! temporary directory, then samples `--num-prompts` 1,000 of it with
//! `dataset::sample_file`, and prints the load time, throughput, and this process's resident
//! memory before and at its peak (VmHWM; the file is written streaming, so the peak is the
//! load's).
//!
//! `cargo bench --bench dataset_load` (about a minute on a 2-core machine);
//! `DATASET_MB=50` for a short run.

use llm_decode_bench::bench::sysinfo::rss_kib;
use llm_decode_bench::dataset::{FileFormat, sample_file};
use std::io::{BufWriter, Write};
use std::time::Instant;

/// Conversations of ShareGPT V3's length spread: 2 to 8 turns of 80 to 2,500 characters.
fn write_file(path: &std::path::Path, target_bytes: u64) -> std::io::Result<u64> {
    let mut out = BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
    let words = ["the", "model", "serves", "tokens", "while", "a", "cache", "holds", "prefix", "blocks"];
    let (mut written, mut n, mut state) = (1u64, 0u64, 0x2545_f491_4f6c_dd1du64);
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    out.write_all(b"[")?;
    while written < target_bytes {
        let mut entry = format!("{}{{\"id\": \"c{n}\", \"conversations\": [", if n == 0 { "" } else { "," });
        let turns = 2 + next() % 7;
        for t in 0..turns {
            let chars = 80 + next() % 2_420;
            let mut text = String::with_capacity(chars as usize + 16);
            while (text.len() as u64) < chars {
                text.push_str(words[(next() % words.len() as u64) as usize]);
                text.push(' ');
            }
            let from = if t % 2 == 0 { "human" } else { "gpt" };
            let sep = if t == 0 { "" } else { ", " };
            entry.push_str(&format!("{sep}{{\"from\": \"{from}\", \"value\": \"{}\"}}", text.trim_end()));
        }
        entry.push_str("]}\n");
        out.write_all(entry.as_bytes())?;
        (written, n) = (written + entry.len() as u64, n + 1);
    }
    out.write_all(b"]\n")?;
    out.flush()?;
    Ok(n)
}

fn main() {
    let mb: u64 = std::env::var("DATASET_MB").ok().and_then(|v| v.parse().ok()).unwrap_or(670);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("sharegpt.json");
    let t = Instant::now();
    let written = write_file(&path, mb << 20).expect("the file is written");
    println!("wrote {written} conversations, {mb} MB, in {:.1} s", t.elapsed().as_secs_f64());
    let (rss_before, _) = rss_kib().unwrap_or((0, 0));
    let t = Instant::now();
    let sampled = sample_file(&path, FileFormat::ShareGpt, 1_000, 7).expect("the file samples");
    let secs = t.elapsed().as_secs_f64();
    let (_, peak) = rss_kib().unwrap_or((0, 0));
    println!(
        "sampled {} of {} entries ({} unusable), {:.0} MB in {secs:.2} s ({:.0} MB/s), sha256 {}…",
        sampled.conversations.len(),
        sampled.entries,
        sampled.unusable,
        sampled.bytes as f64 / 1e6,
        sampled.bytes as f64 / 1e6 / secs,
        &sampled.sha256[..12]
    );
    println!(
        "resident memory: {:.1} MiB before the load, peak {:.1} MiB",
        rss_before as f64 / 1024.0,
        peak as f64 / 1024.0
    );
}
