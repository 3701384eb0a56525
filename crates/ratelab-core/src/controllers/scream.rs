//! `scream` — SCReAM (RFC 8298; spec section 13): LEDBAT-like self-clocked congestion window plus
//! a media-rate controller, for completeness (no reference paper runs it).
//!
//! Network congestion control, per feedback (RFC 8298 §4.1.2): `qdelay` = OWD of the newest
//! reported packet − base delay (minimum OWD over 10 minutes); `bytes_newly_acked` = bytes of the
//! packets up to the highest reported sequence number, lost ones included. `update_cwnd` (fast
//! increase while `qdelay_trend < QDELAY_TREND_TH`, else `cwnd += GAIN·off_target·acked·MSS/cwnd`
//! with `off_target = (qdelay_target − qdelay)/qdelay_target`, no increase when the window is
//! under-used, capped at `1.1 × max bytes in flight over 5 s`), a loss event (at most one per
//! s_rtt) scales cwnd by BETA_LOSS, the competing-flows compensation moves `qdelay_target` in
//! [QDELAY_TARGET_LO, QDELAY_TARGET_HI]. The send window (`cwnd + MSS` while `qdelay ≤ target`,
//! else `cwnd`) goes to the pacer as [`Update::cwnd`]; pacing rate `max(RATE_PACE_MIN,
//! cwnd·8/s_rtt)`.
//!
//! Media rate control every RATE_ADJUST_INTERVAL (RFC 8298 §4.1.3): fast increase by
//! RAMP_UP_SPEED, otherwise by the transmitted rate minus the RTP queue; ×0.95 when the RTP queue
//! holds more than 20 ms; loss ×BETA_R; capped by `max(current, media, median media rate) ×
//! (2 − qdelay_trend_mem)`. The RTP queue is the pacer queue the simulator reports through
//! [`Controller::on_sender_queue`]; the encoder's output rate is derived from it and the media
//! bytes sent.

use super::common::WindowedFilter;
use crate::controller::{Constraints, Controller, Diagnostics, SentPacket, TransportFeedback, Update};
use crate::units::{Bitrate, Bytes, Duration, Time};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ScreamConfig {
    /// QDELAY_TARGET_LO, seconds (RFC 8298: 0.1).
    pub qdelay_target_lo_s: f64,
    /// QDELAY_TARGET_HI, seconds (RFC 8298: 0.4).
    pub qdelay_target_hi_s: f64,
    /// QDELAY_WEIGHT, EWMA weight of the queuing-delay fraction (RFC 8298: 0.1).
    pub qdelay_weight: f64,
    /// QDELAY_TREND_TH, trend that ends fast increase (RFC 8298: 0.2).
    pub qdelay_trend_th: f64,
    /// QDELAY_TREND_LO, trend below which fast increase may resume (RFC 8298: 0.2).
    pub qdelay_trend_lo: f64,
    /// T_RESUME_FAST_INCREASE, seconds (RFC 8298: 5).
    pub t_resume_fast_increase_s: f64,
    /// MIN_CWND, bytes (RFC 8298: 3000).
    pub min_cwnd_bytes: f64,
    /// MAX_BYTES_IN_FLIGHT_HEAD_ROOM (RFC 8298: 1.1).
    pub max_bytes_in_flight_head_room: f64,
    /// Window of the maximum bytes in flight, ms (RFC 8298 text: 5 s).
    pub max_bytes_in_flight_window_ms: f64,
    /// GAIN of the cwnd update (RFC 8298: 1.0).
    pub gain: f64,
    /// BETA_LOSS, cwnd factor on a loss event (RFC 8298: 0.8).
    pub beta_loss: f64,
    /// BETA_R, target-rate factor on a loss event (RFC 8298: 0.9).
    pub beta_r: f64,
    /// MSS = the largest RTP packet (RFC 8298: 1000 B; the lab's packets are up to 1240 B).
    pub mss_bytes: f64,
    /// RATE_ADJUST_INTERVAL, ms (RFC 8298: 200).
    pub rate_adjust_interval_ms: f64,
    /// RAMP_UP_SPEED, kbit/s per second (RFC 8298: 200).
    pub ramp_up_speed_kbps: f64,
    /// PRE_CONGESTION_GUARD (RFC 8298: range 0…0.2; 0.1 as in implementations, ⚠ unverified).
    pub pre_congestion_guard: f64,
    /// TX_QUEUE_SIZE_FACTOR (RFC 8298: 1.0).
    pub tx_queue_size_factor: f64,
    /// RTP_QDELAY_TH, seconds (RFC 8298: 0.02).
    pub rtp_qdelay_th_s: f64,
    /// TARGET_RATE_SCALE_RTP_QDELAY (RFC 8298: 0.95).
    pub target_rate_scale_rtp_qdelay: f64,
    /// RATE_PACE_MIN, kbit/s (RFC 8298: 50).
    pub rate_pace_min_kbps: f64,
    /// Pacing rate = this × max(RATE_PACE_MIN, cwnd·8/s_rtt) (RFC 8298: 1; Ericsson code 1.5).
    pub pacing_headroom: f64,
    /// Competing-flows compensation of qdelay_target (RFC 8298 §4.1.2.3; MAY be turned off).
    pub competing_flows_compensation: bool,
    /// Base delay window, seconds (RFC 8298/6817: minimum of the last 10 one-minute minima).
    pub base_delay_window_s: f64,
    /// Period of the queuing-delay trend update, ms (⚙ 50, as implementations).
    pub trend_update_ms: f64,
    /// Hand the send window to the pacer (the self-clocking); off leaves only the rate control.
    pub apply_cwnd: bool,
}

