//! CUBIC (RFC 9438, which obsoletes RFC 8312; spec `algorithms.md` §14.2).
//!
//! The window is kept in bytes; the cubic arithmetic runs in segments (`f64`), as the RFC
//! writes it:
//!
//! * congestion avoidance, per ACK that advances the cumulative ACK point (RFC 9438 §4.2–4.5):
//!   `W_cubic(t) = C·(t − K)³ + W_max` with `t` the time since the epoch (the start of the
//!   current congestion-avoidance stage) and `K = ∛((W_max − cwnd_epoch)/C)`;
//!   `W_est += α_cubic·segments_acked/cwnd` (α_cubic = 3(1−β)/(1+β), and 1 once
//!   `W_est ≥ cwnd_prior`); if `W_cubic(t) < W_est` the window follows `W_est` (Reno-friendly
//!   region), else it grows by `(target − cwnd)/cwnd` per acknowledged segment with
//!   `target = clamp(W_cubic(t + SRTT), cwnd, 1.5·cwnd)`;
//! * congestion event (§4.6, §4.7): fast convergence (`W_max = cwnd·(1+β)/2` if `cwnd` is below
//!   the previous `W_max`, else `W_max = cwnd`), `cwnd_prior = cwnd`,
//!   `ssthresh = max(β·cwnd, 2·SMSS)`, `cwnd = ssthresh`; the next ACK in congestion avoidance
//!   starts a new epoch;
//! * timeout (§4.8): `ssthresh` as on a congestion event (first timeout of a series only, and
//!   not one that interrupts a fast recovery),
//!   `cwnd = 1·SMSS`, and the first epoch afterwards uses `K = 0`, `W_max = cwnd_epoch`;
//! * slow start: RFC 5681 (`cwnd += min(N, SMSS)`), or RFC 9406 HyStart++ when
//!   [`super::TcpConfig::hystart`] is on (off by default); a HyStart++ exit enters congestion
//!   avoidance with `K = 0`, `W_max = cwnd_epoch` (§4.10).
//!
//! Readings (see `docs/controllers/tcp.md`): `ssthresh` uses `cwnd` rather than `flight_size`
//! (spec 14.2, Linux; allowed by §4.6 because growth is gated on being cwnd-limited); in the
//! Reno-friendly region the window never shrinks to `W_est` (`cwnd = max(cwnd, W_est)`, "choose
//! the larger of the two"); an epoch whose `cwnd_epoch` exceeds `W_max` (tiny windows at the
//! 2-segment floor) uses `K = 0` and `W_max = cwnd_epoch` as Linux does; application-limited
//! time is cut out of `t` by moving the epoch start forward (§5.8). No growth during fast
//! recovery nor while not cwnd-limited; no spurious-loss undo (§4.9 is optional).

use super::cc::{AckSample, CaState, CongestionEvent, RoundCounter, RtoEvent, WindowCongestionControl};
use crate::units::{Bytes, Duration, Time};

/// Cubic scaling constant in segments/s³ (RFC 9438 §5.1, spec 14.2).
pub const C: f64 = 0.4;
/// Multiplicative decrease factor β_cubic (RFC 9438 §4.6, spec 14.2).
pub const BETA: f64 = 0.7;
/// Additive factor of the Reno-friendly estimate, `3(1 − β)/(1 + β)` ≈ 0.529 (RFC 9438 §4.3).
pub const ALPHA: f64 = 3.0 * (1.0 - BETA) / (1.0 + BETA);
/// Fast convergence on (RFC 9438 §4.7 SHOULD; spec 14.2).
pub const FAST_CONVERGENCE: bool = true;

