//! The configuration's routing sections: specs to routes, labels and
//! interfaces, applied and reloaded as a diff.

use super::*;

#[test]
fn parsers() {
    assert_eq!(parse_mac("02:00:00:00:00:0a").unwrap(), [2, 0, 0, 0, 0, 10]);
    assert!(parse_mac("02:00:00:00:00").is_err());
    assert!(parse_mac("zz:00:00:00:00:00").is_err());
    assert_eq!(
        parse_addr_len("10.0.0.1/24").unwrap(),
        (Ipv4Addr::new(10, 0, 0, 1).into(), 24)
    );
    assert_eq!(
        parse_addr_len("2001:db8::1/64").unwrap(),
        ("2001:db8::1".parse().unwrap(), 64)
    );
    assert!(parse_addr_len("10.0.0.1").is_err());
    assert!(parse_addr_len("10.0.0.1/33").is_err());
    assert!(parse_addr_len("2001:db8::1/129").is_err());
    assert!(parse_addr_len("2001:db8::g/64").is_err());
    assert!(parse_prefix("10.0.0.1/24").is_err(), "host bits set");
    assert!(parse_prefix("10.0.0.0/24").is_ok());
}

const PORTS: &str = r#"
[[interface]]
name = "port0"
addresses = ["192.168.11.9/31"]
[[interface]]
name = "port1"
addresses = ["192.168.11.10/31"]
"#;

fn routing(extra: &str) -> Routing {
    let text = format!(
        "[[port]]\nname=\"port0\"\ndevice=\"net_null0\"\n[[port]]\nname=\"port1\"\ndevice=\"net_null1\"\n[forwarding]\nmode=\"router\"\n{PORTS}{extra}"
    );
    crate::config::Config::parse(&text, "t")
        .unwrap()
        .plan("t")
        .unwrap()
        .routing
}

fn ports() -> Vec<PortInfo> {
    (0..2)
        .map(|i| PortInfo {
            name: format!("port{i}"),
            id: i,
            mac: [2, 0, 0, 0, 0, i as u8 + 1],
        })
        .collect()
}

/// `[router] label_slots` sizes the label table: past it a label is refused
/// with the table's error and the entries before it stay.
#[test]
fn label_slots_size_the_label_table() {
    let r = routing("[router]\nlabel_slots = 256\n");
    assert_eq!(r.router.label_slots, Some(256));
    let mut ctl = RouterControl::with_label_slots(r.router.label_slots.unwrap());
    apply(&r, &ports(), &mut ctl).unwrap();
    let mut added = 0u32;
    let err = loop {
        match ctl.label_add(1000 + added, true, mpls::LabelAction::Drop) {
            Ok(()) => added += 1,
            Err(e) => break e,
        }
    };
    assert!((200..256).contains(&added), "{added} added");
    assert!(err.to_string().contains("full"), "{err}");
    assert!(ctl.labels().get(1000, true).is_some());
    assert!(ctl.labels().get(1000 + added, true).is_none());
}

#[test]
fn neighbor_aging_keys() {
    let d = neighbor_aging(&routing("")).unwrap();
    assert_eq!(d, dataplane::router::NeighborAging::default());
    let a = neighbor_aging(&routing(
        "[router]\nneighbor_reachable_s = 30\nneighbor_probes = 5\n",
    ))
    .unwrap();
    assert_eq!(a.reachable, std::time::Duration::from_secs(30));
    assert_eq!(a.probes, 5);
    let never = neighbor_aging(&routing("[router]\nneighbor_reachable_s = 0\n")).unwrap();
    assert!(never.reachable.is_zero());
    for (bad, msg) in [
        ("neighbor_reachable_s = 604801", "at most 604800"),
        ("neighbor_probes = 11", "at most 10"),
    ] {
        let r = routing(&format!("[router]\n{bad}\n"));
        let e = apply(&r, &ports(), &mut RouterControl::new()).unwrap_err();
        assert!(e.to_string().contains(msg), "{bad}: {e}");
    }
}

fn routes(ctl: &RouterControl) -> Vec<String> {
    ctl.routes()
        .map(|(t, p, k)| format!("{t} {p} {k:?}"))
        .collect()
}

