//! Robust throughput estimator (libwebrtc `robust_throughput_estimator.cc`): the acknowledged-
//! bitrate default of current goog_cc (`RobustThroughputEstimatorSettings::enabled = true`
//! since 2023), used by the `current` profile; `m84`/`m60` keep the Bayesian filter of
//! [`super::acked_bitrate`].
//!
//! A window of the latest received packets (at least `window_packets` and `min_window` of
//! receive time, at most `max_window_packets` and `max_window`) gives
//! `min(send rate, receive rate)`. The receive duration drops the largest inter-arrival gap
//! (replaced by the second largest) so that a delay spike followed by a burst does not lower
//! the estimate; the send rate caps the overestimate that this could cause. Packets are all
//! transport-sequenced in the lab, so libwebrtc's `prior_unacked_data` term is always zero.

use crate::controller::PacketResult;
use crate::units::{Bitrate, Duration, Time};
use std::collections::VecDeque;

/// A packet arriving this much earlier than the newest one in the window means the receive
/// clock jumped: the window restarts (`kMaxReorderingTime`).
const MAX_REORDERING: Duration = Duration::from_secs(1);

/// `RobustThroughputEstimatorSettings` defaults.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RobustSettings {
    pub window_packets: usize,
    pub max_window_packets: usize,
    pub min_window: Duration,
    pub max_window: Duration,
    /// Packets needed before any estimate.
    pub required_packets: usize,
}

impl Default for RobustSettings {
    fn default() -> Self {
        RobustSettings {
            window_packets: 20,
            max_window_packets: 500,
            min_window: Duration::from_secs(1),
            max_window: Duration::from_secs(5),
            required_packets: 10,
        }
    }
}

/// What the window keeps of a received packet: 24 bytes instead of a whole `PacketResult`, since
/// the window (a second or more of packets) is read on every feedback.
#[derive(Clone, Copy, Debug)]
struct Received { recv: Time, send: Time, size: i64 }

#[derive(Clone, Debug, Default)]
pub struct RobustThroughputEstimator {
    s: RobustSettings,
    /// Received packets in receive-time order.
    window: VecDeque<Received>,
    latest_discarded_send_time: Option<Time>,
    run: Running,
}

/// What [`RobustThroughputEstimator::bitrate`] needs of the window, kept up to date as packets
/// enter at the back and leave at the front, so that a feedback costs O(its packets) instead of
/// a pass over the whole window (hundreds of packets; the pass was 4–11 % of a GCC run,
/// docs/benchmarks.md). Every field is an exact integer or a packet's own value, so the result
/// is the same as the pass's. Packets are numbered in arrival order (`base` is the front's).
#[derive(Clone, Debug, Default)]
struct Running {
    base: u64,
    size_sum: i64,
    /// Neighbours (in window order) whose send time goes down: while there are none, the
    /// window is in send order too and the send side is read off its ends.
    descents: usize,
    /// Number of the first packet of the trailing run of equal send times: the first of the
    /// latest-sent packets, whose size the send side leaves out.
    run_start: u64,
    /// The two largest inter-arrival gaps (the pass's multiset top two; zero when there are
    /// fewer), each with the number of the later packet of its pair, if it is a real gap.
    gaps: [(Duration, Option<u64>); 2],
    /// The window changed other than at its ends (reordering, restart) or one of the two gaps
    /// left it: rebuilt in one pass at the end of `incoming`.
    stale: bool,
}

impl Running {
    /// The pass's update of the two largest gaps (ties keep the earlier as the largest).
    fn note_gap(&mut self, gap: Duration, id: u64) {
        if gap > self.gaps[0].0 {
            self.gaps[1] = self.gaps[0];
            self.gaps[0] = (gap, Some(id));
        } else if gap > self.gaps[1].0 {
            self.gaps[1] = (gap, Some(id));
        }
    }

    /// Packet `p` was appended after `prev` (already in receive order).
    fn push(&mut self, prev: Option<Received>, p: Received, id: u64) {
        self.size_sum += p.size;
        match prev {
            Some(q) => {
                self.descents += (p.send < q.send) as usize;
                if p.send != q.send { self.run_start = id; }
                self.note_gap(p.recv - q.recv, id);
            }
            None => self.run_start = id,
        }
    }

    /// The front packet `old` left; `next` is the new front.
    fn pop(&mut self, old: Received, next: Option<&Received>) {
        self.base += 1;
        self.size_sum -= old.size;
        if let Some(n) = next {
            self.descents -= (n.send < old.send) as usize;
            // the gap between `old` and `next` (numbered `base`, the new front) left
            if self.gaps.iter().any(|g| g.1 == Some(self.base)) { self.stale = true; }
        }
        self.run_start = self.run_start.max(self.base);
    }

