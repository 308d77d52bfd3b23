//! The grammar's tests: every command's words to its request, and bad words
//! to their message.

use super::*;

fn p(s: &str) -> Result<Command> {
    let words: Vec<String> = s.split_whitespace().map(str::to_string).collect();
    parse(&words)
}

fn err(s: &str) -> String {
    match p(s) {
        Ok(c) => panic!("{s:?} parsed as {c:?}"),
        Err(e) => e.0,
    }
}

fn v(g: Option<&str>, i: Option<&str>, labels: &[u32], weight: u32) -> ViaSpec {
    ViaSpec {
        gateway: g.map(|g| g.parse().unwrap()),
        interface: i.map(str::to_string),
        out_labels: labels.to_vec(),
        weight,
        table: None,
    }
}

#[test]
fn a_vpn_route_names_the_table_its_next_hop_is_looked_up_in() {
    let mut via = v(Some("192.0.2.4"), None, &[77], 1);
    via.table = Some(0);
    assert_eq!(
        p("route add 10.0.0.0/24 table 10 via 192.0.2.4 next-hop-table 0 out-labels 77").unwrap(),
        Command::RouteAdd {
            table: 10,
            prefix: "10.0.0.0/24".parse().unwrap(),
            target: RouteTarget::Paths(vec![via]),
            replace: false,
        }
    );
}

#[test]
fn pseudowire_commands() {
    assert_eq!(
        p("pw add cust1 interface port2 neighbor 192.0.2.4 in-label 500 out-label 600").unwrap(),
        Command::PwAdd {
            name: "cust1".into(),
            interface: "port2".into(),
            neighbor: "192.0.2.4".parse().unwrap(),
            in_label: 500,
            out_label: 600,
            control_word: true,
        }
    );
    assert!(matches!(
        p("pw add c neighbor 192.0.2.4 out-label 6 in-label 5 interface port2 no-control-word"),
        Ok(Command::PwAdd {
            control_word: false,
            in_label: 5,
            ..
        })
    ));
    assert_eq!(p("pw del cust1").unwrap(), Command::PwDel("cust1".into()));
    assert_eq!(p("show pw").unwrap(), Command::ShowPw);
    assert!(err("pw add c interface port2 neighbor 192.0.2.4 in-label 5").contains("give"));
    assert!(err("pw add c interface port2 neighbor 192.0.2 in-label 5").contains("neighbor"));
    assert!(err("pw add c interface port2 vlan 5").contains("unexpected"));
    assert!(err("pw add c in-label x").contains("in-label"));
    assert!(err("pw show").contains("add or del"));
}

#[test]
fn seed_article_commands() {
    assert_eq!(
        p("route add 10.0.1.1/32 via 192.168.11.10 port0 out-labels 100").unwrap(),
        Command::RouteAdd {
            table: 0,
            prefix: "10.0.1.1/32".parse().unwrap(),
            target: RouteTarget::Paths(vec![v(Some("192.168.11.10"), Some("port0"), &[100], 1)]),
            replace: false,
        }
    );
    for (out, labels) in [("100", vec![100]), ("0", vec![0]), ("3", vec![3])] {
        assert_eq!(
            p(&format!(
                "label add 100 eos via 192.168.11.8 port0 out-labels {out}"
            ))
            .unwrap(),
            Command::LabelAdd {
                label: 100,
                eos: true,
                spec: LabelSpec::Forward {
                    paths: vec![v(Some("192.168.11.8"), Some("port0"), &labels, 1)],
                    ttl_mode: mpls::TtlMode::Uniform,
                },
                replace: false,
            }
        );
    }
    let lookup = Command::LabelAdd {
        label: 100,
        eos: true,
        spec: LabelSpec::Ip4Lookup {
            table: 0,
            ttl_mode: mpls::TtlMode::Uniform,
        },
        replace: false,
    };
    assert_eq!(
        p("label add 100 eos via ip4-lookup table 0").unwrap(),
        lookup
    );
    // Without a table: the receiving interface's.
    let rx = Command::LabelAdd {
        label: 100,
        eos: true,
        spec: LabelSpec::Ip4Lookup {
            table: mpls::RX_TABLE,
            ttl_mode: mpls::TtlMode::Uniform,
        },
        replace: false,
    };
    assert_eq!(p("label add 100 eos via ip4-lookup").unwrap(), rx);
    assert_eq!(p("label add 100 eos ip4-lookup").unwrap(), rx);
    assert_eq!(
        p("mpls local-label add 100 eos via ip4-lookup-in-table 0").unwrap(),
        lookup
    );
    // The article's lines work with dpctl in front (interface names aside).
    assert_eq!(
        p("ip route add 10.0.1.1/32 via 192.0.2.2").unwrap(),
        p("route add 10.0.1.1/32 via 192.0.2.2").unwrap()
    );
    assert_eq!(
        p("mpls local-label add 100 eos via 192.168.11.8 port0 out-labels 100").unwrap(),
        p("label add 100 eos via 192.168.11.8 port0 out-labels 100").unwrap()
    );
}

