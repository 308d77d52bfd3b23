//! The `dpctl` command language: words in, a [`Command`] out.
//!
//! The same parser runs twice: in `dpctl`, so a typo is reported before anything is
//! sent, and in the daemon, which parses the words it receives again and is the
//! authority (any client may talk to the socket). Everything that needs the running
//! router (interface names, existing routes) is checked by the daemon.
//!
//! Syntax follows VPP and the Linux `ip` tool where they agree; [`USAGE`] lists it.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr};

use fib::{IpPrefix, TableId};

use crate::parse::{parse_addr_len, parse_mac, parse_prefix};
use crate::spec::{LabelSpec, RouteTarget, Special, ViaSpec, check_in_label};

/// Every command, one per line, as `dpctl help` prints it.
pub const USAGE: &str = "\
route add PREFIX [table N] via GATEWAY [INTERFACE] [out-labels L...] [weight W] [via ...]
route add PREFIX [table N] via GATEWAY next-hop-table N [out-labels L...]   (the gateway looked up in table N: L3VPN)
   (wherever `table N` is written, `vrf NAME` may be; `next-hop-vrf NAME` for `next-hop-table N`)
route add PREFIX [table N] via INTERFACE              (attached)
route add PREFIX [table N] blackhole|unreachable|prohibit
route replace ...                                     (same as add; replaces an existing route)
route del PREFIX [table N]
route show [PREFIX|ADDRESS] [table N]
label add LABEL eos|non-eos via GATEWAY INTERFACE [out-labels L...] [via ...] [pipe]
label add LABEL eos via ip4-lookup [table N] [pipe]   (no table: the receiving interface's)
label add LABEL eos via ip6-lookup|ip-lookup [table N] [pipe]   (IPv6; either by the payload's version)
label add LABEL non-eos pop
label add LABEL eos|non-eos drop|punt
label replace ...                                     (same as add; replaces an existing entry)
label del LABEL eos|non-eos [via GATEWAY INTERFACE [out-labels L...]]...
label show [LABEL]
interface address add|del INTERFACE ADDRESS/LEN
interface mtu INTERFACE MTU
interface up|down INTERFACE
interface table INTERFACE N|vrf NAME                  (bind to table N, both families; remove its addresses first)
table add|del N                                       (create a table of both families; delete an empty one)
vrf add NAME table N                                  (name table N VRF NAME, creating it)
vrf del NAME                                          (delete an empty VRF and its table)
show vrf                                              (VRFs: tables, interfaces, route counts)
pw add NAME interface INTERFACE neighbor A.B.C.D in-label L out-label L [no-control-word]
                                                      (VPWS: the circuit's frames to the PE under label L)
pw del NAME
show pw                                               (pseudowires: labels, state, counters)
interface sub add INTERFACE VLAN                      (creates INTERFACE.VLAN)
interface sub del INTERFACE.VLAN
neighbor add INTERFACE ADDRESS [MAC]                  (either family; no MAC: resolved by ARP or ND)
neighbor del INTERFACE ADDRESS [MAC]
neighbor show
show interfaces [INTERFACE]
show interfaces address
show run
show errors
show trace
show version
show sflow
show linux                                             (TAP twins, punts, netlink learner)
show fpm                                               (zebra's FPM connection)
linux resync                                          (dump the namespace, apply it with mark-and-sweep)
router-id A.B.C.D|none                                (ICMP/ARP source of unnumbered interfaces; none: the file's or lo's again)
sflow enable INTERFACE [rate N] [direction rx|tx|both]   (default rate 1000, rx)
sflow disable INTERFACE
sflow collector add|del IP[:PORT]                     (port 6343 when omitted)
sflow polling SECS                                    (0: no counter samples)
sflow header-bytes N                                  (64..256)
sflow max-samples N                                   (exported per second; 0: no limit)
trace add N
clear trace
clear counters
reload";

/// The sampling rate `sflow enable` uses when none is given (1-in-N).
pub const DEFAULT_SFLOW_RATE: u32 = 1000;

/// A `dpctl` request, checked for syntax.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// `route add|replace`.
    RouteAdd {
        /// Table.
        table: TableId,
        /// Prefix.
        prefix: IpPrefix,
        /// What it does.
        target: RouteTarget,
        /// `replace`: an existing route is replaced instead of refused.
        replace: bool,
    },
    /// `route del`.
    RouteDel {
        /// Table.
        table: TableId,
        /// Prefix.
        prefix: IpPrefix,
    },
    /// `route show`.
    RouteShow {
        /// Only this table.
        table: Option<TableId>,
        /// Only this prefix, or the longest match for this address.
        filter: Option<RouteFilter>,
    },
    /// `label add|replace`.
    LabelAdd {
        /// In-label.
        label: u32,
        /// Bottom-of-stack entry.
        eos: bool,
        /// What it does.
        spec: LabelSpec,
        /// `replace`.
        replace: bool,
    },
    /// `label del`.
    LabelDel {
        /// In-label.
        label: u32,
        /// Bottom-of-stack entry.
        eos: bool,
        /// Only these paths (VPP's `mpls local-label del ... via ...`): each must be
        /// one of the entry's paths; the entry goes when its last path does.
        paths: Vec<ViaSpec>,
    },
    /// `label show`.
    LabelShow {
        /// Only this label.
        label: Option<u32>,
    },
    /// `interface address add|del`.
    Address {
        /// Add or delete.
        add: bool,
        /// Interface.
        interface: String,
        /// Address (either family).
        addr: IpAddr,
        /// Prefix length.
        len: u8,
    },
    /// `interface mtu`.
    Mtu {
        /// Interface.
        interface: String,
        /// IP MTU.
        mtu: u16,
    },
    /// `interface up|down`.
    SetUp {
        /// Interface.
        interface: String,
        /// Admin state.
        up: bool,
    },
    /// `interface sub add`.
    SubAdd {
        /// Parent (a port interface).
        parent: String,
        /// VLAN id.
        vlan: u16,
    },
    /// `interface sub del`.
    SubDel {
        /// The sub-interface.
        interface: String,
    },
    /// `neighbor add`.
    NeighborAdd {
        /// Interface.
        interface: String,
        /// Address (either family).
        ip: IpAddr,
        /// MAC; `None` leaves it to ARP.
        mac: Option<[u8; 6]>,
    },
    /// `neighbor del`.
    NeighborDel {
        /// Interface.
        interface: String,
        /// Address (either family).
        ip: IpAddr,
        /// Must match, if given.
        mac: Option<[u8; 6]>,
    },
    /// `neighbor show`.
    NeighborShow,
    /// `show interfaces`.
    ShowInterfaces {
        /// Only this one.
        name: Option<String>,
    },
    /// `show interfaces address`.
    ShowAddresses,
    /// `show run`.
    ShowRun,
    /// `show errors`.
    ShowErrors,
    /// `show trace`.
    ShowTrace,
    /// `show version`.
    ShowVersion,
    /// `trace add N`.
    TraceAdd(u32),
    /// `clear trace`.
    TraceClear,
    /// `clear counters`.
    ClearCounters,
    /// `reload`.
    Reload,
    /// `linux resync`.
    LinuxResync,
    /// `router-id A.B.C.D|none`: the loopback address unnumbered interfaces
    /// use; `none` withdraws dpctl's, revealing the file's or the learner's.
    RouterId(Option<Ipv4Addr>),
    /// `interface table INTERFACE N`.
    InterfaceTable {
        /// Interface.
        interface: String,
        /// Table (both families).
        table: TableId,
    },
    /// `vrf add NAME table N`.
    VrfAdd {
        /// The VRF's name.
        name: String,
        /// Its table (created if it does not exist).
        table: TableId,
    },
    /// `vrf del NAME`.
    VrfDel(String),
    /// `show vrf`.
    ShowVrf,
    /// `pw add NAME interface IF neighbor A.B.C.D in-label L out-label L
    /// [control-word|no-control-word]`.
    PwAdd {
        /// Its name.
        name: String,
        /// The attachment circuit (a port or sub-interface without addresses).
        interface: String,
        /// The remote PE.
        neighbor: Ipv4Addr,
        /// The label this router gives it.
        in_label: u32,
        /// The label the remote PE gave it.
        out_label: u32,
        /// With the RFC 4385 control word.
        control_word: bool,
    },
    /// `pw del NAME`.
    PwDel(String),
    /// `show pw`.
    ShowPw,
    /// `table add N`.
    TableAdd(TableId),
    /// `table del N`.
    TableDel(TableId),
    /// `sflow enable`.
    SflowEnable {
        /// Interface.
        interface: String,
        /// 1-in-N.
        rate: u32,
        /// Directions sampled.
        direction: sflow::Directions,
    },
    /// `sflow disable`.
    SflowDisable {
        /// Interface.
        interface: String,
    },
    /// `sflow collector add|del`.
    SflowCollector {
        /// Add or delete.
        add: bool,
        /// `IP[:PORT]` (or a host name).
        spec: String,
    },
    /// `sflow polling SECS`.
    SflowPolling(u64),
    /// `sflow header-bytes N`.
    SflowHeaderBytes(u16),
    /// `sflow max-samples N` (per second; 0 = no limit).
    SflowMaxSamples(u32),
    /// `show sflow`.
    ShowSflow,
    /// `show linux`.
    ShowLinux,
    /// `show fpm`.
    ShowFpm,
}

/// `route show` filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RouteFilter {
    /// Exactly this prefix.
    Prefix(IpPrefix),
    /// The route that forwards this address (longest match).
    Address(IpAddr),
}

/// Most packets one `trace add` asks for (per worker; a worker keeps 1024 records).
pub const MAX_TRACE: u32 = 1024;

impl Command {
    /// True for commands that only read (their output has a `--json` form).
    pub fn is_show(&self) -> bool {
        matches!(
            self,
            Command::RouteShow { .. }
                | Command::LabelShow { .. }
                | Command::NeighborShow
                | Command::ShowInterfaces { .. }
                | Command::ShowAddresses
                | Command::ShowRun
                | Command::ShowErrors
                | Command::ShowTrace
                | Command::ShowVersion
                | Command::ShowSflow
                | Command::ShowLinux
                | Command::ShowFpm
        )
    }
}

/// A command that does not parse. The message says what is wrong and what was
/// expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError(pub String);

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ParseError {}

type Result<T> = std::result::Result<T, ParseError>;

/// Words of a command with a cursor, and the usage line to quote in errors.
struct Words<'a> {
    w: &'a [String],
    i: usize,
    usage: &'static str,
}

impl<'a> Words<'a> {
    fn peek(&self) -> Option<&'a str> {
        self.w.get(self.i).map(String::as_str)
    }

    fn next(&mut self) -> Option<&'a str> {
        let w = self.peek();
        self.i += usize::from(w.is_some());
        w
    }

    fn err<T>(&self, msg: impl Into<String>) -> Result<T> {
        Err(ParseError(format!(
            "{} (usage: {})",
            msg.into(),
            self.usage
        )))
    }

    fn expect(&mut self, what: &str) -> Result<&'a str> {
        match self.next() {
            Some(w) => Ok(w),
            None => self.err(format!("missing {what}")),
        }
    }

    fn end(&self) -> Result<()> {
        match self.peek() {
            None => Ok(()),
            Some(w) => self.err(format!("unexpected {w:?}")),
        }
    }

    fn number<T: std::str::FromStr>(&mut self, what: &str) -> Result<T> {
        let w = self.expect(what)?;
        w.parse()
            .map_err(|_| ParseError(format!("{what} {w:?} is not a number")))
    }
}