impl Default for ScreamConfig {
    fn default() -> Self {
        ScreamConfig {
            qdelay_target_lo_s: 0.1, qdelay_target_hi_s: 0.4, qdelay_weight: 0.1, qdelay_trend_th: 0.2, qdelay_trend_lo: 0.2,
            t_resume_fast_increase_s: 5.0, min_cwnd_bytes: 3000.0, max_bytes_in_flight_head_room: 1.1,
            max_bytes_in_flight_window_ms: 5000.0, gain: 1.0, beta_loss: 0.8, beta_r: 0.9, mss_bytes: 1240.0,
            rate_adjust_interval_ms: 200.0, ramp_up_speed_kbps: 200.0, pre_congestion_guard: 0.1, tx_queue_size_factor: 1.0,
            rtp_qdelay_th_s: 0.02, target_rate_scale_rtp_qdelay: 0.95, rate_pace_min_kbps: 50.0, pacing_headroom: 1.0,
            competing_flows_compensation: true, base_delay_window_s: 600.0, trend_update_ms: 50.0, apply_cwnd: true,
        }
    }
}

/// Inputs of RFC 8298 `update_cwnd` (bytes and seconds).
#[derive(Clone, Copy, Debug)]
pub struct CwndInputs {
    pub cwnd: f64,
    pub in_fast_increase: bool,
    pub qdelay: f64,
    pub qdelay_target: f64,
    pub bytes_newly_acked: f64,
    pub bytes_in_flight: f64,
    pub max_bytes_in_flight: f64,
}

/// RFC 8298 `update_cwnd` (no loss): returns the new window.
pub fn update_cwnd(i: CwndInputs, cfg: &ScreamConfig) -> f64 {
    let mut w = i.cwnd;
    if i.in_fast_increase {
        // grow like slow start while the window is used (slack of the newly acked bytes)
        if i.bytes_in_flight * 1.5 + i.bytes_newly_acked > w { w += i.bytes_newly_acked; }
        return w.max(cfg.min_cwnd_bytes);
    }
    let off_target = (i.qdelay_target - i.qdelay) / i.qdelay_target.max(1e-6);
    let mut delta = cfg.gain * off_target * i.bytes_newly_acked * cfg.mss_bytes / w.max(1.0);
    if off_target > 0.0 && i.bytes_in_flight * 1.25 + i.bytes_newly_acked <= w { delta = 0.0; }
    w += delta;
    w = w.min(i.max_bytes_in_flight * cfg.max_bytes_in_flight_head_room);
    w.max(cfg.min_cwnd_bytes)
}

