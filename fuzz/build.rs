//! The binary's parsers (the library of this crate) read `KPRS_GIT_COMMIT`
//! for `--version`, which the binary's own build script sets.

fn main() {
    println!("cargo:rustc-env=KPRS_GIT_COMMIT=fuzz");
}