/// `[[pw]]`: applied, then changed, then removed by reloads; a circuit with
/// an address is refused with the section's name.
#[test]
fn pseudowires_from_the_file() {
    let file = |pw: &str| {
        let text = format!(
            "[[port]]\nname=\"port0\"\ndevice=\"net_null0\"\n[[port]]\nname=\"port1\"\ndevice=\"net_null1\"\n\
             [forwarding]\nmode=\"router\"\n[[interface]]\nname = \"port0\"\naddresses = [\"192.168.11.9/31\"]\n{pw}"
        );
        crate::config::Config::parse(&text, "t")
            .unwrap()
            .plan("t")
            .unwrap()
            .routing
    };
    let pw = |label: u32, cw: &str| {
        format!(
            "[[pw]]\nname = \"c1\"\ninterface = \"port1\"\nneighbor = \"192.0.2.4\"\n\
             in_label = {label}\nout_label = 600\n{cw}"
        )
    };
    let a = file(&pw(500, ""));
    let mut live = RouterControl::new();
    apply(&a, &ports(), &mut live).unwrap();
    let one = |c: &RouterControl| {
        c.pws()
            .map(|(n, _, _, p)| (n.to_string(), p.clone()))
            .collect::<Vec<_>>()
    };
    let got = one(&live);
    assert_eq!(got.len(), 1);
    assert_eq!(
        (got[0].1.ac, got[0].1.in_label, got[0].1.cw),
        (2, 500, true)
    );
    assert!(matches!(
        live.labels().get(500, true),
        Some(mpls::LabelAction::Xconnect { .. })
    ));
    let b = file(&pw(501, "control_word = false\n"));
    let sum = reload(&a, &b, &ports(), &mut live, &|_| None).unwrap();
    assert_eq!(sum.to_string(), "pseudowires +0 -0 ~1");
    let got = one(&live);
    assert_eq!((got[0].1.in_label, got[0].1.cw), (501, false));
    assert!(live.labels().get(500, true).is_none());
    let c = file("");
    let sum = reload(&b, &c, &ports(), &mut live, &|_| None).unwrap();
    assert_eq!(sum.to_string(), "pseudowires +0 -1 ~0");
    assert!(one(&live).is_empty());
    assert!(live.labels().get(501, true).is_none());
    // A circuit with an address.
    let bad = file(&pw(500, "").replace("port1", "port0"));
    let err = apply(&bad, &ports(), &mut RouterControl::new()).unwrap_err();
    assert!(
        err.to_string()
            .contains("[[pw]] c1: pseudowire c1: port0 has address"),
        "{err}"
    );
}

#[test]
fn reload_applies_the_difference() {
    let a = routing(
        r#"
[[neighbor]]
interface = "port0"
address = "192.168.11.8"
mac = "02:00:00:00:00:08"
[[route]]
prefix = "10.0.1.1/32"
via = [{ gateway = "192.168.11.8", interface = "port0", out_labels = [100] }]
[[route]]
prefix = "10.0.2.0/24"
kind = "blackhole"
[[label]]
label = 100
via = [{ gateway = "192.168.11.8", interface = "port0", out_labels = [100] }]
"#,
    );
    let b = routing(
        r#"
[[interface]]
name = "port0.100"
parent = "port0"
vlan = 100
addresses = ["10.1.100.1/24"]
[[neighbor]]
interface = "port0"
address = "192.168.11.8"
mac = "02:00:00:00:00:09"
[[route]]
prefix = "10.0.1.1/32"
via = [{ gateway = "192.168.11.8", interface = "port0", out_labels = [200] }]
[[route]]
prefix = "10.0.3.0/24"
kind = "unreachable"
[[label]]
label = 100
via = [{ gateway = "192.168.11.8", interface = "port0", out_labels = [100] }]
[[label]]
label = 103
lookup_table = 0
"#,
    );
    let mut live = RouterControl::new();
    apply(&a, &ports(), &mut live).unwrap();
    // The router keeps an applied file's routes as their digest: a reload
    // compares the new file with that.
    let kept = |r: &Routing| {
        let mut k = r.clone();
        k.compact().unwrap();
        assert!(k.routes.is_empty());
        k
    };
    let sum = reload(&kept(&a), &b, &ports(), &mut live, &|_| None).unwrap();
    assert_eq!(
        sum.routes,
        Changes {
            added: 1,
            removed: 1,
            changed: 1
        }
    );
    assert_eq!(sum.labels.added, 1);
    assert_eq!(sum.labels.changed, 0);
    assert_eq!(sum.neighbors.changed, 1);
    assert_eq!(sum.interfaces.added, 1);
    assert_eq!(sum.addresses, Changes::default(), "{sum}");
    // The same routes as a router started with b (ifindexes agree: port0.100 is 3).
    let mut fresh = RouterControl::new();
    apply(&b, &ports(), &mut fresh).unwrap();
    assert_eq!(routes(&live), routes(&fresh));
    let labels = |c: &RouterControl| {
        c.labels()
            .iter()
            .map(|(l, e, _)| (l, e))
            .collect::<Vec<_>>()
    };
    assert_eq!(labels(&live), labels(&fresh));
    // And back.
    let sum = reload(&kept(&b), &a, &ports(), &mut live, &|_| None).unwrap();
    assert_eq!(sum.interfaces.removed, 1, "{sum}");
    let mut fresh = RouterControl::new();
    apply(&a, &ports(), &mut fresh).unwrap();
    assert_eq!(routes(&live), routes(&fresh));
    assert_eq!(
        reload(&kept(&a), &a, &ports(), &mut live, &|_| None)
            .unwrap()
            .to_string(),
        "no changes"
    );
}

