//! `dataplaned`: the router daemon. Reads a TOML configuration, starts DPDK, forwards
//! and serves `dpctl` on its control socket until SIGINT/SIGTERM, prints its counters
//! and exits. SIGHUP re-reads the configuration (like `dpctl reload`).
#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;

use ctl::config::Config;
use ctl::daemon::{RunOptions, run};

/// The router's forwarding plane.
#[derive(Debug, Parser)]
#[command(name = "dataplaned", version, about)]
struct Args {
    /// Configuration file (TOML).
    #[arg(short, long, value_name = "FILE")]
    config: PathBuf,
    /// Check the configuration and exit.
    #[arg(long)]
    check: bool,
    /// Print a counters line every N milliseconds.
    #[arg(long, value_name = "MS")]
    stats_interval_ms: Option<u64>,
    /// Counters lines as JSON objects.
    #[arg(long)]
    stats_json: bool,
    /// Stop by itself after N seconds.
    #[arg(long, value_name = "SECS")]
    duration: Option<f64>,
    /// Control socket for dpctl (default: `[control] socket`, else /run/dataplaned.sock).
    #[arg(long, value_name = "PATH")]
    socket: Option<PathBuf>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let path = args.config.display().to_string();
    let result = Config::load(&args.config)
        .and_then(|c| c.plan(&path).map(|p| (c, p)))
        .map_err(anyhow::Error::from)
        .and_then(|(config, plan)| {
            if args.check {
                println!(
                    "dataplaned: {path}: ok ({} ports, {} workers)",
                    plan.ports.len(),
                    plan.workers
                );
                return Ok(());
            }
            let opts = RunOptions {
                stats_interval: args.stats_interval_ms.map(Duration::from_millis),
                stats_json: args.stats_json,
                duration: args
                    .duration
                    .filter(|d| d.is_finite() && *d > 0.0)
                    .map(Duration::from_secs_f64),
                config_path: Some(args.config.clone()),
                socket: args.socket.clone().unwrap_or_else(|| plan.socket.clone()),
            };
            run(&config, &plan, &opts)
        });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("dataplaned: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
