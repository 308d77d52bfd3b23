//! The learner's tests: kernel changes applied to a router with two twinned
//! ports, and random change sequences against the rules.

use super::*;
use std::net::Ipv4Addr;

mod support {
    use super::*;
    use dataplane::router::Interface;

    /// A router with port0 (ifindex 1, 10.1.0.1/24) and port1 (ifindex 2,
    /// 10.2.0.1/24), twins 11 and 12; kernel ifindex 13 is not a twin.
    pub(super) fn setup() -> (RouterControl, KernelView) {
        let mut ctl = RouterControl::new();
        for p in 0..2u8 {
            ctl.add_interface(Interface {
                ifindex: u32::from(p) + 1,
                name: format!("port{p}"),
                port: u16::from(p),
                vlan: None,
                mac: [2, 0, 0, 0, 0, p],
                mtu: 1500,
                up: true,
                table: 0,
                addrs: Vec::new(),
                addrs6: Vec::new(),
            })
            .unwrap();
            // Linux holds the twins' addresses.
            let ip = Ipv4Addr::new(10, p + 1, 0, 1);
            ctl.add_address_from(RouteSource::Kernel, u32::from(p) + 1, ip, 24)
                .unwrap();
        }
        let view = KernelView::new(HashMap::from([(11, 1), (12, 2)]), BTreeMap::new());
        (ctl, view)
    }

    pub(super) fn nh(gw: &str, oif: u32) -> NextHop {
        NextHop {
            gateway: Some(gw.parse().unwrap()),
            ifindex: Some(oif),
            weight: 1,
            onlink: false,
            labels: Vec::new(),
        }
    }
}

mod unit {
    use super::support::*;
    use super::*;
    use std::net::Ipv6Addr;

    fn pfx(s: &str) -> fib::Ipv4Prefix {
        s.parse().unwrap()
    }

    fn route(table: u32, p: &str, t: Option<Target>) -> Change {
        Change::Route {
            metric: 0,
            table,
            prefix: pfx(p).into(),
            route: t,
        }
    }

    /// A path as (via, interface, weight, labels).
    type Leg = (Via, Option<u32>, u32, Vec<u32>);

    fn paths(ctl: &RouterControl, p: &str) -> Option<Vec<Leg>> {
        match ctl.route_of(RouteSource::Kernel, 0, pfx(p))? {
            RouteKind::Paths(ps) => Some(
                ps.iter()
                    .map(|p| (p.via, p.ifindex, p.weight, p.labels.clone()))
                    .collect(),
            ),
            _ => None,
        }
    }

    #[test]
    fn routes_map_twins_tables_and_next_hop_kinds() {
        let (mut ctl, mut v) = setup();
        let mut labelled = nh("10.2.0.2", 12);
        labelled.labels = vec![100, 200];
        labelled.weight = 3;
        let v6 = NextHop {
            gateway: Some(IpAddr::V6("fe80::1".parse().unwrap())),
            ..nh("10.1.0.2", 11)
        };
        for c in [
            route(
                254,
                "198.51.100.0/24",
                Some(Target::Paths(vec![nh("10.1.0.2", 11), labelled])),
            ),
            route(254, "203.0.113.0/24", Some(Target::Paths(vec![v6]))),
            route(254, "192.0.2.0/24", Some(Target::Blackhole)),
            // Not over a twin: ignored; a table with no FIB table: ignored.
            route(
                254,
                "192.0.2.128/25",
                Some(Target::Paths(vec![nh("10.9.0.2", 13)])),
            ),
            route(100, "192.0.2.64/26", Some(Target::Blackhole)),
        ] {
            v.apply(&mut ctl, c);
        }
        assert_eq!(
            paths(&ctl, "198.51.100.0/24").unwrap(),
            [
                (
                    Via::Gateway("10.1.0.2".parse().unwrap()),
                    Some(1),
                    1,
                    vec![]
                ),
                (
                    Via::Gateway("10.2.0.2".parse().unwrap()),
                    Some(2),
                    3,
                    vec![100, 200]
                ),
            ]
        );
        assert_eq!(
            paths(&ctl, "203.0.113.0/24").unwrap(),
            [(
                Via::Gateway6("fe80::1".parse().unwrap()),
                Some(1),
                1,
                vec![]
            )]
        );
        assert_eq!(
            ctl.route_of(RouteSource::Kernel, 0, pfx("192.0.2.0/24")),
            Some(&RouteKind::Blackhole)
        );
        assert!(
            ctl.route_of(RouteSource::Kernel, 0, pfx("192.0.2.128/25"))
                .is_none()
        );
        assert_eq!(v.stats().ignored["route not over a twin"], 1);
        assert_eq!(v.stats().ignored["table not mapped"], 1);
        // Table 100 exists now: it maps to FIB table 100.
        ctl.table_add(100).unwrap();
        v.apply(
            &mut ctl,
            route(100, "192.0.2.64/26", Some(Target::Blackhole)),
        );
        assert!(
            ctl.route_of(RouteSource::Kernel, 100, pfx("192.0.2.64/26"))
                .is_some()
        );
        // A replace, then a delete.
        v.apply(
            &mut ctl,
            route(
                254,
                "198.51.100.0/24",
                Some(Target::Paths(vec![nh("10.2.0.2", 12)])),
            ),
        );
        assert_eq!(paths(&ctl, "198.51.100.0/24").unwrap().len(), 1);
        v.apply(&mut ctl, route(254, "198.51.100.0/24", None));
        assert!(
            ctl.route_of(RouteSource::Kernel, 0, pfx("198.51.100.0/24"))
                .is_none()
        );
    }

