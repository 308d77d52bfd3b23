//! Ethernet ports: any vdev string or PCI address, N rx/tx queues, RSS when the device
//! has it.

use std::ffi::CString;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::eal::LIVE_OBJECTS;
use super::{DpdkError, Eal, Mempool, Ring, check, rte_errno, strerror};

/// How to open a port.
#[derive(Debug, Clone)]
pub struct PortConfig {
    /// Our name for it (`port0`), used in messages and by the control plane.
    pub name: String,
    /// A vdev devargs string (`net_af_packet0,iface=veth0`, `net_null0`,
    /// `net_pcap0,rx_pcap=in.pcap`) or a PCI address (`0000:01:00.0`).
    pub device: String,
    /// Receive queues (RSS spreads flows over them when the device supports it).
    pub rx_queues: u16,
    /// Transmit queues (one per worker).
    pub tx_queues: u16,
    /// Receive descriptors per queue (adjusted to the device's limits).
    pub rx_desc: u16,
    /// Transmit descriptors per queue (adjusted to the device's limits).
    pub tx_desc: u16,
    /// Accept frames for any destination MAC.
    pub promiscuous: bool,
    /// Let the device check IPv4 header checksums when it can
    /// (`RTE_ETH_RX_OFFLOAD_IPV4_CKSUM`): the router then trusts its verdict in
    /// each mbuf and checks only the frames it did not.
    pub rx_checksum: bool,
}

impl PortConfig {
    /// A port with one queue pair and default descriptor counts.
    pub fn new(name: &str, device: &str) -> Self {
        PortConfig {
            name: name.into(),
            device: device.into(),
            rx_queues: 1,
            tx_queues: 1,
            rx_desc: 1024,
            tx_desc: 1024,
            promiscuous: true,
            rx_checksum: true,
        }
    }
}

/// Whether a device string names a PCI device (`0000:01:00.0` or `01:00.0`).
pub(crate) fn is_pci_address(dev: &str) -> bool {
    let parts: Vec<&str> = dev.split(':').collect();
    let hex = |s: &str, n: usize| s.len() == n && s.chars().all(|c| c.is_ascii_hexdigit());
    let (bus, devfn) = match parts.as_slice() {
        [dom, bus, devfn] if hex(dom, 4) => (*bus, *devfn),
        [bus, devfn] => (*bus, *devfn),
        _ => return false,
    };
    let Some((d, f)) = devfn.split_once('.') else {
        return false;
    };
    hex(bus, 2) && hex(d, 2) && hex(f, 1)
}

/// Link state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkStatus {
    /// Link up.
    pub up: bool,
    /// Speed in Mbit/s (0 when unknown; vdevs often report a nominal value).
    pub speed_mbps: u32,
}

/// The device's own counters (`rte_eth_stats`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PortStats {
    /// Packets received.
    pub rx_pkts: u64,
    /// Packets sent.
    pub tx_pkts: u64,
    /// Bytes received.
    pub rx_bytes: u64,
    /// Bytes sent.
    pub tx_bytes: u64,
    /// Packets the device dropped because no rx descriptor was free.
    pub rx_missed: u64,
    /// Receive errors.
    pub rx_errors: u64,
    /// Transmit errors.
    pub tx_errors: u64,
    /// Receive failures for lack of mbufs.
    pub rx_nombuf: u64,
}

/// An open, started port. Stopped and closed on drop.
#[derive(Debug)]
pub struct Port {
    id: u16,
    name: String,
    driver: String,
    rx_queues: u16,
    tx_queues: u16,
    rss: bool,
    rx_checksum: bool,
    /// The Linux interface an af_packet or af_xdp port reads (`iface=`).
    kernel_iface: Option<String>,
    _pool: Arc<Mempool>,
    _rings: Vec<Arc<Ring>>,
}

/// The Linux interface behind a `net_af_packet`/`net_af_xdp` device string (its
/// `iface=` argument), whose link is the port's.
pub fn kernel_iface_of(device: &str) -> Option<String> {
    let mut parts = device.trim().split(',');
    let driver = parts.next()?;
    if !(driver.starts_with("net_af_packet") || driver.starts_with("net_af_xdp")) {
        return None;
    }
    parts
        .find_map(|kv| kv.trim().strip_prefix("iface="))
        .filter(|n| !n.is_empty())
        .map(str::to_string)
}

