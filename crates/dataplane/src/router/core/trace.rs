//! The packet trace (`dpctl trace`): the frame as received and as sent, the
//! nodes passed and the decision, for as many packets as the budget allows.

use super::*;

impl Work {
    /// Keeps the head of every packet of a traced vector before processing.
    #[cold]
    #[inline(never)]
    pub(super) fn trace_in<P: Packet>(&mut self, pkts: &mut [P], n: usize) {
        for (i, p) in pkts.iter_mut().take(n).enumerate() {
            self.keep_head(p, i);
        }
    }

    /// Records traced packets while the budget lasts.
    #[cold]
    #[inline(never)]
    pub(super) fn trace_out<P: Packet>(&mut self, pkts: &mut [P], out: &[Out], n: usize, now: u64) {
        let Some(heads) = self.obs.rx_heads.as_ref() else {
            return;
        };
        for i in 0..n {
            let b = &self.stats.trace_budget;
            let left = b.load(Ordering::Relaxed);
            if left == 0 {
                break;
            }
            b.store(left - 1, Ordering::Relaxed);
            let m = self.meta[i];
            let mut stages = vec![Stage::EthernetInput.name()];
            for st in [
                Stage::MplsLookup,
                Stage::Ip4Lookup,
                Stage::Ip6Lookup,
                Stage::Local,
                Stage::Rewrite,
            ] {
                if m.path & (1 << st as u8) != 0 {
                    stages.push(st.name());
                }
            }
            let reason = m.reason.map(Discard::name);
            let decision = match out[i] {
                Out::Tx(p) => match reason {
                    // an ICMP error or ARP request replaced the packet
                    Some(r) => format!("tx port {p} (original: {r})"),
                    None => format!("tx port {p}"),
                },
                Out::Punt(r, _) => format!("punt {}", r.name()),
                Out::Drop => format!("drop {}", reason.unwrap_or("consumed")),
            };
            let mut head_out = [0u8; TRACE_BYTES];
            let mut len_out = 0u16;
            if let Out::Tx(_) = out[i] {
                let (s, l) = pkts[i].window();
                let raw = pkts[i].raw_mut();
                let k = l.min(TRACE_BYTES);
                head_out[..k].copy_from_slice(&raw[s..s + k]);
                len_out = l as u16;
            }
            let (len_in, kept, head) =
                heads
                    .get(i)
                    .copied()
                    .unwrap_or((0, 0, [0; sflow::HEADER_CAPACITY]));
            let mut head_in = [0u8; TRACE_BYTES];
            let k = usize::from(kept).min(TRACE_BYTES);
            head_in[..k].copy_from_slice(&head[..k]);
            let rec = TraceRecord {
                tsc: now,
                rx_port: pkts[i].port(),
                rx_if: u32::from(m.rx_if),
                len_in,
                head_in,
                stages,
                decision,
                len_out,
                head_out,
            };
            if let Err(rec) = self.stats.traces.push(rec) {
                // full: the oldest record makes room
                let _ = self.stats.traces.pop();
                let _ = self.stats.traces.push(rec);
            }
        }
    }

    /// Keeps the frame of packet `i` as received (see `rx_heads`).
    #[cold]
    #[inline(never)]
    pub(super) fn keep_head<P: Packet>(&mut self, p: &mut P, i: usize) {
        let heads = self
            .obs
            .rx_heads
            .get_or_insert_with(|| vec![(0, 0, [0; sflow::HEADER_CAPACITY]); BURST].into());
        let (s, l) = p.window();
        let f = p.raw_mut().get(s..s + l).unwrap_or_default();
        if let Some(h) = heads.get_mut(i) {
            let k = f.len().min(h.2.len());
            h.2[..k].copy_from_slice(&f[..k]);
            (h.0, h.1) = (l as u16, k as u16);
        }
    }
}
