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
            self.window.push_back(Received { recv, send: p.sent.send_time, size: p.sent.size.get() });
            // Reordered feedback: bubble the packet into place.
            let mut i = self.window.len() - 1;
            while i > 0 && self.window[i].recv < self.window[i - 1].recv {
                self.window.swap(i, i - 1);
                i -= 1;
            }
            let newest = self.window.back().map_or(recv, |q| q.recv);
            if newest - recv > MAX_REORDERING {
                self.window.clear();
                self.latest_discarded_send_time = None;
            }
        }
        while self.first_packet_outside_window() {
            let Some(old) = self.window.pop_front() else { break };
            let t = old.send;
            self.latest_discarded_send_time = Some(self.latest_discarded_send_time.map_or(t, |d| d.max(t)));
        }
    }

    pub fn bitrate(&self) -> Option<Bitrate> {
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