/// The packet sockets (`AF_PACKET`) this process holds on Linux interface
/// `iface`: an af_packet port's, one per queue pair. The kernel marks such a
/// socket readable when it fills a frame of its ring, so a worker sleeping in
/// `poll` on them wakes for the port's next frame. Found through
/// `/proc/self/net/packet` (each socket's interface and inode) and the
/// process's descriptors; none when either cannot be read.
pub fn packet_socket_fds(iface: &str) -> Vec<std::os::fd::RawFd> {
    let Some(ifindex) = std::fs::read_to_string(format!("/sys/class/net/{iface}/ifindex"))
        .ok()
        .and_then(|s| s.trim().parse::<u32>().ok())
    else {
        return Vec::new();
    };
    // sk RefCnt Type Proto Iface R Rmem User Inode
    let inodes: Vec<u64> = std::fs::read_to_string("/proc/self/net/packet")
        .unwrap_or_default()
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.get(4)?.parse::<u32>().ok()? == ifindex).then_some(f.get(8)?.parse().ok()?)
        })
        .collect();
    let Ok(dir) = std::fs::read_dir("/proc/self/fd") else {
        return Vec::new();
    };
    let mut fds: Vec<std::os::fd::RawFd> = dir
        .filter_map(|e| {
            let e = e.ok()?;
            let fd = e.file_name().to_str()?.parse().ok()?;
            let target = std::fs::read_link(e.path()).ok()?;
            let inode: u64 = target
                .to_str()?
                .strip_prefix("socket:[")?
                .strip_suffix(']')?
                .parse()
                .ok()?;
            inodes.contains(&inode).then_some(fd)
        })
        .collect();
    fds.sort_unstable();
    fds
}

impl Port {
    /// Descriptors a worker sleeping on this port's queues may poll to wake
    /// when a frame comes: an af_packet port's packet sockets (all its queue
    /// pairs'); none for other PMDs.
    pub fn rx_wait_fds(&self) -> Vec<std::os::fd::RawFd> {
        match &self.kernel_iface {
            Some(i) if self.driver.contains("af_packet") => packet_socket_fds(i),
            _ => Vec::new(),
        }
    }

    /// Probes the device (vdevs are created on the fly; PCI devices must have been
    /// given to EAL), configures its queues on `pool` and starts it.
    pub fn open(eal: &Eal, cfg: &PortConfig, pool: Arc<Mempool>) -> Result<Port, DpdkError> {
        let _ = eal;
        let name = &cfg.name;
        let dev = cfg.device.trim();
        if dev.is_empty() {
            return Err(DpdkError::Invalid(format!("{name}: empty device string")));
        }
        let cdev = CString::new(dev)
            .map_err(|_| DpdkError::Invalid(format!("{name}: device string contains NUL")))?;
        let devname = if is_pci_address(dev) {
            dev.to_string()
        } else {
            // SAFETY: EAL is up; cdev is a valid C string.
            let ret = unsafe { dpdk_sys::rte_dev_probe(cdev.as_ptr()) };
            if ret < 0 {
                return Err(DpdkError::Call {
                    what: format!("{name}: cannot create device {dev:?}"),
                    reason: format!(
                        "unknown driver or bad arguments ({}); drivers include net_af_packet, net_af_xdp, net_pcap, net_null, net_ring, net_tap, net_memif",
                        strerror(-ret)
                    ),
                });
            }
            dev.split(',').next().unwrap_or(dev).to_string()
        };
        let cname = CString::new(devname.as_str())
            .map_err(|_| DpdkError::Invalid(format!("{name}: device name contains NUL")))?;
        let mut id = 0u16;
        // SAFETY: cname is a valid C string; id is a valid out-pointer.
        let ret = unsafe { dpdk_sys::rte_eth_dev_get_port_by_name(cname.as_ptr(), &mut id) };
        if ret < 0 {
            let why = if is_pci_address(dev) {
                "no such PCI device bound to a DPDK driver (is it listed in [eal] and bound to vfio-pci?)"
            } else {
                "the device was created but is not an Ethernet port"
            };
            return Err(DpdkError::Call {
                what: format!("{name}: device {devname:?}"),
                reason: why.into(),
            });
        }
        let mut port = Self::setup(id, cfg, pool, Vec::new())?;
        port.kernel_iface = kernel_iface_of(dev);
        Ok(port)
    }

