//! The daemon's log: `tracing` events written to stderr, one line each, never
//! per packet.
//!
//! ```toml
//! [log]
//! level = "info"            # a filter: "warn", "info,ctl::linux=debug"; RUST_LOG wins
//! format = "plain"          # or "json" (one object per line)
//! ```
//!
//! Plain lines read `dataplaned: [warning: |error: |debug: ]message key=value`.
//! Under systemd (`JOURNAL_STREAM` set) each line starts with its syslog
//! priority (`<4>`), which journald takes as the entry's level; journald adds
//! the time itself.

use std::fmt;
use std::time::{Duration, Instant};

use serde::Deserialize;
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::filter::ParseError;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// `[log]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogSection {
    /// What is logged, as a `RUST_LOG` filter (the environment's wins).
    #[serde(default = "default_level")]
    pub level: String,
    /// Line format.
    #[serde(default)]
    pub format: LogFormat,
}

impl Default for LogSection {
    fn default() -> Self {
        LogSection {
            level: default_level(),
            format: LogFormat::default(),
        }
    }
}

fn default_level() -> String {
    "info".into()
}

/// `[log] format`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// One plain line per event (journald-friendly).
    #[default]
    Plain,
    /// One JSON object per line.
    Json,
}

/// A log filter that does not parse.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    /// `[log] level`.
    #[error("[log] level {level:?}: {error}")]
    Level {
        /// The filter given.
        level: String,
        /// Why it does not parse.
        error: ParseError,
    },
    /// The environment's `RUST_LOG`.
    #[error("RUST_LOG {value:?}: {error}")]
    Env {
        /// The filter given.
        value: String,
        /// Why it does not parse.
        error: ParseError,
    },
}

/// The filter `[log] level` names, checked (`--check` reports a bad one).
pub fn filter(section: &LogSection) -> Result<EnvFilter, LogError> {
    EnvFilter::builder()
        .parse(&section.level)
        .map_err(|error| LogError::Level {
            level: section.level.clone(),
            error,
        })
}

/// Installs the process's logger: `RUST_LOG` if set, else `[log] level`.
/// Once per process; later calls do nothing.
pub fn init(section: &LogSection) -> Result<(), LogError> {
    let filter = match std::env::var("RUST_LOG") {
        Ok(v) if !v.trim().is_empty() => {
            EnvFilter::builder()
                .parse(&v)
                .map_err(|error| LogError::Env {
                    value: v.clone(),
                    error,
                })?
        }
        _ => filter(section)?,
    };
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match section.format {
        LogFormat::Plain => builder
            .event_format(Plain {
                journald: std::env::var_os("JOURNAL_STREAM").is_some(),
            })
            .try_init(),
        LogFormat::Json => builder.json().with_current_span(false).try_init(),
    };
    Ok(())
}

/// The plain line format.
struct Plain {
    /// Prefix each line with its syslog priority.
    journald: bool,
}

impl<S, N> FormatEvent<S, N> for Plain
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut w: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let level = *event.metadata().level();
        if self.journald {
            let prio = match level {
                Level::ERROR => 3,
                Level::WARN => 4,
                Level::INFO => 6,
                _ => 7,
            };
            write!(w, "<{prio}>")?;
        }
        let tag = match level {
            Level::ERROR => "error: ",
            Level::WARN => "warning: ",
            Level::INFO => "",
            Level::DEBUG => "debug: ",
            Level::TRACE => "trace: ",
        };
        write!(w, "dataplaned: {tag}")?;
        ctx.format_fields(w.by_ref(), event)?;
        writeln!(w)
    }
}

/// At most `burst` events per `window`; what is left out is counted and said
/// with the next event let through (refused input arrives in floods).
#[derive(Debug)]
pub struct RateLimit {
    window: Duration,
    burst: u32,
    start: Option<Instant>,
    used: u32,
    suppressed: u64,
}

impl RateLimit {
    /// `burst` events per `window`.
    pub const fn new(burst: u32, window: Duration) -> Self {
        RateLimit {
            window,
            burst,
            start: None,
            used: 0,
            suppressed: 0,
        }
    }

    /// Whether an event may be logged now: `Some(n)` with the number left out
    /// since the last one logged, `None` to leave this one out.
    pub fn allow(&mut self, now: Instant) -> Option<u64> {
        if self
            .start
            .is_none_or(|s| now.duration_since(s) >= self.window)
        {
            self.start = Some(now);
            self.used = 0;
        }
        if self.used < self.burst {
            self.used += 1;
            Some(std::mem::take(&mut self.suppressed))
        } else {
            self.suppressed += 1;
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_limit_lets_a_burst_through_per_window_and_counts_the_rest() {
        let mut r = RateLimit::new(2, Duration::from_secs(10));
        let t0 = Instant::now();
        assert_eq!(r.allow(t0), Some(0));
        assert_eq!(r.allow(t0), Some(0));
        assert_eq!(r.allow(t0 + Duration::from_secs(1)), None);
        assert_eq!(r.allow(t0 + Duration::from_secs(2)), None);
        assert_eq!(r.allow(t0 + Duration::from_secs(10)), Some(2));
        assert_eq!(r.allow(t0 + Duration::from_secs(11)), Some(0));
        assert_eq!(r.allow(t0 + Duration::from_secs(12)), None);
    }

    /// A writer into a shared buffer.
    #[derive(Clone, Default)]
    struct Buf(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

    impl std::io::Write for Buf {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn lines(journald: bool) -> String {
        let buf = Buf::default();
        let out = buf.clone();
        let sub = tracing_subscriber::fmt()
            .with_env_filter(EnvFilter::new("debug"))
            .event_format(Plain { journald })
            .with_writer(move || out.clone())
            .finish();
        tracing::subscriber::with_default(sub, || {
            tracing::info!("forwarding");
            tracing::warn!(port = 1, "link down");
            tracing::error!("gone");
            tracing::trace!("not shown");
        });
        let v = buf.0.lock().unwrap().clone();
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn plain_lines_name_the_daemon_and_the_level_and_journald_gets_priorities() {
        assert_eq!(
            lines(false),
            "dataplaned: forwarding\n\
             dataplaned: warning: link down port=1\n\
             dataplaned: error: gone\n"
        );
        assert_eq!(
            lines(true),
            "<6>dataplaned: forwarding\n\
             <4>dataplaned: warning: link down port=1\n\
             <3>dataplaned: error: gone\n"
        );
    }

    #[test]
    fn a_bad_level_is_refused_with_its_text() {
        let bad = LogSection {
            level: "info,ctl=loud".into(),
            ..LogSection::default()
        };
        assert!(filter(&bad).unwrap_err().to_string().contains("ctl=loud"));
        assert!(filter(&LogSection::default()).is_ok());
    }
}