    fn rebuild(&mut self, window: &VecDeque<Received>) {
        let base = self.base;
        *self = Running { base, ..Default::default() };
        let mut prev = None;
        for (i, &p) in window.iter().enumerate() {
            self.push(prev, p, base + i as u64);
            prev = Some(p);
        }
    }
}

/// `bytes / duration` in bit/s with libwebrtc's integer arithmetic (`DataSize / TimeDelta`).
fn rate(bytes: i64, d: Duration) -> Bitrate { Bitrate::from_bps(8_000_000 * bytes / d.as_us().max(1)) }

impl RobustThroughputEstimator {
    pub fn new(s: RobustSettings) -> Self { RobustThroughputEstimator { s, ..Default::default() } }

    fn first_packet_outside_window(&self) -> bool {
        let (Some(first), Some(last)) = (self.window.front(), self.window.back()) else { return false };
        if self.window.len() > self.s.max_window_packets {
            return true;
        }
        let span = last.recv - first.recv;
        span > self.s.max_window || (self.window.len() > self.s.window_packets && span > self.s.min_window)
    }

    /// `packets` sorted by receive time; lost packets (no receive time) are ignored.
    pub fn incoming(&mut self, packets: &[PacketResult]) {
        for p in packets {
            let Some(recv) = p.recv_time else { continue };
            let r = Received { recv, send: p.sent.send_time, size: p.sent.size.get() };
            let prev = self.window.back().copied();
            self.window.push_back(r);
            if prev.is_some_and(|q| recv < q.recv) {
                // Reordered feedback: bubble the packet into place.
                self.run.stale = true;
                let mut i = self.window.len() - 1;
                while i > 0 && self.window[i].recv < self.window[i - 1].recv {
                    self.window.swap(i, i - 1);
                    i -= 1;
                }
            } else if !self.run.stale {
                let id = self.run.base + self.window.len() as u64 - 1;
                self.run.push(prev, r, id);
            }
            let newest = self.window.back().map_or(recv, |q| q.recv);
            if newest - recv > MAX_REORDERING {
                self.window.clear();
                self.latest_discarded_send_time = None;
                self.run.stale = true;
            }
        }
        while self.first_packet_outside_window() {
            let Some(old) = self.window.pop_front() else { break };
            if !self.run.stale { self.run.pop(old, self.window.front()); }
            let t = old.send;
            self.latest_discarded_send_time = Some(self.latest_discarded_send_time.map_or(t, |d| d.max(t)));
        }
        if self.run.stale { self.run.rebuild(&self.window); }
    }

    pub fn bitrate(&self) -> Option<Bitrate> {
        let (Some(front), Some(back)) = (self.window.front(), self.window.back()) else { return None };
        if self.window.len() < self.s.required_packets {
            return None;
        }
        // The usual case: the window is in send order too and nothing in it was sent before a
        // packet that left it, so what the pass computes is read off the running state.
        let r = &self.run;
        debug_assert!(!r.stale);
        if r.descents == 0 && self.latest_discarded_send_time.is_none_or(|d| front.send >= d) {
            let recv_size = r.size_sum - front.size;
            let recv_duration = ((back.recv - front.recv) - r.gaps[0].0 + r.gaps[1].0).max(Duration::from_ms(1));
            let recv_rate = rate(recv_size, recv_duration);
            // `len >= required_packets`: the send side counts; the last sent packet is left out.
            let send_size = r.size_sum - self.window[(r.run_start - r.base) as usize].size;
            let send_duration = (back.send - front.send).max(Duration::from_ms(1));
            return Some(rate(send_size, send_duration).min(recv_rate));
        }
        self.bitrate_pass()
    }

