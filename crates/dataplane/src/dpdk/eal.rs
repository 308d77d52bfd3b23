//! EAL initialisation, lcores, TSC.

use std::ffi::{CString, c_char, c_int, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::{DpdkError, rte_errno, strerror};

/// How EAL gets its memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MemoryMode {
    /// `--in-memory` when enough 2 MiB hugepages are free, else `--no-huge`.
    #[default]
    Auto,
    /// Hugepages through a mounted hugetlbfs (needs `file_prefix` for several
    /// processes); lets `dpdk-proc-info` and `dpdk-dumpcap` attach.
    Hugepages,
    /// `--in-memory`: hugepages without a mount and without shared files.
    InMemory,
    /// `--no-huge -m N --no-shconf`: 4 KiB pages, about 20 % slower, works anywhere.
    NoHuge,
}

/// What EAL is started with. [`EalConfig::args`] turns it into the argument vector.
#[derive(Debug, Clone)]
pub struct EalConfig {
    /// argv\[0\].
    pub program: String,
    /// CPU the main lcore (0, the control thread) runs on.
    pub main_cpu: u16,
    /// One worker lcore per entry (lcores 1, 2, ...), pinned to that CPU. Several
    /// workers may share a CPU (useful on small machines; they then time-share).
    pub worker_cpus: Vec<u16>,
    /// Memory mode.
    pub memory: MemoryMode,
    /// MiB of memory: the `-m` size with `NoHuge`, and what `InMemory`/`Hugepages`
    /// check is free in hugepages before starting.
    pub memory_mb: u32,
    /// `--file-prefix` (only meaningful with [`MemoryMode::Hugepages`]).
    pub file_prefix: Option<String>,
    /// PCI devices to use (`-a`). Empty means `--no-pci`: EAL then probes no PCI bus.
    pub pci: Vec<String>,
    /// DPDK log level (`--log-level`), e.g. `"*:error"` or `"pmd.net.af_packet:debug"`.
    pub log_level: Vec<String>,
    /// Anything else, verbatim.
    pub extra: Vec<String>,
}

impl Default for EalConfig {
    fn default() -> Self {
        EalConfig {
            program: "dataplaned".into(),
            main_cpu: 0,
            worker_cpus: Vec::new(),
            memory: MemoryMode::Auto,
            memory_mb: 512,
            file_prefix: None,
            pci: Vec::new(),
            log_level: vec!["*:error".into()],
            extra: Vec::new(),
        }
    }
}

/// Free 2 MiB hugepages on this machine.
pub(crate) fn free_hugepages() -> u64 {
    std::fs::read_to_string("/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0)
}

impl EalConfig {
    /// The EAL argument vector (argv\[0\] included).
    pub fn args(&self) -> Result<Vec<String>, DpdkError> {
        let mut a = vec![self.program.clone()];
        let mut lcores = format!("0@{}", self.main_cpu);
        for (i, cpu) in self.worker_cpus.iter().enumerate() {
            lcores.push_str(&format!(",{}@{}", i + 1, cpu));
        }
        a.push(format!("--lcores={lcores}"));
        a.push("--main-lcore=0".into());
        if self.pci.is_empty() {
            a.push("--no-pci".into());
        } else {
            for p in &self.pci {
                a.push("-a".into());
                a.push(p.clone());
            }
        }
        let needed = u64::from(self.memory_mb).div_ceil(2);
        let free = free_hugepages();
        let mode = match self.memory {
            MemoryMode::Auto if free >= needed => MemoryMode::InMemory,
            MemoryMode::Auto => MemoryMode::NoHuge,
            MemoryMode::Hugepages | MemoryMode::InMemory if free < needed => {
                return Err(DpdkError::NoHugepages { needed, free });
            }
            m => m,
        };
        match mode {
            MemoryMode::InMemory => a.push("--in-memory".into()),
            MemoryMode::NoHuge => {
                a.push("--no-huge".into());
                a.push("--no-shconf".into());
                a.push(format!("-m{}", self.memory_mb));
            }
            MemoryMode::Hugepages => {
                if let Some(p) = &self.file_prefix {
                    a.push(format!("--file-prefix={p}"));
                }
            }
            MemoryMode::Auto => unreachable!("resolved above"),
        }
        for l in &self.log_level {
            a.push(format!("--log-level={l}"));
        }
        a.extend(self.extra.iter().cloned());
        Ok(a)
    }
}

/// The initialised Environment Abstraction Layer. There is one per process, reached
/// through [`Eal::get`] after [`Eal::init`].
#[derive(Debug)]
pub struct Eal {
    main_lcore: u32,
    worker_lcores: Vec<u32>,
    args: Vec<String>,
}

static EAL: OnceLock<Eal> = OnceLock::new();
static INIT_STARTED: AtomicBool = AtomicBool::new(false);
/// Ports and mempools alive; [`Eal::cleanup`] refuses to run while any is.
pub(crate) static LIVE_OBJECTS: AtomicUsize = AtomicUsize::new(0);

fn hint_for(errno: i32) -> &'static str {
    match errno {
        libc::ENODEV => {
            " (a device string is wrong: check the vdev driver name and its arguments, or the PCI address)"
        }
        libc::ENOMEM => {
            " (not enough memory: reserve hugepages with scripts/setup.sh, or lower memory_mb)"
        }
        libc::EACCES | libc::EPERM => " (permission denied: run as root)",
        libc::EINVAL => " (invalid EAL arguments)",
        libc::EALREADY => " (EAL was initialised before in this process)",
        libc::EFAULT | libc::EPROTO => {
            " (EAL could not probe its buses or hugepages: check /proc/sys/vm/nr_hugepages, or use memory = \"no-huge\")"
        }
        _ => "",
    }
}

