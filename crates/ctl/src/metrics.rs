//! Prometheus metrics (`[metrics] listen`): what a scrape shows, and the small
//! HTTP server that answers `GET /metrics` on the control thread's runtime.
//!
//! A scrape is a [`Scrape`] filled by the service from the same counters `dpctl
//! show` reads (the workers' atomics, the learners' and the sFlow agent's
//! counters), then encoded with `prometheus-client` in the OpenMetrics text
//! format. Counters are never reset: `clear counters` moves only `dpctl show`'s
//! baseline. Labels are bounded by configuration (interfaces, workers, nodes,
//! reasons, sources), never by traffic or routes.
//!
//! The server only moves bytes: a request becomes one message to the control
//! loop, which fills the scrape between its other work. The punt path has its
//! own thread and the workers only ever see their atomics read, so a scrape
//! delays neither.

use std::borrow::Cow;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{Semaphore, mpsc, oneshot};

/// Every metric's name starts with this (then `_`).
pub const PREFIX: &str = "dataplane";

/// Label pairs of one sample.
type Labels = Vec<(Cow<'static, str>, Cow<'static, str>)>;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Value {
    Counter(u64),
    Gauge(f64),
    Info,
}

#[derive(Debug)]
struct Family {
    name: &'static str,
    help: &'static str,
    samples: Vec<(Labels, Value)>,
}

/// The metrics of one scrape, filled by the service and then encoded.
#[derive(Debug, Default)]
pub struct Scrape {
    families: Vec<Family>,
    index: HashMap<&'static str, usize>,
}

impl Scrape {
    /// An empty scrape.
    pub fn new() -> Scrape {
        Scrape::default()
    }