    #[test]
    fn ipv6_routes_are_learned_as_ipv4_ones() {
        let (mut ctl, mut v) = setup();
        let p6: IpPrefix = "2001:db8::/32".parse().unwrap();
        let v6 = NextHop {
            gateway: Some(IpAddr::V6("fe80::1".parse().unwrap())),
            ..nh("10.1.0.2", 11)
        };
        v.apply(
            &mut ctl,
            Change::Route {
                table: 254,
                prefix: p6,
                metric: 0,
                route: Some(Target::Paths(vec![v6])),
            },
        );
        assert!(!v.stats().ignored.contains_key("ipv6 route"));
        assert!(ctl.route_of(RouteSource::Kernel, 0, p6).is_some());
        assert_eq!(ctl.routes().count(), 5);
        assert_eq!(v.stats().refused, 0);
        v.apply(
            &mut ctl,
            Change::Route {
                table: 254,
                prefix: p6,
                metric: 0,
                route: None,
            },
        );
        assert!(ctl.route_of(RouteSource::Kernel, 0, p6).is_none());
    }

    /// 6PE as FPM or netlink carry it: an IPv6 route over a labelled IPv4
    /// neighbour, written as an IPv4 next hop (RTA_VIA) or IPv4-mapped; both are
    /// the IPv4 neighbour with the route's labels.
    #[test]
    fn six_pe_routes_go_via_their_ipv4_neighbour_with_their_labels() {
        let (mut ctl, mut v) = setup();
        for (p, gw) in [
            ("2001:db8:1::/48", "10.2.0.2"),
            ("2001:db8:2::/48", "::ffff:10.2.0.2"),
        ] {
            let mut n = nh(gw, 12);
            n.labels = vec![100, 17];
            let p6: IpPrefix = p.parse().unwrap();
            v.apply(
                &mut ctl,
                Change::Route {
                    table: 254,
                    prefix: p6,
                    metric: 20,
                    route: Some(Target::Paths(vec![n])),
                },
            );
            let Some(RouteKind::Paths(ps)) = ctl.route_of(RouteSource::Kernel, 0, p6) else {
                panic!("{p}: no route");
            };
            let got: Vec<Leg> = ps
                .iter()
                .map(|p| (p.via, p.ifindex, p.weight, p.labels.clone()))
                .collect();
            let via = Via::Gateway("10.2.0.2".parse().unwrap());
            assert_eq!(got, vec![(via, Some(2), 1, vec![100, 17])], "{p}");
        }
        assert_eq!(v.stats().refused, 0);
    }

    #[test]
    fn the_lowest_metric_forwards_and_a_backup_takes_over() {
        let (mut ctl, mut v) = setup();
        let r = |metric, t: Option<Target>| Change::Route {
            table: 254,
            prefix: pfx("198.51.100.0/24").into(),
            metric,
            route: t,
        };
        let via = |gw, oif| Some(Target::Paths(vec![nh(gw, oif)]));
        let gw = |ctl: &RouterControl| paths(ctl, "198.51.100.0/24").map(|p| p[0].0);
        let g = |s: &str| Some(Via::Gateway(s.parse().unwrap()));
        // A floating static (metric 200), then the routing daemon's (32).
        v.apply(&mut ctl, r(200, via("10.1.0.2", 11)));
        v.apply(&mut ctl, r(32, via("10.2.0.2", 12)));
        assert_eq!(gw(&ctl), g("10.2.0.2"));
        // A worse one arriving later waits.
        v.apply(&mut ctl, r(300, via("10.1.0.9", 11)));
        assert_eq!(gw(&ctl), g("10.2.0.2"));
        // The daemon's goes: the static forwards; it goes: the next.
        v.apply(&mut ctl, r(32, None));
        assert_eq!(gw(&ctl), g("10.1.0.2"));
        v.apply(&mut ctl, r(300, None));
        assert_eq!(gw(&ctl), g("10.1.0.2"));
        // Its link goes down with no backup left: nothing forwards.
        v.apply(&mut ctl, r(100, via("10.2.0.2", 12)));
        v.apply(
            &mut ctl,
            Change::Link(Link {
                ifindex: 12,
                name: "port1".into(),
                up: false,
                mtu: 1500,
                mac: None,
                ..Default::default()
            }),
        );
        assert_eq!(gw(&ctl), g("10.1.0.2"));
        v.apply(&mut ctl, r(200, None));
        assert_eq!(gw(&ctl), None);
    }