fn bad(msg: impl Into<String>) -> ParseError {
    ParseError(msg.into())
}

fn prefix(w: &str) -> Result<IpPrefix> {
    parse_prefix(w).map_err(|e| {
        bad(if w.contains('/') {
            format!("{e} (want a.b.c.d/len or x:y::z/len with no host bits, e.g. 10.0.1.0/24)")
        } else {
            format!("{e}: a prefix needs a length (e.g. {w}/32)")
        })
    })
}

/// An address of either family.
fn ip_any(w: &str) -> Option<IpAddr> {
    w.parse().ok()
}

fn label_value(w: &str, what: &str) -> Result<u32> {
    w.parse()
        .map_err(|_| bad(format!("{what} {w:?} is not a number")))
}

fn interface_name(w: &str) -> Result<String> {
    if w.is_empty()
        || !w
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
    {
        return Err(bad(format!(
            "{w:?} is not an interface name (letters, digits, '-', '_', '.')"
        )));
    }
    Ok(w.to_string())
}

fn eos(w: &mut Words<'_>) -> Result<bool> {
    match w.next() {
        Some("eos") => Ok(true),
        Some("non-eos") => Ok(false),
        Some(x) => w.err(format!("{x:?} after the label: say eos or non-eos")),
        None => w.err("missing eos or non-eos after the label"),
    }
}