/// RFC 8298 qdelay trend from the last 20 queuing-delay fractions: lag-1 autocorrelation
/// × EWMA of the fraction, clipped to [0, 1].
pub fn qdelay_trend(hist: &VecDeque<f64>, fraction_avg: f64) -> f64 {
    if hist.len() < 2 { return 0.0; }
    let avg = hist.iter().sum::<f64>() / hist.len() as f64;
    let r0: f64 = hist.iter().map(|v| (v - avg) * (v - avg)).sum();
    let r1: f64 = hist.iter().zip(hist.iter().skip(1)).map(|(a, b)| (a - avg) * (b - avg)).sum();
    // a (numerically) constant history has no trend
    if r0 <= 1e-12 * (1.0 + avg * avg) * hist.len() as f64 { return 0.0; }
    (r1 / r0 * fraction_avg).clamp(0.0, 1.0)
}

pub struct Scream {
    cfg: ScreamConfig,
    lo: f64,
    hi: f64,
    cwnd: f64,
    in_fast_increase: bool,
    qdelay: f64,
    qdelay_target: f64,
    base: WindowedFilter<Duration>,
    fraction_avg: f64,
    fraction_hist: VecDeque<f64>,
    trend: f64,
    trend_mem: f64,
    last_trend_update: Option<Time>,
    last_trend_above_lo: Time,
    norm_hist: VecDeque<f64>,
    s_rtt: Option<f64>,
    highest_seq: Option<u64>,
    bytes_in_flight: f64,
    max_bif: WindowedFilter<i64>,
    last_loss_event: Option<Time>,
    loss_in_period: bool,
    loss_period_start: Time,
    loss_event_rate: f64,
    target: f64,
    target_last_max: f64,
    // rate measurement over one RATE_ADJUST_INTERVAL
    sent_bytes: f64,
    media_bytes: f64,
    acked_bytes: f64,
    rtp_queue: f64,
    rtp_queue_at_adjust: f64,
    last_adjust: Option<Time>,
    rate_transmit: f64,
    rate_ack: f64,
    rate_media: f64,
    media_hist: VecDeque<f64>,
    loss_events: u64,
}

impl Scream {
    pub fn new(cfg: ScreamConfig) -> Self {
        Scream {
            lo: 0.0, hi: f64::INFINITY, cwnd: cfg.min_cwnd_bytes, in_fast_increase: true, qdelay: 0.0,
            qdelay_target: cfg.qdelay_target_lo_s,
            base: WindowedFilter::min(Duration::from_secs_f64(cfg.base_delay_window_s.max(1.0))),
            fraction_avg: 0.0, fraction_hist: VecDeque::new(), trend: 0.0, trend_mem: 0.0, last_trend_update: None,
            last_trend_above_lo: Time::ZERO, norm_hist: VecDeque::new(), s_rtt: None, highest_seq: None,
            bytes_in_flight: 0.0, max_bif: WindowedFilter::max(Duration::from_ms_f64(cfg.max_bytes_in_flight_window_ms.max(1.0))),
            last_loss_event: None, loss_in_period: false, loss_period_start: Time::ZERO, loss_event_rate: 0.0,
            target: 300e3, target_last_max: 1.0, sent_bytes: 0.0, media_bytes: 0.0, acked_bytes: 0.0, rtp_queue: 0.0,
            rtp_queue_at_adjust: 0.0, last_adjust: None, rate_transmit: 0.0, rate_ack: 0.0, rate_media: 0.0,
            media_hist: VecDeque::new(), loss_events: 0, cfg,
        }
    }

    pub fn cwnd(&self) -> f64 { self.cwnd }
    pub fn target(&self) -> Bitrate { Bitrate::from_bps_f64(self.target) }
    pub fn in_fast_increase(&self) -> bool { self.in_fast_increase }
    pub fn qdelay_target(&self) -> f64 { self.qdelay_target }
    pub fn loss_events(&self) -> u64 { self.loss_events }

