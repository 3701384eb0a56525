//! Sans-IO TCP receiver: cumulative ACK + SACK blocks (RFC 2018), out-of-order reassembly by
//! byte range, immediate ACK per segment by default or delayed ACK (every second in-order
//! segment, RFC 5681 §4.2; out-of-order, duplicate and hole-filling segments are acknowledged at
//! once), RFC 7323 timestamp echo. Unlimited receive window.

use super::{Ack, SackBlock, SackBlocks, Segment, TcpConfig, MAX_SACK_BLOCKS};
use crate::units::{Bytes, Duration, Time};
use std::collections::VecDeque;

/// An out-of-order byte range held above `rcv_nxt`.
#[derive(Clone, Copy, Debug)]
struct Range {
    start: u64,
    end: u64,
    /// Arrival counter of the most recent segment that fell into this range (for RFC 2018
    /// block ordering: most recently changed first).
    touched: u64,
}

pub struct TcpReceiver {
    rcv_nxt: u64,
    /// Sorted, disjoint, non-adjacent ranges, all starting above `rcv_nxt`.
    ooo: VecDeque<Range>,
    arrivals: u64,
    delayed_ack: bool,
    delack_timeout: Duration,
    /// In-order segments received since the last ACK.
    unacked_segments: u32,
    delack_deadline: Option<Time>,
    /// RFC 7323 TS.Recent.
    ts_recent: Option<Time>,
    last_ack_sent: u64,
    header: Bytes,
    bytes_received: Bytes,
    duplicate_bytes: Bytes,
    acks_sent: u64,
}

impl TcpReceiver {
    pub fn new(cfg: &TcpConfig) -> Self {
        TcpReceiver {
            rcv_nxt: 0,
            ooo: VecDeque::new(),
            arrivals: 0,
            delayed_ack: cfg.delayed_ack,
            delack_timeout: cfg.delayed_ack_timeout(),
            unacked_segments: 0,
            delack_deadline: None,
            ts_recent: None,
            last_ack_sent: 0,
            header: cfg.header(),
            bytes_received: Bytes::ZERO,
            duplicate_bytes: Bytes::ZERO,
            acks_sent: 0,
        }
    }

    /// A data segment arrived. Returns the ACK to send now, if any (with delayed ACKs the first
    /// of two in-order segments returns `None` and arms [`Self::next_timer`]).
    pub fn on_segment(&mut self, now: Time, seg: &Segment) -> Option<Ack> {
        let len = seg.len.get().max(0) as u64;
        self.bytes_received += Bytes::new(len as i64);
        self.arrivals += 1;
        let (start, end) = (seg.seq, seg.seq + len);
        // RFC 7323 §4.3: TS.Recent takes the TSval of a segment that starts at or below what we
        // last acknowledged (and is not older than TS.Recent). With delayed ACKs this echoes the
        // earliest unacknowledged segment; out-of-order segments do not update it; a duplicate
        // (retransmission of data whose ACK was lost) does, so its ACK yields a fresh RTT.
        if start <= self.last_ack_sent && self.ts_recent.is_none_or(|t| seg.send_time >= t) {
            self.ts_recent = Some(seg.send_time);
        }
        if end <= self.rcv_nxt || self.is_held(start, end) {
            // Entirely old data (a spurious or late retransmission): acknowledge at once.
            self.duplicate_bytes += Bytes::new(len as i64);
            return Some(self.make_ack());
        }
        if start <= self.rcv_nxt {
            let had_holes = !self.ooo.is_empty();
            self.rcv_nxt = end;
            while let Some(r) = self.ooo.front() {
                if r.start > self.rcv_nxt {
                    break;
                }
                self.rcv_nxt = self.rcv_nxt.max(r.end);
                self.ooo.pop_front();
            }
            if had_holes || !self.delayed_ack {
                return Some(self.make_ack());
            }
            self.unacked_segments += 1;
            if self.unacked_segments >= 2 {
                return Some(self.make_ack());
            }
            if self.delack_deadline.is_none() {
                self.delack_deadline = Some(now + self.delack_timeout);
            }
            None
        } else {
            self.insert_ooo(start, end);
            Some(self.make_ack())
        }
    }

    /// When the delayed-ACK timer wants [`Self::on_timer`].
    pub fn next_timer(&self) -> Option<Time> { self.delack_deadline }

    /// Delayed-ACK timer: returns the pending ACK once the deadline is reached.
    pub fn on_timer(&mut self, now: Time) -> Option<Ack> {
        match self.delack_deadline {
            Some(t) if now >= t => Some(self.make_ack()),
            _ => None,
        }
    }