    /// [`RobustThroughputEstimator::bitrate`] by one pass over the window, for any window.
    fn bitrate_pass(&self) -> Option<Bitrate> {
        if self.window.is_empty() || self.window.len() < self.s.required_packets {
            return None;
        }
        // One pass over the window: it holds a second or more of packets and is read on every
        // feedback (two passes were 11 % of a single-flow run, docs/benchmarks.md).
        let (mut largest_gap, mut second_gap) = (Duration::ZERO, Duration::ZERO);
        let early = Time::from_us(-Time::MAX.as_us());
        let (mut first_recv, mut last_recv) = (Time::MAX, early);
        let (mut first_send, mut last_send) = (Time::MAX, early);
        let (mut recv_size, mut send_size, mut first_recv_size, mut last_send_size) = (0i64, 0i64, 0i64, 0i64);
        let mut sent_in_window = 0usize;
        let mut previous_recv: Option<Time> = None;
        let discarded = self.latest_discarded_send_time;
        for p in &self.window {
            let r = p.recv;
            if let Some(prev) = previous_recv {
                let gap = r - prev;
                if gap > largest_gap {
                    second_gap = largest_gap;
                    largest_gap = gap;
                } else if gap > second_gap {
                    second_gap = gap;
                }
            }
            previous_recv = Some(r);
            let size = p.size;
            if r < first_recv {
                first_recv = r;
                first_recv_size = size;
            }
            last_recv = last_recv.max(r);
            recv_size += size;
            // Sent before a packet that already left the window: reordered; its old send time
            // would understate the send rate.
            if discarded.is_some_and(|d| p.send < d) {
                continue;
            }
            if p.send > last_send {
                last_send = p.send;
                last_send_size = size;
            }
            first_send = first_send.min(p.send);
            send_size += size;
            sent_in_window += 1;
        }
        // N packets span N−1 intervals: the first received (receive side) and the last sent
        // (send side) packet do not count.
        recv_size -= first_recv_size;
        send_size -= last_send_size;
        let recv_duration = ((last_recv - first_recv) - largest_gap + second_gap).max(Duration::from_ms(1));
        let recv_rate = rate(recv_size, recv_duration);
        if sent_in_window < self.s.required_packets {
            return Some(recv_rate);
        }
        let send_duration = (last_send - first_send).max(Duration::from_ms(1));
        Some(rate(send_size, send_duration).min(recv_rate))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::SentPacket;
    use crate::units::Bytes;

    fn result(seq: u64, send_us: i64, recv_us: Option<i64>, size: i64) -> PacketResult {
        let sent = SentPacket { seq, size: Bytes::new(size), send_time: Time::from_us(send_us), probe_cluster: None, is_padding: false, data_in_flight: Bytes::new(0) };
        PacketResult { sent, recv_time: recv_us.map(Time::from_us) }
    }

    #[test]
    fn running_state_gives_the_pass_result() {
        // Random feedback batches: bursts with equal send times, random gaps (some large, to
        // move the two largest gaps), lost packets, packets received out of order (bubbled),
        // packets sent out of order (the send side's descents and the discarded-send-time
        // filter), and receive-clock jumps (the window restarts). After every batch the
        // running state must give exactly the one-pass result.
        let mut e = RobustThroughputEstimator::new(RobustSettings::default());
        let (mut send, mut recv, mut seq) = (1_000_000i64, 2_000_000i64, 0u64);
        let mut x: u64 = 99;
        let mut next = || { x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407); x >> 33 };
        let (mut fast, mut slow, mut restarts, mut some) = (0usize, 0usize, 0usize, 0usize);
        let mut burst_batches = 0;
        for _ in 0..4000 {
            let mut batch = Vec::new();
            // now and then a long burst (one send time, three batches) received over more than
            // a second, so that the whole window is the latest-sent run
            if burst_batches == 0 && next() % 300 == 0 { burst_batches = 3; }
            let long_burst = burst_batches > 0;
            burst_batches -= long_burst as i32;
            for _ in 0..if long_burst { 30 } else { 1 + next() % 25 } {
                let r = next();
                if r % 4 != 0 && !long_burst { send += (r % 3000) as i64; } // else: same send time
                recv += match r % 97 {
                    _ if long_burst => 20_000 + (r % 20_000) as i64,
                    0 => 300_000,
                    1..=3 => 40_000 + (r % 20_000) as i64,
                    _ => (r % 5000) as i64,
                };
                let (mut s, mut rv) = (send, Some(recv));
                match next() % 4000 {
                    0..=39 => rv = None,                                   // lost
                    40..=47 => rv = Some(recv - (next() % 30_000) as i64), // received out of order
                    48..=51 => s = send - (next() % 50_000) as i64,        // sent out of order
                    52 => { rv = Some(recv - 1_500_000); restarts += 1 }   // receive clock jump
                    _ => {}
                }
                batch.push(result(seq, s, rv, 200 + (next() % 1000) as i64));
                seq += 1;
            }
            e.incoming(&batch);
            let fast_path = e.run.descents == 0 && e.latest_discarded_send_time.is_none_or(|d| e.window.front().is_some_and(|f| f.send >= d));
            if fast_path { fast += 1 } else { slow += 1 }
            let b = e.bitrate();
            some += b.is_some() as usize;
            assert_eq!(b, e.bitrate_pass(), "window of {}", e.window.len());
        }
        assert!(fast > 2000 && slow > 500 && restarts >= 5 && some > 3500, "{fast} fast, {slow} by the pass, {restarts} restarts, {some} estimates");
    }
}
