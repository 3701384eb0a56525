//! Pacer with WebRTC's rules (spec 1.4): releases queued media at the pacing rate, sends probe
//! clusters at their probe rate, fills with padding at the padding rate when idle, stops while
//! bytes in flight exceed the congestion window, and drains a queue that would otherwise wait
//! longer than the queue-time limit (`drain_large_queues`).
//!
//! Two pacers of libwebrtc, chosen by the burst interval (`media.pacer_burst_ms`):
//! * **0 (the default): the pacer before 2023** (the libwebrtc of AlphaRTC and of the papers'
//!   testbeds), which ran every 5 ms (`kDefaultMinPacketLimit`): packets leave one by one at the
//!   pacing rate, and idle time earns up to 5 ms of budget.
//! * **> 0: today's `PacingController`**: every packet sent adds its size to a debt that drains
//!   at the media rate (never below zero), and packets leave back to back while the debt is
//!   below what the rate sends in the burst interval (`kDefaultBurstInterval` = 40 ms, capped at
//!   `kMaxBurstSize` = 63 kB); once it reaches that, the pacer waits until the debt has drained
//!   to zero (`NextSendTime`). A backlog leaves as ~40 ms of media every ~40 ms, which is the
//!   standing queue a real Chromium call builds at its bottleneck (docs/fidelity.md).

use crate::controller::ProbeCluster;
use crate::network::packet::Payload;
use crate::units::{div_i128, Bitrate, Bytes, Duration, Time};
use std::collections::VecDeque;

/// Size of a padding/probe filler packet on the wire.
const PADDING_PACKET: Bytes = Bytes::new(1200);

/// Budget idle time earns in the pre-2023 pacer: its 5 ms process interval.
const LEGACY_IDLE_BUDGET: Duration = Duration::from_ms(5);

/// libwebrtc's `PacingController::kMaxBurstSize`: a burst never carries more than this, so that
/// it cannot overfill a socket buffer at high rates (63 kB / 10 Mbit/s = 50 ms).
const MAX_BURST: Bytes = Bytes::new(63_000);

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct QueuedPacket {
    pub size: Bytes,
    pub payload: Payload,
    pub enqueue_time: Time,
}

/// A packet the pacer releases now.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Release {
    pub size: Bytes,
    pub payload: Payload,
    pub probe_cluster: Option<u32>,
}

struct ActiveProbe {
    cluster: ProbeCluster,
    sent_bytes: Bytes,
    sent_packets: u32,
    next_send: Time,
}

pub struct Pacer {
    queue: VecDeque<QueuedPacket>,
    queue_bytes: Bytes,
    /// Σ enqueue time (µs) of queued packets, for the average time in queue.
    enqueue_sum_us: i128,
    pacing_rate: Bitrate,
    padding_rate: Bitrate,
    cwnd: Bytes,
    next_media: Time,
    next_padding: Time,
    probes: VecDeque<ActiveProbe>,
    queue_time_limit: Duration,
    drain_large_queues: bool,
    /// Last time anything left the pacer (for the congestion-window keep-alive).
    last_send: Time,
    /// Media may leave while its debt (`next_media − now`) is below this (capped by [`MAX_BURST`]).
    burst_interval: Duration,
    /// The last burst ran the debt up to the allowance: nothing leaves until it is drained.
    burst_full: bool,
    /// Retransmissions at the head of `queue` (they go before video, `media.nack`).
    retransmissions: usize,
}

/// While the congestion window blocks, libwebrtc still lets one packet out this often so that
/// feedback keeps flowing even if everything in flight was lost (spec 1.4).
pub const KEEPALIVE_INTERVAL: Duration = Duration::from_ms(500);