    #[test]
    fn route_import_can_be_turned_off_and_on() {
        let (mut ctl, mut v) = setup();
        let r = || {
            route(
                254,
                "198.51.100.0/24",
                Some(Target::Paths(vec![nh("10.2.0.2", 12)])),
            )
        };
        v.apply(&mut ctl, r());
        assert!(v.set_route_import(&mut ctl, false));
        assert!(!v.set_route_import(&mut ctl, false));
        assert_eq!(ctl.routes_of(RouteSource::Kernel).count(), 0);
        v.apply(&mut ctl, r());
        assert_eq!(ctl.routes_of(RouteSource::Kernel).count(), 0);
        assert_eq!(v.stats().ignored["route import off"], 1);
        assert!(v.set_route_import(&mut ctl, true));
        v.begin_refresh(&mut ctl);
        v.apply(&mut ctl, r());
        v.sweep(&mut ctl);
        assert_eq!(ctl.routes_of(RouteSource::Kernel).count(), 1);
    }

    /// Found by the kernel oracle: a route over a nexthop object that nothing
    /// here forwards over (no twin) is not installed; the kernel then flushes
    /// it and the object silently (its link went down), and a resync reads
    /// neither back. An object made later under the same id must not bring the
    /// route back.
    #[test]
    fn a_silently_flushed_route_does_not_return_with_its_nexthop_id() {
        let (mut ctl, mut v) = setup();
        let obj = |id, o| Change::Nexthop { id, nh: Some(o) };
        // (ifindex 13 is no twin)
        v.apply(&mut ctl, obj(1, NexthopObject::One(nh("10.9.0.2", 13))));
        v.apply(
            &mut ctl,
            route(254, "203.0.113.0/24", Some(Target::NexthopId(1))),
        );
        assert!(
            ctl.route_of(RouteSource::Kernel, 0, pfx("203.0.113.0/24"))
                .is_none()
        );
        // The resync's dump has neither the object nor the route.
        v.begin_refresh(&mut ctl);
        v.sweep(&mut ctl);
        v.apply(&mut ctl, obj(1, NexthopObject::Blackhole));
        assert!(
            ctl.route_of(RouteSource::Kernel, 0, pfx("203.0.113.0/24"))
                .is_none()
        );
        // A route over the new object is the kernel's again.
        v.apply(
            &mut ctl,
            route(254, "203.0.113.0/24", Some(Target::NexthopId(1))),
        );
        assert!(matches!(
            ctl.route_of(RouteSource::Kernel, 0, pfx("203.0.113.0/24")),
            Some(RouteKind::Blackhole)
        ));
    }