#[test]
fn route_preference_from_the_file() {
    let r = routing("[router]\nroute_preference = [\"kernel\", \"fpm\", \"config\", \"dpctl\"]\n");
    let mut ctl = RouterControl::new();
    apply(&r, &ports(), &mut ctl).unwrap();
    assert_eq!(ctl.route_preference()[0], RouteSource::Kernel);
    for (bad, want) in [
        ("[\"kernel\", \"bgp\"]", "unknown source \"bgp\""),
        ("[\"kernel\", \"fpm\"]", "dpctl is missing"),
    ] {
        let r = routing(&format!("[router]\nroute_preference = {bad}\n"));
        let e = apply(&r, &ports(), &mut RouterControl::new()).unwrap_err();
        assert!(e.to_string().contains(want), "{bad}: {e}");
    }
}

/// Errors name the section and keep what went wrong in it, typed.
#[test]
fn errors_name_the_section_and_keep_the_cause() {
    let bad = routing(
        "[[route]]\nprefix = \"10.0.3.0/24\"\nvia = [{ gateway = \"1.2.3.4\", interface = \"port9\" }]\n",
    );
    let e = apply(&bad, &ports(), &mut RouterControl::new()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "[[route]] 10.0.3.0/24: unknown interface \"port9\" (interfaces: port0, port1)"
    );
    let RoutingError::In { what, error } = &e else {
        panic!("{e:?}")
    };
    assert_eq!(what, "[[route]] 10.0.3.0/24");
    assert!(
        matches!(
            **error,
            RoutingError::Resolve(ResolveError::UnknownInterface { .. })
        ),
        "{error:?}"
    );
    let good = routing("");
    let mut live = RouterControl::new();
    apply(&good, &ports(), &mut live).unwrap();
    let e = reload(&good, &bad, &ports(), &mut live, &|_| None).unwrap_err();
    assert!(matches!(e, RoutingError::NothingApplied(_)), "{e:?}");
    assert!(e.to_string().ends_with("; nothing was applied"), "{e}");
}

#[test]
fn bad_reload_changes_nothing() {
    let a = routing("[[route]]\nprefix = \"10.0.2.0/24\"\nkind = \"blackhole\"\n");
    let mut live = RouterControl::new();
    apply(&a, &ports(), &mut live).unwrap();
    let before = routes(&live);
    for (extra, want) in [
        (
            "[[route]]\nprefix = \"10.0.3.0/24\"\nvia = [{ gateway = \"1.2.3.4\", interface = \"port9\" }]\n",
            "unknown interface \"port9\"",
        ),
        (
            "[[route]]\nprefix = \"10.0.3.0/24\"\nkind = \"blackhole\"\n[[route]]\nprefix = \"10.0.3.0/24\"\nkind = \"unreachable\"\n",
            "configured twice",
        ),
        ("[[label]]\nlabel = 3\nlookup_table = 0\n", "in-label 3"),
        (
            "[[interface]]\nname = \"port0\"\naddresses = [\"192.168.11.9/31\"]\ntable = 5\n[router]\ntables = [5]\n",
            "configured twice",
        ),
        ("[router]\nicmp_rate_pps = 5\n", "restart"),
        (
            "[router]\nroute_preference = [\"kernel\", \"fpm\", \"config\", \"dpctl\"]\n",
            "restart",
        ),
    ] {
        let b = routing(extra);
        let e = reload(&a, &b, &ports(), &mut live, &|_| None).unwrap_err();
        assert!(e.to_string().contains(want), "{extra}: {e}");
        assert_eq!(routes(&live), before, "{extra}");
    }
}

