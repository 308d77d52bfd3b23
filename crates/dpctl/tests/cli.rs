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
    assert_eq!(code, 2, "a bad command: {out}{err}");
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
    assert_eq!(code, 3, "no daemon");
    assert!(
        err.starts_with("dpctl: error: ") && err.contains("/nonexistent/ctl.sock"),
        "{err}"
    );
}

#[test]
fn man_page_and_completions() {
    let (code, man, _) = dpctl(&["--man"]);
    assert_eq!(code, 0);
    assert!(man.contains(".TH dpctl 8"), "{man}");
    for section in [
        "NAME",
        "SYNOPSIS",
        "OPTIONS",
        "COMMANDS",
        "EXIT STATUS",
        "SEE ALSO",
    ] {
        assert!(
            man.contains(&format!(".SH {section}\n")),
            "{section} missing"
        );
    }
    assert!(man.contains("route add PREFIX"), "the command list");
    // Every roff line that starts with a control character is a request this
    // page means (no text line begins with '.' or '\'' by accident).
    let requests = [
        ".ie", ".el", ".TH", ".SH", ".TP", ".RS", ".RE", ".nf", ".fi", ".PP", ".br",
    ];
    for l in man
        .lines()
        .filter(|l| l.starts_with('.') || l.starts_with('\''))
    {
        assert!(
            requests.iter().any(|r| l.starts_with(r)),
            "stray request: {l:?}"
        );
    }
    let (code, bash, _) = dpctl(&["--completions", "bash"]);
    assert_eq!(code, 0);
    assert!(
        bash.contains("complete -F _dpctl") && bash.contains("--socket"),
        "{bash}"
    );
    let (code, zsh, _) = dpctl(&["--completions", "zsh"]);
    assert_eq!(code, 0);
    assert!(
        zsh.starts_with("#compdef dpctl") && zsh.contains("--json"),
        "{zsh}"
    );
    let (code, _, err) = dpctl(&["--completions", "fish"]);
    assert_eq!(code, 2, "clap's usage error");
    assert!(err.contains("fish"), "{err}");
}

#[test]
fn a_failed_write_is_an_error_not_a_panic() {
    for what in [&["--completions", "bash"][..], &["--man"]] {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_dpctl"))
            .args(what)
            .stdout(full)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{what:?}: {err}");
        assert!(
            err.starts_with("dpctl: error: ") && !err.contains("panicked"),
            "{err}"
        );
    }
}