    #[test]
    fn nexthop_objects_resolve_and_follow_their_changes() {
        let (mut ctl, mut v) = setup();
        let obj = |id, o| Change::Nexthop { id, nh: Some(o) };
        v.apply(&mut ctl, obj(1, NexthopObject::One(nh("10.1.0.2", 11))));
        v.apply(&mut ctl, obj(2, NexthopObject::One(nh("10.2.0.2", 12))));
        v.apply(
            &mut ctl,
            obj(10, NexthopObject::Group(vec![(1, 1), (2, 2)])),
        );
        v.apply(
            &mut ctl,
            route(254, "198.51.100.0/24", Some(Target::NexthopId(10))),
        );
        v.apply(
            &mut ctl,
            route(254, "203.0.113.0/24", Some(Target::NexthopId(1))),
        );
        let w: Vec<u32> = paths(&ctl, "198.51.100.0/24")
            .unwrap()
            .iter()
            .map(|p| p.2)
            .collect();
        assert_eq!(w, [1, 2]);
        // Member 2 moves: the group's route follows; member 1 goes: its own route
        // goes and the group loses it.
        v.apply(&mut ctl, obj(2, NexthopObject::One(nh("10.1.0.3", 11))));
        let p = paths(&ctl, "198.51.100.0/24").unwrap();
        assert_eq!(p[1].0, Via::Gateway("10.1.0.3".parse().unwrap()));
        v.apply(&mut ctl, Change::Nexthop { id: 1, nh: None });
        assert!(
            ctl.route_of(RouteSource::Kernel, 0, pfx("203.0.113.0/24"))
                .is_none()
        );
        assert_eq!(paths(&ctl, "198.51.100.0/24").unwrap().len(), 1);
        // A nexthop created again under the same id starts without routes, as
        // the kernel's (it flushed the routes with the old one).
        v.apply(&mut ctl, obj(1, NexthopObject::Blackhole));
        assert!(
            ctl.route_of(RouteSource::Kernel, 0, pfx("203.0.113.0/24"))
                .is_none()
        );
        assert_eq!(paths(&ctl, "198.51.100.0/24").unwrap().len(), 1);
        // The group's last member goes: the group goes, and its route.
        v.apply(&mut ctl, Change::Nexthop { id: 2, nh: None });
        assert!(
            ctl.route_of(RouteSource::Kernel, 0, pfx("198.51.100.0/24"))
                .is_none()
        );
        v.apply(&mut ctl, obj(2, NexthopObject::One(nh("10.2.0.2", 12))));
        v.apply(&mut ctl, obj(10, NexthopObject::Group(vec![(2, 1)])));
        assert!(
            ctl.route_of(RouteSource::Kernel, 0, pfx("198.51.100.0/24"))
                .is_none()
        );
    }

    #[test]
    fn a_group_of_one_blackhole_goes_with_its_member() {
        // ip nexthop replace id 1 blackhole; ip nexthop replace id 20 group 1;
        // ip route replace 10.100.22.0/24 metric 10 nhid 20; ip nexthop del id 1
        let (mut ctl, mut v) = setup();
        let obj = |id, o| Change::Nexthop { id, nh: Some(o) };
        v.apply(&mut ctl, obj(1, NexthopObject::Blackhole));
        v.apply(&mut ctl, obj(3, NexthopObject::One(nh("10.1.0.3", 11))));
        v.apply(&mut ctl, obj(20, NexthopObject::Group(vec![(1, 1)])));
        v.apply(
            &mut ctl,
            Change::Route {
                table: 254,
                prefix: pfx("10.100.22.0/24").into(),
                metric: 10,
                route: Some(Target::NexthopId(20)),
            },
        );
        let p = pfx("10.100.22.0/24");
        let held =
            |ctl: &RouterControl| ctl.route_of_metric(RouteSource::Kernel, 0, p, 10).cloned();
        assert_eq!(held(&ctl), Some(RouteKind::Blackhole));
        // The kernel tells the member's delete and the group's; the route goes
        // silently. Either message alone takes it.
        v.apply(&mut ctl, Change::Nexthop { id: 1, nh: None });
        assert_eq!(held(&ctl), None);
        v.apply(&mut ctl, Change::Nexthop { id: 20, nh: None });
        v.apply(&mut ctl, obj(1, NexthopObject::One(nh("10.1.0.2", 11))));
        v.apply(
            &mut ctl,
            obj(20, NexthopObject::Group(vec![(1, 1), (3, 1)])),
        );
        assert_eq!(held(&ctl), None);
        assert_eq!(ctl.routes_of(RouteSource::Kernel).count(), 0);
    }

    #[test]
    fn mpls_routes_become_label_entries() {
        let (mut ctl, mut v) = setup();
        let mut swap = nh("10.2.0.2", 12);
        swap.labels = vec![200];
        v.apply(
            &mut ctl,
            Change::Label {
                label: 100,
                route: Some(vec![swap]),
            },
        );
        // No out-label: PHP. No next hop on a twin and no gateway: pop and look up.
        v.apply(
            &mut ctl,
            Change::Label {
                label: 101,
                route: Some(vec![nh("10.1.0.2", 11)]),
            },
        );
        // (as the kernel and zebra say it: no gateway, `dev lo`, not a twin)
        let local = NextHop {
            gateway: None,
            ifindex: Some(1),
            ..nh("10.1.0.2", 11)
        };
        v.apply(
            &mut ctl,
            Change::Label {
                label: 102,
                route: Some(vec![local]),
            },
        );
        let out = |l: u32| match ctl.labels().get(l, true) {
            Some(mpls::LabelAction::Forward { paths, .. }) => Some(paths[0].out_labels.clone()),
            _ => None,
        };
        assert_eq!(out(100), Some(vec![200]));
        assert_eq!(out(101), Some(vec![3]));
        assert!(matches!(
            ctl.labels().get(102, true),
            Some(mpls::LabelAction::IpLookup { table: 0, .. })
        ));
        v.apply(
            &mut ctl,
            Change::Label {
                label: 100,
                route: None,
            },
        );
        assert!(ctl.labels().get(100, true).is_none());
        assert!(ctl.labels().get(100, false).is_none());
    }

