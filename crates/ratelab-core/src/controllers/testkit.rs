//! Test harness for controller unit tests: a greedy sender (sends at the target, padding up to
//! the padding rate, never faster than the pacing rate, gated by the congestion window) over a
//! FIFO bottleneck with a capacity schedule, drop-tail limit and fixed propagation delays,
//! with TWCC-style feedback batches. Much smaller than the simulator, so that state-machine
//! tests can script the network exactly.

use crate::controller::{Constraints, Controller, PacketResult, SentPacket, TransportFeedback, Update};
use crate::units::{Bitrate, Bytes, Duration, Time};

pub struct Harness {
    pub ctrl: Box<dyn Controller>,
    pub now: Time,
    pub target: Bitrate,
    pub pacing: Bitrate,
    pub padding: Bitrate,
    pub cwnd: Bytes,
    pub in_flight: Bytes,
    /// Capacity steps `(from, rate)`.
    pub capacity: Vec<(Time, Bitrate)>,
    pub owd: Duration,
    /// Extra forward delay from a time on `(from, extra)` (only increases keep FIFO order).
    pub delay_steps: Vec<(Time, Duration)>,
    pub ret: Duration,
    /// Drop-tail limit expressed as queuing delay.
    pub queue_limit: Duration,
    pub fb_interval: Duration,
    pub packet: Bytes,
    next_send: Time,
    next_fb: Time,
    next_tick: Time,
    link_free: Time,
    seq: u64,
    /// Sent, not yet reported: (packet, arrival time or None if dropped).
    outstanding: Vec<(SentPacket, Option<Time>)>,
    /// Feedback in transit: (arrival at sender, feedback).
    in_transit: Vec<(Time, TransportFeedback)>,
    pub sent_bytes: Bytes,
    pub delivered_bytes: Bytes,
    pub dropped: u64,
    pub sent_packets: u64,
    /// max over sends of (in-flight before the send − cwnd); negative if the window was honoured.
    pub max_send_excess: Bytes,
    /// (time, queuing delay) of every delivered packet.
    pub queue_log: Vec<(Time, Duration)>,
    /// (time, target) after every update.
    pub target_log: Vec<(Time, Bitrate)>,
}

impl Harness {
    pub fn new(ctrl: Box<dyn Controller>, capacity: Bitrate, owd_ms: i64, constraints: Constraints) -> Self {
        let mut h = Harness {
            ctrl, now: Time::ZERO, target: constraints.start_rate, pacing: constraints.start_rate, padding: Bitrate::ZERO,
            cwnd: Bytes::INFINITY, in_flight: Bytes::ZERO, capacity: vec![(Time::ZERO, capacity)],
            owd: Duration::from_ms(owd_ms), delay_steps: Vec::new(), ret: Duration::from_ms(owd_ms), queue_limit: Duration::from_ms(1000),
            fb_interval: Duration::from_ms(50), packet: Bytes::new(1200), next_send: Time::ZERO,
            next_fb: Time::from_ms(50), next_tick: Time::from_ms(25), link_free: Time::ZERO, seq: 0,
            outstanding: Vec::new(), in_transit: Vec::new(), sent_bytes: Bytes::ZERO, delivered_bytes: Bytes::ZERO,
            dropped: 0, sent_packets: 0, max_send_excess: Bytes::new(i64::MIN / 4), queue_log: Vec::new(), target_log: Vec::new(),
        };
        let u = h.ctrl.on_start(Time::ZERO, constraints);
        h.apply(u);
        h
    }

    fn apply(&mut self, u: Update) {
        if let Some(t) = u.target_rate { self.target = t; }
        if let Some(p) = u.pacing_rate { self.pacing = p; }
        if let Some(p) = u.padding_rate { self.padding = p; }
        if let Some(w) = u.cwnd { self.cwnd = w; }
        self.target_log.push((self.now, self.target));
    }

    fn capacity_at(&self, t: Time) -> Bitrate {
        self.capacity.iter().rev().find(|(from, _)| *from <= t).map_or(Bitrate::from_kbps(1000), |(_, r)| *r)
    }

    fn send_rate(&self) -> Bitrate { self.target.max(self.padding).min(self.pacing).max(Bitrate::from_kbps(10)) }

    fn send_one(&mut self) {
        let size = self.packet;
        self.max_send_excess = self.max_send_excess.max(self.in_flight - self.cwnd);
        self.in_flight += size;
        let sp = SentPacket { seq: self.seq, size, send_time: self.now, probe_cluster: None, is_padding: false, data_in_flight: self.in_flight };
        self.seq += 1;
        self.sent_packets += 1;
        self.sent_bytes += size;
        let start = self.link_free.max(self.now);
        let arrival = if start - self.now > self.queue_limit {
            self.dropped += 1;
            None
        } else {
            let c = self.capacity_at(start);
            self.link_free = start + size / c;
            self.queue_log.push((self.now, start - self.now));
            let extra = self.delay_steps.iter().rev().find(|(from, _)| *from <= self.link_free).map_or(Duration::ZERO, |(_, d)| *d);
            Some(self.link_free + self.owd + extra)
        };
        self.outstanding.push((sp, arrival));
        let u = self.ctrl.on_packet_sent(&sp);
        if !u.is_empty() { self.apply(u); }
    }