/// HyStart++ constants (RFC 9406 §4.3).
pub mod hystart {
    use crate::units::Duration;
    pub const MIN_RTT_THRESH: Duration = Duration::from_ms(4);
    pub const MAX_RTT_THRESH: Duration = Duration::from_ms(16);
    pub const MIN_RTT_DIVISOR: i64 = 8;
    pub const N_RTT_SAMPLE: u32 = 8;
    pub const CSS_GROWTH_DIVISOR: i64 = 4;
    pub const CSS_ROUNDS: u32 = 5;
    /// Slow-start growth limit per ACK in segments for an unpaced sender.
    pub const L: i64 = 8;
}

/// Largest window we let the arithmetic reach (far beyond any simulated path).
const MAX_CWND: i64 = 1 << 46;

/// `W_cubic(t) = C·(t − K)³ + W_max` (segments; RFC 9438 Eq. 1).
pub fn w_cubic(t: f64, k: f64, w_max: f64) -> f64 { C * (t - k).powi(3) + w_max }

/// `K = ∛((W_max − cwnd_epoch)/C)` in seconds (RFC 9438 Eq. 2), 0 when `cwnd_epoch ≥ W_max`.
pub fn cubic_k(w_max: f64, cwnd_epoch: f64) -> f64 { ((w_max - cwnd_epoch).max(0.0) / C).cbrt() }

/// One congestion-avoidance stage.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Epoch {
    /// `t_epoch` (moved forward over application-limited time).
    pub start: Time,
    /// Seconds from the epoch start until `W_cubic` reaches `W_max`.
    pub k: f64,
    /// Window at the epoch start, segments.
    pub cwnd_epoch: f64,
    /// Reno-friendly window estimate, segments.
    pub w_est: f64,
}

/// RFC 9406 HyStart++ state (only during the initial slow start).
#[derive(Clone, Debug, Default)]
struct HyStartPp {
    rounds: RoundCounter,
    last_round_min: Option<Duration>,
    cur_round_min: Option<Duration>,
    samples: u32,
    /// `cssBaselineMinRtt`; `Some` while in Conservative Slow Start.
    css_baseline: Option<Duration>,
    css_rounds: u32,
}

impl HyStartPp {
    /// Returns true when CSS has run its rounds and congestion avoidance should begin.
    fn on_ack(&mut self, s: &AckSample) -> bool {
        use hystart::*;
        if self.rounds.on_ack(s) {
            if self.css_baseline.is_some() {
                // The partial round in which CSS began counts (RFC 9406 §4.2).
                if self.css_rounds >= CSS_ROUNDS {
                    return true;
                }
                self.css_rounds += 1;
            }
            self.last_round_min = self.cur_round_min;
            self.cur_round_min = None;
            self.samples = 0;
        }
        if let Some(r) = s.rtt {
            self.cur_round_min = Some(self.cur_round_min.map_or(r, |m| m.min(r)));
            self.samples += 1;
        }
        if let (true, Some(cur), Some(last)) = (self.samples >= N_RTT_SAMPLE, self.cur_round_min, self.last_round_min) {
            match self.css_baseline {
                None => {
                    let thresh = Duration::from_us(last.as_us() / MIN_RTT_DIVISOR).clamp(MIN_RTT_THRESH, MAX_RTT_THRESH);
                    if cur >= last + thresh {
                        self.css_baseline = Some(cur);
                        self.css_rounds = 1;
                    }
                }
                Some(base) if cur < base => {
                    // Spurious exit: back to slow start.
                    self.css_baseline = None;
                    self.css_rounds = 0;
                }
                Some(_) => {}
            }
        }
        false
    }
    fn in_css(&self) -> bool { self.css_baseline.is_some() }
}

#[derive(Clone, Debug)]
pub struct Cubic {
    smss: i64,
    cwnd: i64,
    ssthresh: i64,
    /// `W_max` in segments; `None` before the first congestion event.
    w_max: Option<f64>,
    /// `cwnd_prior` in segments: the window when `ssthresh` was last set.
    cwnd_prior: f64,
    epoch: Option<Epoch>,
    /// The next epoch uses `K = 0`, `W_max = cwnd_epoch` (after a timeout or a HyStart++ exit).
    k_zero_next: bool,
    last_ack: Option<Time>,
    /// Growth (bytes) not yet turned into window.
    carry: f64,
    hystart: Option<HyStartPp>,
}

