//! Man pages and shell completions of the project's binaries, printed by their
//! hidden `--man` and `--completions SHELL` options (packaging writes them to
//! files).

use std::io::{self, Write};

/// The shells completions are written for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Shell {
    /// bash-completion.
    Bash,
    /// zsh's compsys.
    Zsh,
}

/// Writes `cmd`'s man page (section 8: administration) as roff, with
/// `sections` (title, preformatted text) after the options.
pub fn man(cmd: clap::Command, sections: &[(&str, &str)], out: &mut dyn Write) -> io::Result<()> {
    let cmd = cmd.after_help(None::<&str>);
    let page = clap_mangen::Man::new(cmd).section("8");
    page.render_title(out)?;
    page.render_name_section(out)?;
    page.render_synopsis_section(out)?;
    page.render_description_section(out)?;
    page.render_options_section(out)?;
    for (title, text) in sections {
        writeln!(out, ".SH {}", title.to_uppercase())?;
        writeln!(out, ".nf")?;
        for line in text.lines() {
            // roff: a leading dot or quote starts a request; backslashes escape.
            let line = line.replace('\\', "\\e");
            let line = line.replace('-', "\\-");
            if line.starts_with('.') || line.starts_with('\'') {
                writeln!(out, "\\&{line}")?;
            } else {
                writeln!(out, "{line}")?;
            }
        }
        writeln!(out, ".fi")?;
    }
    page.render_version_section(out)?;
    Ok(())
}

/// Writes `cmd`'s completion script for `shell`.
pub fn completions(mut cmd: clap::Command, shell: Shell, out: &mut dyn Write) -> io::Result<()> {
    let name = cmd.get_name().to_string();
    let shell = match shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
    };
    // Generated in memory: clap_complete panics on a failed write.
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut cmd, name, &mut buf);
    out.write_all(&buf)
}

/// What the hidden options print on stdout: `shell`'s completions if given,
/// else the man page with `sections`.
pub fn print(
    cmd: clap::Command,
    shell: Option<Shell>,
    sections: &[(&str, &str)],
) -> io::Result<()> {
    let mut out = io::stdout().lock();
    match shell {
        Some(shell) => completions(cmd, shell, &mut out),
        None => man(cmd, sections, &mut out),
    }
}