    /// `ip link add red type vrf table 10; ip link set port1 master red`: the
    /// twin's interface moves into FIB table 10 with its addresses of both
    /// families (and their connected routes), the VRF's IPv4 and IPv6 routes land
    /// in that table, `nomaster` brings the interface back; a VRF device whose table
    /// the router lacks is refused and moves nothing; a label out of the VRF's
    /// device pops into its table.
    #[test]
    fn twins_follow_their_vrf_device() {
        let (mut ctl, mut v) = setup();
        ctl.table_add(10).unwrap();
        let vrf = |ifindex, table| {
            Change::Link(Link {
                ifindex,
                name: format!("vrf{table}"),
                up: true,
                vrf_table: Some(table),
                ..Default::default()
            })
        };
        let port1 = |master| {
            Change::Link(Link {
                ifindex: 12,
                name: "port1".into(),
                up: true,
                mtu: 1500,
                master,
                ..Default::default()
            })
        };
        let p: fib::Ipv4Prefix = "10.2.0.0/24".parse().unwrap();
        let p6: fib::Ipv6Prefix = "2001:db8:2::/64".parse().unwrap();
        // Both families' connected routes go with the interface.
        let connected_in = |ctl: &RouterControl, t| {
            let (v4, v6) = (ctl.fib().route(t, p), ctl.fib().route6(t, p6));
            assert_eq!(v4.is_some(), v6.is_some(), "table {t}: {v4:?} {v6:?}");
            v4.is_some()
        };
        v.apply(
            &mut ctl,
            Change::Addr {
                add: true,
                ifindex: 12,
                addr: "2001:db8:2::1".parse().unwrap(),
                len: 64,
            },
        );
        v.apply(&mut ctl, vrf(50, 10));
        v.apply(&mut ctl, vrf(51, 99));
        assert_eq!(ctl.iface(2).unwrap().table, 0);
        assert!(connected_in(&ctl, 0));
        v.apply(&mut ctl, port1(Some(50)));
        let i = ctl.iface(2).unwrap();
        assert_eq!(i.table, 10);
        assert_eq!(i.addrs, [(Ipv4Addr::new(10, 2, 0, 1), 24)]);
        assert_eq!(i.addrs6, [("2001:db8:2::1".parse().unwrap(), 64)]);
        assert!(connected_in(&ctl, 10));
        assert!(!connected_in(&ctl, 0));
        // The VRF's routes of either family come in its table (`ip -6 route add
        // 2001:db8:77::/48 via 2001:db8:2::2 vrf red`).
        let vrf_route = |prefix: fib::IpPrefix, gw: &str, add: bool| Change::Route {
            metric: 0,
            table: 10,
            prefix,
            route: add.then(|| Target::Paths(vec![nh(gw, 12)])),
        };
        let r4: fib::Ipv4Prefix = "198.51.77.0/24".parse().unwrap();
        let r6: fib::Ipv6Prefix = "2001:db8:77::/48".parse().unwrap();
        v.apply(&mut ctl, vrf_route(r4.into(), "10.2.0.2", true));
        v.apply(&mut ctl, vrf_route(r6.into(), "2001:db8:2::2", true));
        assert!(ctl.fib().route(10, r4).is_some());
        assert!(ctl.fib().route6(10, r6).is_some());
        assert!(ctl.fib().route(0, r4).is_none());
        assert!(ctl.fib().route6(0, r6).is_none());
        v.apply(&mut ctl, vrf_route(r6.into(), "2001:db8:2::2", false));
        assert!(ctl.fib().route6(10, r6).is_none());
        assert!(ctl.fib().route(10, r4).is_some());
        v.apply(&mut ctl, vrf_route(r4.into(), "10.2.0.2", false));
        // The same state again changes nothing.
        v.apply(&mut ctl, port1(Some(50)));
        assert_eq!(ctl.iface(2).unwrap().table, 10);
        v.apply(&mut ctl, port1(None));
        assert_eq!(ctl.iface(2).unwrap().table, 0);
        assert!(connected_in(&ctl, 0));
        let refused = v.stats.refused;
        v.apply(&mut ctl, port1(Some(51)));
        assert_eq!(ctl.iface(2).unwrap().table, 0);
        assert_eq!(v.stats.refused, refused + 1);
        assert!(v.stats.last_error.as_deref().unwrap().contains("table 99"));
        // A bridge or bond master is no VRF: nothing moves.
        v.apply(&mut ctl, port1(Some(77)));
        assert_eq!(ctl.iface(2).unwrap().table, 0);
        // zebra's per-VRF label.
        let mut hop = nh("10.2.0.2", 50);
        hop.gateway = None;
        v.apply(
            &mut ctl,
            Change::Label {
                label: 80,
                route: Some(vec![hop]),
            },
        );
        assert!(matches!(
            ctl.labels().get(80, true),
            Some(mpls::LabelAction::IpLookup { table: 10, .. })
        ));
        // The VRF device gone: its label's next hop is unknown now.
        v.apply(&mut ctl, Change::LinkGone { ifindex: 50 });
        let mut hop = nh("10.2.0.2", 50);
        hop.gateway = None;
        v.apply(
            &mut ctl,
            Change::Label {
                label: 81,
                route: Some(vec![hop]),
            },
        );
        assert!(!matches!(
            ctl.labels().get(81, true),
            Some(mpls::LabelAction::IpLookup { table: 10, .. })
        ));
    }