impl Cubic {
    /// `iw_segments`: initial window (RFC 6928: 10); `hystart`: RFC 9406 HyStart++ in the
    /// initial slow start.
    pub fn new(smss: Bytes, iw_segments: u32, hystart: bool) -> Self {
        let smss = smss.get().max(1);
        Cubic {
            smss,
            cwnd: smss * iw_segments.max(1) as i64,
            ssthresh: Bytes::INFINITY.get(),
            w_max: None,
            cwnd_prior: 0.0,
            epoch: None,
            k_zero_next: false,
            last_ack: None,
            carry: 0.0,
            hystart: hystart.then(HyStartPp::default),
        }
    }

    /// `W_max` in segments (`None` before the first congestion event).
    pub fn w_max(&self) -> Option<f64> { self.w_max }
    /// The current congestion-avoidance epoch, if one has started.
    pub fn epoch(&self) -> Option<Epoch> { self.epoch }
    /// Whether HyStart++ is in Conservative Slow Start.
    pub fn in_css(&self) -> bool { self.hystart.as_ref().is_some_and(|h| h.in_css()) }

    fn cwnd_segments(&self) -> f64 { self.cwnd as f64 / self.smss as f64 }

    fn add_bytes(&mut self, grow: f64) {
        let total = grow + self.carry;
        let whole = total.floor();
        self.carry = total - whole;
        self.cwnd = (self.cwnd + whole as i64).clamp(self.smss, MAX_CWND);
    }

    fn slow_start(&mut self, s: &AckSample) {
        let acked = s.newly_cum_acked.get();
        let hs_active = self.ssthresh >= Bytes::INFINITY.get();
        match self.hystart.as_mut() {
            Some(h) if hs_active => {
                // RFC 9406 §4.2: the ACK's growth uses the phase it arrived in (entering CSS
                // after this ACK's RTT sample affects the next ACK); the ACK that completes the
                // last CSS round ends slow start without growing the window.
                let was_css = h.in_css();
                if h.on_ack(s) {
                    // RFC 9406: ssthresh = cwnd; RFC 9438 §4.10: cwnd_prior = cwnd, K = 0.
                    self.ssthresh = self.cwnd;
                    self.cwnd_prior = self.cwnd_segments();
                    self.k_zero_next = true;
                    self.hystart = None;
                    return;
                }
                let mut inc = acked.min(hystart::L * self.smss);
                if was_css {
                    inc /= hystart::CSS_GROWTH_DIVISOR;
                }
                self.cwnd = (self.cwnd + inc).min(MAX_CWND);
            }
            _ => self.cwnd = (self.cwnd + acked.min(self.smss)).min(MAX_CWND),
        }
    }

    fn congestion_avoidance(&mut self, now: Time, srtt: Option<Duration>, acked: i64) {
        let smss = self.smss as f64;
        let cwnd = self.cwnd_segments();
        let mut e = match self.epoch {
            Some(e) => e,
            None => {
                let (w_max, k) = match self.w_max {
                    Some(w) if !self.k_zero_next && w > cwnd => (w, cubic_k(w, cwnd)),
                    _ => (cwnd, 0.0),
                };
                self.w_max = Some(w_max);
                self.k_zero_next = false;
                Epoch { start: now, k, cwnd_epoch: cwnd, w_est: cwnd }
            }
        };
        let w_max = self.w_max.unwrap_or(cwnd);
        let t = (now - e.start).as_secs_f64().max(0.0);
        let rtt = srtt.map_or(0.0, |r| r.as_secs_f64().max(0.0));
        let seg_acked = acked as f64 / smss;
        let alpha = if e.w_est >= self.cwnd_prior { 1.0 } else { ALPHA };
        e.w_est += alpha * seg_acked / cwnd;
        if w_cubic(t, e.k, w_max) < e.w_est {
            // Reno-friendly region.
            let est = (e.w_est * smss).floor().min(MAX_CWND as f64) as i64;
            if est > self.cwnd {
                self.cwnd = est;
                self.carry = 0.0;
            }
        } else {
            let target = w_cubic(t + rtt, e.k, w_max).clamp(cwnd, 1.5 * cwnd);
            self.add_bytes((target - cwnd) / cwnd * seg_acked * smss);
        }
        self.epoch = Some(e);
    }
}