impl Eal {
    /// Initialises EAL from a configuration. See [`Eal::init`].
    pub fn init_with(cfg: &EalConfig) -> Result<&'static Eal, DpdkError> {
        let args = cfg.args()?;
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        Self::init(&refs)
    }

    /// Initialises EAL with an argument vector (`args[0]` is the program name). It
    /// pins the calling thread to the main lcore's CPU. Only one call per process can
    /// succeed; later calls return [`DpdkError::AlreadyInitialized`].
    pub fn init(args: &[&str]) -> Result<&'static Eal, DpdkError> {
        if INIT_STARTED.swap(true, Ordering::SeqCst) {
            return Err(DpdkError::AlreadyInitialized);
        }
        let mut cstrs = Vec::with_capacity(args.len());
        for a in args {
            cstrs.push(CString::new(*a).map_err(|_| {
                DpdkError::Invalid(format!("EAL argument {a:?} contains a NUL byte"))
            })?);
        }
        // EAL may keep pointers into argv (it stores some options by reference), so
        // the strings live for the whole process.
        let cstrs: &'static [CString] = Vec::leak(cstrs);
        let mut argv: Vec<*mut c_char> = cstrs.iter().map(|c| c.as_ptr().cast_mut()).collect();
        let argv: &'static mut [*mut c_char] = Vec::leak(std::mem::take(&mut argv));
        let argc = argv.len() as c_int;
        // SAFETY: argv holds argc valid NUL-terminated strings that live forever;
        // INIT_STARTED guarantees this runs once per process.
        let ret = unsafe { dpdk_sys::rte_eal_init(argc, argv.as_mut_ptr()) };
        if ret < 0 {
            let errno = rte_errno();
            return Err(DpdkError::EalInit {
                reason: strerror(errno),
                hint: hint_for(errno).to_string(),
            });
        }
        // SAFETY: EAL is initialised; these only read its lcore configuration.
        let main_lcore = unsafe { dpdk_sys::rte_get_main_lcore() };
        let mut worker_lcores = Vec::new();
        let mut i = u32::MAX;
        loop {
            // SAFETY: as above; rte_get_next_lcore accepts any value and returns
            // RTE_MAX_LCORE when there is no next lcore.
            i = unsafe { dpdk_sys::rte_get_next_lcore(i, 1, 0) };
            if i >= dpdk_sys::RTE_MAX_LCORE {
                break;
            }
            worker_lcores.push(i);
        }
        let eal = Eal {
            main_lcore,
            worker_lcores,
            args: args.iter().map(|s| s.to_string()).collect(),
        };
        Ok(EAL.get_or_init(|| eal))
    }

    /// The EAL of this process, if it has been initialised.
    pub fn get() -> Option<&'static Eal> {
        EAL.get()
    }

    /// The main lcore (the one that called [`Eal::init`]).
    pub fn main_lcore(&self) -> u32 {
        self.main_lcore
    }

    /// Worker lcores, in order.
    pub fn worker_lcores(&self) -> &[u32] {
        &self.worker_lcores
    }

    /// The arguments EAL was started with.
    pub fn args(&self) -> &[String] {
        &self.args
    }

    /// DPDK's version string.
    pub fn version(&self) -> String {
        // SAFETY: returns a pointer to a static NUL-terminated string.
        unsafe { std::ffi::CStr::from_ptr(dpdk_sys::rte_version()) }
            .to_string_lossy()
            .into_owned()
    }

    /// Runs `f` on worker lcore `lcore`. The lcore must be idle (not running an
    /// earlier function that has not been waited for). A panic in `f` is caught and
    /// reported as return value -1.
    pub fn launch<F>(&self, lcore: u32, f: F) -> Result<(), DpdkError>
    where
        F: FnOnce() -> i32 + Send + 'static,
    {
        if !self.worker_lcores.contains(&lcore) {
            return Err(DpdkError::Invalid(format!(
                "lcore {lcore} is not a worker lcore"
            )));
        }
        type Job = Box<dyn FnOnce() -> i32 + Send>;
        unsafe extern "C" fn trampoline(arg: *mut c_void) -> c_int {
            // SAFETY: `arg` is the Box<Job> leaked by `launch` below, handed over
            // exactly once by rte_eal_remote_launch.
            let job: Box<Job> = unsafe { Box::from_raw(arg.cast::<Job>()) };
            catch_unwind(AssertUnwindSafe(move || (*job)())).unwrap_or(-1)
        }
        let job: Box<Job> = Box::new(Box::new(f));
        let arg = Box::into_raw(job);
        // SAFETY: `trampoline` matches lcore_function_t; `arg` is a valid pointer it
        // takes ownership of. If the launch fails, we take it back below.
        let ret = unsafe { dpdk_sys::rte_eal_remote_launch(Some(trampoline), arg.cast(), lcore) };
        if ret < 0 {
            // SAFETY: the launch failed, so the trampoline never ran and never will.
            drop(unsafe { Box::from_raw(arg) });
            return Err(DpdkError::Call {
                what: format!("launch on lcore {lcore}"),
                reason: strerror(-ret),
            });
        }
        Ok(())
    }

    /// Waits for the function running on `lcore` and returns its return value (0
    /// if nothing was running).
    pub fn wait(&self, lcore: u32) -> i32 {
        // SAFETY: any lcore id is accepted; it blocks until the lcore is idle.
        unsafe { dpdk_sys::rte_eal_wait_lcore(lcore) }
    }

    /// Releases EAL's resources (`rte_eal_cleanup`). Refused while a port or mempool
    /// is alive; after it, no DPDK object can be created in this process.
    pub fn cleanup(&self) -> Result<(), DpdkError> {
        let live = LIVE_OBJECTS.load(Ordering::SeqCst);
        if live != 0 {
            return Err(DpdkError::Invalid(format!(
                "EAL cleanup refused: {live} port(s)/mempool(s) still alive"
            )));
        }
        LIVE_OBJECTS.store(usize::MAX / 2, Ordering::SeqCst);
        // SAFETY: no port or mempool is alive (so no mbuf either), and the counter
        // now blocks new ones.
        unsafe { dpdk_sys::rte_eal_cleanup() };
        Ok(())
    }
}

