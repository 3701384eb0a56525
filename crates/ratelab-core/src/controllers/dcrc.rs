//! DCRC — delay-constrained rate control by shadow price (paper 003; spec section 9).
//!
//! Rate law (Eq. 3/19, spec 9.1–9.2), every `ΔT`:
//! `x(t) = x(t−1) + (ω − x(t−1)·p(t))·ΔT`, clamped to the flow's limits.
//! The shadow price `p` follows the queuing delay `q`, averaged over the last `ΔT`:
//!
//! * [`DcrcVariant::Literal`] (`dcrc`): Eq. 18 exactly, `p(t) = p(t−1) + K_P·(q(t) − q(t−1))`,
//!   `K_P = p(t−1)²/2` (Eq. 15 with the operating price replaced by the last price, "K_P is
//!   updated dynamically"). The target `q_0` cancels out (spec 9.4): only changes of `q` move `p`.
//! * [`DcrcVariant::Pi`] (`dcrc-pi`): velocity-form PI on `e = q − q_0` (spec 9.4),
//!   `p(t) = max(p_min, p(t−1) + K_P·(e(t) − e(t−1)) + K_I·ΔT·e(t))`, `K_P = p(t−1)²/2`,
//!   `K_I = K_P / T_i` with the integral time `T_i = m·t_s` a multiple `m` of the 5 % settling
//!   time `t_s = 6/p(t−1)` (Eq. 15); spec 9.4 proposes `m = 4`.
//!
//! `q` is the queuing delay of spec 9.4: one-way delay minus the smallest one-way delay seen
//! (`t_r − t_s`, so a clock offset cancels), averaged over the packets reported in the last `ΔT`.
//! With an uncongested return path this equals `RTT − RTT_min`. DCRC ignores loss (spec 9.4).
//! The sender paces at the rate (paper III: rate shaping at `x`).

use crate::controller::{Constraints, Controller, Diagnostics, TransportFeedback, Update};
use crate::units::{Bitrate, Duration, Time};
use serde::{Deserialize, Serialize};

/// Which price update (spec 9.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DcrcVariant {
    /// Eq. 18 as printed: proportional velocity form, the delay target cancels.
    Literal,
    /// Velocity-form PI on the delay error: holds `q` at `q_0` in equilibrium.
    Pi,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DcrcConfig {
    /// Update interval ΔT in seconds (paper IV-A, spec 9.3: 1 s).
    pub interval_s: f64,
    /// Target queuing delay q_0 in ms (paper IV-A, spec 9.3: 200 ms). Unused by `dcrc` (literal).
    pub target_delay_ms: f64,
    /// Start rate x(0) in kbit/s: the minimum codec rate (paper III-B, spec 9.3: 64), raised to
    /// the flow's minimum rate if that is higher.
    pub start_kbps: f64,
    /// Distortion weight ω in kbit/s per second (✗ unresolved, spec 9.3: ω = 0.5·x_fair/ΔT, so
    /// 500 for the paper's 1 Mbit/s single-flow experiments).
    pub omega_kbps_per_s: f64,
    /// Initial shadow price p(0) in 1/s (✗ unresolved, spec 9.3). Unset: 0.5/ΔT, the operating
    /// price that spec 9.3's choice of ω targets (p_0·ΔT ≈ 0.5). Spec 9.3 also proposes
    /// ω/R_max; docs/controllers/dcrc.md compares both.
    pub initial_price: Option<f64>,
    /// Floor of the price in 1/s: K_P = p²/2 would stay 0 forever at p = 0 (spec 9.3). Unset:
    /// ω/R_max, the price whose equilibrium rate ω/p is the flow's maximum rate (any lower price
    /// only winds the price down further while the rate sits at its cap).
    pub min_price: Option<f64>,
    /// Ceiling of the price in 1/s. Unset: 1.5/ΔT, inside the stability bound of Eq. 19 (spec
    /// 9.4: x(t) = x(t−1)·(1 − p·ΔT) + ω·ΔT is stable for p·ΔT < 2, monotone below 1). The
    /// ceiling also sets the lowest equilibrium rate, ω/p_max (docs/controllers/dcrc.md).
    pub max_price: Option<f64>,
    /// `dcrc-pi` only: integral time T_i as a multiple m of the settling time t_s = 6/p, so
    /// K_I = K_P·p/(6m) (✗ unresolved; spec 9.4 proposes 4, we use 0.5, chosen by the
    /// measurements in docs/controllers/dcrc.md; continuous-time stability needs m > 1/6).
    pub integral_time_multiple: f64,
    /// Pacing rate / target rate (paper III: rate shaping sends at the video rate).
    pub pacing_factor: f64,
}