const ROUTE_ADD: &str = "route add PREFIX [table N] via GATEWAY [INTERFACE] [next-hop-table N] [out-labels L...] [weight W] [via ...] | route add PREFIX blackhole|unreachable|prohibit";
const LABEL_ADD: &str = "label add LABEL eos|non-eos via GATEWAY INTERFACE [out-labels L...] [via ...] | label add LABEL eos via ip4-lookup|ip6-lookup|ip-lookup [table N] | label add LABEL non-eos pop";

/// Words that end a `via` clause or are keywords, never interface names.
const KEYWORDS: &[&str] = &[
    "via",
    "table",
    "next-hop-table",
    "out-labels",
    "weight",
    "pipe",
    "uniform",
    "blackhole",
    "unreachable",
    "prohibit",
    "local",
    "drop",
];

/// Why [`vrf_words`] could not resolve the words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VrfWordsError<E> {
    /// `vrf` or `next-hop-vrf` as the last word: bad syntax.
    Syntax(ParseError),
    /// What the name lookup said of a name.
    Name(E),
}

/// The words with every `vrf NAME` as `table N` and `next-hop-vrf NAME` as
/// `next-hop-table N`, `N` from `table(NAME)`: the daemon resolves names with its
/// VRFs before it parses; the client checks the syntax with any number.
/// `vrf add|del ...` and `show vrf` are left alone.
pub fn vrf_words<E>(
    args: &[String],
    mut table: impl FnMut(&str) -> std::result::Result<TableId, E>,
) -> std::result::Result<Vec<String>, VrfWordsError<E>> {
    let first = args.first().map(String::as_str);
    if first == Some("vrf")
        || (matches!(first, Some("show" | "sh"))
            && matches!(args.get(1).map(String::as_str), Some("vrf" | "vrfs")))
    {
        return Ok(args.to_vec());
    }
    let mut out = Vec::with_capacity(args.len());
    let mut i = 0;
    while i < args.len() {
        let word = match args[i].as_str() {
            "vrf" => "table",
            "next-hop-vrf" => "next-hop-table",
            _ => {
                out.push(args[i].clone());
                i += 1;
                continue;
            }
        };
        let Some(name) = args.get(i + 1) else {
            return Err(VrfWordsError::Syntax(bad(format!(
                "{} needs a VRF name",
                args[i]
            ))));
        };
        out.push(word.to_string());
        out.push(table(name).map_err(VrfWordsError::Name)?.to_string());
        i += 2;
    }
    Ok(out)
}