    fn push(
        &mut self,
        name: &'static str,
        help: &'static str,
        labels: &[(&'static str, &str)],
        v: Value,
    ) {
        let k = *self.index.entry(name).or_insert_with(|| {
            self.families.push(Family {
                name,
                help,
                samples: Vec::new(),
            });
            self.families.len() - 1
        });
        let labels = labels
            .iter()
            .map(|(k, v)| (Cow::Borrowed(*k), Cow::Owned(escape(v))))
            .collect();
        self.families[k].samples.push((labels, v));
    }

    /// A counter sample: `name` without the `_total` the encoding adds.
    pub fn counter(
        &mut self,
        name: &'static str,
        help: &'static str,
        labels: &[(&'static str, &str)],
        v: u64,
    ) {
        self.push(name, help, labels, Value::Counter(v));
    }

    /// A gauge sample.
    pub fn gauge(
        &mut self,
        name: &'static str,
        help: &'static str,
        labels: &[(&'static str, &str)],
        v: f64,
    ) {
        self.push(name, help, labels, Value::Gauge(v));
    }

    /// An info sample (`name_info{labels} 1`): `name` without `_info`.
    pub fn info(
        &mut self,
        name: &'static str,
        help: &'static str,
        labels: &[(&'static str, &str)],
    ) {
        self.push(name, help, labels, Value::Info);
    }

    /// The exposition: OpenMetrics text (`# EOF` included), or with
    /// `openmetrics` false the Prometheus text format 0.0.4 that older
    /// scrapers and `promtool check metrics` read (a counter's `# TYPE` names
    /// the `_total` series, an info is a gauge, no `# EOF`).
    pub fn encode(self, openmetrics: bool) -> String {
        let kinds: HashMap<String, Value> = self
            .families
            .iter()
            .filter_map(|f| Some((format!("{PREFIX}_{}", f.name), f.samples.first()?.1)))
            .collect();
        let mut registry = Registry::with_prefix(PREFIX);
        registry.register_collector(Box::new(self));
        let mut om = String::new();
        // Writing to a String cannot fail; an encoding error would be a bug in a
        // name, and then the scrape says so instead of panicking.
        if let Err(e) = prometheus_client::encoding::text::encode(&mut om, &registry) {
            return format!("# encoding the metrics failed: {e}\n");
        }
        if openmetrics {
            return om;
        }
        let mut out = String::with_capacity(om.len());
        for line in om.lines() {
            if line == "# EOF" {
                continue;
            }
            let meta = line
                .strip_prefix("# HELP ")
                .map(|r| ("# HELP ", r))
                .or_else(|| line.strip_prefix("# TYPE ").map(|r| ("# TYPE ", r)));
            if let Some((tag, rest)) = meta {
                let (name, tail) = rest.split_once(' ').unwrap_or((rest, ""));
                match kinds.get(name) {
                    Some(Value::Counter(_)) => {
                        out.push_str(&format!("{tag}{name}_total {tail}\n"));
                        continue;
                    }
                    Some(Value::Info) => {
                        let tail = if tag == "# TYPE " { "gauge" } else { tail };
                        out.push_str(&format!("{tag}{name}_info {tail}\n"));
                        continue;
                    }
                    _ => {}
                }
            }
            out.push_str(line);
            out.push('\n');
        }
        out
    }
}

impl Collector for Scrape {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        for f in &self.families {
            let ty = match f.samples.first().map(|s| s.1) {
                Some(Value::Counter(_)) => MetricType::Counter,
                Some(Value::Gauge(_)) => MetricType::Gauge,
                Some(Value::Info) => MetricType::Info,
                None => continue,
            };
            let mut m = encoder.encode_descriptor(f.name, f.help, None, ty)?;
            if let [(labels, v)] = f.samples.as_slice() {
                if labels.is_empty() || *v == Value::Info {
                    one(m, labels, *v)?;
                    continue;
                }
            }
            for (labels, v) in &f.samples {
                match v {
                    Value::Info => m.encode_info(labels)?,
                    _ => one(m.encode_family(labels)?, &[], *v)?,
                }
            }
        }
        Ok(())
    }
}

/// One sample: its own labels were encoded already, but an info's.
fn one(
    mut m: prometheus_client::encoding::MetricEncoder<'_>,
    labels: &[(Cow<'static, str>, Cow<'static, str>)],
    v: Value,
) -> Result<(), std::fmt::Error> {
    match v {
        Value::Counter(n) => ConstCounter::new(n).encode(m),
        Value::Gauge(x) => ConstGauge::new(x).encode(m),
        Value::Info => m.encode_info(&labels.to_vec()),
    }
}

/// A label value as the text format writes it (the encoder writes it as given).
fn escape(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// Asks the control loop for one scrape's text: OpenMetrics or not, and where
/// the text goes.
pub type ScrapeRequest = (bool, oneshot::Sender<String>);

/// At most this many connections are served at once; more wait in the backlog.
const MAX_CONNECTIONS: usize = 16;
/// A request head longer than this is refused.
const MAX_HEAD: usize = 8192;
/// A client that sends no complete request head in this long is dropped.
const READ_TIMEOUT: Duration = Duration::from_secs(5);

/// Binds the metrics address (before the runtime starts, so a taken port stops
/// the daemon at start-up with a clear message).
pub fn bind(addr: SocketAddr) -> anyhow::Result<std::net::TcpListener> {
    use anyhow::Context;
    let l = std::net::TcpListener::bind(addr)
        .with_context(|| format!("[metrics] listen {addr}: cannot bind"))?;
    l.set_nonblocking(true)
        .with_context(|| format!("[metrics] listen {addr}"))?;
    Ok(l)
}

/// Serves HTTP on `listener` until the runtime stops: `GET /metrics` (and
/// `HEAD`) is a scrape from the control loop through `scrapes`; `/` points there.
pub async fn serve(listener: tokio::net::TcpListener, scrapes: mpsc::Sender<ScrapeRequest>) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let Ok(permit) = slots.clone().acquire_owned().await else {
            return;
        };
        match listener.accept().await {
            Ok((stream, _)) => {
                let scrapes = scrapes.clone();
                tokio::spawn(async move {
                    let _ =
                        tokio::time::timeout(READ_TIMEOUT * 2, connection(stream, scrapes)).await;
                    drop(permit);
                });
            }
            Err(e) => {
                tracing::warn!("metrics: accept: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// One request, one answer, then the connection closes.
async fn connection(mut stream: tokio::net::TcpStream, scrapes: mpsc::Sender<ScrapeRequest>) {
    let mut head = Vec::with_capacity(512);
    let read = tokio::time::timeout(READ_TIMEOUT, async {
        let mut buf = [0u8; 1024];
        loop {
            if head.windows(4).any(|w| w == b"\r\n\r\n") || head.windows(2).any(|w| w == b"\n\n") {
                return true;
            }
            if head.len() > MAX_HEAD {
                return false;
            }
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return false,
                Ok(n) => head.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await;
    let (status, ctype, body, head_only) = match read {
        Ok(true) => route(&head, &scrapes, wants_openmetrics(&head)).await,
        Ok(false) if head.len() > MAX_HEAD => (
            "431 Request Header Fields Too Large",
            "text/plain",
            "request head too long\n".to_string(),
            false,
        ),
        _ => return,
    };
    let reply = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(reply.as_bytes()).await;
    if !head_only {
        let _ = stream.write_all(body.as_bytes()).await;
    }
    let _ = stream.shutdown().await;
}

const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
const TEXT_004: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Whether the request's `Accept` names OpenMetrics (Prometheus asks for it
/// first); anything else gets the 0.0.4 text format.
fn wants_openmetrics(head: &[u8]) -> bool {
    String::from_utf8_lossy(head).lines().any(|l| {
        l.split_once(':').is_some_and(|(k, v)| {
            k.trim().eq_ignore_ascii_case("accept") && v.contains("application/openmetrics-text")
        })
    })
}

/// The answer to a request head: status, content type, body, HEAD.
async fn route(
    head: &[u8],
    scrapes: &mpsc::Sender<ScrapeRequest>,
    openmetrics: bool,
) -> (&'static str, &'static str, String, bool) {
    let line = head.split(|&b| b == b'\n').next().unwrap_or_default();
    let line = String::from_utf8_lossy(line);
    let mut words = line.split_whitespace();
    let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let path = target.split('?').next().unwrap_or("");
    let head_only = method == "HEAD";
    if method != "GET" && !head_only {
        return (
            "405 Method Not Allowed",
            "text/plain",
            "only GET and HEAD\n".into(),
            false,
        );
    }
    match path {
        "/metrics" => {
            let (tx, rx) = oneshot::channel();
            if scrapes.send((openmetrics, tx)).await.is_err() {
                return unavailable(head_only);
            }
            let ctype = if openmetrics { OPENMETRICS } else { TEXT_004 };
            match rx.await {
                Ok(text) => ("200 OK", ctype, text, head_only),
                Err(_) => unavailable(head_only),
            }
        }
        "/" => (
            "200 OK",
            "text/plain",
            "dataplaned: metrics at /metrics\n".into(),
            head_only,
        ),
        _ => (
            "404 Not Found",
            "text/plain",
            "not found; metrics are at /metrics\n".into(),
            head_only,
        ),
    }
}

fn unavailable(head_only: bool) -> (&'static str, &'static str, String, bool) {
    (
        "503 Service Unavailable",
        "text/plain",
        "dataplaned is stopping\n".into(),
        head_only,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scrape_encodes_counters_gauges_and_info_with_labels() {
        let mut s = Scrape::new();
        s.counter("drops", "Packets dropped.", &[("reason", "ttl_expired")], 3);
        s.counter("drops", "Packets dropped.", &[("reason", "no_route")], 0);
        s.gauge("routes", "Routes.", &[("source", "kernel")], 12.0);
        s.info(
            "build",
            "Build.",
            &[("version", "1.2.3"), ("mode", "router")],
        );
        s.gauge("uptime_seconds", "Up.", &[], 1.5);
        let text = s.encode(true);
        assert!(text.contains("# TYPE dataplane_drops counter\n"), "{text}");
        assert!(
            text.contains("dataplane_drops_total{reason=\"ttl_expired\"} 3\n"),
            "{text}"
        );
        assert!(
            text.contains("dataplane_drops_total{reason=\"no_route\"} 0\n"),
            "{text}"
        );
        assert!(
            text.contains("dataplane_routes{source=\"kernel\"} 12"),
            "{text}"
        );
        assert!(
            text.contains("dataplane_build_info{version=\"1.2.3\",mode=\"router\"} 1\n"),
            "{text}"
        );
        assert!(text.contains("dataplane_uptime_seconds 1.5\n"), "{text}");
        assert!(text.ends_with("# EOF\n"), "{text}");
    }

    #[test]
    fn the_004_text_names_the_total_series_and_has_no_eof() {
        let mut s = Scrape::new();
        s.counter("drops", "Packets dropped.", &[("reason", "ttl_expired")], 3);
        s.info("build", "Build.", &[("version", "1.2.3")]);
        s.gauge("routes", "Routes.", &[], 2.0);
        let text = s.encode(false);
        let want = "# HELP dataplane_drops_total Packets dropped.\n\
                    # TYPE dataplane_drops_total counter\n\
                    dataplane_drops_total{reason=\"ttl_expired\"} 3\n\
                    # HELP dataplane_build_info Build.\n\
                    # TYPE dataplane_build_info gauge\n\
                    dataplane_build_info{version=\"1.2.3\"} 1\n\
                    # HELP dataplane_routes Routes.\n\
                    # TYPE dataplane_routes gauge\n\
                    dataplane_routes 2.0\n";
        assert_eq!(text, want);
        assert!(wants_openmetrics(b"GET /metrics HTTP/1.1\r\nAccept: application/openmetrics-text;version=1.0.0,text/plain;q=0.5\r\n\r\n"));
        assert!(!wants_openmetrics(
            b"GET /metrics HTTP/1.1\r\nAccept: */*\r\n\r\n"
        ));
    }

    #[test]
    fn label_values_are_escaped() {
        let mut s = Scrape::new();
        s.counter("x", "X.", &[("interface", "a\"b\\c\nd")], 1);
        let text = s.encode(true);
        assert!(
            text.contains(r#"dataplane_x_total{interface="a\"b\\c\nd"} 1"#),
            "{text}"
        );
    }
}
