//! Probe bitrate estimator (spec 2.8 "Result", libwebrtc `probe_bitrate_estimator.cc`): turns the
//! feedback of a probe cluster into a rate. When to probe is [`super::probe_controller`].

use crate::controller::{PacketResult, ProbeCluster};
use crate::units::{Bitrate, Bytes, Duration, Time};
use std::collections::VecDeque;

/// Minimum probe packets when a cluster's requirements are unknown.
const MIN_PROBE_PACKETS: u32 = 5;

// ---- Estimator (2.8 "Result") ----
const MIN_RECEIVED_PROBES_RATIO: f64 = 0.80;
const MIN_RECEIVED_BYTES_RATIO: f64 = 0.80;
const MAX_VALID_RATIO: f64 = 2.0;
const MIN_RATIO_FOR_UNSATURATED_LINK: f64 = 0.9;
const TARGET_UTILIZATION_FRACTION: f64 = 0.95;
const MAX_CLUSTER_HISTORY: Duration = Duration::from_secs(1);
const MAX_PROBE_INTERVAL: Duration = Duration::from_secs(1);
const MAX_KNOWN_CLUSTERS: usize = 32;

#[derive(Clone, Copy, Debug)]
struct Aggregate {
    id: u32,
    num_probes: u32,
    first_send: Time,
    last_send: Time,
    first_recv: Time,
    last_recv: Time,
    size_last_send: i64,
    size_first_recv: i64,
    size_total: i64,
}

#[derive(Clone, Debug, Default)]
pub struct ProbeBitrateEstimator {
    clusters: Vec<Aggregate>,
    /// Requested clusters: (id, min packets, min bytes).
    known: VecDeque<(u32, u32, i64)>,
    last_estimate: Option<Bitrate>,
}

impl ProbeBitrateEstimator {
    /// Remember a requested cluster so that its size requirements are known (libwebrtc carries
    /// them in the packets' pacing info; our `SentPacket` only has the cluster id).
    pub fn register(&mut self, c: &ProbeCluster) {
        self.register_requirements(c.id, c.min_packets, (c.rate * c.min_duration).get());
    }

    /// A cluster's `probe_cluster_min_probes` / `probe_cluster_min_bytes` (libwebrtc's
    /// `PacedPacketInfo`).
    pub fn register_requirements(&mut self, id: u32, min_packets: u32, min_bytes: i64) {
        if self.known.len() >= MAX_KNOWN_CLUSTERS {
            self.known.pop_front();
        }
        self.known.push_back((id, min_packets, min_bytes));
    }

    /// Feed one received probe packet (in arrival order). Returns a result once the cluster has
    /// enough packets and bytes.
    pub fn handle(&mut self, p: &PacketResult) -> Option<Bitrate> {
        let id = p.sent.probe_cluster?;
        let recv = p.recv_time?;
        // Forget clusters whose last packet is more than 1 s older than this one.
        self.clusters.retain(|c| recv - c.last_recv <= MAX_CLUSTER_HISTORY);
        let size = p.sent.size.get().max(0);
        let send = p.sent.send_time;
        let idx = match self.clusters.iter().position(|c| c.id == id) {
            Some(i) => i,
            None => {
                if self.clusters.len() >= MAX_KNOWN_CLUSTERS {
                    self.clusters.remove(0);
                }
                self.clusters.push(Aggregate {
                    id,
                    num_probes: 0,
                    first_send: send,
                    last_send: send,
                    first_recv: recv,
                    last_recv: recv,
                    size_last_send: size,
                    size_first_recv: size,
                    size_total: 0,
                });
                self.clusters.len() - 1
            }
        };
        let c = &mut self.clusters[idx];
        if send < c.first_send {
            c.first_send = send;
        }
        if send > c.last_send {
            c.last_send = send;
            c.size_last_send = size;
        }
        if recv < c.first_recv {
            c.first_recv = recv;
            c.size_first_recv = size;
        }
        if recv > c.last_recv {
            c.last_recv = recv;
        }
        c.size_total += size;
        c.num_probes += 1;
        let c = *c;

        let (min_packets, min_bytes) =
            self.known.iter().rev().find(|k| k.0 == id).map_or((MIN_PROBE_PACKETS, 0), |k| (k.1, k.2));
        // `int min_probes = min_probes × 0.8`: truncated to a whole packet count.
        let needed_probes = (MIN_RECEIVED_PROBES_RATIO * f64::from(min_packets)) as u32;
        if c.num_probes < needed_probes
            || (c.size_total as f64) < MIN_RECEIVED_BYTES_RATIO * min_bytes as f64
        {
            return None;
        }
        let send_interval = c.last_send - c.first_send;
        let recv_interval = c.last_recv - c.first_recv;
        if send_interval <= Duration::ZERO
            || send_interval > MAX_PROBE_INTERVAL
            || recv_interval <= Duration::ZERO
            || recv_interval > MAX_PROBE_INTERVAL
        {
            return None;
        }
        let send_rate = Bytes::new(c.size_total - c.size_last_send) / send_interval;
        let recv_rate = Bytes::new(c.size_total - c.size_first_recv) / recv_interval;
        if send_rate.is_zero() || recv_rate.is_zero() {
            return None;
        }
        if recv_rate / send_rate > MAX_VALID_RATIO {
            return None;
        }
        let mut res = send_rate.min(recv_rate);
        if recv_rate.bps_f64() < MIN_RATIO_FOR_UNSATURATED_LINK * send_rate.bps_f64() {
            // The link is saturated: use slightly less than the receive rate.
            res = recv_rate.scale(TARGET_UTILIZATION_FRACTION);
        }
        self.last_estimate = Some(res);
        Some(res)
    }

