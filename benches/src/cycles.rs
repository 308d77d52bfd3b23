//! TSC cycles as a criterion measurement.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use criterion::Throughput;
use criterion::measurement::{Measurement, ValueFormatter};

/// Reads the time-stamp counter. On x86_64 this is `rdtsc` (constant and non-stop on
/// the machines here); elsewhere it falls back to nanoseconds since first use, which
/// keeps the benches portable but reports ns rather than cycles.
#[inline(always)]
pub fn rdtsc() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: `rdtsc` has no memory effects and is available on every x86_64 CPU.
        #[allow(unsafe_code)]
        unsafe {
            core::arch::x86_64::_rdtsc()
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        static START: OnceLock<Instant> = OnceLock::new();
        START.get_or_init(Instant::now).elapsed().as_nanos() as u64
    }
}

/// TSC ticks per second, calibrated once against the monotonic clock (100 ms).
pub fn tsc_hz() -> u64 {
    static HZ: OnceLock<u64> = OnceLock::new();
    *HZ.get_or_init(|| {
        let t0 = Instant::now();
        let c0 = rdtsc();
        while t0.elapsed() < Duration::from_millis(100) {
            std::hint::spin_loop();
        }
        let c1 = rdtsc();
        let ns = t0.elapsed().as_nanos() as u64;
        ((c1 - c0) as u128 * 1_000_000_000 / ns.max(1) as u128) as u64
    })
}

/// Converts TSC cycles per element into millions of elements per second.
pub fn mpps(cycles_per_elem: f64) -> f64 {
    tsc_hz() as f64 / cycles_per_elem / 1e6
}

/// A criterion measurement in TSC cycles.
///
/// With `Throughput::Elements(n)` criterion prints cycles per element, which is what
/// the project's tables quote (cycles/packet, cycles/lookup).
#[derive(Debug, Default, Clone, Copy)]
pub struct Tsc;

impl Measurement for Tsc {
    type Intermediate = u64;
    type Value = u64;

    fn start(&self) -> u64 {
        rdtsc()
    }
    fn end(&self, i: u64) -> u64 {
        rdtsc().saturating_sub(i)
    }
    fn add(&self, a: &u64, b: &u64) -> u64 {
        a + b
    }
    fn zero(&self) -> u64 {
        0
    }
    fn to_f64(&self, v: &u64) -> f64 {
        *v as f64
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        &TscFormatter
    }
}

struct TscFormatter;

impl ValueFormatter for TscFormatter {
    fn scale_values(&self, _typical: f64, _values: &mut [f64]) -> &'static str {
        "cycles"
    }

    fn scale_throughputs(
        &self,
        _typical: f64,
        throughput: &Throughput,
        values: &mut [f64],
    ) -> &'static str {
        // criterion hands us cycles per iteration; report cycles per element.
        let n = match throughput {
            Throughput::Elements(n) | Throughput::Bytes(n) | Throughput::BytesDecimal(n) => *n,
        };
        for v in values.iter_mut() {
            *v /= n.max(1) as f64;
        }
        match throughput {
            Throughput::Elements(_) => "cycles/elem",
            _ => "cycles/byte",
        }
    }

    fn scale_for_machines(&self, _values: &mut [f64]) -> &'static str {
        "cycles"
    }
}