#[test]
fn ecmp_weights_tables_specials() {
    let c = p("route replace 10.0.0.0/8 table 5 via 1.1.1.1 weight 3 via 2.2.2.2 port1 out-labels 16 17 via port0").unwrap();
    assert_eq!(
        c,
        Command::RouteAdd {
            table: 5,
            prefix: "10.0.0.0/8".parse().unwrap(),
            target: RouteTarget::Paths(vec![
                v(Some("1.1.1.1"), None, &[], 3),
                v(Some("2.2.2.2"), Some("port1"), &[16, 17], 1),
                v(None, Some("port0"), &[], 1),
            ]),
            replace: true,
        }
    );
    assert!(matches!(
        p("route add 10.66.0.0/16 blackhole").unwrap(),
        Command::RouteAdd {
            target: RouteTarget::Special(Special::Blackhole),
            ..
        }
    ));
    assert_eq!(
        p("label add 200 non-eos pop").unwrap(),
        Command::LabelAdd {
            label: 200,
            eos: false,
            spec: LabelSpec::Pop {
                ttl_mode: mpls::TtlMode::Uniform
            },
            replace: false
        }
    );
    assert_eq!(
        p("route show 10.0.0.1 table 5").unwrap(),
        Command::RouteShow {
            table: Some(5),
            filter: Some(RouteFilter::Address("10.0.0.1".parse().unwrap()))
        }
    );
    assert_eq!(
        p("interface sub add port0 100").unwrap(),
        Command::SubAdd {
            parent: "port0".into(),
            vlan: 100
        }
    );
    assert_eq!(
        p("show int").unwrap(),
        Command::ShowInterfaces { name: None }
    );
    assert_eq!(p("clear counters").unwrap(), Command::ClearCounters);
    assert_eq!(p("trace add 10").unwrap(), Command::TraceAdd(10));
}

#[test]
fn bad_input_says_what_is_wrong() {
    assert!(err("route add 10.0.1.1 via 1.2.3.4").contains("needs a length"));
    assert!(err("route add 10.0.1.1/33 via 1.2.3.4").contains("10.0.1.1/33"));
    assert!(err("route add 10.0.1.1/24 via 1.2.3.4").contains("host bits"));
    assert!(err("route add 10.0.1.0/24").contains("missing via"));
    assert!(err("route add 10.0.1.0/24 via").contains("missing a next hop"));
    assert!(err("route add 10.0.1.0/24 via 1.2.3.4 out-labels 1").contains("out-label 1"));
    assert!(err("route add 10.0.1.0/24 via 1.2.3.4 out-labels 1048576").contains("out of range"));
    assert!(err("route add 10.0.1.0/24 via 1.2.3.4 out-labels").contains("at least one"));
    assert!(err("route add 10.0.1.0/24 via 1.2.3.4 weight 0").contains("weight 0"));
    assert!(
        err("route add 10.0.1.0/24 via 1.2.3.4 port0 next-hop-table 0")
            .contains("next-hop-table needs a next hop without an interface")
    );
    assert!(err("route add 10.0.1.0/24 via port0 next-hop-table 0").contains("next-hop-table"));
    assert!(err("route add 10.0.1.0/24 via 1.2.3.4 next-hop-table x").contains("next-hop-table"));
    assert!(err("label add 100 eos via 1.2.3.4 port0 next-hop-table 0").contains("unexpected"));
    assert!(err("route add 10.0.1.0/24 via 1.2.3 port0").contains("not an IP address"));
    assert!(err("route add 10.0.1.0/24 via 1.2.3.4 port0 blackhole").contains("not both"));
    assert!(err("label add 3 eos via 1.2.3.4 port0 out-labels 100").contains("in-label 3"));
    assert!(err("label add 1 eos via 1.2.3.4 port0 out-labels 100").contains("in-label 1"));
    assert!(err("label add 100 via 1.2.3.4 port0").contains("eos or non-eos"));
    assert!(err("label add 100 eos via 1.2.3.4 out-labels 100").contains("interface"));
    assert!(err("label add 100 eos via 1.2.3.4 port0 out-labels 2 1").contains("out-label 1"));
    assert!(err("label add 100 eos").contains("missing via"));
    assert!(err("label add 100 eos pop").contains("non-eos"));
    assert!(err("label add 100 non-eos via ip4-lookup").contains("bottom-of-stack"));
    assert!(err("label add 1048576 eos drop").contains("out of range"));
    assert!(err("interface mtu port0 20").contains("68..9600"));
    assert!(err("interface sub add port0 4095").contains("1..4094"));
    assert!(err("neighbor add port0 10.0.0.1 02:00:00:00:00").contains("bad MAC"));
    assert!(err("neighbor add port0 224.0.0.1 02:00:00:00:00:01").contains("neighbour"));
    assert!(err("route add 10.0.0.0/8 via 1.2.3.4 port0 extra").contains("unexpected"));
    assert!(err("frobnicate").contains("unknown command"));
    assert!(err("").contains("no command"));
    assert!(err("trace add 0").contains("1..1024"));
    assert!(err("show run now").contains("unexpected \"now\""));
}

