//! Writes the example datasets under `examples/datasets/` (one per `--dataset-name` that reads
//! a file), generated from a fixed seed by `llm_decode_bench::dataset::examples`.
//!
//! Run: `cargo run --example datasets`

use std::path::Path;

fn main() -> std::io::Result<()> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/datasets");
    std::fs::create_dir_all(&dir)?;
    for (name, text) in llm_decode_bench::dataset::examples::example_files() {
        std::fs::write(dir.join(name), &text)?;
        println!("{} ({} bytes)", dir.join(name).display(), text.len());
    }
    Ok(())
}
