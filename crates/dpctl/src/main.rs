//! `dpctl`: configure and inspect a running `dataplaned` over its control socket.
//!
//! ```sh
//! dpctl route add 10.0.1.1/32 via 192.168.11.10 port0 out-labels 100
//! dpctl label add 100 eos via 192.168.11.8 port0 out-labels 100
//! dpctl show run
//! dpctl --json show interfaces
//! ```
//!
//! Exit status 0 when the daemon applied the command (or answered the show);
//! otherwise one `dpctl: error: ...` line on stderr and 1 (dataplaned refused the
//! request), 2 (a command or option dpctl does not know; nothing sent) or 3 (no
//! dataplaned answered).
#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{CommandFactory, Parser};

use dpctl::cli::{self, USAGE};
use dpctl::manual;
use dpctl::proto::{Client, DEFAULT_SOCKET, EXIT_BAD_COMMAND};
use dpctl::render::render;

/// Configure and inspect a running dataplaned.
#[derive(Debug, Parser)]
#[command(
    name = "dpctl",
    version,
    about = "Configure and inspect a running dataplaned.",
    after_help = format!("Commands:\n{}", indent(USAGE)),
)]
struct Args {
    /// dataplaned's control socket.
    #[arg(long, value_name = "PATH", env = "DPCTL_SOCKET", default_value = DEFAULT_SOCKET)]
    socket: PathBuf,
    /// Print results as JSON (one object).
    #[arg(long)]
    json: bool,
    /// Seconds to wait for dataplaned.
    #[arg(long, value_name = "SECS", default_value_t = 5.0)]
    timeout: f64,
    /// The command, e.g. `show run` or `route add 10.0.1.1/32 via 192.168.11.10 port0`.
    #[arg(
        value_name = "COMMAND",
        required_unless_present_any = ["man", "completions"],
        num_args = 1..
    )]
    command: Vec<String>,
    /// (packaging) Print the man page (roff) and exit.
    #[arg(long, hide = true)]
    man: bool,
    /// (packaging) Print the completion script for SHELL and exit.
    #[arg(long, hide = true, value_name = "SHELL")]
    completions: Option<manual::Shell>,
}

fn indent(s: &str) -> String {
    s.lines().map(|l| format!("  {l}\n")).collect()
}

fn main() -> ExitCode {
    let args = Args::parse();
    if args.man || args.completions.is_some() {
        let sections = [
            ("Commands", USAGE),
            (
                "Exit status",
                "0 when dataplaned applied the command or answered the show; otherwise one\n\
                 `dpctl: error: ...` line on stderr and\n\
                 1: dataplaned refused the request (it changed nothing);\n\
                 2: a command or option dpctl does not know (nothing was sent);\n\
                 3: no dataplaned answered (not running, stale socket, permission,\n\
                 timeout, broken connection).",
            ),
            ("See also", "dataplaned(8)"),
        ];
        if let Err(e) = manual::print(Args::command(), args.completions, &sections) {
            eprintln!("dpctl: error: {e}");
            return ExitCode::FAILURE;
        }
        return ExitCode::SUCCESS;
    }
    if matches!(args.command.first().map(String::as_str), Some("help" | "?")) {
        print!("{}", indent(USAGE));
        return ExitCode::SUCCESS;
    }
    // Syntax errors are reported here, before anything is sent; the daemon parses
    // the same words again and checks them against the running router.
    // (VRF names are the daemon's: any table number checks the syntax here)
    let words = cli::vrf_words(&args.command, |_| Ok::<_, cli::ParseError>(0));
    let words = words.map_err(|e| match e {
        cli::VrfWordsError::Syntax(e) | cli::VrfWordsError::Name(e) => e,
    });
    let cmd = match words.and_then(|w| cli::parse(&w)) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("dpctl: error: {e}");
            return ExitCode::from(EXIT_BAD_COMMAND);
        }
    };
    let timeout = Duration::try_from_secs_f64(args.timeout)
        .ok()
        .filter(|t| !t.is_zero())
        .unwrap_or(Duration::from_secs(5));
    let result = Client::connect(&args.socket, timeout).and_then(|mut c| c.call(&args.command));
    match result {
        Ok(data) => {
            if args.json {
                if cmd.is_show() || !data.is_null() {
                    println!("{data}");
                }
            } else {
                print!("{}", render(&cmd, &data));
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("dpctl: error: {e}");
            ExitCode::from(e.exit_status())
        }
    }
}