impl Pacer {
    pub fn new(pacing_rate: Bitrate, queue_time_limit: Duration) -> Self {
        Pacer {
            queue: VecDeque::new(), queue_bytes: Bytes::ZERO, enqueue_sum_us: 0, pacing_rate, padding_rate: Bitrate::ZERO,
            cwnd: Bytes::INFINITY, next_media: Time::ZERO, next_padding: Time::ZERO, probes: VecDeque::new(),
            queue_time_limit, drain_large_queues: true, last_send: Time::ZERO, burst_interval: Duration::ZERO, burst_full: false, retransmissions: 0,
        }
    }

    /// Let media leave in bursts of up to `interval` at the media rate (libwebrtc: 40 ms).
    pub fn with_burst_interval(mut self, interval: Duration) -> Self {
        self.burst_interval = interval.max(Duration::ZERO);
        self
    }

    /// The debt media may run up before it must wait: the burst interval, or less where the
    /// rate would put more than [`MAX_BURST`] into one burst.
    fn burst_allowance(&self, rate: Bitrate) -> Duration {
        if self.burst_interval <= Duration::ZERO || rate.is_zero() { return Duration::ZERO; }
        self.burst_interval.min(MAX_BURST / rate)
    }

    pub fn set_pacing_rate(&mut self, r: Bitrate) { self.pacing_rate = r; }
    pub fn set_padding_rate(&mut self, r: Bitrate) { self.padding_rate = r; }
    pub fn set_cwnd(&mut self, w: Bytes) { self.cwnd = w; }
    pub fn set_drain_large_queues(&mut self, on: bool) { self.drain_large_queues = on; }
    pub fn pacing_rate(&self) -> Bitrate { self.pacing_rate }
    pub fn cwnd(&self) -> Bytes { self.cwnd }
    pub fn queue_bytes(&self) -> Bytes { self.queue_bytes }
    pub fn queue_packets(&self) -> usize { self.queue.len() }

    pub fn add_probe(&mut self, now: Time, cluster: ProbeCluster) {
        if cluster.rate.is_zero() { return; }
        self.probes.push_back(ActiveProbe { cluster, sent_bytes: Bytes::ZERO, sent_packets: 0, next_send: now });
    }

    pub fn enqueue(&mut self, pkt: QueuedPacket) {
        self.queue_bytes += pkt.size;
        self.enqueue_sum_us += pkt.enqueue_time.as_us() as i128;
        self.queue.push_back(pkt);
    }

    /// Queue an RTX packet behind earlier retransmissions and ahead of all video, as
    /// libwebrtc's `PrioritizedPacketQueue` orders them (audio, retransmission, video, FEC,
    /// padding; audio is not paced here).
    pub fn enqueue_retransmission(&mut self, pkt: QueuedPacket) {
        self.queue_bytes += pkt.size;
        self.enqueue_sum_us += pkt.enqueue_time.as_us() as i128;
        self.queue.insert(self.retransmissions, pkt);
        self.retransmissions += 1;
    }

    fn pop_front(&mut self) -> Option<QueuedPacket> {
        let q = self.queue.pop_front()?;
        self.retransmissions = self.retransmissions.saturating_sub(1);
        self.queue_bytes -= q.size;
        self.enqueue_sum_us -= q.enqueue_time.as_us() as i128;
        Some(q)
    }

    /// Expected time to drain the queue at the pacing rate (the encoder-pause signal).
    pub fn expected_queue_time(&self) -> Duration {
        if self.queue.is_empty() { return Duration::ZERO; }
        self.queue_bytes / self.pacing_rate
    }

    fn avg_time_in_queue(&self, now: Time) -> Duration {
        if self.queue.is_empty() { return Duration::ZERO; }
        let mean = div_i128(self.enqueue_sum_us, self.queue.len() as i128) as i64;
        now - Time::from_us(mean)
    }

    /// Media rate actually used: the pacing rate, raised when the queue would otherwise
    /// wait longer than the queue-time limit.
    pub fn effective_rate(&self, now: Time) -> Bitrate {
        if !self.drain_large_queues || self.queue.is_empty() { return self.pacing_rate; }
        let left = (self.queue_time_limit - self.avg_time_in_queue(now)).max(Duration::from_ms(1));
        self.pacing_rate.max(self.queue_bytes / left)
    }