    /// Next byte expected in order (= in-order bytes delivered to the application).
    pub fn rcv_nxt(&self) -> u64 { self.rcv_nxt }
    /// Goodput so far: bytes delivered in order.
    pub fn bytes_delivered(&self) -> Bytes { Bytes::new(self.rcv_nxt as i64) }
    /// Payload bytes that arrived, duplicates included.
    pub fn bytes_received(&self) -> Bytes { self.bytes_received }
    /// Payload bytes that arrived but were already held (spurious retransmissions).
    pub fn duplicate_bytes(&self) -> Bytes { self.duplicate_bytes }
    /// Bytes held out of order above `rcv_nxt`.
    pub fn bytes_out_of_order(&self) -> Bytes { Bytes::new(self.ooo.iter().map(|r| (r.end - r.start) as i64).sum()) }
    pub fn acks_sent(&self) -> u64 { self.acks_sent }

    fn is_held(&self, start: u64, end: u64) -> bool {
        self.ooo.iter().any(|r| r.start <= start && end <= r.end)
    }

    fn insert_ooo(&mut self, start: u64, end: u64) {
        let touched = self.arrivals;
        // First range that ends at or after `start` (could merge with us).
        let i = self.ooo.iter().position(|r| r.end >= start).unwrap_or(self.ooo.len());
        if i == self.ooo.len() || self.ooo[i].start > end {
            self.ooo.insert(i, Range { start, end, touched });
            return;
        }
        // Merge [start, end) with ranges i.. that overlap or touch it.
        let mut merged = Range { start: start.min(self.ooo[i].start), end: end.max(self.ooo[i].end), touched };
        let mut j = i + 1;
        while j < self.ooo.len() && self.ooo[j].start <= merged.end {
            merged.end = merged.end.max(self.ooo[j].end);
            j += 1;
        }
        self.ooo[i] = merged;
        self.ooo.drain(i + 1..j);
    }