    #[test]
    fn links_addresses_and_neighbours_of_twins() {
        let (mut ctl, mut v) = setup();
        let link = |up, mtu| {
            Change::Link(Link {
                ifindex: 12,
                name: "port1".into(),
                up,
                mtu,
                mac: None,
                ..Default::default()
            })
        };
        v.apply(
            &mut ctl,
            route(
                254,
                "198.51.100.0/24",
                Some(Target::Paths(vec![nh("10.2.0.2", 12)])),
            ),
        );
        v.apply(&mut ctl, link(true, 9000));
        assert_eq!(ctl.iface(2).unwrap().mtu, 9000);
        v.apply(&mut ctl, link(false, 9000));
        assert!(!ctl.iface(2).unwrap().up);
        assert!(
            ctl.route_of(RouteSource::Kernel, 0, pfx("198.51.100.0/24"))
                .is_none()
        );
        let addr = |add| Change::Addr {
            add,
            ifindex: 11,
            addr: "10.5.0.1".parse().unwrap(),
            len: 24,
        };
        v.apply(&mut ctl, addr(true));
        v.apply(&mut ctl, addr(true));
        assert!(
            ctl.iface(1)
                .unwrap()
                .addrs
                .contains(&("10.5.0.1".parse().unwrap(), 24))
        );
        v.apply(&mut ctl, addr(false));
        assert!(
            !ctl.iface(1)
                .unwrap()
                .addrs
                .contains(&("10.5.0.1".parse().unwrap(), 24))
        );
        let neigh = |addr: IpAddr, mac| Change::Neigh {
            ifindex: 11,
            addr,
            mac,
        };
        let ip4: Ipv4Addr = "10.1.0.7".parse().unwrap();
        let ip6: Ipv6Addr = "fe80::7".parse().unwrap();
        v.apply(&mut ctl, neigh(ip4.into(), Some([2, 0, 0, 0, 0, 7])));
        v.apply(&mut ctl, neigh(ip6.into(), Some([2, 0, 0, 0, 0, 8])));
        assert!(ctl.is_kernel_neighbor(1, ip4));
        assert_eq!(ctl.neighbors6().get(&(1, ip6)), Some(&[2, 0, 0, 0, 0, 8]));
        v.apply(&mut ctl, neigh(ip4.into(), None));
        v.apply(&mut ctl, neigh(ip6.into(), None));
        assert!(!ctl.neighbors().contains_key(&(1, ip4)));
        assert!(ctl.neighbors6().is_empty());
        // Other links are not ours.
        v.apply(
            &mut ctl,
            Change::Addr {
                add: true,
                ifindex: 13,
                addr: ip4.into(),
                len: 32,
            },
        );
        assert_eq!(v.stats().ignored["not a twin"], 1);
    }

    /// Addresses on the namespace's `lo`: a /32 or a /128 is the router's own
    /// (a local route in table 0; the lowest IPv4 one its router id), withdrawn
    /// with the address; ::1, a link-local one and a wider prefix are not.
    #[test]
    fn loopback_addresses_of_both_families_are_the_routers_own() {
        let (mut ctl, mut v) = setup();
        let lo = |add, a: &str, len| Change::Addr {
            add,
            ifindex: LOOPBACK_IFINDEX,
            addr: a.parse().unwrap(),
            len,
        };
        let local = |ctl: &RouterControl, a: &str, len| {
            let p = fib::IpPrefix::new(a.parse().unwrap(), len).unwrap();
            matches!(ctl.route_kind(0, p), Some(RouteKind::Local))
        };
        for (a, len) in [("192.0.2.1", 32), ("2001:db8:ff::1", 128)] {
            v.apply(&mut ctl, lo(true, a, len));
            assert!(local(&ctl, a, len), "{a}");
        }
        assert_eq!(ctl.router_id(), Some("192.0.2.1".parse().unwrap()));
        for (a, len) in [("::1", 128), ("fe80::1", 128), ("2001:db8:fe::", 64)] {
            v.apply(&mut ctl, lo(true, a, len));
            assert!(!local(&ctl, a, len), "{a}/{len}");
        }
        for (a, len) in [("192.0.2.1", 32), ("2001:db8:ff::1", 128)] {
            v.apply(&mut ctl, lo(false, a, len));
            assert!(!local(&ctl, a, len), "{a}");
        }
        assert_eq!(ctl.router_id(), None);
    }

