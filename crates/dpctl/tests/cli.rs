//! The `dpctl` binary on its own: help, syntax errors found before anything is
//! sent, and a clear error when no daemon answers.

use std::process::Command;

fn dpctl(args: &[&str]) -> (i32, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_dpctl"))
        .args(args)
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn help_lists_every_command() {
    let (code, out, _) = dpctl(&["--help"]);
    assert_eq!(code, 0);
    for cmd in [
        "route add",
        "label add",
        "show run",
        "linux resync",
        "router-id",
    ] {
        assert!(out.contains(cmd), "{cmd} missing from --help:\n{out}");
    }
    let (code, out, _) = dpctl(&["help"]);
    assert_eq!(code, 0);
    assert!(out.contains("sflow enable"), "{out}");
}

#[test]
fn a_syntax_error_is_reported_without_a_daemon() {
    let (code, out, err) = dpctl(&[
        "--socket",
        "/nonexistent/ctl.sock",
        "route",
        "add",
        "10.0.0.0/33",
    ]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.starts_with("dpctl: error: ") && err.contains("10.0.0.0/33"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn no_daemon_is_one_clear_error() {
    let (code, _, err) = dpctl(&[
        "--socket",
        "/nonexistent/ctl.sock",
        "--timeout",
        "0.2",
        "show",
        "run",
    ]);
    assert_eq!(code, 1);
    assert!(
        err.starts_with("dpctl: error: ") && err.contains("/nonexistent/ctl.sock"),
        "{err}"
    );
}