/// Parses a command from its words (what follows `dpctl`).
pub fn parse(words: &[String]) -> Result<Command> {
    let mut w = Words {
        w: words,
        i: 0,
        usage: "dpctl help",
    };
    let Some(first) = w.next() else {
        return Err(bad("no command (dpctl help lists them)"));
    };
    let cmd = match first {
        "route" => route(&mut w)?,
        // VPP spells it `ip route add ...`.
        "ip" if w.peek() == Some("route") => {
            w.next();
            route(&mut w)?
        }
        "label" | "mpls" => label(&mut w)?,
        "interface" | "int" => interface(&mut w)?,
        "vrf" => {
            w.usage = "vrf add NAME table N | vrf del NAME";
            match w.expect("add or del")? {
                "add" => {
                    let name = w.expect("NAME")?.to_string();
                    if w.next() != Some("table") {
                        return w.err("vrf add NAME table N");
                    }
                    let table = w.number("table")?;
                    Command::VrfAdd { name, table }
                }
                "del" | "delete" => Command::VrfDel(w.expect("NAME")?.to_string()),
                x => return w.err(format!("unexpected {x:?}: say add or del")),
            }
        }
        "pw" | "pseudowire" => {
            w.usage = "pw add NAME interface INTERFACE neighbor A.B.C.D in-label L out-label L \
                       [control-word|no-control-word] | pw del NAME";
            match w.expect("add or del")? {
                "add" => {
                    let name = w.expect("NAME")?.to_string();
                    let (mut interface, mut neighbor, mut in_label, mut out_label) =
                        (None, None, None, None);
                    let mut control_word = true;
                    while let Some(k) = w.next() {
                        match k {
                            "interface" => interface = Some(w.expect("INTERFACE")?.to_string()),
                            "neighbor" | "neighbour" => neighbor = Some(w.number("neighbor")?),
                            "in-label" => in_label = Some(label_value(w.expect("L")?, "in-label")?),
                            "out-label" => {
                                out_label = Some(label_value(w.expect("L")?, "out-label")?)
                            }
                            "control-word" => control_word = true,
                            "no-control-word" => control_word = false,
                            x => return w.err(format!("unexpected {x:?}")),
                        }
                    }
                    let (Some(interface), Some(neighbor), Some(in_label), Some(out_label)) =
                        (interface, neighbor, in_label, out_label)
                    else {
                        return w.err("give interface, neighbor, in-label and out-label");
                    };
                    Command::PwAdd {
                        name,
                        interface,
                        neighbor,
                        in_label,
                        out_label,
                        control_word,
                    }
                }
                "del" | "delete" => Command::PwDel(w.expect("NAME")?.to_string()),
                x => return w.err(format!("unexpected {x:?}: say add or del")),
            }
        }
        "neighbor" | "neighbour" | "neigh" => neighbor(&mut w)?,
        "table" => {
            w.usage = "table add|del N";
            let add = match w.expect("add or del")? {
                "add" => true,
                "del" | "delete" => false,
                x => return w.err(format!("unexpected {x:?}: say add or del")),
            };
            let t: TableId = w.number("table")?;
            if add {
                Command::TableAdd(t)
            } else {
                Command::TableDel(t)
            }
        }
        "show" | "sh" => show(&mut w)?,
        "trace" => {
            w.usage = "trace add N | show trace | clear trace";
            match w.next() {
                Some("add") => {
                    let n: u32 = w.number("packet count")?;
                    if n == 0 || n > MAX_TRACE {
                        return Err(bad(format!(
                            "trace add {n}: give 1..{MAX_TRACE} packets (per worker)"
                        )));
                    }
                    Command::TraceAdd(n)
                }
                Some("show") => Command::ShowTrace,
                Some("clear") => Command::TraceClear,
                Some(x) => return w.err(format!("unknown trace command {x:?}")),
                None => return w.err("missing add, show or clear"),
            }
        }
        "clear" => {
            w.usage = "clear counters | clear trace";
            match w.next() {
                Some("counters" | "errors" | "run" | "runtime" | "interfaces") => {
                    Command::ClearCounters
                }
                Some("trace") => Command::TraceClear,
                Some(x) => return w.err(format!("cannot clear {x:?}")),
                None => return w.err("missing what to clear"),
            }
        }
        "reload" => {
            w.usage = "reload";
            Command::Reload
        }
        "router-id" => {
            w.usage = "router-id A.B.C.D|none";
            match w.expect("an address or none")? {
                "none" => Command::RouterId(None),
                x => Command::RouterId(Some(
                    x.parse()
                        .map_err(|_| bad(format!("router-id: bad IPv4 address {x:?}")))?,
                )),
            }
        }
        "linux" | "lcp" => {
            w.usage = "linux resync";
            match w.expect("resync")? {
                "resync" => Command::LinuxResync,
                x => return w.err(format!("unknown linux command {x:?}")),
            }
        }
        "sflow" => sflow(&mut w)?,
        x => {
            return Err(bad(format!(
                "unknown command {x:?} (commands: route, label, interface, neighbor, show, sflow, linux, router-id, trace, clear, reload; dpctl help lists them)"
            )));
        }
    };
    w.end()?;
    Ok(cmd)
}