impl Default for DcrcConfig {
    fn default() -> Self {
        DcrcConfig {
            interval_s: 1.0,
            target_delay_ms: 200.0,
            start_kbps: 64.0,
            omega_kbps_per_s: 500.0,
            initial_price: None,
            min_price: None,
            max_price: None,
            integral_time_multiple: 0.5,
            pacing_factor: 1.0,
        }
    }
}

/// The price law's constants: delays in seconds, prices in 1/s.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PriceLaw {
    pub variant: DcrcVariant,
    /// Target queuing delay q_0 (s).
    pub q0: f64,
    /// ΔT (s).
    pub dt: f64,
    /// Integral time / settling time (PI only; 0 disables the integral).
    pub ti_multiple: f64,
    pub p_min: f64,
    pub p_max: f64,
}

impl PriceLaw {
    /// One step of the price update (spec 9.2 step 2 / 9.4) from the queuing delays `q` (this
    /// interval) and `q_prev` (the previous one). Returns the new price, at least `p_min`.
    pub fn step(&self, p_prev: f64, q: f64, q_prev: f64) -> f64 {
        let kp = p_prev * p_prev / 2.0;
        let p = match self.variant {
            DcrcVariant::Literal => p_prev + kp * (q - q_prev),
            DcrcVariant::Pi => {
                let (e, e_prev) = (q - self.q0, q_prev - self.q0);
                // K_I = K_P / T_i, T_i = m · t_s = m · 6/p
                let ki = if self.ti_multiple > 0.0 { kp * p_prev / (6.0 * self.ti_multiple) } else { 0.0 };
                p_prev + kp * (e - e_prev) + ki * self.dt * e
            }
        };
        if p.is_finite() { p.min(self.p_max).max(self.p_min) } else { self.p_min }
    }
}

/// One step of the rate law (Eq. 19): rates in bit/s, ω in bit/s², price in 1/s.
pub fn rate_step(x_prev: f64, omega: f64, p: f64, dt: f64) -> f64 { x_prev + (omega - x_prev * p) * dt }

pub struct Dcrc {
    cfg: DcrcConfig,
    variant: DcrcVariant,
    dt: Duration,
    constraints: Constraints,
    x: f64,
    p: f64,
    /// Queuing delay (s) of the previous interval.
    q_prev: Option<f64>,
    q_last: f64,
    next_update: Time,
    base_owd: Option<Duration>,
    sum_owd_us: i128,
    n_owd: u64,
}

impl Dcrc {
    pub fn new(cfg: DcrcConfig, variant: DcrcVariant) -> Self {
        let dt_s = if cfg.interval_s.is_finite() && cfg.interval_s > 0.0 { cfg.interval_s.clamp(0.01, 60.0) } else { 1.0 };
        Dcrc {
            dt: Duration::from_secs_f64(dt_s), variant, constraints: Constraints::default(), x: 0.0, p: 0.0,
            q_prev: None, q_last: 0.0, next_update: Time::MAX, base_owd: None, sum_owd_us: 0, n_owd: 0, cfg,
        }
    }

    fn dt_s(&self) -> f64 { self.dt.as_secs_f64() }
    fn omega(&self) -> f64 { (self.cfg.omega_kbps_per_s * 1e3).max(0.0) }
    fn min_price(&self) -> f64 {
        let d = self.omega() / self.constraints.max_rate.bps_f64().max(1.0);
        let p = self.cfg.min_price.unwrap_or(d);
        if p.is_finite() && p > 0.0 { p } else { 1e-6 }
    }
    fn max_price(&self) -> f64 {
        let p = self.cfg.max_price.unwrap_or(1.5 / self.dt_s());
        if p.is_finite() { p.max(self.min_price()) } else { self.min_price() }
    }

    fn clamp_rate(&self, x: f64) -> f64 {
        let (lo, hi) = (self.constraints.min_rate.bps_f64(), self.constraints.max_rate.bps_f64().max(self.constraints.min_rate.bps_f64()));
        if x.is_finite() { x.clamp(lo, hi) } else { lo }
    }