    /// Connected routes as the kernel keeps them: gone while the link is down
    /// (the local address stays), back when it is up; a second address in the
    /// subnet neither adds nor takes one; an address added while down brings
    /// none. Link and address events ask for the routes to be read again.
    #[test]
    fn connected_routes_follow_links_and_addresses_as_in_linux() {
        let (mut ctl, mut v) = setup();
        let link = |up| {
            Change::Link(Link {
                ifindex: 12,
                name: "port1".into(),
                up,
                mtu: 1500,
                mac: None,
                ..Default::default()
            })
        };
        let addr = |add, a: &str, len| Change::Addr {
            add,
            ifindex: 12,
            addr: a.parse().unwrap(),
            len,
        };
        let kind = |ctl: &RouterControl, p: &str| ctl.route_kind(0, pfx(p)).cloned();
        let connected = Some(RouteKind::Connected { ifindex: 2 });
        v.apply(&mut ctl, addr(true, "10.2.0.5", 24));
        v.apply(&mut ctl, addr(false, "10.2.0.5", 24));
        assert_eq!(kind(&ctl, "10.2.0.0/24"), connected, "the primary keeps it");
        assert_eq!(
            v.refresh.take().unwrap(),
            "address 10.2.0.5/24 added on port1"
        );
        v.apply(&mut ctl, link(false));
        assert_eq!(kind(&ctl, "10.2.0.0/24"), None);
        assert_eq!(kind(&ctl, "10.2.0.1/32"), Some(RouteKind::Local));
        assert_eq!(v.refresh.take().unwrap(), "port1 down");
        // A kernel route for the subnet forwards while the link is down.
        let via0 = Some(Target::Paths(vec![nh("10.1.0.9", 11)]));
        v.apply(&mut ctl, route(254, "10.2.0.0/24", via0));
        assert!(matches!(
            kind(&ctl, "10.2.0.0/24"),
            Some(RouteKind::Paths(_))
        ));
        v.apply(&mut ctl, addr(true, "10.6.0.1", 24));
        assert_eq!(kind(&ctl, "10.6.0.0/24"), None, "added while down");
        v.apply(&mut ctl, link(true));
        assert_eq!(kind(&ctl, "10.2.0.0/24"), connected);
        assert_eq!(kind(&ctl, "10.6.0.0/24"), connected);
        v.apply(&mut ctl, addr(false, "10.2.0.1", 24));
        assert!(
            matches!(kind(&ctl, "10.2.0.0/24"), Some(RouteKind::Paths(_))),
            "revealed"
        );
        // Nothing of this reaches the FPM source.
        let mut f =
            KernelView::with_source(RouteSource::Fpm, HashMap::from([(12, 2)]), BTreeMap::new());
        f.apply(&mut ctl, link(false));
        f.apply(&mut ctl, addr(false, "10.6.0.1", 24));
        assert!(ctl.iface(2).unwrap().up);
        assert_eq!(f.stats().refused_by["link over FPM"], 1);
        assert_eq!(f.stats().refused_by["address over FPM"], 1);
        assert!(f.refresh.is_none());
    }

    #[test]
    fn a_refresh_sweeps_what_the_dump_did_not_have() {
        let (mut ctl, mut v) = setup();
        let via = |gw| Some(Target::Paths(vec![nh(gw, 12)]));
        v.apply(&mut ctl, route(254, "198.51.100.0/24", via("10.2.0.2")));
        v.apply(&mut ctl, route(254, "203.0.113.0/24", via("10.2.0.2")));
        v.apply(
            &mut ctl,
            Change::Neigh {
                ifindex: 11,
                addr: "10.1.0.7".parse().unwrap(),
                mac: Some([2; 6]),
            },
        );
        // A dump with one of the routes and the interfaces' addresses.
        v.begin_refresh(&mut ctl);
        v.apply_batch(
            &mut ctl,
            vec![
                Ok(Msg::Change(route(254, "203.0.113.0/24", via("10.2.0.3")))),
                Ok(Msg::Change(Change::Addr {
                    add: true,
                    ifindex: 11,
                    addr: "10.1.0.1".parse().unwrap(),
                    len: 24,
                })),
                Ok(Msg::Change(Change::Addr {
                    add: true,
                    ifindex: 12,
                    addr: "10.2.0.1".parse().unwrap(),
                    len: 24,
                })),
            ],
        );
        assert_eq!(v.sweep(&mut ctl), 2);
        let left: Vec<_> = ctl.routes_of(RouteSource::Kernel).map(|r| r.1).collect();
        assert_eq!(left, [pfx("203.0.113.0/24")]);
        assert!(ctl.neighbors().is_empty());
    }
}