#[test]
fn ipv6_routes_take_ipv6_next_hops() {
    assert_eq!(
        p("route add 2001:db8::/32 via fe80::1 port0 weight 2 via 2001:db8:1::2").unwrap(),
        Command::RouteAdd {
            table: 0,
            prefix: "2001:db8::/32".parse().unwrap(),
            target: RouteTarget::Paths(vec![
                v(Some("fe80::1"), Some("port0"), &[], 2),
                v(Some("2001:db8:1::2"), None, &[], 1),
            ]),
            replace: false,
        }
    );
    assert!(
        err("route add 2001:db8::/32 via fe80::1")
            .contains("fe80::1 is link-local: name its interface")
    );
    assert!(err("route add 2001:db8::/32 via ff02::1 port0").contains("cannot be a next hop"));
    assert!(err("route add 2001:db8::/32 via 2001:db8::1::2 port0").contains("not an IP address"));
}

/// 6PE and 6VPE: an IPv6 route takes out-labels and an IPv4 or IPv4-mapped
/// next hop as an IPv4 route does; label entries pop into an IPv6 lookup
/// (`ip6-lookup`, VPP's `ip6-lookup-in-table N`) or a lookup by the payload's
/// version (`ip-lookup`), spelled as `ip4-lookup` is.
#[test]
fn labelled_ipv6_routes_and_ipv6_label_entries() {
    for gw in ["::ffff:192.0.2.4", "192.0.2.4"] {
        assert_eq!(
            p(&format!(
                "route add 2001:db8:200::/48 via {gw} out-labels 600"
            ))
            .unwrap(),
            Command::RouteAdd {
                table: 0,
                prefix: "2001:db8:200::/48".parse().unwrap(),
                target: RouteTarget::Paths(vec![v(Some(gw), None, &[600], 1)]),
                replace: false,
            }
        );
    }
    let add = |spec| Command::LabelAdd {
        label: 600,
        eos: true,
        spec,
        replace: false,
    };
    let uniform = mpls::TtlMode::Uniform;
    let six = |table| {
        add(LabelSpec::Ip6Lookup {
            table,
            ttl_mode: uniform,
        })
    };
    assert_eq!(
        p("label add 600 eos via ip6-lookup").unwrap(),
        six(mpls::RX_TABLE)
    );
    assert_eq!(
        p("label add 600 eos ip6-lookup").unwrap(),
        six(mpls::RX_TABLE)
    );
    assert_eq!(
        p("label add 600 eos via ip6-lookup table 5").unwrap(),
        six(5)
    );
    assert_eq!(
        p("mpls local-label add 600 eos via ip6-lookup-in-table 5").unwrap(),
        six(5)
    );
    assert_eq!(
        p("label add 600 eos ip-lookup table 5").unwrap(),
        add(LabelSpec::IpLookup {
            table: 5,
            ttl_mode: uniform,
        })
    );
    assert_eq!(
        p("label add 600 eos ip6-lookup pipe").unwrap(),
        add(LabelSpec::Ip6Lookup {
            table: mpls::RX_TABLE,
            ttl_mode: mpls::TtlMode::pipe(),
        })
    );
    assert!(err("label add 600 non-eos ip6-lookup").contains("eos"));
    assert!(err("label add 600 eos ip6-lookup ip4-lookup").contains("one action"));
}