    fn output(&self) -> Update {
        let pf = if self.cfg.pacing_factor.is_finite() { self.cfg.pacing_factor.max(1.0) } else { 1.0 };
        Update::rates(Bitrate::from_bps_f64(self.x), pf)
    }

    /// Run every update that is due at `now`.
    fn maybe_update(&mut self, now: Time) -> Update {
        if now < self.next_update { return Update::default(); }
        while self.next_update <= now { self.next_update += self.dt; }
        // q over the interval; without samples keep the last one (no change of q).
        let q = if self.n_owd > 0 { (self.sum_owd_us as f64 / self.n_owd as f64 / 1e6).max(0.0) } else { self.q_last };
        self.sum_owd_us = 0;
        self.n_owd = 0;
        self.q_last = q;
        let q0 = (self.cfg.target_delay_ms / 1e3).max(0.0);
        let dt = self.dt_s();
        let q_prev = self.q_prev.unwrap_or(q);
        let law = PriceLaw { variant: self.variant, q0, dt, ti_multiple: self.cfg.integral_time_multiple, p_min: self.min_price(), p_max: self.max_price() };
        self.p = law.step(self.p, q, q_prev);
        self.q_prev = Some(q);
        self.x = self.clamp_rate(rate_step(self.x, self.omega(), self.p, dt));
        self.output()
    }

    pub fn price(&self) -> f64 { self.p }
    pub fn rate(&self) -> Bitrate { Bitrate::from_bps_f64(self.x) }
}

impl Controller for Dcrc {
    fn on_start(&mut self, now: Time, c: Constraints) -> Update {
        self.constraints = c;
        self.x = self.clamp_rate(self.cfg.start_kbps * 1e3);
        let p0 = match self.cfg.initial_price {
            Some(p) => p,
            None => 0.5 / self.dt_s(),
        };
        self.p = if p0.is_finite() { p0.min(self.max_price()).max(self.min_price()) } else { self.min_price() };
        self.next_update = now + self.dt;
        self.output()
    }

    fn on_feedback(&mut self, fb: &TransportFeedback) -> Update {
        for pkt in fb.received() {
            let Some(r) = pkt.recv_time else { continue };
            let owd = r - pkt.sent.send_time;
            let base = *self.base_owd.get_or_insert(owd);
            if owd < base { self.base_owd = Some(owd); }
            let q = owd - self.base_owd.unwrap_or(owd);
            self.sum_owd_us += q.as_us() as i128;
            self.n_owd += 1;
        }
        self.maybe_update(fb.feedback_time)
    }

    fn on_tick(&mut self, now: Time) -> Update { self.maybe_update(now) }

    fn on_constraints(&mut self, _now: Time, c: Constraints) -> Update {
        self.constraints = c;
        self.x = self.clamp_rate(self.x);
        self.output()
    }

