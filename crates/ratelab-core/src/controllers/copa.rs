//! `copa` — Copa (Arun & Balakrishnan, NSDI'18; spec section 11) driven by transport feedback,
//! with a rate output for the media sender.
//!
//! Every received packet in a feedback gives an RTT sample — the per-packet RTT of spec 1.3
//! (exact when the feedback carries the receiver's report time, otherwise relative to the newest
//! arrival, see [`packet_rtt`]) — time-stamped `t_s + rtt`, when a per-packet ACK would have
//! arrived, so that the windowed filters keep their per-ACK meaning under batched feedback. A
//! feedback is one ACK event (mvfst decides once per ACK frame; `per_packet_acks` decides per
//! packet): `d_q = RTT_standing − RTT_min`, target rate `λ_t = MSS/(δ·d_q)`, current rate
//! `λ = cwnd/RTT_standing`; `cwnd ± v·MSS·acked/(δ·cwnd)` (spec 11.3). Once per srtt the velocity
//! rule runs; slow start doubles the window once per srtt until the first decrease.
//!
//! Competitive mode (spec 11.3, paper §2.2): when the queue was not nearly empty
//! (`RTT_standing − RTT_min ≤ 0.1·(RTT_max − RTT_min)`, `RTT_max` over 4 srtt) at least once in
//! the last 5 srtt, `1/δ` follows AIMD (+1 per RTT without loss, halved on a loss, never below
//! `1/δ_default`); otherwise δ is the default.
//!
//! Output (spec 11.5): target (encoder) rate `cwnd / RTT_standing`, pacing `pacing_gain ×` that,
//! and the window itself when `apply_cwnd` is set (plus the bytes the receiver holds back before
//! reporting, which the lab counts in flight but an exact RTT excludes).

use super::common::{max_recv_time, packet_rtt, WindowedFilter};
use crate::controller::{Constraints, Controller, Diagnostics, TransportFeedback, Update};
use crate::units::{Bitrate, Bytes, Duration, Time};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CopaConfig {
    /// δ in default mode (spec 11.4: paper 0.5; mvfst's 0.05 is far more throughput-hungry).
    pub delta: f64,
    /// MSS in bytes: the lab's full packet on the wire (1200 B payload + 40 B headers).
    pub mss_bytes: f64,
    /// Window of the RTT_min filter, ms (spec 11.4: 10 s).
    pub min_rtt_window_ms: f64,
    /// Window of the RTT_standing filter as a fraction of srtt (spec 11.4: 1/2).
    pub standing_window_srtt: f64,
    /// Velocity doubles once the window moved this many RTTs in the same direction (spec 11.4: 3).
    pub velocity_rtts: u32,
    /// Upper bound of the velocity (numerical guard; not in the paper).
    pub max_velocity: f64,
    /// Start in slow start (double per RTT until the first decrease, spec 11.3).
    pub slow_start: bool,
    /// Enable the competitive-mode switch (spec 11.3).
    pub competitive_mode: bool,
    /// Switch to competitive mode when the queue was not nearly empty for this many srtt (paper: 5).
    pub competitive_after_rtts: f64,
    /// "Nearly empty": `d_q ≤ this × (RTT_max − RTT_min)` (paper: 0.1).
    pub empty_queue_fraction: f64,
    /// Window of RTT_max in srtt (paper: 4).
    pub rtt_max_window_rtts: f64,
    /// Pacing rate = this × cwnd/RTT_standing (spec 11.3: 2).
    pub pacing_gain: f64,
    /// Also hand the window to the pacer (`Update::cwnd`); default: rate output only.
    pub apply_cwnd: bool,
    /// One Copa decision per received packet (spec 11.1's reading) instead of one per feedback
    /// with all its acknowledged bytes (mvfst's per-ACK-frame rule; TWCC feedback is the ACK).
    pub per_packet_acks: bool,
    /// Minimum window in packets (mvfst: 2).
    pub min_cwnd_packets: f64,
    /// RTT assumed before the first sample, ms.
    pub initial_rtt_ms: f64,
}

impl Default for CopaConfig {
    fn default() -> Self {
        CopaConfig {
            delta: 0.5, mss_bytes: 1240.0, min_rtt_window_ms: 10_000.0, standing_window_srtt: 0.5, velocity_rtts: 3,
            max_velocity: 1024.0, slow_start: true, competitive_mode: true, competitive_after_rtts: 5.0,
            empty_queue_fraction: 0.1, rtt_max_window_rtts: 4.0, pacing_gain: 2.0, apply_cwnd: false, per_packet_acks: false,
            min_cwnd_packets: 2.0, initial_rtt_ms: 100.0,
        }
    }
}