    fn make_ack(&mut self) -> Ack {
        // RFC 2018: the block with the most recent arrival first, then the most recently
        // changed others.
        let mut best: [Option<usize>; MAX_SACK_BLOCKS] = [None; MAX_SACK_BLOCKS];
        for idx in 0..self.ooo.len() {
            let mut cand = Some(idx);
            for slot in best.iter_mut() {
                match (*slot, cand) {
                    (None, _) => {
                        *slot = cand;
                        break;
                    }
                    (Some(s), Some(c)) if self.ooo[c].touched > self.ooo[s].touched => {
                        *slot = Some(c);
                        cand = Some(s);
                    }
                    _ => {}
                }
            }
        }
        let mut sack = SackBlocks::EMPTY;
        for idx in best.iter().flatten() {
            let r = self.ooo[*idx];
            sack.push(SackBlock { start: r.start, end: r.end });
        }
        self.unacked_segments = 0;
        self.delack_deadline = None;
        self.last_ack_sent = self.rcv_nxt;
        self.acks_sent += 1;
        // SACK option: 2 NOPs + kind/len (4 bytes) + 8 per block.
        let opt = if sack.is_empty() { 0 } else { 4 + 8 * sack.len() as i64 };
        Ack { cumulative: self.rcv_nxt, sack, ts_echo: self.ts_recent, wire_size: self.header + Bytes::new(opt) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    fn seg(i: u64, t_ms: i64) -> Segment {
        Segment { seq: i * MSS, len: Bytes::new(MSS as i64), wire_size: Bytes::new(MSS as i64 + 52), is_retransmit: false, send_time: Time::from_ms(t_ms) }
    }

    fn rx(delayed: bool) -> TcpReceiver {
        TcpReceiver::new(&TcpConfig { mss_bytes: MSS as u32, delayed_ack: delayed, ..TcpConfig::default() })
    }

    fn blocks(a: &Ack) -> Vec<(u64, u64)> { a.sack.iter().map(|b| (b.start / MSS, b.end / MSS)).collect() }

    #[test]
    fn in_order_acks_every_segment() {
        let mut r = rx(false);
        for i in 0..5 {
            let a = r.on_segment(Time::from_ms(i as i64), &seg(i, i as i64)).expect("ack per segment");
            assert_eq!(a.cumulative, (i + 1) * MSS);
            assert!(a.sack.is_empty());
            assert_eq!(a.ts_echo, Some(Time::from_ms(i as i64)));
            assert_eq!(a.wire_size, Bytes::new(52));
        }
        assert_eq!(r.bytes_delivered(), Bytes::new(5000));
    }

    #[test]
    fn out_of_order_reassembly_and_sack_blocks() {
        let mut r = rx(false);
        let now = Time::ZERO;
        assert_eq!(r.on_segment(now, &seg(0, 0)).unwrap().cumulative, 1000);
        // Segment 1 lost; 2, 3 arrive -> dupacks with one block [2,4).
        let a = r.on_segment(now, &seg(2, 2)).unwrap();
        assert_eq!((a.cumulative, blocks(&a)), (1000, vec![(2, 3)]));
        // TS.Recent is not updated by out-of-order segments.
        assert_eq!(a.ts_echo, Some(Time::from_ms(0)));
        let a = r.on_segment(now, &seg(3, 3)).unwrap();
        assert_eq!(blocks(&a), vec![(2, 4)]);
        // 5 lost; 6 then 8 arrive: three blocks, most recent first.
        r.on_segment(now, &seg(6, 6));
        let a = r.on_segment(now, &seg(8, 8)).unwrap();
        assert_eq!(blocks(&a), vec![(8, 9), (6, 7), (2, 4)]);
        // A fourth range: only three fit; the oldest-touched one is left out.
        let a = r.on_segment(now, &seg(10, 10)).unwrap();
        assert_eq!(blocks(&a), vec![(10, 11), (8, 9), (6, 7)]);
        // 7 joins 6 and 8 into [6, 9), now the most recent.
        let a = r.on_segment(now, &seg(7, 7)).unwrap();
        assert_eq!(blocks(&a), vec![(6, 9), (10, 11), (2, 4)]);
        assert_eq!(r.bytes_out_of_order(), Bytes::new(6000));
        // Retransmitted 1 fills the first hole: cumulative jumps over [2,4).
        let a = r.on_segment(now, &seg(1, 20)).unwrap();
        assert_eq!(a.cumulative, 4000);
        assert_eq!(a.ts_echo, Some(Time::from_ms(20)), "hole-filling segment sets TS.Recent");
        assert_eq!(blocks(&a), vec![(6, 9), (10, 11)]);
        // 4 and 5 fill the rest up to 9; 9 joins 10.
        r.on_segment(now, &seg(4, 21));
        let a = r.on_segment(now, &seg(5, 22)).unwrap();
        assert_eq!((a.cumulative, blocks(&a)), (9000, vec![(10, 11)]));
        let a = r.on_segment(now, &seg(9, 23)).unwrap();
        assert_eq!((a.cumulative, blocks(&a)), (11_000, vec![]));
        // A duplicate is acknowledged at once, counted, and its timestamp echoed.
        let a = r.on_segment(now, &seg(3, 24)).unwrap();
        assert_eq!(a.cumulative, 11_000);
        assert_eq!(a.ts_echo, Some(Time::from_ms(24)));
        // A late (reordered) original never moves TS.Recent backwards.
        let a = r.on_segment(now, &seg(2, 2)).unwrap();
        assert_eq!(a.ts_echo, Some(Time::from_ms(24)));
        assert_eq!(r.duplicate_bytes(), Bytes::new(2000));
        assert_eq!(r.bytes_received(), Bytes::new(13_000));
        assert_eq!(r.bytes_delivered(), Bytes::new(11_000));
    }

    #[test]
    fn overlapping_and_partial_ranges_merge() {
        let mut r = rx(false);
        let mk = |s: u64, e: u64| Segment { seq: s, len: Bytes::new((e - s) as i64), wire_size: Bytes::new((e - s) as i64 + 52), is_retransmit: false, send_time: Time::ZERO };
        r.on_segment(Time::ZERO, &mk(500, 700));
        r.on_segment(Time::ZERO, &mk(900, 1000));
        let a = r.on_segment(Time::ZERO, &mk(650, 950)).unwrap();
        assert_eq!(a.sack.as_slice(), &[SackBlock { start: 500, end: 1000 }]);
        let a = r.on_segment(Time::ZERO, &mk(0, 600)).unwrap();
        assert_eq!(a.cumulative, 1000);
        assert!(a.sack.is_empty());
    }

    #[test]
    fn delayed_ack_every_second_segment_and_timer() {
        let mut r = rx(true);
        assert!(r.on_segment(Time::from_ms(0), &seg(0, 0)).is_none());
        assert_eq!(r.next_timer(), Some(Time::from_ms(40)));
        let a = r.on_segment(Time::from_ms(1), &seg(1, 1)).unwrap();
        assert_eq!(a.cumulative, 2000);
        assert_eq!(a.ts_echo, Some(Time::from_ms(0)), "echo the earliest unacknowledged segment");
        assert_eq!(r.next_timer(), None);
        // A lone segment is acknowledged by the timer.
        assert!(r.on_segment(Time::from_ms(10), &seg(2, 10)).is_none());
        assert!(r.on_timer(Time::from_ms(49)).is_none());
        let a = r.on_timer(Time::from_ms(50)).unwrap();
        assert_eq!(a.cumulative, 3000);
        // Out-of-order: immediate; the hole filler too.
        assert!(r.on_segment(Time::from_ms(60), &seg(4, 60)).is_some());
        let a = r.on_segment(Time::from_ms(61), &seg(3, 61)).unwrap();
        assert_eq!(a.cumulative, 5000);
    }
}
