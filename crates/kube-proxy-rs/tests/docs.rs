//! The documentation holds: every relative Markdown link of the repository
//! (README.md, ARCHITECTURE.md, docs/, the crates', fuzz's and testdata's
//! READMEs) reaches a file that exists and, with `#anchor`, a heading of
//! it; docs/flags.md names every flag `--help` lists; and each command of
//! the README's first two sections is run — the `cargo run` ones here,
//! the test command by CI (`.ci/run`). No root needed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "docs/markdown.rs"]
mod markdown;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

const BINARY: &str = env!("CARGO_BIN_EXE_kube-proxy-rs");

/// The repository's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// Every `.md` file under `dir`, skipping build output and hidden folders.
fn markdown_files(dir: &Path, found: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with('.') || name == "target" {
            continue;
        }
        if path.is_dir() {
            markdown_files(&path, found);
        } else if name.ends_with(".md") {
            found.push(path);
        }
    }
}

/// What is wrong with `target`, a link in `file`; `None` when it resolves.
fn dead(file: &Path, target: &str) -> Option<String> {
    if target.contains("://") || target.starts_with("mailto:") {
        return None;
    }
    let (path, anchor) = target.split_once('#').map_or((target, None), |(p, a)| (p, Some(a)));
    let resolved = if path.is_empty() { file.to_path_buf() } else { file.parent().unwrap().join(path) };
    if !resolved.exists() {
        return Some(format!("{} does not exist", resolved.display()));
    }
    let anchor = anchor.filter(|a| !a.is_empty())?;
    if resolved.extension().is_none_or(|e| e != "md") {
        return None;
    }
    let text = std::fs::read_to_string(&resolved).unwrap();
    let anchors = markdown::anchors(&text);
    (!anchors.contains(anchor)).then(|| format!("no heading of {} has the anchor #{anchor}", resolved.display()))
}

#[test]
fn every_relative_markdown_link_resolves() {
    let root = root();
    let mut files = Vec::new();
    markdown_files(&root, &mut files);
    for expected in ["README.md", "ARCHITECTURE.md", "docs/testing.md", "testdata/README.md"] {
        assert!(files.contains(&root.join(expected)), "{expected} not walked: {files:?}");
    }
    let mut failures = Vec::new();
    let mut checked = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for link in markdown::links(&text) {
            checked += 1;
            if let Some(why) = dead(file, &link.target) {
                let shown = file.strip_prefix(&root).unwrap_or(file).display();
                failures.push(format!("{shown}:{}: ({}) {why}", link.line, link.target));
            }
        }
    }
    assert!(checked > 50, "only {checked} links found in {} files", files.len());
    assert!(failures.is_empty(), "{} dead links:\n{}", failures.len(), failures.join("\n"));
}

/// Stop 32 committed a merge conflict into docs/flags.md: no Markdown file
/// may hold a conflict marker line.
#[test]
fn no_markdown_file_holds_a_merge_conflict() {
    let root = root();
    let mut files = Vec::new();
    markdown_files(&root, &mut files);
    let marker = |line: &str| ["<<<<<<< ", ">>>>>>> ", "|||||||"].iter().any(|m| line.starts_with(m)) || line == "=======";
    let conflicts: Vec<String> = files
        .iter()
        .flat_map(|file| {
            let text = std::fs::read_to_string(file).unwrap();
            let shown = file.strip_prefix(&root).unwrap_or(file).display().to_string();
            text.lines().enumerate().filter(|(_, l)| marker(l)).map(|(i, l)| format!("{shown}:{}: {l}", i + 1)).collect::<Vec<_>>()
        })
        .collect();
    assert!(conflicts.is_empty(), "merge conflict markers:\n{}", conflicts.join("\n"));
}

/// The `--flag` words of `text`.
fn flags_in(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .filter(|w| w.starts_with("--") && w.len() > 2 && w.as_bytes()[2].is_ascii_alphabetic())
        .map(str::to_string)
        .collect()
}

#[test]
fn docs_flags_names_every_flag_of_help() {
    let help = Command::new(BINARY).arg("--help").output().unwrap();
    assert!(help.status.success(), "--help: {}", String::from_utf8_lossy(&help.stderr));
    let listed = flags_in(&String::from_utf8_lossy(&help.stdout));
    assert!(listed.len() > 40, "--help lists only {listed:?}");
    let documented = flags_in(&std::fs::read_to_string(root().join("docs/flags.md")).unwrap());
    let missing: Vec<_> = listed.difference(&documented).collect();
    assert!(missing.is_empty(), "docs/flags.md does not name {missing:?}");
}

/// Runs a README `cargo run -p kube-proxy-rs -- ARGS` command with the
/// built binary, from the repository's root; its standard output.
fn run_readme_command(args: &str) -> String {
    let out = Command::new(BINARY).args(args.split_whitespace()).current_dir(root()).output().unwrap();
    assert!(out.status.success(), "kube-proxy-rs {args}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn every_command_of_the_readmes_first_two_sections_is_run() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let mut commands = Vec::new();
    for index in 0..2 {
        let section = markdown::section(&readme, index).expect("the README has two sections");
        commands.extend(markdown::commands(&section));
    }
    assert!(commands.len() >= 2, "{commands:?}");
    let ci = std::fs::read_to_string(root().join(".ci/run")).unwrap();
    for command in &commands {
        if let Some(args) = command.strip_prefix("cargo run -p kube-proxy-rs -- ") {
            let printed = run_readme_command(args);
            let expected = if args.contains("--proxy-mode nftables") { "table ip kube-proxy" } else { "*nat" };
            assert!(printed.contains(expected), "{command}: no `{expected}` in what it printed:\n{printed}");
            assert!(printed.contains("KUBE-") || printed.contains("service-ips"), "{command}: no rule of ours:\n{printed}");
        } else if command == "bash scripts/test.sh" {
            assert!(ci.lines().any(|line| line.trim() == command), "CI (.ci/run) does not run `{command}`:\n{ci}");
        } else {
            panic!("`{command}` of the README's first two sections is run by no test: run it in this test or in CI");
        }
    }
}