/// Copa's target rate `λ_t = MSS/(δ·d_q)` in bytes/s (spec 11.3); infinite for an empty queue.
pub fn target_rate(mss_bytes: f64, delta: f64, d_q_secs: f64) -> f64 {
    if d_q_secs <= 0.0 { f64::INFINITY } else { mss_bytes / (delta * d_q_secs) }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction { Up, Down }

pub struct Copa {
    cfg: CopaConfig,
    lo: Bitrate,
    hi: Bitrate,
    start_rate: Bitrate,
    cwnd: f64,
    srtt: Option<f64>,
    rtt_min: WindowedFilter<Duration>,
    rtt_standing: WindowedFilter<Duration>,
    rtt_max: WindowedFilter<Duration>,
    velocity: f64,
    direction: Option<Direction>,
    n_same: u32,
    last_check: Option<Time>,
    cwnd_at_check: f64,
    in_slow_start: bool,
    last_double: Option<Time>,
    competitive: bool,
    /// 1/δ in use.
    inv_delta: f64,
    last_empty: Option<Time>,
    loss_since_check: bool,
    last_loss_cut: Option<Time>,
    /// EWMA of the receiver hold time (naive − exact RTT), seconds.
    hold: f64,
    increases: u64,
    decreases: u64,
}

impl Copa {
    pub fn new(cfg: CopaConfig) -> Self {
        let inv = 1.0 / cfg.delta.max(1e-3);
        Copa {
            lo: Bitrate::ZERO, hi: Bitrate::INFINITY, start_rate: Bitrate::from_kbps(300), cwnd: 0.0, srtt: None,
            rtt_min: WindowedFilter::min(Duration::from_ms_f64(cfg.min_rtt_window_ms.max(1.0))),
            rtt_standing: WindowedFilter::min(Duration::from_ms(50)),
            rtt_max: WindowedFilter::max(Duration::from_ms(400)),
            velocity: 1.0, direction: None, n_same: 0, last_check: None, cwnd_at_check: 0.0,
            in_slow_start: cfg.slow_start, last_double: None, competitive: false, inv_delta: inv, last_empty: None,
            loss_since_check: false, last_loss_cut: None, hold: 0.0, increases: 0, decreases: 0, cfg,
        }
    }

    pub fn cwnd(&self) -> f64 { self.cwnd }
    pub fn velocity(&self) -> f64 { self.velocity }
    pub fn direction(&self) -> Option<Direction> { self.direction }
    pub fn in_slow_start(&self) -> bool { self.in_slow_start }
    pub fn competitive(&self) -> bool { self.competitive }
    /// δ in use (default, or 1/(1/δ) of the competitive AIMD).
    pub fn delta(&self) -> f64 { 1.0 / self.inv_delta }
    /// (increase, decrease) per-ACK decisions so far.
    pub fn decisions(&self) -> (u64, u64) { (self.increases, self.decreases) }

    fn default_inv_delta(&self) -> f64 { 1.0 / self.cfg.delta.max(1e-3) }
    fn srtt_secs(&self) -> f64 { self.srtt.unwrap_or(self.cfg.initial_rtt_ms / 1e3).max(1e-4) }
    fn mss(&self) -> f64 { self.cfg.mss_bytes.max(1.0) }
    fn min_cwnd(&self) -> f64 { self.cfg.min_cwnd_packets.max(1.0) * self.mss() }
    /// The window that gives the maximum rate: `max_rate × RTT_standing` (a larger window could
    /// not be used by the rate output and would only be a queue in waiting).
    fn max_cwnd(&self) -> f64 {
        let hi = if self.hi.is_finite() { self.hi.bps_f64() / 8.0 } else { 1e9 };
        let st = self.rtt_standing.get().map_or(self.srtt_secs(), |d| d.as_secs_f64());
        (hi * st).max(self.min_cwnd() * 2.0)
    }

    /// Queuing delay `RTT_standing − RTT_min` in seconds, if both are known.
    pub fn queuing_delay(&self) -> Option<f64> {
        Some((self.rtt_standing.get()? - self.rtt_min.get()?).as_secs_f64().max(0.0))
    }

    fn rate_bps(&self) -> f64 {
        let st = self.rtt_standing.get().map_or(self.srtt_secs(), |d| d.as_secs_f64()).max(1e-4);
        self.cwnd / st * 8.0
    }

    fn reset_velocity(&mut self, t: Time, dir: Direction) {
        self.velocity = 1.0;
        self.n_same = 0;
        self.direction = Some(dir);
        self.cwnd_at_check = self.cwnd;
        self.last_check = Some(t);
    }

    /// One ACK of `acked` bytes at `t` (spec 11.3 per-ACK rule).
    fn on_ack(&mut self, t: Time, acked: f64) {
        let (Some(min), Some(st)) = (self.rtt_min.get(), self.rtt_standing.get()) else { return };
        let dq = (st - min).as_secs_f64().max(0.0);
        let delta = 1.0 / self.inv_delta;
        let st_s = st.as_secs_f64().max(1e-6);
        // λ ≤ λ_t  ⇔  cwnd/st ≤ MSS/(δ·dq)
        let increase = dq <= 0.0 || self.cwnd * delta * dq <= self.mss() * st_s;
        if increase { self.increases += 1 } else { self.decreases += 1 }
        if self.in_slow_start {
            if increase {
                // double once per srtt (spec 11.3; mvfst's time-based doubling)
                match self.last_double {
                    None => self.last_double = Some(t),
                    Some(d) if (t - d).as_secs_f64() > self.srtt_secs() => {
                        self.cwnd = (self.cwnd * 2.0).min(self.max_cwnd()).max(self.min_cwnd());
                        self.last_double = Some(t);
                    }
                    _ => {}
                }
                return;
            }
            self.in_slow_start = false;
        }
        // a decision against the direction of a large velocity resets it (spec 11.3)
        let dir = if increase { Direction::Up } else { Direction::Down };
        if self.velocity > 1.0 && self.direction.is_some_and(|d| d != dir) { self.reset_velocity(t, dir); }
        let step = self.velocity * self.mss() * acked / (delta * self.cwnd.max(1.0));
        self.cwnd = if increase { self.cwnd + step } else { self.cwnd - step };
        self.cwnd = self.cwnd.clamp(self.min_cwnd(), self.max_cwnd());
    }

    /// Once per srtt: velocity rule and the competitive-mode AIMD on 1/δ.
    fn per_rtt(&mut self, now: Time) {
        let Some(last) = self.last_check else {
            self.last_check = Some(now);
            self.cwnd_at_check = self.cwnd;
            return;
        };
        if (now - last).as_secs_f64() < self.srtt_secs() { return; }
        let dir = if self.cwnd > self.cwnd_at_check { Direction::Up } else { Direction::Down };
        if !self.in_slow_start {
            if self.direction == Some(dir) {
                self.n_same += 1;
                if self.n_same >= self.cfg.velocity_rtts { self.velocity = (self.velocity * 2.0).min(self.cfg.max_velocity.max(1.0)); }
            } else {
                self.direction = Some(dir);
                self.n_same = 0;
                self.velocity = 1.0;
            }
        }
        if self.competitive && !self.loss_since_check { self.inv_delta = (self.inv_delta + 1.0).min(1e4); }
        self.loss_since_check = false;
        self.cwnd_at_check = self.cwnd;
        self.last_check = Some(now);
    }

    fn update_mode(&mut self, now: Time) {
        if let (Some(min), Some(st), Some(mx)) = (self.rtt_min.get(), self.rtt_standing.get(), self.rtt_max.get()) {
            let dq = (st - min).as_secs_f64();
            let span = (mx - min).as_secs_f64().max(0.0);
            if dq <= self.cfg.empty_queue_fraction * span { self.last_empty = Some(now); }
        }
        if !self.cfg.competitive_mode { return; }
        let Some(empty) = self.last_empty else { return };
        let comp = (now - empty).as_secs_f64() > self.cfg.competitive_after_rtts * self.srtt_secs();
        if comp != self.competitive {
            self.competitive = comp;
            self.inv_delta = self.default_inv_delta();
        }
    }

    fn outputs(&self) -> Update {
        let rate = self.rate_bps();
        let target = Bitrate::from_bps_f64(rate).max(self.lo).min(self.hi);
        let pacing = Bitrate::from_bps_f64(rate * self.cfg.pacing_gain.max(1.0)).max(target).max(Bitrate::from_kbps(10));
        let cwnd = self.cfg.apply_cwnd.then(|| Bytes::new((self.cwnd + self.hold * rate / 8.0 + self.mss()).round() as i64));
        Update { target_rate: Some(target), pacing_rate: Some(pacing), cwnd, ..Update::default() }
    }
}

impl Controller for Copa {
    fn on_start(&mut self, _now: Time, c: Constraints) -> Update {
        self.lo = c.min_rate;
        self.hi = c.max_rate.max(c.min_rate);
        self.start_rate = c.start_rate.max(c.min_rate).min(self.hi);
        self.cwnd = (self.start_rate.bps_f64() / 8.0 * self.srtt_secs()).max(self.min_cwnd());
        let target = self.start_rate;
        let mut u = Update::rates(target, self.cfg.pacing_gain.max(1.0));
        if self.cfg.apply_cwnd { u.cwnd = Some(Bytes::new(self.cwnd.round() as i64 * 2)); }
        u
    }

    fn on_constraints(&mut self, _now: Time, c: Constraints) -> Update {
        self.lo = c.min_rate;
        self.hi = c.max_rate.max(c.min_rate);
        self.outputs()
    }

    fn on_feedback(&mut self, fb: &TransportFeedback) -> Update {
        let now = fb.feedback_time;
        if fb.lost().next().is_some() {
            self.loss_since_check = true;
            // competitive mode: halve 1/δ on loss, at most once per RTT
            let rtt = Duration::from_secs_f64(self.srtt_secs());
            if self.competitive && self.last_loss_cut.is_none_or(|t| now - t >= rtt) {
                self.inv_delta = (self.inv_delta / 2.0).max(self.default_inv_delta());
                self.last_loss_cut = Some(now);
            }
        }
        let Some(max_recv) = max_recv_time(fb) else { return Update::default() };
        let (mut acked, mut last_t) = (0.0, now);
        for p in fb.received_by_arrival() {
            let Some(rtt) = packet_rtt(fb, &p, max_recv) else { continue };
            let naive = (now - p.sent.send_time).as_secs_f64();
            let r = rtt.as_secs_f64();
            self.hold = 0.875 * self.hold + 0.125 * (naive - r).max(0.0);
            self.srtt = Some(match self.srtt { None => r, Some(s) => 0.875 * s + 0.125 * r });
            let srtt = Duration::from_secs_f64(self.srtt_secs());
            let t = (p.sent.send_time + rtt).min(now);
            self.rtt_min.update(t, rtt);
            self.rtt_standing.set_window(srtt * self.cfg.standing_window_srtt.max(0.01));
            self.rtt_standing.update(t, rtt);
            self.rtt_max.set_window(srtt * self.cfg.rtt_max_window_rtts.max(1.0));
            self.rtt_max.update(t, rtt);
            if self.cfg.per_packet_acks { self.on_ack(t, p.sent.size.as_f64()); } else { acked += p.sent.size.as_f64(); last_t = t; }
        }
        if acked > 0.0 { self.on_ack(last_t, acked); }
        self.update_mode(now);
        self.per_rtt(now);
        self.outputs()
    }

    fn diagnostics(&self, out: &mut Diagnostics) {
        out.push(("copa_cwnd_bytes", self.cwnd));
        out.push(("copa_velocity", self.velocity));
        out.push(("copa_delta", self.delta()));
        out.push(("copa_dq_ms", self.queuing_delay().map_or(f64::NAN, |d| d * 1e3)));
        out.push(("copa_competitive", self.competitive as u8 as f64));
        out.push(("copa_slow_start", self.in_slow_start as u8 as f64));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::{PacketResult, SentPacket};

    /// Feedback at `fb_ms` whose packets (sent at `send_ms`) each had an exact RTT `rtt_ms`.
    struct Feeder { seq: u64 }
    impl Feeder {
        fn fb(&mut self, fb_ms: f64, pkts: &[(f64, f64)]) -> TransportFeedback {
            let report = Time::from_secs_f64(fb_ms / 1e3);
            let mut packets = Vec::new();
            for &(send, rtt) in pkts {
                let sent = SentPacket { seq: self.seq, size: Bytes::new(1240), send_time: Time::from_secs_f64(send / 1e3), probe_cluster: None, is_padding: false, data_in_flight: Bytes::ZERO };
                self.seq += 1;
                // forward half of the RTT; the receiver then holds until the report
                let recv = Time::from_secs_f64((send + rtt / 2.0) / 1e3);
                packets.push(PacketResult { sent, recv_time: Some(recv) });
            }
            // report time chosen so that exact RTT = rtt: fb − send − (report − recv) = rtt
            // with report = fb − rtt/2 (the return half)
            let rtt = pkts.first().map_or(0.0, |p| p.1);
            TransportFeedback { feedback_time: report, report_time: Some(report - Duration::from_ms_f64(rtt / 2.0)), packets, ..Default::default() }
        }
    }

    fn constraints() -> Constraints {
        Constraints { min_rate: Bitrate::from_kbps(50), max_rate: Bitrate::from_kbps(50_000), start_rate: Bitrate::from_kbps(1000) }
    }

    #[test]
    fn target_rate_hand_computed() {
        // MSS 1200 B, δ = 0.5, d_q = 20 ms: λ_t = 1200/(0.5·0.02) = 120 000 B/s = 960 kbit/s
        assert!((target_rate(1200.0, 0.5, 0.020) - 120_000.0).abs() < 1e-9);
        // δ = 0.05 (mvfst) is 10× more aggressive
        assert!((target_rate(1200.0, 0.05, 0.020) - 1_200_000.0).abs() < 1e-6);
        assert!(target_rate(1200.0, 0.5, 0.0).is_infinite());
    }

    #[test]
    fn per_ack_decision_compares_cwnd_rate_with_target() {
        let mut c = Copa::new(CopaConfig { slow_start: false, ..CopaConfig::default() });
        c.on_start(Time::ZERO, constraints());
        // RTT_min 100 ms, RTT_standing 120 ms → d_q = 20 ms, λ_t = 1240/(0.5·0.02) = 124 000 B/s;
        // cwnd 20 000 B → λ = 20 000/0.12 = 166 667 B/s > λ_t → decrease by 1240·1240/(0.5·20 000)
        c.rtt_min.update(Time::from_ms(1000), Duration::from_ms(100));
        c.rtt_standing.update(Time::from_ms(1000), Duration::from_ms(120));
        c.cwnd = 20_000.0;
        c.on_ack(Time::from_ms(1000), 1240.0);
        assert!((c.cwnd() - (20_000.0 - 153.76)).abs() < 1e-9, "{}", c.cwnd());
        // cwnd 10 000 B → λ = 83 333 B/s < λ_t → increase by 1240²/(0.5·10 000) = 307.52
        c.cwnd = 10_000.0;
        c.on_ack(Time::from_ms(1000), 1240.0);
        assert!((c.cwnd() - 10_307.52).abs() < 1e-9, "{}", c.cwnd());
        // target (encoder) rate = cwnd / RTT_standing = 10 307.52 B / 0.12 s = 687.168 kbit/s
        assert_eq!(c.outputs().target_rate, Some(Bitrate::from_bps(687_168)));
        assert_eq!(c.outputs().pacing_rate, Some(Bitrate::from_bps(1_374_336)));
    }

    #[test]
    fn velocity_doubles_after_three_rtts_in_the_same_direction() {
        let mut c = Copa::new(CopaConfig { slow_start: false, competitive_mode: false, ..CopaConfig::default() });
        c.on_start(Time::ZERO, constraints());
        let mut f = Feeder { seq: 0 };
        // constant RTT 95 ms: d_q = 0 → every ACK increases; one RTT check every 100 ms
        let mut t = 1000.0;
        let mut seen = Vec::new();
        for _ in 0..14 {
            let pk: Vec<_> = (0..4).map(|i| (t - 135.0 + i as f64 * 10.0, 95.0)).collect();
            c.on_feedback(&f.fb(t, &pk));
            seen.push((c.velocity(), c.direction()));
            t += 50.0;
        }
        // checks at 1100, 1200, …: the first sets the direction (Up), three more in the same
        // direction double v (1200 → n=1, 1300 → 2, 1400 → 3: v = 2), then every RTT (1500: v = 4)
        let v_at = |ms: f64| seen[((ms - 1000.0) / 50.0) as usize].0;
        assert_eq!(v_at(1100.0), 1.0);
        assert_eq!(seen[2].1, Some(Direction::Up));
        assert_eq!(v_at(1350.0), 1.0);
        assert_eq!(v_at(1400.0), 2.0);
        assert_eq!(v_at(1500.0), 4.0);
        assert_eq!(v_at(1600.0), 8.0);
        // the per-ACK increase scales with v: same ACK, twice the step at twice the velocity
        let w0 = c.cwnd();
        let v = c.velocity();
        c.on_ack(Time::from_secs_f64(t / 1e3), 1240.0);
        let expect = v * 1240.0 * 1240.0 / (0.5 * w0);
        assert!((c.cwnd() - w0 - expect).abs() < 1e-6);
        // a decrease decision against the large upward velocity resets v to 1
        c.rtt_standing.update(Time::from_secs_f64(t / 1e3 + 0.001), Duration::from_ms(300));
        c.rtt_standing.set_window(Duration::from_ms(1));
        c.rtt_standing.update(Time::from_secs_f64(t / 1e3 + 0.01), Duration::from_ms(300));
        c.on_ack(Time::from_secs_f64(t / 1e3 + 0.01), 1240.0);
        assert_eq!(c.velocity(), 1.0);
        assert_eq!(c.direction(), Some(Direction::Down));
    }

    #[test]
    fn slow_start_doubles_until_first_decrease() {
        let mut c = Copa::new(CopaConfig::default());
        c.on_start(Time::ZERO, constraints());
        let w0 = c.cwnd();
        let mut f = Feeder { seq: 0 };
        // empty queue, RTT 100 ms, feedback every 50 ms: the window doubles once per srtt
        let mut t = 1000.0;
        let mut w = Vec::new();
        for _ in 0..7 {
            let pk: Vec<_> = (0..5).map(|i| (t - 150.0 + i as f64 * 10.0, 100.0)).collect();
            c.on_feedback(&f.fb(t, &pk));
            w.push(c.cwnd() / w0);
            t += 50.0;
        }
        assert!(c.in_slow_start());
        // the newest ACK of each feedback is at t − 10 ms: the clock starts at 990; doublings
        // when more than one srtt (100 ms) has passed: at 1140 and 1290
        assert_eq!(w, vec![1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 4.0]);
        // a standing queue: decrease → leaves slow start
        let pk: Vec<_> = (0..5).map(|i| (t + 100.0 + i as f64 * 10.0, 300.0)).collect();
        c.on_feedback(&f.fb(t + 450.0, &pk));
        assert!(!c.in_slow_start());
    }

    #[test]
    fn competitive_mode_when_queue_never_empties() {
        let mut c = Copa::new(CopaConfig { slow_start: false, ..CopaConfig::default() });
        c.on_start(Time::ZERO, constraints());
        let mut f = Feeder { seq: 0 };
        // establish RTT_min = 100 ms with an empty queue
        let pk: Vec<_> = (0..5).map(|i| (800.0 + i as f64 * 10.0, 100.0)).collect();
        c.on_feedback(&f.fb(1000.0, &pk));
        assert!(!c.competitive());
        // then a queue that oscillates between 40 and 60 ms and never comes near empty
        let mut t = 1000.0;
        while t < 3000.0 {
            t += 50.0;
            let q = if (t as i64 / 50) % 2 == 0 { 140.0 } else { 160.0 };
            let pk: Vec<_> = (0..5).map(|i| (t - q - 25.0 + i as f64 * 5.0, q)).collect();
            c.on_feedback(&f.fb(t, &pk));
        }
        assert!(c.competitive(), "5 RTTs without a nearly empty queue");
        // no loss: 1/δ grows by 1 per RTT → δ well below the default 0.5
        assert!(c.delta() < 0.2, "δ = {}", c.delta());
        // a loss halves 1/δ
        let inv = 1.0 / c.delta();
        let mut fb = f.fb(t + 50.0, &[(t - 120.0, 150.0)]);
        fb.packets.push(PacketResult { sent: SentPacket { seq: 999_999, size: Bytes::new(1240), send_time: Time::from_secs_f64((t - 90.0) / 1e3), probe_cluster: None, is_padding: false, data_in_flight: Bytes::ZERO }, recv_time: None });
        c.on_feedback(&fb);
        assert!((1.0 / c.delta() - (inv / 2.0).max(2.0)).abs() < 1.0 + 1e-9, "{} vs {}", 1.0 / c.delta(), inv);
        // the queue empties again → default mode, δ = 0.5
        t += 100.0;
        for _ in 0..4 {
            t += 50.0;
            let pk: Vec<_> = (0..5).map(|i| (t - 125.0 + i as f64 * 5.0, 100.0)).collect();
            c.on_feedback(&f.fb(t, &pk));
        }
        assert!(!c.competitive());
        assert_eq!(c.delta(), 0.5);
    }
}
