//! Cross's fast bandwidth adaptation (paper 002 Algorithm 3, spec 5.7, ⚙ RECONSTRUCTED):
//! a sudden capacity drop shows as acknowledged rates far below sending rates while the
//! standing delay is bloated; the rate is then reset from the acknowledged rate and, when the
//! delay is excessive, Cross enters ProbeRTT to drain the bottleneck.

use crate::controllers::common::{RateSample, WindowedFilter};
use crate::units::{Bitrate, Duration, Time};

/// Parameters of Algorithm 3 (see [`super::CrossConfig`] for sources).
#[derive(Clone, Copy, Debug)]
pub struct FastAdaptParams {
    /// Bloated-delay gate `D_st > (1 + f)·D_min` (line 4, f = 0.25).
    pub f: f64,
    /// Excessive-delay gate `D_st > m·D_min` → ProbeRTT (lines 8–10, m = 2.0).
    pub m: f64,
    /// Detection ratio γ: drop if `maxAck < γ·maxSend` (line 5).
    pub gamma: f64,
    /// Low-bandwidth level `L_bw`.
    pub low_bw: Bitrate,
    /// Reset to `reset_gain · maxAck` when `maxAck > L_bw`.
    pub reset_gain: f64,
    /// Otherwise reset to `max(R_min, reset_gain_low · W5)`.
    pub reset_gain_low: f64,
    /// Window of the delivered-rate max filter `W5`.
    pub delivered_window: Duration,
    /// Rounds during which the subroutine stays quiet after a reset.
    pub holdoff_rounds: u64,
    /// Standing-delay window as a fraction of srtt (mvfst Copa: 1/2).
    pub standing_factor: f64,
}

/// What Algorithm 3 decided.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Reset {
    pub rate: Bitrate,
    /// Delay excessive: also enter ProbeRTT.
    pub probe_rtt: bool,
    pub max_ack: Bitrate,
    pub max_send: Bitrate,
    pub standing: Duration,
}

#[derive(Clone, Debug)]
pub struct FastAdapt {
    pub p: FastAdaptParams,
    max_send: WindowedFilter<Bitrate>,
    max_ack: WindowedFilter<Bitrate>,
    delivered: WindowedFilter<Bitrate>,
    standing: WindowedFilter<Duration>,
    srtt: Option<Duration>,
    holdoff_until: Option<u64>,
    pub triggers: u64,
}

impl FastAdapt {
    pub fn new(p: FastAdaptParams) -> Self {
        FastAdapt {
            p,
            max_send: WindowedFilter::max(Duration::from_ms(100)),
            max_ack: WindowedFilter::max(Duration::from_ms(100)),
            delivered: WindowedFilter::max(p.delivered_window),
            standing: WindowedFilter::min(Duration::from_ms(50)),
            srtt: None,
            holdoff_until: None,
            triggers: 0,
        }
    }

    /// A round-trip sample: srtt ← 7/8·srtt + 1/8·rtt (mvfst/RFC 6298 gain); the standing window
    /// follows `standing_factor · srtt`.
    pub fn on_rtt(&mut self, rtt: Duration) {
        let s = match self.srtt { None => rtt, Some(s) => Duration::from_us((s.as_us() * 7 + rtt.as_us()) / 8) };
        self.srtt = Some(s);
        self.standing.set_window(Duration::from_us((s.as_us() as f64 * self.p.standing_factor).max(1.0) as i64));
    }

    /// One OWD sample, keyed by its arrival time.
    pub fn on_owd(&mut self, recv_time: Time, owd: Duration) { self.standing.update(recv_time, owd); }

    /// Delivery-rate samples of one feedback at `now`; "one RTT" for the send/ack maxima is `rtt`.
    pub fn on_samples(&mut self, now: Time, samples: &[RateSample], rtt: Duration) {
        self.max_send.set_window(rtt.max(Duration::from_ms(1)));
        self.max_ack.set_window(rtt.max(Duration::from_ms(1)));
        for s in samples {
            if let Some(sr) = s.send_rate { self.max_send.update(now, sr); }
            self.max_ack.update(now, s.ack_rate);
            self.delivered.update(now, s.bandwidth);
        }
        self.max_send.expire(now);
        self.max_ack.expire(now);
        self.delivered.expire(now);
    }

    pub fn standing_delay(&self) -> Option<Duration> { self.standing.get() }
    pub fn max_send(&self) -> Option<Bitrate> { self.max_send.get() }
    pub fn max_ack(&self) -> Option<Bitrate> { self.max_ack.get() }