    fn s_rtt_secs(&self) -> f64 { self.s_rtt.unwrap_or(0.1).max(1e-3) }

    fn clamp_target(&self, t: f64) -> f64 { if t.is_finite() { t.clamp(self.lo, self.hi.max(self.lo)) } else { self.lo } }

    fn update_trend(&mut self, now: Time) {
        let due = self.last_trend_update.is_none_or(|t| now - t >= Duration::from_ms_f64(self.cfg.trend_update_ms.max(0.0)));
        if !due { return; }
        self.last_trend_update = Some(now);
        let frac = self.qdelay / self.qdelay_target.max(1e-6);
        self.fraction_avg = (1.0 - self.cfg.qdelay_weight) * self.fraction_avg + self.cfg.qdelay_weight * frac;
        self.fraction_hist.push_back(frac);
        while self.fraction_hist.len() > 20 { self.fraction_hist.pop_front(); }
        self.trend = qdelay_trend(&self.fraction_hist, self.fraction_avg);
        self.trend_mem = (0.99 * self.trend_mem).max(self.trend);
        if self.trend > self.cfg.qdelay_trend_lo { self.last_trend_above_lo = now; }
    }

    /// RFC 8298 `adjust_qdelay_target` (competing-flows compensation).
    fn adjust_qdelay_target(&mut self) {
        let lo = self.cfg.qdelay_target_lo_s.max(1e-6);
        self.norm_hist.push_back(self.qdelay / lo);
        while self.norm_hist.len() > 200 { self.norm_hist.pop_front(); }
        let n = self.norm_hist.len() as f64;
        let mean_all = self.norm_hist.iter().sum::<f64>() / n;
        let var = self.norm_hist.iter().map(|v| (v - mean_all) * (v - mean_all)).sum::<f64>() / n;
        let recent = self.norm_hist.len().min(50);
        let avg = self.norm_hist.iter().rev().take(recent).sum::<f64>() / recent as f64;
        let new_target = (avg + var.sqrt()) * lo;
        if self.loss_event_rate > 0.002 {
            self.qdelay_target = 1.5 * new_target;
        } else if var < 0.2 {
            self.qdelay_target = new_target;
        } else if new_target < lo {
            self.qdelay_target = (self.qdelay_target * 0.5).max(new_target);
        } else {
            self.qdelay_target *= 0.9;
        }
        self.qdelay_target = self.qdelay_target.clamp(lo, self.cfg.qdelay_target_hi_s.max(lo));
    }

    fn on_loss_event(&mut self, now: Time) {
        self.loss_events += 1;
        self.last_loss_event = Some(now);
        self.in_fast_increase = false;
        self.last_trend_above_lo = now;
        self.cwnd = (self.cwnd * self.cfg.beta_loss).max(self.cfg.min_cwnd_bytes);
        // prompt media-rate reaction (RFC 8298 §4.1.3 "on loss")
        self.target_last_max = self.target;
        self.target = self.clamp_target(self.cfg.beta_r * self.target);
    }

    /// RFC 8298 §4.1.3 media rate control, once per RATE_ADJUST_INTERVAL.
    fn adjust_rate(&mut self, now: Time) {
        let interval = Duration::from_ms_f64(self.cfg.rate_adjust_interval_ms.max(1.0));
        let Some(last) = self.last_adjust else {
            self.last_adjust = Some(now);
            self.rtp_queue_at_adjust = self.rtp_queue;
            return;
        };
        let dt = (now - last).as_secs_f64();
        if now - last < interval || dt <= 0.0 { return; }
        self.rate_transmit = self.sent_bytes * 8.0 / dt;
        self.rate_ack = self.acked_bytes * 8.0 / dt;
        self.rate_media = ((self.media_bytes + self.rtp_queue - self.rtp_queue_at_adjust) * 8.0 / dt).max(0.0);
        self.sent_bytes = 0.0;
        self.media_bytes = 0.0;
        self.acked_bytes = 0.0;
        self.rtp_queue_at_adjust = self.rtp_queue;
        self.last_adjust = Some(now);
        self.media_hist.push_back(self.rate_media);
        let keep = (10.0 / dt).ceil().max(1.0) as usize;
        while self.media_hist.len() > keep { self.media_hist.pop_front(); }
        let mut sorted: Vec<f64> = self.media_hist.iter().copied().collect();
        sorted.sort_by(|a, b| a.total_cmp(b));
        let median = sorted[sorted.len() / 2];
        self.target = self.rate_control_step(dt.min(interval.as_secs_f64() * 2.0), median);
    }