/// `[[neighbor]]` of either family: an IPv6 one (link-local or global) is a
/// static neighbour the routes via it use; a reload that drops it forgets it,
/// one that changes its MAC changes it; a bad address is refused by name.
#[test]
fn file_neighbors_of_both_families() {
    let nb = |mac: &str| {
        format!(
            "[[neighbor]]\ninterface = \"port1\"\naddress = \"fe80::2\"\nmac = \"{mac}\"\n\
             [[neighbor]]\ninterface = \"port0\"\naddress = \"192.168.11.8\"\nmac = \"02:00:00:00:00:08\"\n\
             [[route]]\nprefix = \"2001:db8:9::/48\"\nvia = [{{ gateway = \"fe80::2\", interface = \"port1\" }}]\n"
        )
    };
    let a = routing(&nb("02:00:00:00:00:02"));
    let mut live = RouterControl::new();
    apply(&a, &ports(), &mut live).unwrap();
    let ll: std::net::Ipv6Addr = "fe80::2".parse().unwrap();
    assert!(live.is_static_neighbor6(2, ll));
    assert_eq!(live.neighbors6().get(&(2, ll)), Some(&[2, 0, 0, 0, 0, 2]));
    assert!(live.is_static_neighbor(1, Ipv4Addr::new(192, 168, 11, 8)));
    let b = routing(&nb("02:00:00:00:00:22"));
    let sum = reload(&a, &b, &ports(), &mut live, &|_| None).unwrap();
    assert_eq!(sum.neighbors.changed, 1, "{sum}");
    assert_eq!(
        live.neighbors6().get(&(2, ll)),
        Some(&[2, 0, 0, 0, 0, 0x22])
    );
    let c = routing("");
    reload(&b, &c, &ports(), &mut live, &|_| None).unwrap();
    assert!(live.neighbors6().is_empty());
    assert!(!live.is_static_neighbor(1, Ipv4Addr::new(192, 168, 11, 8)));
    let bad = routing(
        "[[neighbor]]\ninterface = \"port1\"\naddress = \"fe80::zz\"\nmac = \"02:00:00:00:00:02\"\n",
    );
    let err = apply(&bad, &ports(), &mut RouterControl::new()).unwrap_err();
    assert!(err.to_string().contains("fe80::zz"), "{err}");
}

/// A reload at today's scale, each route with a result of its own: the 2024
/// table's 160,147 IPv6 prefixes as static routes, each with its own
/// out-label (via 192.168.11.8 on port0). The router keeps them as their
/// digest; a reload that relabels every 7th and removes every 11th changes
/// exactly those, and each route then has the label the new file gives it.
#[test]
fn a_full_table_of_static_routes_reloads_route_by_route() {
    let (table, _) = tables::load_v6_2024();
    let route = |(net, len, _): &(u128, u8, u32), label: u32| RouteSection {
        prefix: format!("{}/{len}", std::net::Ipv6Addr::from(*net)),
        table: 0,
        vrf: None,
        via: vec![ViaSection {
            gateway: Some("192.168.11.8".into()),
            interface: Some("port0".into()),
            out_labels: vec![label],
            weight: 1,
            next_hop_table: None,
            next_hop_vrf: None,
        }],
        kind: None,
    };
    let label = |i: usize, changed: bool| 16 + i as u32 + if changed { 400_000 } else { 0 };
    let mut a = routing("");
    a.routes = table
        .iter()
        .enumerate()
        .map(|(i, p)| route(p, label(i, false)))
        .collect();
    let mut b = routing("");
    b.routes = table
        .iter()
        .enumerate()
        .filter(|(i, _)| i % 11 != 0)
        .map(|(i, p)| route(p, label(i, i % 7 == 0)))
        .collect();
    let mut live = RouterControl::new();
    apply(&a, &ports(), &mut live).unwrap();
    let mut kept = a.clone();
    kept.compact().unwrap();
    assert!(kept.routes.is_empty());
    drop(a);
    let sum = reload(&kept, &b, &ports(), &mut live, &|_| None).unwrap();
    let n = table.len();
    let removed = (0..n).filter(|i| i % 11 == 0).count();
    let changed = (0..n).filter(|i| i % 11 != 0 && i % 7 == 0).count();
    assert_eq!(
        sum.routes,
        Changes {
            added: 0,
            removed,
            changed
        }
    );
    for (i, (net, len, _)) in table.iter().enumerate() {
        let p = fib::Ipv6Prefix::new(std::net::Ipv6Addr::from(*net), *len).unwrap();
        let got = live.route_of(RouteSource::Config, 0, p);
        if i % 11 == 0 {
            assert!(got.is_none(), "{p}: {got:?}");
            continue;
        }
        let want = label(i, i % 7 == 0);
        assert!(
            matches!(got, Some(fib::RouteKind::Paths(ps)) if ps[0].labels[..] == [want]),
            "{p}: {got:?}, want label {want}"
        );
    }
}