mod props {
    use super::support::*;
    use super::*;
    use proptest::collection::vec as pvec;
    use proptest::prelude::*;

    fn next_hop() -> impl Strategy<Value = NextHop> {
        (
            prop_oneof![
                Just(None),
                any::<[u8; 4]>().prop_map(|o| Some(IpAddr::V4(o.into()))),
                any::<[u8; 16]>().prop_map(|o| Some(IpAddr::V6(o.into()))),
            ],
            prop_oneof![
                Just(None),
                Just(Some(11)),
                Just(Some(12)),
                any::<u32>().prop_map(Some)
            ],
            any::<u16>(),
            any::<bool>(),
            pvec(any::<u32>(), 0..4),
        )
            .prop_map(|(gateway, ifindex, weight, onlink, labels)| NextHop {
                gateway,
                ifindex,
                weight,
                onlink,
                labels,
            })
    }

    fn change() -> impl Strategy<Value = Change> {
        let target = prop_oneof![
            pvec(next_hop(), 0..4).prop_map(Target::Paths),
            (0u32..4).prop_map(Target::NexthopId),
            Just(Target::Blackhole),
            Just(Target::Unreachable),
        ];
        prop_oneof![
            (
                prop_oneof![Just(254u32), Just(255), any::<u32>()],
                any::<u32>(),
                0u8..=32,
                0u32..3,
                proptest::option::of(target),
            )
                .prop_map(|(table, a, l, metric, route)| Change::Route {
                    table,
                    prefix: IpPrefix::new_truncated(Ipv4Addr::from(a).into(), l).unwrap(),
                    metric,
                    route,
                }),
            (0u32..4, proptest::option::of(next_hop())).prop_map(|(id, nh)| Change::Nexthop {
                id,
                nh: nh.map(NexthopObject::One),
            }),
            (any::<u32>(), proptest::option::of(pvec(next_hop(), 0..3)))
                .prop_map(|(label, route)| Change::Label { label, route }),
            (
                prop_oneof![Just(11u32), Just(12), any::<u32>()],
                any::<[u8; 4]>(),
                0u8..=40,
                any::<bool>()
            )
                .prop_map(|(ifindex, a, len, add)| Change::Addr {
                    add,
                    ifindex,
                    addr: a.into(),
                    len,
                }),
            (
                prop_oneof![Just(11u32), Just(12), any::<u32>()],
                any::<bool>(),
                any::<u32>()
            )
                .prop_map(|(ifindex, up, mtu)| Change::Link(Link {
                    ifindex,
                    name: String::new(),
                    up,
                    mtu,
                    mac: None,
                    ..Default::default()
                })),
        ]
    }

    proptest! {
        // Each case builds a router (a 2^21-entry label table): few cases, many
        // changes each.
        #![proptest_config(ProptestConfig::with_cases(40))]

        /// Whatever the kernel says, in any order: nothing panics, and a refresh
        /// with an empty dump leaves no kernel route, label or neighbour behind.
        #[test]
        fn any_changes_then_an_empty_refresh_leave_nothing(cs in pvec(change(), 1..120)) {
            let (mut ctl, mut v) = setup();
            let labels: Vec<u32> = cs
                .iter()
                .filter_map(|c| match c {
                    Change::Label { label, .. } => Some(*label),
                    _ => None,
                })
                .collect();
            for c in cs {
                v.apply(&mut ctl, c);
            }
            v.begin_refresh(&mut ctl);
            v.sweep(&mut ctl);
            prop_assert_eq!(ctl.routes_of(RouteSource::Kernel).count(), 0);
            prop_assert!(ctl.neighbors().keys().all(|&(i, a)| !ctl.is_kernel_neighbor(i, a)));
            for l in labels {
                for eos in [true, false] {
                    prop_assert!(ctl.label_source(l, eos) != Some(RouteSource::Kernel));
                }
            }
        }
    }
}