    /// One media-rate step with the measured rates in place; returns the new target.
    fn rate_control_step(&self, interval_s: f64, rate_media_median: f64) -> f64 {
        let mut target = self.target;
        let ramp = (self.cfg.ramp_up_speed_kbps * 1e3).min(target / 2.0);
        let scale = (target - self.target_last_max) / self.target_last_max.max(1.0);
        let scale = (scale * 4.0).powi(2).clamp(0.2, 1.0);
        let current = self.rate_transmit.max(self.rate_ack);
        let rtp_queue_bits = self.rtp_queue * 8.0;
        if self.in_fast_increase {
            target += ramp * interval_s * scale;
        } else {
            let mut delta = current * (1.0 - self.cfg.pre_congestion_guard * self.trend) - self.cfg.tx_queue_size_factor * rtp_queue_bits;
            if delta > 0.0 { delta = (delta * scale).min(ramp * interval_s); }
            target += delta;
            if current > 0.0 && rtp_queue_bits / current > self.cfg.rtp_qdelay_th_s { target *= self.cfg.target_rate_scale_rtp_qdelay; }
        }
        let media_limit = current.max(self.rate_media).max(rate_media_median) * (2.0 - self.trend_mem);
        if media_limit > 0.0 { target = target.min(media_limit); }
        self.clamp_target(target)
    }

    fn send_window(&self) -> f64 {
        if self.qdelay <= self.qdelay_target { self.cwnd + self.cfg.mss_bytes } else { self.cwnd }
    }

    fn outputs(&self) -> Update {
        let pace = (self.cwnd * 8.0 / self.s_rtt_secs()).max(self.cfg.rate_pace_min_kbps * 1e3) * self.cfg.pacing_headroom.max(0.1);
        let target = Bitrate::from_bps_f64(self.target);
        Update {
            target_rate: Some(target),
            pacing_rate: Some(Bitrate::from_bps_f64(pace).max(Bitrate::from_kbps(10))),
            cwnd: self.cfg.apply_cwnd.then(|| Bytes::new(self.send_window().round() as i64)),
            ..Update::default()
        }
    }
}

impl Controller for Scream {
    fn on_start(&mut self, now: Time, c: Constraints) -> Update {
        self.lo = c.min_rate.bps_f64();
        self.hi = c.max_rate.bps_f64().max(self.lo);
        self.target = self.clamp_target(c.start_rate.bps_f64());
        self.last_trend_above_lo = now;
        self.loss_period_start = now;
        self.outputs()
    }

    fn on_constraints(&mut self, _now: Time, c: Constraints) -> Update {
        self.lo = c.min_rate.bps_f64();
        self.hi = c.max_rate.bps_f64().max(self.lo);
        self.target = self.clamp_target(self.target);
        self.outputs()
    }

    fn on_sender_queue(&mut self, _now: Time, queue: Bytes) -> Update {
        self.rtp_queue = queue.as_f64();
        Update::default()
    }

    fn on_packet_sent(&mut self, sp: &SentPacket) -> Update {
        self.sent_bytes += sp.size.as_f64();
        if !sp.is_padding { self.media_bytes += sp.size.as_f64(); }
        self.bytes_in_flight = sp.data_in_flight.as_f64();
        self.max_bif.update(sp.send_time, sp.data_in_flight.get());
        Update::default()
    }