    fn diagnostics(&self, out: &mut Diagnostics) {
        out.push(("price_per_s", self.p));
        out.push(("queue_delay_ms", self.q_last * 1e3));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::{PacketResult, SentPacket};
    use crate::units::Bytes;

    fn close(a: f64, b: f64) -> bool { (a - b).abs() < 1e-12 }
    fn law(variant: DcrcVariant, q0: f64, dt: f64, ti_multiple: f64, p_min: f64) -> PriceLaw { PriceLaw { variant, q0, dt, ti_multiple, p_min, p_max: 1.0 } }

    #[test]
    fn literal_price_step_by_hand() {
        // p = 0.5/s → K_P = 0.125/s²; q rises 100 ms → 300 ms: p = 0.5 + 0.125·0.2 = 0.525
        let p = law(DcrcVariant::Literal, 0.2, 1.0, 4.0, 1e-3).step(0.5, 0.3, 0.1);
        assert!(close(p, 0.525), "{p}");
        // the target does not matter for the literal form
        assert!(close(p, law(DcrcVariant::Literal, 5.0, 1.0, 4.0, 1e-3).step(0.5, 0.3, 0.1)));
        // constant q, any level: the price does not move
        assert!(close(law(DcrcVariant::Literal, 0.2, 1.0, 4.0, 1e-3).step(0.5, 2.0, 2.0), 0.5));
        // a fall of q lowers it, never below the floor
        assert!(close(law(DcrcVariant::Literal, 0.2, 1.0, 4.0, 1e-3).step(0.2, 0.0, 1.0), 0.2 - 0.02));
        assert!(close(law(DcrcVariant::Literal, 0.2, 1.0, 4.0, 0.01).step(0.5, 0.0, 100.0), 0.01));
    }

    #[test]
    fn pi_price_step_by_hand() {
        // p = 0.5, K_P = 0.125, m = 4 → T_i = 4·6/0.5 = 48 s, K_I = 0.125/48 = 0.00260417
        // q: 0.1 → 0.3, q0 = 0.2: e = 0.1, e_prev = −0.1
        // p = 0.5 + 0.125·0.2 + 0.00260417·1·0.1 = 0.525260417
        let p = law(DcrcVariant::Pi, 0.2, 1.0, 4.0, 1e-3).step(0.5, 0.3, 0.1);
        assert!((p - 0.525_260_416_666_7).abs() < 1e-12, "{p}");
        // at q = q0 and unchanged the price holds; a standing error integrates
        assert!(close(law(DcrcVariant::Pi, 0.2, 1.0, 4.0, 1e-3).step(0.5, 0.2, 0.2), 0.5));
        let below = law(DcrcVariant::Pi, 0.2, 1.0, 4.0, 1e-3).step(0.5, 0.0, 0.0);
        assert!(close(below, 0.5 - 0.125 / 48.0 * 0.2), "{below}");
        // m = 0 disables the integral (pure literal dynamics on e)
        assert!(close(law(DcrcVariant::Pi, 0.2, 1.0, 0.0, 1e-3).step(0.5, 0.0, 0.0), 0.5));
    }

    #[test]
    fn rate_step_by_hand() {
        // ω = 500 kbit/s², p = 0.5: from 64 kbit/s, x = 64k + (500k − 32k)·1 = 532 kbit/s
        assert!(close(rate_step(64e3, 500e3, 0.5, 1.0), 532e3));
        // equilibrium x = ω/p
        assert!(close(rate_step(1e6, 500e3, 0.5, 1.0), 1e6));
    }

    fn fb(now_ms: i64, owd_ms: &[i64]) -> TransportFeedback {
        let packets = owd_ms.iter().enumerate().map(|(i, d)| {
            let send = Time::from_ms(now_ms - 100 + i as i64);
            PacketResult { sent: SentPacket { seq: i as u64, size: Bytes::new(1200), send_time: send, probe_cluster: None, is_padding: false, data_in_flight: Bytes::ZERO }, recv_time: Some(send + Duration::from_ms(*d)) }
        }).collect();
        TransportFeedback { feedback_time: Time::from_ms(now_ms), packets, ..Default::default() }
    }

    #[test]
    fn controller_updates_once_per_interval_from_mean_queuing_delay() {
        let mut c = Dcrc::new(DcrcConfig::default(), DcrcVariant::Literal);
        let cons = Constraints { min_rate: Bitrate::from_kbps(30), max_rate: Bitrate::from_kbps(5000), start_rate: Bitrate::from_kbps(300) };
        let u = c.on_start(Time::ZERO, cons);
        assert_eq!(u.target_rate, Some(Bitrate::from_kbps(64)));
        assert!(close(c.price(), 0.5));
        // interval 1: base 50 ms, queue samples 0 and 20 ms → q = 10 ms
        assert!(c.on_feedback(&fb(500, &[50, 70])).is_empty());
        let u = c.on_tick(Time::from_ms(1000));
        // first interval: no change of q yet → p stays 0.5; x = 64k + (500k − 32k) = 532k
        assert_eq!(u.target_rate, Some(Bitrate::from_kbps(532)));
        assert_eq!(u.pacing_rate, Some(Bitrate::from_kbps(532)));
        // interval 2: q = 110 ms → p = 0.5 + 0.125·0.1 = 0.5125; x = 532k + 500k − 532k·0.5125
        c.on_feedback(&fb(1500, &[160, 160]));
        let u = c.on_feedback(&fb(2000, &[]));
        assert!(close(c.price(), 0.5125));
        let x = 532e3 + 500e3 - 532e3 * 0.5125;
        assert_eq!(u.target_rate, Some(Bitrate::from_bps_f64(x)));
        // a tick between updates changes nothing
        assert!(c.on_tick(Time::from_ms(2500)).is_empty());
    }
}
