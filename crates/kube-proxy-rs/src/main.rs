//! kube-proxy-rs: flags and config in, wiring out. This file only parses the
//! command line, resolves and validates the configuration, prints one clear
//! error and exits non-zero when that fails (2: usage, 1: bad configuration),
//! and otherwise hands the [`config::Config`] to [`run`]. `kube-proxy-rs
//! explain …` (our addition) goes to [`explain`] instead, and the hidden
//! `kube-proxy-rs xtables-restore …` is the native legacy writer's child
//! ([`xtables::native::child`]: the proxy runs itself as it would run
//! `iptables-restore`).

mod config;
mod duration;
mod explain;
mod flags;
mod memory;
pub(crate) mod proxy;

use std::process::ExitCode;

use config::Config;
use flags::Flags;

fn main() -> ExitCode {
    memory::tune();
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if xtables::native::child::wanted(&args) {
        return ExitCode::from(u8::try_from(xtables::native::child::main(&args)).unwrap_or(1));
    }
    if explain::wanted(&args) {
        return explain::main(args);
    }
    xtables::native::child::set_program("/proc/self/exe".into());
    let flags = match Flags::parse_from_args(args) {
        Ok(flags) => flags,
        Err(usage) => usage.exit(),
    };
    let loaded = match config::load(&flags) {
        Ok(loaded) => loaded,
        Err(err) => return fail(&err),
    };
    init_logging(&loaded.config);
    for warning in &loaded.warnings {
        tracing::warn!("{warning}");
    }
    if let Some(path) = &loaded.write_config_to {
        return match loaded.write_effective(path) {
            Ok(()) => {
                tracing::info!(file = %path.display(), "Wrote configuration");
                ExitCode::SUCCESS
            }
            Err(err) => fail(&err),
        };
    }
    match run(loaded.config) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("kube-proxy-rs: {}", error_chain(&err));
            ExitCode::FAILURE
        }
    }
}

/// The error and its causes on one line, leaving out a cause whose text
/// the message already carries (our errors name their source inline).
fn error_chain(err: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in err.chain() {
        let text = cause.to_string();
        if !line.contains(&text) {
            if !line.is_empty() {
                line.push_str(": ");
            }
            line.push_str(&text);
        }
    }
    line
}

/// Prints a configuration error, one problem per line, and returns exit code 1.
fn fail(err: &config::ConfigError) -> ExitCode {
    for line in err.to_string().lines() {
        eprintln!("kube-proxy-rs: {line}");
    }
    ExitCode::FAILURE
}

/// Logs to stderr; `-v` maps klog levels onto tracing's (0-1 info,
/// 2-3 debug, 4+ trace); `RUST_LOG` overrides.
fn init_logging(config: &Config) {
    let level = match config.logging.verbosity {
        0..=1 => "info",
        2..=3 => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()));
    let _ = match config.logging.format {
        config::LogFormat::Json => builder.json().try_init(),
        config::LogFormat::Text => builder.try_init(),
    };
}

/// Runs the proxy with a validated configuration (see [`proxy`]).
fn run(config: Config) -> anyhow::Result<()> {
    proxy::run(config)
}