    fn on_feedback(&mut self, fb: &TransportFeedback) -> Update {
        let now = fb.feedback_time;
        // newest reported packet and bytes_newly_acked (lost packets below it included)
        let newest = fb.received().max_by_key(|p| p.sent.seq).copied();
        let mut newly = 0.0;
        if let Some(n) = newest {
            let prev = self.highest_seq;
            for p in &fb.packets {
                if p.sent.seq <= n.sent.seq && prev.is_none_or(|h| p.sent.seq > h) { newly += p.sent.size.as_f64(); }
            }
            if prev.is_none_or(|h| n.sent.seq > h) { self.highest_seq = Some(n.sent.seq); }
        }
        for p in fb.received() {
            if let Some(r) = p.recv_time {
                self.base.update(now, r - p.sent.send_time);
                self.acked_bytes += p.sent.size.as_f64();
            }
        }
        if let (Some(n), Some(base)) = (newest, self.base.get()) {
            let r = n.recv_time.unwrap_or(now);
            self.qdelay = (r - n.sent.send_time - base).as_secs_f64().max(0.0);
            let hold = fb.report_time.map_or(Duration::ZERO, |rt| rt - r);
            let rtt = ((now - n.sent.send_time) - hold).as_secs_f64().max(1e-4);
            self.s_rtt = Some(match self.s_rtt { None => rtt, Some(s) => 0.875 * s + 0.125 * rtt });
        }
        self.bytes_in_flight = fb.data_in_flight.as_f64();
        self.max_bif.update(now, fb.data_in_flight.get());
        // loss-event rate: share of s_rtt periods with a loss
        let lost = fb.lost().next().is_some();
        if lost { self.loss_in_period = true; }
        if (now - self.loss_period_start).as_secs_f64() >= self.s_rtt_secs() {
            self.loss_event_rate = 0.9 * self.loss_event_rate + 0.1 * (self.loss_in_period as u8 as f64);
            self.loss_in_period = false;
            self.loss_period_start = now;
        }
        if newest.is_some() { self.update_trend(now); }
        let rtt = Duration::from_secs_f64(self.s_rtt_secs());
        if lost && self.last_loss_event.is_none_or(|t| now - t >= rtt) {
            self.on_loss_event(now);
        } else if newest.is_some() {
            if self.in_fast_increase && self.trend >= self.cfg.qdelay_trend_th {
                self.in_fast_increase = false;
                self.target_last_max = self.target;
            }
            let max_bif = self.max_bif.get().unwrap_or(0) as f64;
            self.cwnd = update_cwnd(CwndInputs {
                cwnd: self.cwnd, in_fast_increase: self.in_fast_increase, qdelay: self.qdelay, qdelay_target: self.qdelay_target,
                bytes_newly_acked: newly, bytes_in_flight: self.bytes_in_flight, max_bytes_in_flight: max_bif.max(self.cfg.min_cwnd_bytes),
            }, &self.cfg);
            if self.cfg.competing_flows_compensation { self.adjust_qdelay_target(); }
            let resume = Duration::from_secs_f64(self.cfg.t_resume_fast_increase_s.max(0.0));
            if !self.in_fast_increase && now - self.last_trend_above_lo >= resume { self.in_fast_increase = true; }
        }
        self.adjust_rate(now);
        self.outputs()
    }

    fn on_tick(&mut self, now: Time) -> Update {
        let before = self.target;
        self.adjust_rate(now);
        if self.target != before { self.outputs() } else { Update::default() }
    }