fn route(w: &mut Words<'_>) -> Result<Command> {
    w.usage = "route add|replace|del|show ...";
    let verb = w.expect("add, replace, del or show")?;
    match verb {
        "add" | "replace" => {
            w.usage = ROUTE_ADD;
            let p = prefix(w.expect("PREFIX")?)?;
            let mut table = 0;
            let mut vias: Vec<ViaSpec> = Vec::new();
            let mut special = None;
            while let Some(x) = w.next() {
                match x {
                    "table" => table = w.number("table")?,
                    "via" => vias.push(via(w, true)?),
                    s if Special::from_word(s).is_some() => {
                        if special.is_some() {
                            return w.err("give one of blackhole, unreachable, prohibit");
                        }
                        special = Special::from_word(s);
                    }
                    x => return w.err(format!("unexpected {x:?}")),
                }
            }
            let target = match (special, vias.is_empty()) {
                (Some(_), false) => {
                    return w.err(format!(
                        "{p}: give either via ... or a special route, not both"
                    ));
                }
                (Some(s), true) => RouteTarget::Special(s),
                (None, true) => return w.err(format!("missing via for {p}")),
                (None, false) => RouteTarget::Paths(vias),
            };
            target.check().map_err(|e| bad(format!("route {p}: {e}")))?;
            Ok(Command::RouteAdd {
                table,
                prefix: p,
                target,
                replace: verb == "replace",
            })
        }
        "del" | "delete" => {
            w.usage = "route del PREFIX [table N]";
            let p = prefix(w.expect("PREFIX")?)?;
            let table = table_opt(w)?.unwrap_or(0);
            Ok(Command::RouteDel { table, prefix: p })
        }
        "show" => route_show(w),
        x => w.err(format!("unknown route command {x:?}")),
    }
}

fn route_show(w: &mut Words<'_>) -> Result<Command> {
    w.usage = "route show [PREFIX|ADDRESS] [table N]";
    let mut filter = None;
    let mut table = None;
    while let Some(x) = w.next() {
        if x == "table" {
            table = Some(w.number("table")?);
        } else if filter.is_none() && x.contains('/') {
            filter = Some(RouteFilter::Prefix(prefix(x)?));
        } else if let (None, Ok(a)) = (filter, x.parse::<IpAddr>()) {
            filter = Some(RouteFilter::Address(a));
        } else {
            return w.err(format!("unexpected {x:?}"));
        }
    }
    Ok(Command::RouteShow { table, filter })
}

fn table_opt(w: &mut Words<'_>) -> Result<Option<TableId>> {
    if w.peek() == Some("table") {
        w.next();
        return Ok(Some(w.number("table")?));
    }
    Ok(None)
}