    pub fn fetch_and_reset(&mut self) -> Option<Bitrate> { self.last_estimate.take() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::SentPacket;

    fn kbps(v: i64) -> Bitrate { Bitrate::from_kbps(v) }

    fn pkt(id: u32, size: i64, send_us: i64, recv_us: i64) -> PacketResult {
        PacketResult {
            sent: SentPacket { seq: 0, size: Bytes::new(size), send_time: Time::from_us(send_us), probe_cluster: Some(id), is_padding: false, data_in_flight: Bytes::ZERO },
            recv_time: Some(Time::from_us(recv_us)),
        }
    }

    #[test]
    fn estimator_hand_worked_results() {
        // 6 × 1200 B sent every 1 ms, received every 1 ms: 5·1200·8/5 ms = 9.6 Mbit/s both ways.
        let mut e = ProbeBitrateEstimator::default();
        let mut last = None;
        for k in 0..6 {
            last = e.handle(&pkt(1, 1200, 1000 * k, 50_000 + 1000 * k));
        }
        assert_eq!(last, Some(kbps(9600)));
        assert_eq!(e.fetch_and_reset(), Some(kbps(9600)));
        assert_eq!(e.fetch_and_reset(), None);
        // Received every 2 ms: recv 4.8 Mbit/s < 0.9·send -> 0.95·4.8 = 4.56 Mbit/s.
        let mut e = ProbeBitrateEstimator::default();
        for k in 0..6 {
            last = e.handle(&pkt(2, 1200, 1000 * k, 50_000 + 2000 * k));
        }
        assert_eq!(last, Some(kbps(4560)));
        // Fewer than 80 % of 5 packets: no result.
        let mut e = ProbeBitrateEstimator::default();
        for k in 0..3 {
            last = e.handle(&pkt(3, 1200, 1000 * k, 50_000 + 1000 * k));
        }
        assert_eq!(last, None);
        // Receive rate more than 2× the send rate is invalid.
        let mut e = ProbeBitrateEstimator::default();
        for k in 0..6 {
            last = e.handle(&pkt(4, 1200, 3000 * k, 50_000 + 1000 * k));
        }
        assert_eq!(last, None);
    }

    #[test]
    fn estimator_needs_80_percent_of_registered_bytes() {
        let mut e = ProbeBitrateEstimator::default();
        // 4.8 Mbit/s for 15 ms = 9000 B: 80 % = 7200 B = 6 packets of 1200 B.
        e.register(&ProbeCluster { id: 9, rate: kbps(4800), min_packets: 5, min_duration: Duration::from_ms(15) });
        let mut got = Vec::new();
        for k in 0..7 {
            got.push(e.handle(&pkt(9, 1200, 2000 * k, 50_000 + 2000 * k)).is_some());
        }
        assert_eq!(got, vec![false, false, false, false, false, true, true]);
    }
}