    fn make_feedback(&mut self) {
        // Report every packet up to the newest one that has arrived; earlier drops are "lost".
        let now = self.now;
        let Some(last) = self.outstanding.iter().rposition(|(_, a)| a.is_some_and(|t| t <= now)) else { return };
        // FIFO link with one delay: arrivals are in sequence order, so all of these have arrived.
        let packets: Vec<PacketResult> = self.outstanding.drain(..=last).map(|(sent, recv_time)| PacketResult { sent, recv_time }).collect();
        if packets.is_empty() { return; }
        self.in_transit.push((now + self.ret, TransportFeedback { feedback_time: now + self.ret, report_time: Some(now), packets, ..Default::default() }));
    }

    fn deliver_feedback(&mut self, mut fb: TransportFeedback) {
        fb.prior_in_flight = self.in_flight;
        for p in &fb.packets {
            self.in_flight -= p.sent.size;
            if p.received() { self.delivered_bytes += p.sent.size; }
        }
        self.in_flight = self.in_flight.max(Bytes::ZERO);
        fb.data_in_flight = self.in_flight;
        let u = self.ctrl.on_feedback(&fb);
        self.apply(u);
    }

    /// Run until `t`.
    pub fn run_until(&mut self, t: Time) {
        while self.now < t {
            // next event
            let mut next = t.min(self.next_fb).min(self.next_tick);
            if self.in_flight < self.cwnd { next = next.min(self.next_send.max(self.now)); } else { next = next.min(self.now + Duration::from_ms(1)); }
            if let Some((at, _)) = self.in_transit.first() { next = next.min(*at); }
            self.now = next.max(self.now);
            if let Some(i) = self.in_transit.iter().position(|(at, _)| *at <= self.now) {
                let (_, fb) = self.in_transit.remove(i);
                self.deliver_feedback(fb);
                continue;
            }
            if self.now >= self.next_fb { self.make_feedback(); self.next_fb += self.fb_interval; continue; }
            if self.now >= self.next_tick {
                let u = self.ctrl.on_tick(self.now);
                self.apply(u);
                self.next_tick += Duration::from_ms(25);
                continue;
            }
            if self.now >= self.next_send && self.in_flight < self.cwnd {
                self.send_one();
                let gap = self.packet / self.send_rate();
                self.next_send = self.next_send.max(self.now - Duration::from_ms(5)) + gap;
            }
        }
    }

    /// Mean target over [t0, t1) weighted by time.
    pub fn mean_target(&self, t0: Time, t1: Time) -> Bitrate {
        let mut acc = 0.0;
        let mut last: Option<(Time, Bitrate)> = None;
        for &(t, r) in &self.target_log {
            if let Some((lt, lr)) = last {
                let a = lt.max(t0);
                let b = t.min(t1);
                if b > a { acc += lr.bps_f64() * (b - a).as_secs_f64(); }
            }
            last = Some((t, r));
        }
        if let Some((lt, lr)) = last { let a = lt.max(t0); if t1 > a { acc += lr.bps_f64() * (t1 - a).as_secs_f64(); } }
        Bitrate::from_bps_f64(acc / (t1 - t0).as_secs_f64())
    }

    /// Mean queuing delay of packets sent in [t0, t1).
    pub fn mean_queue(&self, t0: Time, t1: Time) -> Duration {
        let v: Vec<i64> = self.queue_log.iter().filter(|(t, _)| *t >= t0 && *t < t1).map(|(_, d)| d.as_us()).collect();
        Duration::from_us(v.iter().sum::<i64>() / v.len().max(1) as i64)
    }
}

/// One scripted 50-ms epoch from `start` for the epoch controllers' unit tests (LCC, Iris):
/// `n` packets of 1200 B sent evenly (sequence numbers from `seq` on), each received `owd_ms`
/// after sending unless its index is in `lose`, and reported on its own `ack_ms` after that
/// (a lost packet when it would have arrived, plus `ack_ms`). Every send, then every report,
/// then the tick at `start + 50 ms`; returns the tick's update.
pub fn scripted_epoch(ctrl: &mut dyn Controller, start: Time, seq: &mut u64, n: u32, owd_ms: f64, ack_ms: f64, lose: &[u32]) -> Update {
    let mut fbs = Vec::new();
    for i in 0..n {
        let t = start + Duration::from_us(50_000 * i as i64 / n as i64);
        let sp = SentPacket { seq: *seq, size: Bytes::new(1200), send_time: t, probe_cluster: None, is_padding: false, data_in_flight: Bytes::ZERO };
        *seq += 1;
        ctrl.on_packet_sent(&sp);
        let arrival = t + Duration::from_ms_f64(owd_ms);
        let recv = (!lose.contains(&i)).then_some(arrival);
        let at = arrival + Duration::from_ms_f64(ack_ms);
        fbs.push(TransportFeedback { feedback_time: at, report_time: recv.or(Some(at)), packets: vec![PacketResult { sent: sp, recv_time: recv }], ..Default::default() });
    }
    for fb in fbs { ctrl.on_feedback(&fb); }
    ctrl.on_tick(start + Duration::from_ms(50))
}