/// One `via` clause (after the word `via`).
fn via(w: &mut Words<'_>, route: bool) -> Result<ViaSpec> {
    let first = w.expect("a next hop or an interface after via")?;
    let mut v = ViaSpec {
        gateway: None,
        interface: None,
        out_labels: Vec::new(),
        weight: 1,
        table: None,
    };
    if let Some(a) = ip_any(first) {
        v.gateway = Some(a);
        if let Some(n) = w.peek() {
            if !KEYWORDS.contains(&n) && ip_any(n).is_none() {
                w.next();
                v.interface = Some(interface_name(n)?);
            }
        }
    } else if KEYWORDS.contains(&first) || first.contains('/') {
        return w.err(format!(
            "via {first:?}: want a next-hop address or an interface"
        ));
    } else if first.chars().all(|c| c.is_ascii_digit() || c == '.') || first.contains(':') {
        return Err(bad(format!("via {first:?}: not an IP address")));
    } else {
        v.interface = Some(interface_name(first)?);
    }
    loop {
        match w.peek() {
            Some("out-labels" | "out-label") => {
                w.next();
                let mut n = 0;
                while let Some(x) = w.peek() {
                    if !x.chars().next().is_some_and(|c| c.is_ascii_digit()) {
                        break;
                    }
                    w.next();
                    v.out_labels.push(label_value(x, "out-label")?);
                    n += 1;
                }
                if n == 0 {
                    return w.err("out-labels needs at least one label");
                }
            }
            Some("weight") if route => {
                w.next();
                v.weight = w.number("weight")?;
            }
            Some("next-hop-table") if route => {
                w.next();
                v.table = Some(w.number("next-hop-table")?);
            }
            _ => break,
        }
    }
    Ok(v)
}

fn label(w: &mut Words<'_>) -> Result<Command> {
    w.usage = "label add|replace|del|show ...";
    // VPP spells it `mpls local-label add ...`.
    if w.peek() == Some("local-label") {
        w.next();
    }
    let verb = w.expect("add, replace, del or show")?;
    match verb {
        "add" | "replace" => {
            w.usage = LABEL_ADD;
            let l = label_value(w.expect("LABEL")?, "label")?;
            check_in_label(l).map_err(bad)?;
            let e = eos(w)?;
            let mut ttl_mode = mpls::TtlMode::Uniform;
            let mut paths = Vec::new();
            let mut other: Option<LabelSpec> = None;
            let set_other = |w: &Words<'_>, o: &mut Option<LabelSpec>, s: LabelSpec| {
                if o.is_some() {
                    return w.err(
                        "give one action: via ..., ip4-lookup, ip6-lookup, ip-lookup, pop, drop or punt",
                    );
                }
                *o = Some(s);
                Ok(())
            };
            let uniform = mpls::TtlMode::Uniform;
            while let Some(x) = w.next() {
                match x {
                    "via" => match w.peek() {
                        Some(k @ ("ip4-lookup" | "ip6-lookup" | "ip-lookup")) => {
                            w.next();
                            let table = table_opt(w)?.unwrap_or(mpls::RX_TABLE);
                            if let Some(s) = LabelSpec::lookup(k, table, uniform) {
                                set_other(w, &mut other, s)?;
                            }
                        }
                        Some(k @ ("ip4-lookup-in-table" | "ip6-lookup-in-table")) => {
                            w.next();
                            let table = w.number("table")?;
                            let word = &k[..k.len() - "-in-table".len()];
                            if let Some(s) = LabelSpec::lookup(word, table, uniform) {
                                set_other(w, &mut other, s)?;
                            }
                        }
                        _ => paths.push(via(w, false)?),
                    },
                    k @ ("ip4-lookup" | "ip6-lookup" | "ip-lookup") => {
                        let table = table_opt(w)?.unwrap_or(mpls::RX_TABLE);
                        if let Some(s) = LabelSpec::lookup(k, table, uniform) {
                            set_other(w, &mut other, s)?;
                        }
                    }
                    "pop" => set_other(w, &mut other, LabelSpec::Pop { ttl_mode: uniform })?,
                    "drop" => set_other(w, &mut other, LabelSpec::Drop)?,
                    "punt" => set_other(w, &mut other, LabelSpec::Punt)?,
                    "pipe" => ttl_mode = mpls::TtlMode::pipe(),
                    "uniform" => ttl_mode = mpls::TtlMode::Uniform,
                    "weight" => return w.err("label paths have no weight"),
                    x => return w.err(format!("unexpected {x:?}")),
                }
            }
            let mut spec = match (other, paths.is_empty()) {
                (Some(_), false) => {
                    return w
                        .err("give either via GATEWAY INTERFACE ... or another action, not both");
                }
                (Some(s), true) => s,
                (None, false) => LabelSpec::Forward {
                    paths,
                    ttl_mode: uniform,
                },
                (None, true) => return w.err(format!("missing via for label {l}")),
            };
            match &mut spec {
                LabelSpec::Forward { ttl_mode: t, .. }
                | LabelSpec::Ip4Lookup { ttl_mode: t, .. }
                | LabelSpec::Ip6Lookup { ttl_mode: t, .. }
                | LabelSpec::IpLookup { ttl_mode: t, .. }
                | LabelSpec::Pop { ttl_mode: t } => *t = ttl_mode,
                LabelSpec::Drop | LabelSpec::Punt => {}
            }
            spec.check(l, e)
                .map_err(|m| bad(format!("label {l} {}: {m}", crate::spec::eos_word(e))))?;
            Ok(Command::LabelAdd {
                label: l,
                eos: e,
                spec,
                replace: verb == "replace",
            })
        }
        "del" | "delete" => {
            w.usage = "label del LABEL eos|non-eos [via GATEWAY INTERFACE [out-labels L...]]...";
            let l = label_value(w.expect("LABEL")?, "label")?;
            check_in_label(l).map_err(bad)?;
            let e = eos(w)?;
            let mut paths = Vec::new();
            while let Some(x) = w.next() {
                match x {
                    "via" => {
                        let v = via(w, false)?;
                        if v.gateway.is_none() || v.interface.is_none() {
                            return w.err("a label path is via GATEWAY INTERFACE");
                        }
                        paths.push(v);
                    }
                    x => return w.err(format!("unexpected {x:?}")),
                }
            }
            Ok(Command::LabelDel {
                label: l,
                eos: e,
                paths,
            })
        }
        "show" => {
            w.usage = "label show [LABEL]";
            let label = match w.next() {
                Some(x) => Some(label_value(x, "label")?),
                None => None,
            };
            Ok(Command::LabelShow { label })
        }
        x => w.err(format!("unknown label command {x:?}")),
    }
}