/// Makes the calling thread's sleeps end on time: its timer slack goes from
/// Linux's default 50 µs to 1 ns, so an idle worker's short sleeps do not
/// stretch the latency of the packet that ends them. Best effort.
pub fn precise_sleeps() {
    // SAFETY: PR_SET_TIMERSLACK takes a plain integer and affects only the
    // calling thread.
    let _ = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
}

/// `ppoll(2)` on `fds` for up to `d`, with no signal mask: how many have
/// events (their `revents`), 0 on timeout.
pub fn ppoll(fds: &mut [libc::pollfd], d: std::time::Duration) -> std::io::Result<usize> {
    let ts = libc::timespec {
        tv_sec: d.as_secs().min(i64::MAX as u64) as libc::time_t,
        tv_nsec: libc::c_long::from(d.subsec_nanos() as i32),
    };
    // SAFETY: `fds` is a valid, exclusively borrowed array of pollfd of the
    // given length, and the timespec outlives the call.
    let n = unsafe {
        libc::ppoll(
            fds.as_mut_ptr(),
            fds.len() as libc::nfds_t,
            &ts,
            std::ptr::null(),
        )
    };
    if n < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// Reads the time-stamp counter (DPDK's `rte_rdtsc`), inlined.
#[inline(always)]
pub fn tsc() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: rdtsc has no memory effects and exists on every x86_64 CPU.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        // SAFETY: rte_rdtsc reads a counter register; no preconditions.
        unsafe { dpdk_sys::shim_rte_rdtsc() }
    }
}

/// TSC ticks per second: DPDK's figure once EAL is up, else calibrated (100 ms).
pub fn tsc_hz() -> u64 {
    static CAL: OnceLock<u64> = OnceLock::new();
    if Eal::get().is_some() {
        // SAFETY: EAL is initialised, so its TSC frequency is set.
        let hz = unsafe { dpdk_sys::rte_get_tsc_hz() };
        if hz != 0 {
            return hz;
        }
    }
    *CAL.get_or_init(|| {
        let t0 = Instant::now();
        let c0 = tsc();
        while t0.elapsed() < Duration::from_millis(100) {
            std::hint::spin_loop();
        }
        let c1 = tsc();
        ((c1 - c0) as u128 * 1_000_000_000 / t0.elapsed().as_nanos().max(1)) as u64
    })
}

/// Prefetches the cache line holding `p` with intent to write (`prefetchw`): the
/// line comes in owned, so a store to it later does not wait for another core to
/// give it up (a ring slot the consumer read last). Never faults; a no-op on CPUs
/// without the instruction.
#[inline(always)]
pub fn prefetchw<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetchw is a hint; it never faults and writes nothing, whatever the
    // address; it touches no register but the address operand's.
    unsafe {
        core::arch::asm!("prefetchw [{0}]", in(reg) p, options(nostack, preserves_flags, readonly));
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Prefetches the cache line holding `p` into all cache levels. Never faults.
#[inline(always)]
pub fn prefetch0<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetch is a hint; it never faults, whatever the address.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p.cast())
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
