//! The renderer stays pure: no source file of `render` names the applier,
//! the host layer, a runtime or a system call. (The crate depends on
//! xtables, whose applier the proxier uses; this keeps the renderer to
//! xtables' pure modules.)

use std::path::Path;

/// Paths a pure renderer never names.
const FORBIDDEN: &[&str] = &["xtables::apply", "apply::", "host::", "tokio", "std::process", "std::fs"];

fn render_sources() -> Vec<(String, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = vec![src.join("render.rs")];
    let dir = std::fs::read_dir(src.join("render")).unwrap_or_else(|e| panic!("render/: {e}"));
    files.extend(dir.filter_map(Result::ok).map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "rs")));
    files
        .into_iter()
        .map(|p| (p.display().to_string(), std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))))
        .collect()
}

#[test]
fn render_names_no_kernel_facing_code() {
    let sources = render_sources();
    assert!(sources.len() > 10, "found only {} render files", sources.len());
    let offending: Vec<String> = sources
        .iter()
        .flat_map(|(path, text)| {
            FORBIDDEN.iter().filter(|f| text.contains(*f)).map(move |f| format!("{path}: {f}"))
        })
        .collect();
    assert!(offending.is_empty(), "render must stay pure:\n{}", offending.join("\n"));
}
