//! Scheduling of the control plane's own threads.
#![allow(unsafe_code)]

use std::io;

/// Puts the calling thread in the real-time FIFO class at `priority` (1-99):
/// it then runs as soon as it is woken, ahead of every ordinary thread on its
/// CPU, as the kernel's softirq does for a plain Linux router's packets.
pub fn fifo_current_thread(priority: i32) -> io::Result<()> {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: `param` is a valid sched_param for the call's duration; pid 0 is
    // the calling thread.
    let r = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Lets the calling thread run on `cpus` only.
pub fn set_cpus(cpus: &[usize]) -> io::Result<()> {
    let mut set = nix::sched::CpuSet::new();
    for &c in cpus {
        set.set(c).map_err(io::Error::from)?;
    }
    nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set).map_err(io::Error::from)
}

/// The CPUs online (`/sys/devices/system/cpu/online`: "0-3,6").
pub fn online_cpus() -> Vec<usize> {
    let Ok(s) = std::fs::read_to_string("/sys/devices/system/cpu/online") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for part in s.trim().split(',') {
        let mut ends = part.split('-').map(|x| x.trim().parse::<usize>());
        match (ends.next(), ends.next()) {
            (Some(Ok(a)), None) => out.push(a),
            (Some(Ok(a)), Some(Ok(b))) if a <= b && b < 4096 => out.extend(a..=b),
            _ => {}
        }
    }
    out
}

/// Where the punt thread runs by default: the online CPUs no worker polls,
/// or all of them when every one has a worker (then it shares theirs).
///
/// It must not run in the FIFO class beside a worker: DPDK's rings (the
/// mempools both of them use) make a thread wait for another that was
/// preempted halfway through an operation, and a FIFO thread waiting for the
/// worker it preempted holds that CPU until the kernel's real-time throttling
/// steps in (measured: transit stalled 0.4-1 s under a flood of injects).
pub fn punt_cpus(online: &[usize], workers: &[usize]) -> Vec<usize> {
    let spare: Vec<usize> = online
        .iter()
        .copied()
        .filter(|c| !workers.contains(c))
        .collect();
    if spare.is_empty() {
        online.to_vec()
    } else {
        spare
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn punt_cpus_avoid_workers() {
        assert_eq!(punt_cpus(&[0, 1], &[1]), vec![0]);
        assert_eq!(punt_cpus(&[0, 1, 2, 3], &[3, 2, 3]), vec![0, 1]);
        assert_eq!(punt_cpus(&[0, 1, 2, 3], &[1]), vec![0, 2, 3]);
        // (no CPU without a worker: theirs, and then not in the FIFO class)
        assert_eq!(punt_cpus(&[0], &[0]), vec![0]);
        assert_eq!(punt_cpus(&[0, 1], &[0, 1]), vec![0, 1]);
    }
}