    /// When queued media may leave: at once while the debt is below the burst allowance and the
    /// last burst did not fill it, otherwise once the debt has drained.
    fn next_media_send(&self, now: Time) -> Time {
        let debt = self.next_media - now;
        if debt <= Duration::ZERO { return now; }
        if self.burst_full || debt >= self.burst_allowance(self.effective_rate(now)) { self.next_media } else { now }
    }

    fn congested(&self, in_flight: Bytes) -> bool { in_flight >= self.cwnd }

    /// Earliest time at which [`Pacer::poll`] could release something, given bytes in flight.
    /// `None`: nothing to send until a new packet, probe, rate or window arrives.
    pub fn next_send_time(&self, now: Time, in_flight: Bytes) -> Option<Time> {
        if self.congested(in_flight) {
            return (!self.queue.is_empty()).then(|| (self.last_send + KEEPALIVE_INTERVAL).max(now));
        }
        if let Some(p) = self.probes.front() { return Some(p.next_send.max(now)); }
        if !self.queue.is_empty() { return Some(self.next_media_send(now)); }
        if !self.padding_rate.is_zero() { return Some(self.next_padding.max(self.next_media).max(now)); }
        None
    }

    /// Release one packet if one is due at `now`.
    pub fn poll(&mut self, now: Time, in_flight: Bytes) -> Option<Release> {
        let r = self.poll_inner(now, in_flight);
        if r.is_some() { self.last_send = now; }
        r
    }

