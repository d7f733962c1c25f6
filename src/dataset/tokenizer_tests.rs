//! Tests of the local tokenizer file (`tokenizer.rs`) on the fixtures of
//! `tests/fixtures/tokenizer/` (written by its `make.py` with Python's `tokenizers`).

use super::*;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tokenizer").join(name)
}

/// Texts with the counts Python's `tokenizers` 0.23 gave (`make.py`): the simulator's rule,
/// the byte-level BPE with its `<s>`, and without it.
const PROBES: [(&str, u64, u64, u64); 5] = [
    ("Explain how the prefix cache serves a warm request.", 12, 28, 27),
    ("It's   spaced\n\n  out, isn't it?  ", 18, 30, 29),
    ("naïve café, 東京 and 😀 emoji: ø≠∑", 18, 43, 42),
    ("</s> inside <s> text", 10, 13, 12),
    ("", 0, 1, 0),
];

#[test]
fn a_directory_reads_its_tokenizer_json_and_counts_as_the_simulator() {
    let t = TokenizerFile::load(&fixture("")).expect("the fixture reads");
    assert_eq!(t.path, fixture(FILE_NAME), "the file inside the directory");
    assert_eq!(t.sha256.len(), 64);
    for (text, sim, _, _) in PROBES {
        assert_eq!(t.count_now(text), Ok(sim), "{text:?}");
        let ids = crate::sim::tokenizer::tokenize(text);
        assert_eq!(ids.len() as u64, sim, "the fixture is the simulator's rule: {text:?}");
    }
}

#[test]
fn byte_level_bpe_counts_as_python_with_the_bos_the_template_adds() {
    let t = TokenizerFile::load(&fixture("byte-level-bpe.json")).expect("the fixture reads");
    for (text, _, with_bos, without) in PROBES {
        assert_eq!(t.count_now(text), Ok(with_bos), "{text:?}");
        let bare = t.tokenizer.encode_fast(text, false).expect("encodes").len() as u64;
        assert_eq!(bare, without, "{text:?}");
    }
}

#[test]
fn truncation_and_padding_in_the_file_are_ignored_as_transformers_does() {
    let dir = tempfile::tempdir().unwrap();
    let mut v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fixture("byte-level-bpe.json")).unwrap()).unwrap();
    v["truncation"] =
        serde_json::json!({"direction": "Right", "max_length": 4, "strategy": "LongestFirst", "stride": 0});
    v["padding"] = serde_json::json!({"strategy": {"Fixed": 64}, "direction": "Right", "pad_to_multiple_of": null,
        "pad_id": 0, "pad_type_id": 0, "pad_token": "<s>"});
    let path = dir.path().join("t.json");
    std::fs::write(&path, v.to_string()).unwrap();
    let t = TokenizerFile::load(&path).expect("reads");
    assert_eq!(t.count_now(PROBES[0].0), Ok(PROBES[0].2));
}

#[test]
fn bad_input_is_one_line_naming_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let e = TokenizerFile::load(dir.path()).unwrap_err();
    assert!(e.contains("no tokenizer.json in this directory"), "{e}");
    let e = TokenizerFile::load(Path::new("meta-llama/Llama-3.1-8B")).unwrap_err();
    assert!(e.starts_with("--tokenizer meta-llama/Llama-3.1-8B: ") && e.contains("nothing is downloaded"), "{e}");
    let path = dir.path().join("tokenizer.json");
    std::fs::write(&path, "{\"version\": \"1.0\",\n \"model\": 3}").unwrap();
    let e = TokenizerFile::load(&path).unwrap_err();
    assert!(e.contains("not a Hugging Face tokenizer.json"), "{e}");
    std::fs::write(&path, "not json").unwrap();
    for e in [TokenizerFile::load(&path).unwrap_err(), TokenizerFile::load(dir.path()).unwrap_err()] {
        assert!(e.starts_with("--tokenizer ") && !e.contains('\n'), "{e}");
    }
}

#[tokio::test]
async fn the_counter_counts_off_the_runtime() {
    let t = TokenizerFile::load(&fixture("byte-level-bpe.json")).unwrap();
    assert_eq!(TokenCounter::count(&t, PROBES[2].0).await, Ok(PROBES[2].2));
    assert_eq!(t, TokenizerFile::load(&fixture("byte-level-bpe.json")).unwrap(), "equal by content");
}