/// 6PE and 6VPE from the file, spelled as for IPv4: an IPv6 route via an
/// IPv4-mapped next hop (::ffff:a.b.c.d) resolves over the IPv4 route to
/// a.b.c.d, whose labels go on top of the route's; label entries pop into an
/// IPv6 lookup or a lookup by the payload's version, in a table or the
/// receiving interface's.
#[test]
fn labelled_ipv6_routes_and_ipv6_label_entries_from_the_file() {
    let r = routing(
        "[[neighbor]]\ninterface = \"port0\"\naddress = \"192.168.11.8\"\nmac = \"02:00:00:00:00:08\"\n\
         [[route]]\nprefix = \"10.9.9.9/32\"\nvia = [{ gateway = \"192.168.11.8\", interface = \"port0\", out_labels = [1000] }]\n\
         [[route]]\nprefix = \"2001:db8:200::/48\"\nvia = [{ gateway = \"::ffff:10.9.9.9\", out_labels = [600] }]\n\
         [[route]]\nprefix = \"2001:db8:201::/48\"\nvia = [{ gateway = \"10.9.9.9\", out_labels = [601] }]\n\
         [[label]]\nlabel = 600\naction = \"ip6-lookup\"\n\
         [[label]]\nlabel = 601\naction = \"ip6-lookup\"\nlookup_table = 0\nttl_mode = \"pipe\"\n\
         [[label]]\nlabel = 602\naction = \"ip-lookup\"\n\
         [[label]]\nlabel = 603\nlookup_table = 0\n",
    );
    let mut live = RouterControl::new();
    apply(&r, &ports(), &mut live).unwrap();
    let mut view = live.fib().reader();
    let v = view.read();
    for (dst, label) in [("2001:db8:200::1", 600), ("2001:db8:201::1", 601)] {
        let a: std::net::Ipv6Addr = dst.parse().unwrap();
        let leg = v.leg(v.lookup6(0, u128::from(a)), 0);
        assert_eq!(leg.action(), fib::Action::Forward, "{dst}");
        let labels: Vec<u32> = (0..leg.label_count()).map(|q| leg.label(q)).collect();
        assert_eq!(labels, [1000, label], "{dst}");
    }
    drop(v);
    let pipe = mpls::TtlMode::pipe();
    let uniform = mpls::TtlMode::Uniform;
    let want = [
        (600, mpls::LabelAction::ip6_lookup(mpls::RX_TABLE)),
        (
            601,
            mpls::LabelAction::Ip6Lookup {
                table: 0,
                ttl_mode: pipe,
            },
        ),
        (602, mpls::LabelAction::ip_lookup(mpls::RX_TABLE)),
        (
            603,
            mpls::LabelAction::Ip4Lookup {
                table: 0,
                ttl_mode: uniform,
            },
        ),
    ];
    for (l, a) in want {
        assert_eq!(live.labels().get(l, true), Some(&a), "label {l}");
    }
    let bad = |extra: &str| {
        let r = routing(extra);
        apply(&r, &ports(), &mut RouterControl::new())
            .unwrap_err()
            .to_string()
    };
    let e = bad("[[label]]\nlabel = 604\naction = \"ip6-lookup\"\neos = false\n");
    assert!(e.contains("eos"), "{e}");
}
