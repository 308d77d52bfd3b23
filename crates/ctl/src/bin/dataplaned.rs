//! `dataplaned`: the router daemon. Reads a TOML configuration, starts DPDK, forwards
//! and serves `dpctl` on its control socket until SIGINT/SIGTERM, prints its counters
//! and exits. SIGHUP re-reads the configuration (like `dpctl reload`).
#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{CommandFactory, Parser};
use dpctl::manual;

use ctl::config::Config;
use ctl::daemon::{RunOptions, run};

/// The router's forwarding plane.
#[derive(Debug, Parser)]
#[command(name = "dataplaned", version, about)]
struct Args {
    /// Configuration file (TOML).
    #[arg(
        short,
        long,
        value_name = "FILE",
        required_unless_present_any = ["keep_twins", "man", "completions"]
    )]
    config: Option<PathBuf>,
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
    /// Control socket for dpctl (default: `[control] socket`, else /run/dataplane/dataplaned.sock).
    #[arg(long, value_name = "PATH")]
    socket: Option<PathBuf>,
    /// Delete the Linux twins of the configuration's `[linux]` namespace, which
    /// otherwise outlive the daemon, and exit (once no daemon runs on them).
    #[arg(long, conflicts_with = "check")]
    remove_twins: bool,
    /// (internal) Run as the twins' keeper of namespace NETNS.
    #[arg(long, hide = true, value_name = "NETNS", requires = "netns_ino")]
    keep_twins: Option<String>,
    /// (internal) The keeper's namespace inode.
    #[arg(long, hide = true)]
    netns_ino: Option<u64>,
    /// (internal) The twins the keeper holds.
    #[arg(hide = true, requires = "keep_twins")]
    twins: Vec<String>,
    /// (packaging) Print the man page (roff) and exit.
    #[arg(long, hide = true)]
    man: bool,
    /// (packaging) Print the completion script for SHELL and exit.
    #[arg(long, hide = true, value_name = "SHELL")]
    completions: Option<manual::Shell>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    if args.man || args.completions.is_some() {
        let sections = [
            (
                "Signals",
                "SIGHUP     re-read the configuration and apply the difference (dpctl reload)\n\
                 SIGINT, SIGTERM  stop; the Linux twins stay (see --remove-twins)",
            ),
            (
                "Files",
                "/etc/dataplane/dataplaned.toml  the configuration of the packaged service\n\
                 /run/dataplane/dataplaned.sock  the control socket dpctl talks to ([control] socket)",
            ),
            ("See also", "dpctl(8), bird(8), zebra(8)"),
        ];
        if let Err(e) = manual::print(Args::command(), args.completions, &sections) {
            eprintln!("dataplaned: error: {e}");
            return ExitCode::FAILURE;
        }
        return ExitCode::SUCCESS;
    }
    if let (Some(netns), Some(ino)) = (&args.keep_twins, args.netns_ino) {
        return match ctl::linux::keeper::run(netns, ino, &args.twins) {
            Ok(()) => ExitCode::SUCCESS,
            Err(_) => ExitCode::FAILURE,
        };
    }
    let Some(config) = args.config.clone() else {
        eprintln!("dataplaned: error: --config is required");
        return ExitCode::FAILURE;
    };
    let path = config.display().to_string();
    let result = Config::load_planned(&config)
        .map_err(anyhow::Error::from)
        .and_then(|(cfg, plan)| {
            if args.remove_twins {
                return remove_twins(&cfg);
            }
            ctl::log::filter(&cfg.log).map_err(anyhow::Error::msg)?;
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
                config_path: Some(config.clone()),
                socket: args.socket.clone().unwrap_or_else(|| plan.socket.clone()),
                keeper: std::env::current_exe().ok(),
            };
            run(&cfg, plan, &opts)
        });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("dataplaned: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// `--remove-twins`: the keeper of the `[linux]` namespace lets go of the twins.
fn remove_twins(config: &Config) -> anyhow::Result<()> {
    let Some(linux) = &config.linux else {
        anyhow::bail!("no [linux] section: there are no twins");
    };
    let netns = &linux.netns;
    if ctl::linux::keeper::release(netns)? {
        println!(
            "dataplaned: the twins in netns {netns} are let go of \
             (deleted now, or when the daemon using them stops)"
        );
    } else {
        println!("dataplaned: no twins kept in netns {netns}");
    }
    Ok(())
}