impl WindowCongestionControl for Cubic {
    fn name(&self) -> &'static str { "cubic" }

    fn on_ack(&mut self, s: &AckSample) {
        let prev_ack = self.last_ack.replace(s.now);
        if s.state == CaState::Recovery || s.newly_cum_acked <= Bytes::ZERO {
            return;
        }
        if !s.is_cwnd_limited {
            // RFC 9438 §5.8: `t` excludes application-limited periods.
            if let (Some(e), Some(p)) = (self.epoch.as_mut(), prev_ack) {
                e.start += s.now - p;
            }
            return;
        }
        if self.cwnd < self.ssthresh {
            self.slow_start(s);
        } else {
            self.congestion_avoidance(s.now, s.srtt, s.newly_cum_acked.get());
        }
    }

    fn on_congestion_event(&mut self, _ev: &CongestionEvent) {
        let cwnd = self.cwnd_segments();
        self.w_max = Some(match self.w_max {
            Some(w) if FAST_CONVERGENCE && cwnd < w => cwnd * (1.0 + BETA) / 2.0,
            _ => cwnd,
        });
        self.cwnd_prior = cwnd;
        self.ssthresh = ((self.cwnd as f64 * BETA).round() as i64).max(2 * self.smss);
        self.cwnd = self.ssthresh;
        self.epoch = None;
        self.k_zero_next = false;
        self.carry = 0.0;
        self.hystart = None;
    }

    fn on_rto(&mut self, ev: &RtoEvent) {
        if ev.reduces_ssthresh() {
            self.cwnd_prior = self.cwnd_segments();
            self.ssthresh = ((self.cwnd as f64 * BETA).round() as i64).max(2 * self.smss);
        }
        self.cwnd = self.smss;
        self.epoch = None;
        self.k_zero_next = true;
        self.carry = 0.0;
        self.hystart = None;
    }

    fn on_recovery_exit(&mut self, _now: Time) {
        if self.ssthresh < Bytes::INFINITY.get() {
            self.cwnd = self.ssthresh.max(self.smss);
        }
    }