    fn poll_inner(&mut self, now: Time, in_flight: Bytes) -> Option<Release> {
        if self.congested(in_flight) {
            // Keep-alive: one queued media packet per interval while the window blocks.
            if now < self.last_send + KEEPALIVE_INTERVAL { return None; }
            let q = self.pop_front()?;
            return Some(Release { size: q.size, payload: q.payload, probe_cluster: None });
        }
        if let Some(next_send) = self.probes.front().map(|p| p.next_send) {
            if next_send > now { return None; }
            let (size, payload) = match self.pop_front() {
                Some(q) => (q.size, q.payload),
                None => (PADDING_PACKET, Payload::Padding),
            };
            let probe = self.probes.front_mut()?;
            let id = probe.cluster.id;
            probe.sent_bytes += size;
            probe.sent_packets += 1;
            probe.next_send = now + size / probe.cluster.rate;
            let min_bytes = probe.cluster.rate * probe.cluster.min_duration;
            if probe.sent_packets >= probe.cluster.min_packets && probe.sent_bytes >= min_bytes {
                self.probes.pop_front();
            }
            // Probe bytes also count against the media budget so that media does not burst after.
            self.next_media = self.next_media.max(now);
            return Some(Release { size, payload, probe_cluster: Some(id) });
        }
        if let Some(q) = self.queue.front().copied() {
            if self.next_media_send(now) > now { return None; }
            let rate = self.effective_rate(now);
            self.pop_front();
            let floor = if self.burst_interval > Duration::ZERO { now } else { now - LEGACY_IDLE_BUDGET };
            self.next_media = self.next_media.max(floor) + q.size / rate;
            self.burst_full = self.next_media - now >= self.burst_allowance(rate);
            return Some(Release { size: q.size, payload: q.payload, probe_cluster: None });
        }
        if !self.padding_rate.is_zero() && self.next_padding <= now && self.next_media <= now {
            self.next_padding = now + PADDING_PACKET / self.padding_rate.min(self.pacing_rate.max(self.padding_rate));
            self.next_media = now + PADDING_PACKET / self.pacing_rate;
            return Some(Release { size: PADDING_PACKET, payload: Payload::Padding, probe_cluster: None });
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn media(size: i64, t: Time) -> QueuedPacket {
        QueuedPacket { size: Bytes::new(size), payload: Payload::Media { frame: 0, index: 0, count: 1, capture: t, keyframe: false, media_seq: 0, rtx: false }, enqueue_time: t }
    }

    /// Drain the pacer from t=0, returning release times.
    fn drain(p: &mut Pacer, until: Time) -> Vec<(Time, Release)> {
        let mut out = vec![];
        let mut now = Time::ZERO;
        while let Some(t) = p.next_send_time(now, Bytes::ZERO) {
            if t > until { break; }
            now = t;
            if let Some(r) = p.poll(now, Bytes::ZERO) { out.push((now, r)); }
        }
        out
    }

    #[test]
    fn retransmissions_go_before_video_in_their_own_order() {
        let mut p = Pacer::new(Bitrate::from_kbps(800), Duration::from_ms(2000));
        let seq = |r: &Release| match r.payload { Payload::Media { media_seq, .. } => media_seq as u64, _ => u64::MAX };
        let pkt = |s: u64, rtx: bool| QueuedPacket {
            size: Bytes::new(1000), enqueue_time: Time::ZERO,
            payload: Payload::Media { frame: 0, index: 0, count: 1, capture: Time::ZERO, keyframe: false, media_seq: s as u32, rtx },
        };
        for s in 10..13 { p.enqueue(pkt(s, false)); }
        p.enqueue_retransmission(pkt(3, true));
        p.enqueue_retransmission(pkt(5, true));
        assert_eq!(p.queue_bytes(), Bytes::new(5000));
        let order: Vec<u64> = drain(&mut p, Time::from_secs_f64(1.0)).iter().map(|(_, r)| seq(r)).collect();
        assert_eq!(order, vec![3, 5, 10, 11, 12]);
        // Once drained, a new retransmission again goes first.
        p.enqueue(pkt(13, false));
        p.enqueue_retransmission(pkt(6, true));
        let order: Vec<u64> = drain(&mut p, Time::from_secs_f64(2.0)).iter().map(|(_, r)| seq(r)).collect();
        assert_eq!(order, vec![6, 13]);
    }

    #[test]
    fn releases_at_pacing_rate() {
        // 1000-byte packets at 800 kbit/s, no burst interval: one every 10 ms (the first two
        // 5 ms apart: the idle budget of the pre-2023 pacer).
        let mut p = Pacer::new(Bitrate::from_kbps(800), Duration::from_ms(2000));
        for _ in 0..10 { p.enqueue(media(1000, Time::ZERO)); }
        let times: Vec<i64> = drain(&mut p, Time::from_secs_f64(1.0)).iter().map(|(t, _)| t.as_us()).collect();
        assert_eq!(times.len(), 10);
        let gaps: Vec<i64> = times.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(gaps[1..].iter().all(|g| *g == 10_000), "{gaps:?}");
        assert!(times[9] >= 85_000 && times[9] <= 90_000, "{times:?}");
    }

    #[test]
    fn bursts_of_the_burst_interval_then_waits_for_the_debt_to_drain() {
        // libwebrtc PacingController with its 40 ms burst interval: at 800 kbit/s a 1000-byte
        // packet is 10 ms of sending time, so packets leave while the debt is 0, 10, 20, 30 ms
        // (4 back to back); at 40 ms the pacer waits until the debt is 0 again (t = 40 ms).
        let mut p = Pacer::new(Bitrate::from_kbps(800), Duration::from_ms(2000)).with_burst_interval(Duration::from_ms(40));
        for _ in 0..10 { p.enqueue(media(1000, Time::ZERO)); }
        let times: Vec<i64> = drain(&mut p, Time::from_secs_f64(1.0)).iter().map(|(t, _)| t.as_us() / 1000).collect();
        assert_eq!(times, vec![0, 0, 0, 0, 40, 40, 40, 40, 80, 80]);
    }

    #[test]
    fn a_burst_never_carries_more_than_63_kb() {
        // At 25.2 Mbit/s, 40 ms would be 126 kB; libwebrtc's kMaxBurstSize caps it at 63 kB
        // (20 ms): 1200-byte packets leave while the debt is below 20 ms: 53 of them.
        let mut p = Pacer::new(Bitrate::from_kbps(25_200), Duration::from_ms(2000)).with_burst_interval(Duration::from_ms(40));
        for _ in 0..200 { p.enqueue(media(1200, Time::ZERO)); }
        let first = drain(&mut p, Time::from_ms(1)).iter().filter(|(t, _)| *t == Time::ZERO).count();
        assert_eq!(first, 53);
    }

    #[test]
    fn a_packet_meeting_a_partly_drained_debt_leaves_at_once() {
        // A frame's packets arrive while the debt (20 ms) is below the allowance and the last
        // burst ended because the queue emptied, not because the debt filled: they go now.
        let mut p = Pacer::new(Bitrate::from_kbps(800), Duration::from_ms(2000)).with_burst_interval(Duration::from_ms(40));
        p.enqueue(media(1000, Time::ZERO));
        p.enqueue(media(1000, Time::ZERO));
        assert!(p.poll(Time::ZERO, Bytes::ZERO).is_some());
        assert!(p.poll(Time::ZERO, Bytes::ZERO).is_some());
        p.enqueue(media(1000, Time::ZERO));
        assert_eq!(p.next_send_time(Time::ZERO, Bytes::ZERO), Some(Time::ZERO));
    }

    #[test]
    fn drains_queue_within_time_limit() {
        // 500 kB at 100 kbit/s would take 40 s; with a 2 s limit the pacer speeds up.
        let mut p = Pacer::new(Bitrate::from_kbps(100), Duration::from_ms(2000));
        for _ in 0..500 { p.enqueue(media(1000, Time::ZERO)); }
        assert_eq!(p.effective_rate(Time::ZERO), Bitrate::from_kbps(2000));
        assert_eq!(p.expected_queue_time(), Duration::from_secs(40));
        let out = drain(&mut p, Time::from_secs_f64(10.0));
        assert_eq!(out.len(), 500);
        assert!(out.last().unwrap().0 <= Time::from_ms(2100), "{:?}", out.last().unwrap().0);
    }

    #[test]
    fn probe_cluster_uses_padding_and_probe_rate() {
        let mut p = Pacer::new(Bitrate::from_kbps(300), Duration::from_ms(2000));
        p.add_probe(Time::ZERO, ProbeCluster { id: 7, rate: Bitrate::from_kbps(900), min_packets: 5, min_duration: Duration::from_ms(15) });
        let out = drain(&mut p, Time::from_secs_f64(1.0));
        // 900 kbit/s × 15 ms = 1687 B, but 5 packets minimum -> 5 × 1200 B padding, 10.67 ms apart
        assert_eq!(out.len(), 5);
        assert!(out.iter().all(|(_, r)| r.probe_cluster == Some(7) && r.payload == Payload::Padding));
        assert_eq!(out[1].0 - out[0].0, Bytes::new(1200) / Bitrate::from_kbps(900));
    }

    #[test]
    fn congestion_window_blocks() {
        let mut p = Pacer::new(Bitrate::from_kbps(800), Duration::from_ms(2000));
        p.set_cwnd(Bytes::new(5000));
        p.enqueue(media(1000, Time::ZERO));
        p.enqueue(media(1000, Time::ZERO));
        p.enqueue(media(1000, Time::ZERO));
        assert!(p.poll(Time::ZERO, Bytes::new(4000)).is_some());
        // blocked: the next packet waits for the 500 ms keep-alive
        assert_eq!(p.next_send_time(Time::from_ms(10), Bytes::new(5000)), Some(Time::from_ms(500)));
        assert!(p.poll(Time::from_ms(10), Bytes::new(6000)).is_none());
        assert!(p.poll(Time::from_ms(500), Bytes::new(6000)).is_some());
        assert!(p.poll(Time::from_ms(600), Bytes::new(6000)).is_none());
        // window opens again: normal pacing
        assert!(p.poll(Time::from_ms(600), Bytes::new(1000)).is_some());
    }
}