    /// Lines 1–12 of Algorithm 3 at round `round`. `None`: no sudden drop detected (or hold-off).
    pub fn check(&mut self, round: u64, d_min: Duration, r_min: Bitrate) -> Option<Reset> {
        if self.holdoff_until.is_some_and(|r| round < r) { return None; }
        let d_st = self.standing.get()?;
        let (send, ack) = (self.max_send.get()?, self.max_ack.get()?);
        let bloated = d_st.as_us() as f64 > (1.0 + self.p.f) * d_min.as_us() as f64;
        if !bloated || ack.bps_f64() >= self.p.gamma * send.bps_f64() { return None; }
        let rate = if ack > self.p.low_bw {
            ack.scale(self.p.reset_gain)
        } else {
            r_min.max(self.delivered.get().unwrap_or(Bitrate::ZERO).scale(self.p.reset_gain_low))
        };
        let probe_rtt = d_st.as_us() as f64 > self.p.m * d_min.as_us() as f64;
        self.holdoff_until = Some(round + self.p.holdoff_rounds);
        self.triggers += 1;
        Some(Reset { rate, probe_rtt, max_ack: ack, max_send: send, standing: d_st })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> FastAdaptParams {
        FastAdaptParams {
            f: 0.25, m: 2.0, gamma: 0.5, low_bw: Bitrate::from_kbps(300), reset_gain: 1.0, reset_gain_low: 0.5,
            delivered_window: Duration::from_secs(5), holdoff_rounds: 2, standing_factor: 0.5,
        }
    }

    fn sample(send_kbps: i64, ack_kbps: i64) -> RateSample {
        RateSample { seq: 0, bandwidth: Bitrate::from_kbps(send_kbps.min(ack_kbps)), send_rate: Some(Bitrate::from_kbps(send_kbps)), ack_rate: Bitrate::from_kbps(ack_kbps), rtt: Duration::from_ms(100), is_app_limited: false }
    }

    #[test]
    fn detects_drop_resets_to_ack_rate_and_holds_off() {
        let mut fa = FastAdapt::new(params());
        fa.on_rtt(Duration::from_ms(100));
        let d_min = Duration::from_ms(50);
        // steady: send ≈ ack, delay at base → nothing
        fa.on_samples(Time::from_ms(1000), &[sample(9500, 9400)], Duration::from_ms(100));
        fa.on_owd(Time::from_ms(1000), Duration::from_ms(52));
        assert_eq!(fa.check(10, d_min, Bitrate::from_kbps(300)), None);
        // capacity drop: ack 4 Mbit/s vs send 9.5 Mbit/s, standing delay 70 ms (> 1.25·50, < 2·50)
        fa.on_samples(Time::from_ms(1200), &[sample(9500, 4000)], Duration::from_ms(100));
        fa.on_owd(Time::from_ms(1150), Duration::from_ms(75));
        fa.on_owd(Time::from_ms(1200), Duration::from_ms(70));
        let r = fa.check(11, d_min, Bitrate::from_kbps(300)).expect("drop detected");
        assert_eq!(r.rate, Bitrate::from_kbps(4000));
        assert!(!r.probe_rtt);
        assert_eq!(r.standing, Duration::from_ms(70));
        // hold-off for 2 rounds
        assert_eq!(fa.check(12, d_min, Bitrate::from_kbps(300)), None);
        fa.on_owd(Time::from_ms(1300), Duration::from_ms(120));
        fa.on_samples(Time::from_ms(1300), &[sample(9500, 3000)], Duration::from_ms(100));
        let r = fa.check(13, d_min, Bitrate::from_kbps(300)).expect("after hold-off");
        // standing min over srtt/2 = 50 ms of arrivals: only the 120 ms sample → excessive (> 2·50)
        assert!(r.probe_rtt);
        // max ack over the last RTT (100 ms: the 1200 ms sample is still inside)
        assert_eq!(r.rate, Bitrate::from_kbps(4000));
        assert_eq!(fa.triggers, 2);
    }

    #[test]
    fn delay_gate_and_low_bandwidth_branch() {
        let mut fa = FastAdapt::new(params());
        fa.on_rtt(Duration::from_ms(100));
        let d_min = Duration::from_ms(50);
        // big send/ack gap but delay not bloated (62 ms ≤ 62.5 ms): no trigger
        fa.on_samples(Time::from_ms(0), &[sample(2000, 600)], Duration::from_ms(100));
        fa.on_owd(Time::from_ms(0), Duration::from_ms(62));
        assert_eq!(fa.check(1, d_min, Bitrate::from_kbps(150)), None);
        // 200 ms later (the t = 0 samples left the 100 ms "one RTT" window, not the 5 s W5
        // window): ack 200 kbit/s below the low-bandwidth level → reset to
        // max(R_min, 0.5 · W5) with W5 = 600 kbit/s → 300 kbit/s
        fa.on_samples(Time::from_ms(200), &[sample(1000, 200)], Duration::from_ms(100));
        fa.on_owd(Time::from_ms(200), Duration::from_ms(80));
        let r = fa.check(2, d_min, Bitrate::from_kbps(150)).expect("trigger");
        assert_eq!((r.max_ack, r.max_send), (Bitrate::from_kbps(200), Bitrate::from_kbps(1000)));
        assert_eq!(r.rate, Bitrate::from_kbps(300));
        let mut fa2 = FastAdapt::new(params());
        fa2.on_rtt(Duration::from_ms(100));
        fa2.on_samples(Time::from_ms(0), &[sample(1000, 200)], Duration::from_ms(100));
        fa2.on_owd(Time::from_ms(0), Duration::from_ms(80));
        // W5 = 200 → 0.5·200 = 100 < R_min 150 → R_min
        assert_eq!(fa2.check(1, d_min, Bitrate::from_kbps(150)).unwrap().rate, Bitrate::from_kbps(150));
    }
}