    fn cwnd(&self) -> Bytes { Bytes::new(self.cwnd) }
    fn ssthresh(&self) -> Bytes { Bytes::new(self.ssthresh) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::tcp::RateSample;
    use crate::units::Bitrate;

    const MSS: i64 = 1000;

    fn ack(now: Time, bytes: i64) -> AckSample { AckSample::for_test(now, bytes, CaState::Open) }

    fn loss(c: &mut Cubic) {
        c.on_congestion_event(&CongestionEvent { now: Time::ZERO, flight_size: c.cwnd(), in_flight: Bytes::ZERO, lost: Bytes::new(MSS) });
    }

    fn close(a: f64, b: f64, tol: f64) -> bool { (a - b).abs() <= tol }

    #[test]
    fn constants() {
        assert!(close(ALPHA, 0.9 / 1.7, 1e-12));
        assert!(close(ALPHA, 0.5294, 1e-4));
        // Hand-worked: W_max = 100, β = 0.7 → cwnd_epoch = 70, K = ∛(30/0.4) = ∛75 = 4.2172 s.
        let k = cubic_k(100.0, 70.0);
        assert!(close(k, 4.217_163, 1e-6), "{k}");
        assert!(close(w_cubic(0.0, k, 100.0), 70.0, 1e-9));
        assert!(close(w_cubic(k, k, 100.0), 100.0, 1e-12));
        // W(2) = 0.4·(2 − 4.2172)³ + 100 = 0.4·(−10.900) + 100 = 95.640.
        assert!(close(w_cubic(2.0, k, 100.0), 95.640, 1e-3));
        // W(K + 1) = 100.4 (convex side).
        assert!(close(w_cubic(k + 1.0, k, 100.0), 100.4, 1e-9));
        assert_eq!(cubic_k(50.0, 60.0), 0.0);
    }

    #[test]
    fn congestion_event_sets_w_max_k_and_concave_growth() {
        let mut c = Cubic::new(Bytes::new(MSS), 100, false);
        loss(&mut c);
        assert_eq!(c.w_max(), Some(100.0));
        assert_eq!(c.ssthresh(), Bytes::new(70_000));
        assert_eq!(c.cwnd(), Bytes::new(70_000));
        assert!(!c.in_slow_start());

        // First ACK in CA (t = 10 s) starts the epoch: t = 0, K = 4.2172.
        // W_est = 70 + 0.5294·1/70 = 70.00756 > W_cubic(0) = 70: Reno-friendly, cwnd = ⌊70 007.56⌋.
        let t0 = Time::from_secs_f64(10.0);
        c.on_ack(&ack(t0, MSS));
        let e = c.epoch().unwrap();
        assert_eq!(e.start, t0);
        assert!(close(e.k, 4.217_163, 1e-6));
        assert!(close(e.w_est, 70.0 + ALPHA / 70.0, 1e-12));
        assert_eq!(c.cwnd(), Bytes::new(70_007));

        // Next ACK at t = 2 s: W_cubic(2) = 95.64 > W_est, so concave growth towards
        // target = W_cubic(2.1) = 0.4·(2.1 − 4.21716)³ + 100 = 96.2040 segments;
        // Δ = (96.2040 − 70.007)/70.007 segment = 374.2 bytes → 70 381.
        c.on_ack(&ack(t0 + Duration::from_secs(2), MSS));
        assert!(close(w_cubic(2.1, e.k, 100.0), 96.2040, 1e-4));
        assert_eq!(c.cwnd(), Bytes::new(70_381));

        // Far past K the target is capped at 1.5·cwnd: Δ = 0.5 segment per acked segment.
        let before = c.cwnd().get();
        c.on_ack(&ack(t0 + Duration::from_secs(60), MSS));
        assert_eq!(c.cwnd().get() - before, 500);
    }

    #[test]
    fn fast_convergence_lowers_w_max() {
        let mut c = Cubic::new(Bytes::new(MSS), 100, false);
        loss(&mut c); // W_max = 100, cwnd 70
        // Grow to 90 segments, then lose again: 90 < 100 → W_max = 90·1.7/2 = 76.5.
        c.cwnd = 90_000;
        loss(&mut c);
        assert_eq!(c.w_max(), Some(76.5));
        assert_eq!(c.cwnd(), Bytes::new(63_000));
        c.on_ack(&ack(Time::from_secs_f64(1.0), MSS));
        // K = ∛((76.5 − 63)/0.4) = ∛33.75 = 3.23165 s (RFC 9438 Eq. 2 with cwnd_epoch).
        assert!(close(c.epoch().unwrap().k, 3.231_652, 1e-5));
        // Above the old W_max: plain W_max = cwnd.
        c.cwnd = 120_000;
        loss(&mut c);
        assert_eq!(c.w_max(), Some(120.0));
        assert_eq!(c.ssthresh(), Bytes::new(84_000));
    }

    #[test]
    fn reno_friendly_region_and_alpha_switch() {
        // Small window: W_max = 10, cwnd_epoch = 7, K = ∛7.5 = 1.957 s. With an ACK per segment
        // every 100 ms RTT, W_est grows ≈ 0.529 segment per RTT while W_cubic is still flat.
        let mut c = Cubic::new(Bytes::new(MSS), 10, false);
        loss(&mut c);
        assert_eq!(c.cwnd(), Bytes::new(7_000));
        let mut now = Time::from_secs_f64(5.0);
        let mut reno_friendly_steps = 0;
        for _ in 0..40 {
            // One RTT of ACKs.
            let n = c.cwnd().get() / MSS;
            for _ in 0..n {
                c.on_ack(&ack(now, MSS));
            }
            let e = c.epoch().unwrap();
            let t = (now - e.start).as_secs_f64();
            if w_cubic(t, e.k, 10.0) < e.w_est {
                reno_friendly_steps += 1;
                // In the Reno-friendly region the window is W_est (rounded down to bytes).
                assert_eq!(c.cwnd().get(), (e.w_est * MSS as f64).floor() as i64);
            }
            now += Duration::from_ms(100);
        }
        assert!(reno_friendly_steps > 5, "{reno_friendly_steps}");
        // Once W_est ≥ cwnd_prior (= 10), α = 1: a full window of ACKs adds one segment to W_est.
        let mut c = Cubic::new(Bytes::new(MSS), 10, false);
        loss(&mut c);
        c.on_ack(&ack(now, MSS));
        let mut e = c.epoch().unwrap();
        e.w_est = 10.0;
        c.epoch = Some(e);
        let w = c.cwnd_segments();
        c.on_ack(&ack(now, MSS));
        assert!(close(c.epoch().unwrap().w_est, 10.0 + 1.0 / w, 1e-12));
    }

    #[test]
    fn no_growth_in_recovery_or_when_app_limited_and_epoch_shifts() {
        let mut c = Cubic::new(Bytes::new(MSS), 100, false);
        loss(&mut c);
        let t0 = Time::from_secs_f64(1.0);
        c.on_ack(&ack(t0, MSS));
        let w = c.cwnd();
        let mut s = ack(t0 + Duration::from_ms(100), MSS);
        s.state = CaState::Recovery;
        c.on_ack(&s);
        assert_eq!(c.cwnd(), w);
        // Not cwnd-limited for 3 s: no growth, and the epoch start moves by the idle time.
        let mut s = ack(t0 + Duration::from_ms(3_100), MSS);
        s.is_cwnd_limited = false;
        c.on_ack(&s);
        assert_eq!(c.cwnd(), w);
        assert_eq!(c.epoch().unwrap().start, t0 + Duration::from_ms(3_000));
    }

    #[test]
    fn timeout_collapses_and_next_epoch_has_k_zero() {
        let mut c = Cubic::new(Bytes::new(MSS), 100, false);
        loss(&mut c);
        c.on_rto(&RtoEvent { now: Time::ZERO, flight_size: Bytes::new(70_000), consecutive: 1, during_recovery: false });
        assert_eq!(c.cwnd(), Bytes::new(MSS));
        assert_eq!(c.ssthresh(), Bytes::new(49_000));
        // A backed-off second timeout keeps ssthresh.
        c.on_rto(&RtoEvent { now: Time::ZERO, flight_size: Bytes::new(MSS), consecutive: 2, during_recovery: false });
        assert_eq!(c.ssthresh(), Bytes::new(49_000));
        // Slow start back to ssthresh (one SMSS per ACK) ...
        let mut now = Time::from_secs_f64(1.0);
        while c.in_slow_start() {
            c.on_ack(&ack(now, MSS));
            now += Duration::from_ms(1);
        }
        assert_eq!(c.cwnd(), Bytes::new(49_000));
        // ... then the first epoch uses K = 0 and W_max = cwnd_epoch (RFC 9438 §4.8).
        c.on_ack(&ack(now, MSS));
        let e = c.epoch().unwrap();
        assert_eq!(e.k, 0.0);
        assert_eq!(c.w_max(), Some(49.0));
    }

    fn rtt_ack(now: Time, rtt_ms: i64, delivered: i64, prior_delivered: i64) -> AckSample {
        let mut s = ack(now, MSS);
        s.rtt = Some(Duration::from_ms(rtt_ms));
        s.delivered = Bytes::new(delivered);
        s.rate = Some(RateSample {
            delivered: Bytes::new(MSS),
            interval: Duration::from_ms(rtt_ms),
            delivery_rate: Bitrate::from_kbps(1000),
            is_app_limited: false,
            prior_delivered: Bytes::new(prior_delivered),
        });
        s
    }

    #[test]
    fn hystart_plus_plus_exits_on_delay_increase_then_css_then_ca() {
        let mut c = Cubic::new(Bytes::new(MSS), 10, true);
        let mut delivered = 0;
        let mut now = Time::ZERO;
        // Feed rounds of `n` ACKs: every ACK of round r carries a segment sent in round r − 1.
        let mut round = |c: &mut Cubic, n: i64, rtt_ms: i64, delivered: &mut i64| {
            let round_start = *delivered;
            for i in 0..n {
                *delivered += MSS;
                // The first ACK of the round delivers a segment sent after the previous round began.
                let prior = if i == 0 { round_start } else { round_start - MSS };
                c.on_ack(&rtt_ack(now, rtt_ms, *delivered, prior));
            }
            now += Duration::from_ms(rtt_ms);
        };
        round(&mut c, 10, 100, &mut delivered);
        round(&mut c, 20, 100, &mut delivered);
        assert!(c.in_slow_start() && !c.in_css());
        assert_eq!(c.cwnd(), Bytes::new(40_000));
        // RTT rises by 13 ms ≥ clamp(100/8, 4, 16) = 12.5 ms: after 8 samples, enter CSS, where
        // growth is a quarter: 8 ACKs at full rate, then 32 at 250 B.
        round(&mut c, 40, 113, &mut delivered);
        assert!(c.in_css());
        assert_eq!(c.cwnd(), Bytes::new(40_000 + 8 * MSS + 32 * 250));
        // Four more CSS rounds at the higher RTT, then the next round start enters CA.
        for _ in 0..4 {
            let n = c.cwnd().get() / MSS;
            round(&mut c, n, 113, &mut delivered);
            assert!(c.in_css(), "{:?}", c.cwnd());
        }
        let w = c.cwnd();
        round(&mut c, 1, 113, &mut delivered);
        assert!(!c.in_slow_start());
        assert_eq!(c.ssthresh(), w);
        assert_eq!(c.cwnd(), w);
        // First CA ACK: K = 0, W_max = cwnd_epoch.
        c.on_ack(&ack(now, MSS));
        assert_eq!(c.epoch().unwrap().k, 0.0);
    }

    #[test]
    fn hystart_off_is_plain_slow_start_and_css_resumes_on_lower_rtt() {
        let mut c = Cubic::new(Bytes::new(MSS), 10, false);
        c.on_ack(&rtt_ack(Time::ZERO, 100, MSS, 0));
        c.on_ack(&rtt_ack(Time::ZERO, 200, 2 * MSS, 0));
        assert_eq!(c.cwnd(), Bytes::new(12_000));
        assert!(!c.in_css());

        let mut h = HyStartPp { last_round_min: Some(Duration::from_ms(100)), css_baseline: Some(Duration::from_ms(120)), css_rounds: 2, ..HyStartPp::default() };
        h.rounds.start_round_now(Bytes::new(1_000_000));
        for _ in 0..8 {
            h.on_ack(&rtt_ack(Time::ZERO, 110, 0, 0));
        }
        assert!(!h.in_css(), "an RTT below the CSS baseline resumes slow start");
    }
}