    fn diagnostics(&self, out: &mut Diagnostics) {
        out.push(("scream_cwnd_bytes", self.cwnd));
        out.push(("scream_qdelay_ms", self.qdelay * 1e3));
        out.push(("scream_qdelay_target_ms", self.qdelay_target * 1e3));
        out.push(("scream_trend", self.trend));
        out.push(("scream_fast_increase", self.in_fast_increase as u8 as f64));
        out.push(("scream_rtp_queue_bytes", self.rtp_queue));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::PacketResult;

    fn cfg() -> ScreamConfig { ScreamConfig::default() }

    fn inp(cwnd: f64, in_fast_increase: bool, qdelay: f64, qdelay_target: f64, bytes_newly_acked: f64, bytes_in_flight: f64, max_bytes_in_flight: f64) -> CwndInputs {
        CwndInputs { cwnd, in_fast_increase, qdelay, qdelay_target, bytes_newly_acked, bytes_in_flight, max_bytes_in_flight }
    }

    #[test]
    fn cwnd_update_hand_computed() {
        let c = cfg();
        // off_target = (0.1 − 0.05)/0.1 = 0.5; Δ = 1·0.5·5000·1240/20 000 = 155 B; the window is used
        // (15 000·1.25 + 5000 = 23 750 > 20 000)
        assert!((update_cwnd(inp(20_000.0, false, 0.05, 0.1, 5000.0, 15_000.0, 30_000.0), &c) - 20_155.0).abs() < 1e-9);
        // under-used window (10 000·1.25 + 5000 ≤ 20 000): no increase
        assert_eq!(update_cwnd(inp(20_000.0, false, 0.05, 0.1, 5000.0, 10_000.0, 30_000.0), &c), 20_000.0);
        // above target: off_target = −0.5 → −155 B, applied even when under-used
        assert!((update_cwnd(inp(20_000.0, false, 0.15, 0.1, 5000.0, 10_000.0, 30_000.0), &c) - 19_845.0).abs() < 1e-9);
        // capped at 1.1 × max bytes in flight
        assert!((update_cwnd(inp(20_000.0, false, 0.05, 0.1, 5000.0, 15_000.0, 18_000.0), &c) - 19_800.0).abs() < 1e-9);
        // fast increase: + newly acked while bif·1.5 + acked > cwnd
        assert_eq!(update_cwnd(inp(20_000.0, true, 0.0, 0.1, 5000.0, 12_000.0, 0.0), &c), 25_000.0);
        assert_eq!(update_cwnd(inp(20_000.0, true, 0.0, 0.1, 5000.0, 10_000.0, 0.0), &c), 20_000.0);
        // never below MIN_CWND
        assert_eq!(update_cwnd(inp(3000.0, false, 0.4, 0.1, 5000.0, 3000.0, 3000.0), &c), 3000.0);
    }

    #[test]
    fn qdelay_trend_hand_computed() {
        // a steadily rising fraction 0.05, 0.10, …, 1.00: mean 0.525, r0 = Σ(v−m)² = 1.6625,
        // r1 = Σ(v_i−m)(v_{i+1}−m) = 1.413125 → a = 0.85; with fraction_avg 0.5 the trend is 0.425
        let h: VecDeque<f64> = (1..=20).map(|i| i as f64 * 0.05).collect();
        assert!((qdelay_trend(&h, 0.5) - 0.425).abs() < 1e-12, "{}", qdelay_trend(&h, 0.5));
        // flat history: no trend
        let flat: VecDeque<f64> = std::iter::repeat_n(0.3, 20).collect();
        assert_eq!(qdelay_trend(&flat, 0.3), 0.0);
        // clipped to 1
        assert_eq!(qdelay_trend(&h, 5.0), 1.0);
    }

    #[test]
    fn media_rate_steps_hand_computed() {
        let mut s = Scream::new(cfg());
        s.on_start(Time::ZERO, Constraints { min_rate: Bitrate::from_kbps(100), max_rate: Bitrate::from_kbps(5000), start_rate: Bitrate::from_kbps(1000) });
        s.rate_transmit = 1e6;
        s.rate_ack = 0.9e6;
        // fast increase, no congestion point yet (last max 1 bit/s → scale 1): +200 kbit/s·0.2 s
        assert!((s.rate_control_step(0.2, 1e6) - 1.04e6).abs() < 1e-6);
        // near the last congestion point (target 1 Mbit/s, last max 0.95): scale = max(0.2, (0.0526·4)²) = 0.2
        s.target_last_max = 0.95e6;
        assert!((s.rate_control_step(0.2, 1e6) - 1.008e6).abs() < 1e-6);
        // congestion avoidance: delta = 1e6·(1 − 0.1·trend 0) − 8·RTP queue; RTP queue 1000 B
        // (8 ms at 1 Mbit/s) → delta = 992 000 > 0 → min(992 000·1, 40 000) → 1.04 Mbit/s
        s.in_fast_increase = false;
        s.target_last_max = 1.0;
        s.rtp_queue = 1000.0;
        assert!((s.rate_control_step(0.2, 1e6) - 1.04e6).abs() < 1e-6);
        // RTP queue 5000 B = 40 ms > 20 ms: (1e6 + 40 000)·0.95 = 988 000
        s.rtp_queue = 5000.0;
        assert!((s.rate_control_step(0.2, 1e6) - 988_000.0).abs() < 1e-6);
        // media limit: max(current, media, median)·(2 − trend_mem) with trend_mem 1 → 1 Mbit/s
        s.rtp_queue = 0.0;
        s.trend_mem = 1.0;
        assert!((s.rate_control_step(0.2, 0.5e6) - 1e6).abs() < 1e-6);
    }

    fn fb(now_ms: i64, pkts: &[(u64, i64, Option<i64>)]) -> TransportFeedback {
        let packets = pkts.iter().map(|&(seq, send, owd)| PacketResult {
            sent: SentPacket { seq, size: Bytes::new(1000), send_time: Time::from_ms(send), probe_cluster: None, is_padding: false, data_in_flight: Bytes::ZERO },
            recv_time: owd.map(|o| Time::from_ms(send + o)),
        }).collect();
        TransportFeedback { feedback_time: Time::from_ms(now_ms), report_time: Some(Time::from_ms(now_ms - 30)), packets, data_in_flight: Bytes::new(30_000), ..Default::default() }
    }

    #[test]
    fn loss_event_scales_window_and_rate_once_per_rtt() {
        let mut s = Scream::new(cfg());
        s.on_start(Time::ZERO, Constraints { min_rate: Bitrate::from_kbps(100), max_rate: Bitrate::from_kbps(5000), start_rate: Bitrate::from_kbps(1000) });
        s.on_feedback(&fb(100, &[(0, 10, Some(40)), (1, 20, Some(40))]));
        s.cwnd = 20_000.0;
        let u = s.on_feedback(&fb(150, &[(2, 60, Some(40)), (3, 70, None), (4, 80, Some(40))]));
        assert_eq!(s.cwnd(), 16_000.0);
        assert!(!s.in_fast_increase());
        assert_eq!(u.target_rate, Some(Bitrate::from_kbps(900)));
        // a second loss 20 ms later (< s_rtt = 70 ms) is the same loss event
        s.on_feedback(&fb(170, &[(5, 100, None), (6, 110, Some(40))]));
        assert_eq!((s.loss_events(), s.cwnd() < 16_000.0 * 0.81), (1, false));
    }

    #[test]
    fn send_window_and_newly_acked_bytes() {
        let mut s = Scream::new(ScreamConfig { competing_flows_compensation: false, ..cfg() });
        s.on_start(Time::ZERO, Constraints { min_rate: Bitrate::from_kbps(100), max_rate: Bitrate::from_kbps(5000), start_rate: Bitrate::from_kbps(1000) });
        for i in 0..10 {
            s.on_packet_sent(&SentPacket { seq: i, size: Bytes::new(1000), send_time: Time::from_ms(i as i64), probe_cluster: None, is_padding: false, data_in_flight: Bytes::new(1000 * (i as i64 + 1)) });
        }
        // fast increase: packets 0..=4 reported (a lost one among them would still count): 5000 B
        // newly acked; bytes in flight 30 000·1.5 + 5000 > 3000 → cwnd 3000 + 5000
        let u = s.on_feedback(&fb(100, &[(0, 0, Some(40)), (1, 1, Some(40)), (2, 2, Some(40)), (3, 3, Some(40)), (4, 4, Some(40))]));
        assert_eq!(s.cwnd(), 8000.0);
        // qdelay 0 ≤ target: send window = cwnd + MSS
        assert_eq!(u.cwnd, Some(Bytes::new(8000 + 1240)));
        // s_rtt: exact RTT of the newest = 100 − 4 − (70 − 44) = 70 ms; pacing = 8000·8/0.07 s
        assert_eq!(u.pacing_rate, Some(Bitrate::from_bps(914_286)));
    }
}