    /// Creates a `net_ring` port whose queues are the given rings (rx queue i reads
    /// `rx[i]`, tx queue i writes `tx[i]`), for in-process tests: put frames into an rx
    /// ring, take the forwarded ones out of a tx ring.
    pub fn from_rings(
        eal: &Eal,
        cfg: &PortConfig,
        rx: &[Arc<Ring>],
        tx: &[Arc<Ring>],
        pool: Arc<Mempool>,
    ) -> Result<Port, DpdkError> {
        let _ = eal;
        if rx.is_empty() || tx.is_empty() {
            return Err(DpdkError::Invalid(format!(
                "{}: a ring port needs rx and tx rings",
                cfg.name
            )));
        }
        let cname = CString::new(cfg.device.as_str())
            .map_err(|_| DpdkError::Invalid(format!("{}: device name contains NUL", cfg.name)))?;
        let mut rxp: Vec<*mut dpdk_sys::rte_ring> = rx.iter().map(|r| r.as_ptr()).collect();
        let mut txp: Vec<*mut dpdk_sys::rte_ring> = tx.iter().map(|r| r.as_ptr()).collect();
        // SAFETY: the ring arrays are valid for the given lengths and the rings outlive
        // the port (it keeps Arcs to them).
        let ret = unsafe {
            dpdk_sys::rte_eth_from_rings(
                cname.as_ptr(),
                rxp.as_mut_ptr(),
                rxp.len() as u32,
                txp.as_mut_ptr(),
                txp.len() as u32,
                0,
            )
        };
        if ret < 0 {
            return Err(DpdkError::Call {
                what: format!("{}: ring port", cfg.name),
                reason: strerror(rte_errno()),
            });
        }
        let mut cfg = cfg.clone();
        cfg.rx_queues = rx.len() as u16;
        cfg.tx_queues = tx.len() as u16;
        let rings = rx.iter().chain(tx).cloned().collect();
        Self::setup(ret as u16, &cfg, pool, rings)
    }

