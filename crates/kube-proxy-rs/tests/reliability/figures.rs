//! The figures a scenario prints (they go in docs/reliability.md): one block
//! per scenario, `[reliability] <scenario>: <what>: <value>`, on stdout
//! (nextest shows it with `--no-capture`, and for failing tests).

/// Prints one figure of `scenario`.
pub fn print(scenario: &str, what: &str, value: impl std::fmt::Display) {
    println!("[reliability] {scenario}: {what}: {value}");
}
