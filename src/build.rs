//! Build script: records the git commit the binary is built from, for `--version`
//! (`LLM_DECODE_BENCH_COMMIT`; `unknown` outside a git checkout, e.g. from a source tarball,
//! unless the build's environment names it: deploy/Dockerfile's `COMMIT` build argument).

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    (out.status.success() && !text.trim().is_empty()).then(|| text.trim().to_string())
}

fn main() {
    println!("cargo:rerun-if-env-changed=LLM_DECODE_BENCH_COMMIT");
    let given = std::env::var("LLM_DECODE_BENCH_COMMIT").ok().filter(|c| !c.trim().is_empty());
    let commit = given.or_else(|| git(&["rev-parse", "--short=12", "HEAD"])).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=LLM_DECODE_BENCH_COMMIT={commit}");
    // Rebuild when HEAD moves: HEAD itself (a checkout) and the branch it points at (a commit).
    if let Some(head) = git(&["rev-parse", "--git-path", "HEAD"]) {
        println!("cargo:rerun-if-changed={head}");
    }
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]).and_then(|r| git(&["rev-parse", "--git-path", &r])) {
        println!("cargo:rerun-if-changed={branch}");
    }
    if let Some(packed) = git(&["rev-parse", "--git-path", "packed-refs"]) {
        println!("cargo:rerun-if-changed={packed}");
    }
    println!("cargo:rerun-if-changed=src/build.rs");
}