fn interface(w: &mut Words<'_>) -> Result<Command> {
    w.usage = "interface address|mtu|up|down|table|sub ...";
    match w.expect("address, mtu, up, down, table or sub")? {
        "table" => {
            w.usage = "interface table INTERFACE N|vrf NAME";
            let interface = interface_name(w.expect("INTERFACE")?)?;
            // (`vrf NAME` arrives as `table N`; see `vrf_words`)
            if w.peek() == Some("table") {
                w.next();
            }
            let table: TableId = w.number("table")?;
            Ok(Command::InterfaceTable { interface, table })
        }
        "address" | "addr" => {
            w.usage = "interface address add|del INTERFACE ADDRESS/LEN";
            let add = match w.expect("add or del")? {
                "add" => true,
                "del" | "delete" => false,
                x => return w.err(format!("unexpected {x:?}: say add or del")),
            };
            let interface = interface_name(w.expect("INTERFACE")?)?;
            let (addr, len) = parse_addr_len(w.expect("ADDRESS/LEN")?).map_err(bad)?;
            Ok(Command::Address {
                add,
                interface,
                addr,
                len,
            })
        }
        "mtu" => {
            w.usage = "interface mtu INTERFACE MTU";
            let interface = interface_name(w.expect("INTERFACE")?)?;
            let mtu: u16 = w.number("MTU")?;
            if !(68..=9600).contains(&mtu) {
                return Err(bad(format!("MTU {mtu} is out of range 68..9600")));
            }
            Ok(Command::Mtu { interface, mtu })
        }
        s @ ("up" | "down") => {
            w.usage = "interface up|down INTERFACE";
            let interface = interface_name(w.expect("INTERFACE")?)?;
            Ok(Command::SetUp {
                interface,
                up: s == "up",
            })
        }
        "sub" | "sub-interface" => {
            w.usage = "interface sub add INTERFACE VLAN | interface sub del INTERFACE.VLAN";
            match w.expect("add or del")? {
                "add" => {
                    let parent = interface_name(w.expect("INTERFACE")?)?;
                    let vlan: u16 = w.number("VLAN")?;
                    if !(1..=4094).contains(&vlan) {
                        return Err(bad(format!("VLAN {vlan} is out of range 1..4094")));
                    }
                    Ok(Command::SubAdd { parent, vlan })
                }
                "del" | "delete" => Ok(Command::SubDel {
                    interface: interface_name(w.expect("INTERFACE.VLAN")?)?,
                }),
                x => w.err(format!("unexpected {x:?}: say add or del")),
            }
        }
        x => w.err(format!("unknown interface command {x:?}")),
    }
}

fn neighbor(w: &mut Words<'_>) -> Result<Command> {
    w.usage =
        "neighbor add INTERFACE ADDRESS MAC | neighbor del INTERFACE ADDRESS [MAC] | neighbor show";
    match w.expect("add, del or show")? {
        "add" => {
            let interface = interface_name(w.expect("INTERFACE")?)?;
            let ip = address(w.expect("ADDRESS")?)?;
            let mac = match w.next() {
                Some(m) => Some(parse_mac(m).map_err(bad)?),
                None => None,
            };
            Ok(Command::NeighborAdd { interface, ip, mac })
        }
        "del" | "delete" => {
            let interface = interface_name(w.expect("INTERFACE")?)?;
            let ip = address(w.expect("ADDRESS")?)?;
            let mac = match w.next() {
                Some(m) => Some(parse_mac(m).map_err(bad)?),
                None => None,
            };
            Ok(Command::NeighborDel { interface, ip, mac })
        }
        "show" => Ok(Command::NeighborShow),
        x => w.err(format!("unknown neighbor command {x:?}")),
    }
}