    fn setup(
        id: u16,
        cfg: &PortConfig,
        pool: Arc<Mempool>,
        rings: Vec<Arc<Ring>>,
    ) -> Result<Port, DpdkError> {
        let name = cfg.name.clone();
        let mut info = dpdk_sys::rte_eth_dev_info::default();
        // SAFETY: id is a valid port id (just looked up); info is a valid out-pointer.
        let ret = unsafe { dpdk_sys::rte_eth_dev_info_get(id, &mut info) };
        check(ret, || format!("{name}: device info"))?;
        let driver = if info.driver_name.is_null() {
            String::from("?")
        } else {
            // SAFETY: driver_name is a static NUL-terminated string owned by the driver.
            unsafe { std::ffi::CStr::from_ptr(info.driver_name) }
                .to_string_lossy()
                .into_owned()
        };
        if cfg.rx_queues == 0 || cfg.tx_queues == 0 {
            return Err(DpdkError::Invalid(format!(
                "{name}: rx_queues and tx_queues must be at least 1"
            )));
        }
        if cfg.rx_queues > info.max_rx_queues || cfg.tx_queues > info.max_tx_queues {
            return Err(DpdkError::Invalid(format!(
                "{name}: {} rx / {} tx queues requested, {driver} allows {} / {} (lower the queue or worker count{})",
                cfg.rx_queues,
                cfg.tx_queues,
                info.max_rx_queues,
                info.max_tx_queues,
                if driver.contains("af_packet") {
                    ", or add qpairs=N to the device string"
                } else {
                    ""
                }
            )));
        }
        let mut conf = dpdk_sys::rte_eth_conf::default();
        let want = dpdk_sys::rss::IP | dpdk_sys::rss::UDP | dpdk_sys::rss::TCP;
        let rss = cfg.rx_queues > 1 && info.flow_type_rss_offloads & want != 0;
        if rss {
            conf.rxmode.mq_mode = dpdk_sys::RTE_ETH_MQ_RX_RSS;
            conf.rx_adv_conf.rss_conf.rss_hf = info.flow_type_rss_offloads & want;
        }
        let rx_checksum =
            cfg.rx_checksum && info.rx_offload_capa & dpdk_sys::rx_offload::IPV4_CKSUM != 0;
        if rx_checksum {
            // (queues inherit the port's offloads: they are set up with the
            // driver's defaults below)
            conf.rxmode.offloads |= dpdk_sys::rx_offload::IPV4_CKSUM;
        }
        // SAFETY: valid port id, conf is a fully initialised configuration.
        let ret =
            unsafe { dpdk_sys::rte_eth_dev_configure(id, cfg.rx_queues, cfg.tx_queues, &conf) };
        check(ret, || {
            format!(
                "{name}: configure {} rx / {} tx queues",
                cfg.rx_queues, cfg.tx_queues
            )
        })?;
        let (mut rxd, mut txd) = (cfg.rx_desc, cfg.tx_desc);
        // SAFETY: valid port id and out-pointers.
        let ret = unsafe { dpdk_sys::rte_eth_dev_adjust_nb_rx_tx_desc(id, &mut rxd, &mut txd) };
        check(ret, || format!("{name}: descriptor counts"))?;
        // SAFETY: valid port id.
        let socket = unsafe { dpdk_sys::rte_eth_dev_socket_id(id) }.max(0) as u32;
        for q in 0..cfg.rx_queues {
            // SAFETY: valid port and queue; NULL conf means the driver's defaults; the
            // pool outlives the port (we keep an Arc).
            let ret = unsafe {
                dpdk_sys::rte_eth_rx_queue_setup(
                    id,
                    q,
                    rxd,
                    socket,
                    std::ptr::null(),
                    pool.as_ptr(),
                )
            };
            check(ret, || format!("{name}: rx queue {q}"))?;
        }
        for q in 0..cfg.tx_queues {
            // SAFETY: valid port and queue; NULL conf means the driver's defaults.
            let ret =
                unsafe { dpdk_sys::rte_eth_tx_queue_setup(id, q, txd, socket, std::ptr::null()) };
            check(ret, || format!("{name}: tx queue {q}"))?;
        }
        if cfg.promiscuous {
            // Some vdevs (net_ring, net_null) have no promiscuous mode; that is fine.
            // SAFETY: valid port id.
            let _ = unsafe { dpdk_sys::rte_eth_promiscuous_enable(id) };
        }
        // SAFETY: valid, configured port.
        let ret = unsafe { dpdk_sys::rte_eth_dev_start(id) };
        check(ret, || format!("{name}: start"))?;
        LIVE_OBJECTS.fetch_add(1, Ordering::SeqCst);
        Ok(Port {
            id,
            name,
            driver,
            rx_queues: cfg.rx_queues,
            tx_queues: cfg.tx_queues,
            rss,
            rx_checksum,
            kernel_iface: None,
            _pool: pool,
            _rings: rings,
        })
    }

    /// The Linux interface an af_packet or af_xdp port reads: its link state is
    /// the port's (those PMDs report the link as always up).
    pub fn kernel_iface(&self) -> Option<&str> {
        self.kernel_iface.as_deref()
    }

    /// Sets the device's link up or down (`rte_eth_dev_set_link_up|down`), for
    /// PMDs that can.
    pub fn set_link(&self, up: bool) -> Result<(), DpdkError> {
        // SAFETY: valid, started port.
        let ret = unsafe {
            if up {
                dpdk_sys::rte_eth_dev_set_link_up(self.id)
            } else {
                dpdk_sys::rte_eth_dev_set_link_down(self.id)
            }
        };
        check(ret, || {
            format!("{}: set link {}", self.name, if up { "up" } else { "down" })
        })
        .map(|_| ())
    }

    /// DPDK's port id.
    pub fn id(&self) -> u16 {
        self.id
    }

    /// Our name for the port.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The PMD's name (`net_af_packet`, ...).
    pub fn driver(&self) -> &str {
        &self.driver
    }

    /// Receive queues.
    pub fn rx_queues(&self) -> u16 {
        self.rx_queues
    }

    /// Transmit queues.
    pub fn tx_queues(&self) -> u16 {
        self.tx_queues
    }

    /// Whether RSS spreads flows over the rx queues.
    pub fn rss(&self) -> bool {
        self.rss
    }

