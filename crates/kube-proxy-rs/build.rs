//! Records the git commit the binary is built from, for `--version`
//! (`KPRS_GIT_COMMIT`: 12 hex digits, `-dirty` when the tree has changes,
//! `unknown` outside a git checkout).

use std::process::Command;

fn main() {
    println!("cargo:rustc-env=KPRS_GIT_COMMIT={}", commit());
    for path in ["HEAD", "index", "packed-refs"] {
        if let Some(file) = git(&["rev-parse", "--git-path", path]) {
            println!("cargo:rerun-if-changed={file}");
        }
    }
    if let Some(head) = git(&["symbolic-ref", "-q", "HEAD"]).and_then(|r| git(&["rev-parse", "--git-path", &r])) {
        println!("cargo:rerun-if-changed={head}");
    }
}

fn commit() -> String {
    let Some(hash) = git(&["rev-parse", "--short=12", "HEAD"]) else { return "unknown".to_string() };
    let dirty = Command::new("git").args(["diff", "--quiet", "HEAD", "--"]).status().is_ok_and(|s| !s.success());
    if dirty { format!("{hash}-dirty") } else { hash }
}

/// `git args`' output, trimmed, when it succeeds.
fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    (out.status.success() && !text.trim().is_empty()).then(|| text.trim().to_string())
}