fn address(s: &str) -> Result<IpAddr> {
    let a = ip_any(s).ok_or_else(|| bad(format!("bad IP address {s:?}")))?;
    crate::spec::check_next_hop(a).map_err(|_| {
        bad(format!(
            "{a} cannot be a neighbour (unspecified, loopback, multicast or broadcast)"
        ))
    })?;
    Ok(a)
}

fn sflow(w: &mut Words<'_>) -> Result<Command> {
    w.usage = "sflow enable|disable|collector|polling|header-bytes|max-samples ... (dpctl help)";
    match w.expect("enable, disable, collector, polling or header-bytes")? {
        "enable" => {
            w.usage = "sflow enable INTERFACE [rate N] [direction rx|tx|both]";
            let interface = interface_name(w.expect("interface")?)?;
            let mut rate = DEFAULT_SFLOW_RATE;
            let mut direction = sflow::Directions::Rx;
            while let Some(k) = w.next() {
                match k {
                    "rate" => {
                        rate = w.number("rate")?;
                        if rate == 0 {
                            return Err(bad(
                                "sflow enable: rate 0: the rate must be at least 1 (1-in-N; use sflow disable to stop)",
                            ));
                        }
                    }
                    "direction" | "dir" => {
                        let d = w.expect("rx, tx or both")?;
                        direction = d
                            .parse()
                            .map_err(|e: sflow::ConfigError| bad(e.to_string()))?;
                    }
                    x => {
                        return w.err(format!("unexpected {x:?} (rate N or direction rx|tx|both)"));
                    }
                }
            }
            Ok(Command::SflowEnable {
                interface,
                rate,
                direction,
            })
        }
        "disable" => {
            w.usage = "sflow disable INTERFACE";
            let interface = interface_name(w.expect("interface")?)?;
            Ok(Command::SflowDisable { interface })
        }
        "collector" => {
            w.usage = "sflow collector add|del IP[:PORT]";
            let add = match w.expect("add or del")? {
                "add" => true,
                "del" | "delete" | "remove" => false,
                x => return w.err(format!("unexpected {x:?}: add or del")),
            };
            let spec = w.expect("collector address")?.to_string();
            Ok(Command::SflowCollector { add, spec })
        }
        "polling" | "polling-interval" => {
            w.usage = "sflow polling SECS";
            let secs: u64 = w.number("seconds")?;
            if secs > u64::from(u32::MAX) {
                return Err(bad(format!(
                    "sflow polling {secs}: at most {} seconds",
                    u32::MAX
                )));
            }
            Ok(Command::SflowPolling(secs))
        }
        "header-bytes" | "header" => {
            w.usage = "sflow header-bytes N";
            let n: u32 = w.number("header bytes")?;
            let n = u16::try_from(n).unwrap_or(u16::MAX);
            sflow::validate_header_bytes(n).map_err(|e| bad(format!("sflow {e}")))?;
            Ok(Command::SflowHeaderBytes(n))
        }
        "max-samples" => {
            w.usage = "sflow max-samples N (per second, 0: no limit)";
            let n: u32 = w.number("samples per second")?;
            Ok(Command::SflowMaxSamples(n))
        }
        x => w.err(format!("unknown sflow command {x:?}")),
    }
}

fn show(w: &mut Words<'_>) -> Result<Command> {
    w.usage = "show interfaces|run|errors|trace|version|route|label|neighbor|sflow|linux|fpm";
    match w.expect("what to show")? {
        "interfaces" | "interface" | "int" => {
            w.usage = "show interfaces [INTERFACE] | show interfaces address";
            match w.next() {
                None => Ok(Command::ShowInterfaces { name: None }),
                Some("address" | "addr") => Ok(Command::ShowAddresses),
                Some(n) => Ok(Command::ShowInterfaces {
                    name: Some(interface_name(n)?),
                }),
            }
        }
        "run" | "runtime" => Ok(Command::ShowRun),
        "errors" | "error" => Ok(Command::ShowErrors),
        "trace" => Ok(Command::ShowTrace),
        "version" => Ok(Command::ShowVersion),
        "vrf" | "vrfs" => Ok(Command::ShowVrf),
        "pw" | "pws" | "pseudowire" | "pseudowires" => Ok(Command::ShowPw),
        "sflow" => Ok(Command::ShowSflow),
        "linux" | "lcp" => Ok(Command::ShowLinux),
        "fpm" => Ok(Command::ShowFpm),
        "route" | "routes" | "fib" => route_show(w),
        "label" | "labels" | "mpls" => {
            w.usage = "show labels [LABEL]";
            let label = match w.next() {
                Some(x) => Some(label_value(x, "label")?),
                None => None,
            };
            Ok(Command::LabelShow { label })
        }
        "neighbor" | "neighbors" | "neighbour" | "neighbours" => Ok(Command::NeighborShow),
        x => w.err(format!("cannot show {x:?}")),
    }
}

#[cfg(test)]
mod tests;