    /// Whether the device checks IPv4 header checksums (rx checksum offload on).
    pub fn rx_checksum(&self) -> bool {
        self.rx_checksum
    }

    /// The port's MAC address.
    pub fn mac(&self) -> [u8; 6] {
        let mut a = dpdk_sys::rte_ether_addr::default();
        // SAFETY: valid port id and out-pointer.
        let _ = unsafe { dpdk_sys::rte_eth_macaddr_get(self.id, &mut a) };
        a.addr_bytes
    }

    /// Link state, without waiting.
    pub fn link(&self) -> LinkStatus {
        let mut l = dpdk_sys::rte_eth_link::default();
        // SAFETY: valid port id and out-pointer.
        let _ = unsafe { dpdk_sys::rte_eth_link_get_nowait(self.id, &mut l) };
        LinkStatus {
            up: u32::from(l.link_status()) == dpdk_sys::RTE_ETH_LINK_UP,
            speed_mbps: l.link_speed,
        }
    }

    /// The device's counters.
    pub fn stats(&self) -> PortStats {
        let mut s = dpdk_sys::rte_eth_stats::default();
        // SAFETY: valid port id and out-pointer.
        let _ = unsafe { dpdk_sys::rte_eth_stats_get(self.id, &mut s) };
        PortStats {
            rx_pkts: s.ipackets,
            tx_pkts: s.opackets,
            rx_bytes: s.ibytes,
            tx_bytes: s.obytes,
            rx_missed: s.imissed,
            rx_errors: s.ierrors,
            tx_errors: s.oerrors,
            rx_nombuf: s.rx_nombuf,
        }
    }
}

impl Drop for Port {
    fn drop(&mut self) {
        // SAFETY: valid port id; workers using it have been stopped by the owner
        // before dropping the port (the daemon joins its lcores first).
        unsafe {
            dpdk_sys::rte_eth_dev_stop(self.id);
            dpdk_sys::rte_eth_dev_close(self.id);
        }
        LIVE_OBJECTS.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::{is_pci_address, packet_socket_fds};

    /// A packet socket bound to `ifindex` (0: every interface).
    fn packet_socket(ifindex: i32) -> std::os::fd::OwnedFd {
        use std::os::fd::FromRawFd;
        let proto = (libc::ETH_P_ALL as u16).to_be();
        // SAFETY: plain socket(2); the descriptor is owned by the returned OwnedFd.
        let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW, i32::from(proto)) };
        assert!(
            fd >= 0,
            "AF_PACKET socket (needs root): {}",
            std::io::Error::last_os_error()
        );
        // SAFETY: fd was just opened and is not owned elsewhere.
        let owned = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
        // SAFETY: sockaddr_ll is plain data; all-zero is valid.
        let mut sa: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sa.sll_family = libc::AF_PACKET as u16;
        sa.sll_protocol = proto;
        sa.sll_ifindex = ifindex;
        // SAFETY: sa is a valid sockaddr_ll of the given size.
        let r = unsafe {
            libc::bind(
                fd,
                std::ptr::addr_of!(sa).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as u32,
            )
        };
        assert_eq!(r, 0, "bind: {}", std::io::Error::last_os_error());
        owned
    }

    #[test]
    fn packet_sockets_are_found_by_interface() {
        use std::os::fd::AsRawFd;
        let lo: i32 = std::fs::read_to_string("/sys/class/net/lo/ifindex")
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let on_lo = packet_socket(lo);
        let anywhere = packet_socket(0);
        let found = packet_socket_fds("lo");
        assert!(found.contains(&on_lo.as_raw_fd()), "{found:?}");
        assert!(!found.contains(&anywhere.as_raw_fd()), "{found:?}");
        assert!(packet_socket_fds("no-such-if0").is_empty());
        let raw = on_lo.as_raw_fd();
        drop(on_lo);
        assert!(!packet_socket_fds("lo").contains(&raw));
    }

    #[test]
    fn pci_addresses() {
        assert!(is_pci_address("0000:01:00.0"));
        assert!(is_pci_address("01:00.1"));
        assert!(!is_pci_address("net_null0"));
        assert!(!is_pci_address("net_af_packet0,iface=v0"));
        assert!(!is_pci_address("0000:01:00"));
    }
}
