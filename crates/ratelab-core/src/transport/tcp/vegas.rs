//! TCP Vegas (Brakmo & Peterson, JSAC 1995; as in Linux `tcp_vegas.c` and ns-3 `TcpVegas`;
//! spec `algorithms.md` §14.3).
//!
//! * `BaseRTT` = smallest RTT sample ever seen; per round trip, `RTT` = smallest sample of that
//!   round (Linux `minRTT`, reset every round).
//! * Once per round (a round ends when a segment sent after it began is delivered, see
//!   [`RoundCounter`]), with `cwnd` in segments:
//!   `diff = cwnd·(1 − BaseRTT/RTT)` — the paper's `(Expected − Actual)·BaseRTT`, the number of
//!   this flow's segments sitting in queues.
//!   - slow start: if `diff > γ`, leave it: `cwnd = min(cwnd, ⌊cwnd·BaseRTT/RTT⌋ + 1)`,
//!     `ssthresh = min(ssthresh, cwnd − 1)`; otherwise keep growing;
//!   - congestion avoidance: `diff < α` → `cwnd += 1`; `diff > β` → `cwnd −= 1` (and
//!     `ssthresh = min(ssthresh, cwnd − 1)`); otherwise hold. `cwnd ≥ 2` segments.
//!   - fewer than 3 RTT samples in the round: one Reno step instead (Linux `cntRTT <= 2`).
//! * Slow start grows per ACK as Reno does (`cwnd += min(N, SMSS)`), the γ check running once
//!   per round: Linux's and ns-3's "modified slow start", not the paper's doubling every other
//!   RTT.
//! * Loss: Reno (`ssthresh = max(FlightSize/2, 2·SMSS)`, `cwnd = ssthresh`; timeout
//!   `cwnd = 1·SMSS`); no growth in fast recovery; after a timeout, Reno slow start / congestion
//!   avoidance until the sender is back in the open state, when Vegas restarts its round
//!   measurement (Linux `tcp_vegas_state` disables Vegas outside `TCP_CA_Open`).
//!
//! Reading: the spec's `diff = cwnd·(RTT − BaseRTT)/RTT` (the paper's definition) is used;
//! Linux divides by `BaseRTT` instead (`cwnd·(RTT − BaseRTT)/BaseRTT`), which gives a slightly
//! larger `diff` for the same queue. Increases happen only while cwnd-limited.

use super::cc::{AckSample, CaState, CongestionEvent, RoundCounter, RtoEvent, WindowCongestionControl};
use crate::units::{Bytes, Duration, Time};

/// Lower queue target in segments (Linux/ns-3 default 2; the paper used 1). Spec 14.3.
pub const ALPHA: f64 = 2.0;
/// Upper queue target in segments (Linux/ns-3 default 4; the paper used 3). Spec 14.3.
pub const BETA: f64 = 4.0;
/// Slow-start exit threshold in segments (Linux/ns-3 default 1). Spec 14.3.
pub const GAMMA: f64 = 1.0;

/// Most segments the window may hold (guards the arithmetic only).
const MAX_CWND_SEGMENTS: i64 = 1 << 30;

#[derive(Clone, Debug)]
pub struct Vegas {
    smss: i64,
    cwnd: i64,
    ssthresh: i64,
    /// Remainder of SMSS² not yet turned into window in Reno congestion avoidance.
    ca_remainder: i64,
    base_rtt: Option<Duration>,
    round_min_rtt: Option<Duration>,
    cnt_rtt: u32,
    rounds: RoundCounter,
    /// Restart the round measurement on the next ACK (after a loss episode).
    restart: bool,
    last_diff: Option<f64>,
}

impl Vegas {
    /// `iw_segments`: initial window (RFC 6928: 10).
    pub fn new(smss: Bytes, iw_segments: u32) -> Self {
        let smss = smss.get().max(1);
        Vegas {
            smss,
            cwnd: smss * iw_segments.max(1) as i64,
            ssthresh: Bytes::INFINITY.get(),
            ca_remainder: 0,
            base_rtt: None,
            round_min_rtt: None,
            cnt_rtt: 0,
            rounds: RoundCounter::default(),
            restart: false,
            last_diff: None,
        }
    }

    /// Minimum RTT ever seen.
    pub fn base_rtt(&self) -> Option<Duration> { self.base_rtt }
    /// `diff` (segments) of the latest once-per-round decision.
    pub fn last_diff(&self) -> Option<f64> { self.last_diff }

    fn in_ss(&self) -> bool { self.cwnd < self.ssthresh }

    /// RFC 5681 growth for one ACK (slow start or congestion avoidance).
    fn reno_step(&mut self, acked: i64) {
        if self.in_ss() {
            self.cwnd += acked.min(self.smss);
        } else {
            let num = self.smss * self.smss + self.ca_remainder;
            self.ca_remainder = num % self.cwnd;
            self.cwnd += num / self.cwnd;
        }
        self.cwnd = self.cwnd.min(MAX_CWND_SEGMENTS * self.smss);
    }

    /// The once-per-round Vegas decision.
    fn decide(&mut self, rtt: Duration, base: Duration, s: &AckSample) {
        let cw = self.cwnd as f64 / self.smss as f64;
        let ratio = base.as_us() as f64 / rtt.as_us().max(1) as f64;
        let diff = cw * (1.0 - ratio);
        self.last_diff = Some(diff);
        let grow = s.is_cwnd_limited && s.newly_cum_acked > Bytes::ZERO;
        if self.in_ss() {
            if diff > GAMMA {
                let target = (cw * ratio).floor() as i64 + 1;
                self.cwnd = self.cwnd.min(target * self.smss);
                self.ssthresh = self.ssthresh.min(self.cwnd - self.smss);
            } else if grow {
                self.reno_step(s.newly_cum_acked.get());
            }
        } else if diff > BETA {
            self.cwnd -= self.smss;
            self.ssthresh = self.ssthresh.min(self.cwnd - self.smss);
        } else if diff < ALPHA && grow {
            self.cwnd += self.smss;
        }
        self.cwnd = self.cwnd.clamp(2 * self.smss, MAX_CWND_SEGMENTS * self.smss);
        self.ssthresh = self.ssthresh.max(2 * self.smss);
    }

    fn reduced_ssthresh(&self, flight_size: Bytes) -> i64 { (flight_size.get() / 2).max(2 * self.smss) }
}

impl WindowCongestionControl for Vegas {
    fn name(&self) -> &'static str { "vegas" }

    fn on_ack(&mut self, s: &AckSample) {
        if self.restart && s.state == CaState::Open {
            self.restart = false;
            self.rounds.start_round_now(s.delivered);
            self.cnt_rtt = 0;
            self.round_min_rtt = None;
            if let Some(r) = s.rtt {
                self.base_rtt = Some(self.base_rtt.map_or(r, |b| b.min(r)));
            }
            return self.grow_between_rounds(s);
        }
        if let Some(r) = s.rtt {
            self.base_rtt = Some(self.base_rtt.map_or(r, |b| b.min(r)));
            self.round_min_rtt = Some(self.round_min_rtt.map_or(r, |m| m.min(r)));
            self.cnt_rtt += 1;
        }
        let round_end = self.rounds.on_ack(s);
        match s.state {
            CaState::Recovery => return,
            CaState::Loss => {
                if s.is_cwnd_limited && s.newly_cum_acked > Bytes::ZERO {
                    self.reno_step(s.newly_cum_acked.get());
                }
                return;
            }
            CaState::Open => {}
        }
        if !round_end {
            return self.grow_between_rounds(s);
        }
        match (self.round_min_rtt, self.base_rtt) {
            (Some(rtt), Some(base)) if self.cnt_rtt > 2 => self.decide(rtt, base, s),
            _ => {
                if s.is_cwnd_limited && s.newly_cum_acked > Bytes::ZERO {
                    self.reno_step(s.newly_cum_acked.get());
                }
            }
        }
        self.cnt_rtt = 0;
        self.round_min_rtt = None;
    }

    fn on_congestion_event(&mut self, ev: &CongestionEvent) {
        self.ssthresh = self.reduced_ssthresh(ev.flight_size);
        self.cwnd = self.ssthresh;
        self.ca_remainder = 0;
        self.restart = true;
    }

    fn on_rto(&mut self, ev: &RtoEvent) {
        if ev.reduces_ssthresh() {
            self.ssthresh = self.reduced_ssthresh(ev.flight_size);
        }
        self.cwnd = self.smss;
        self.ca_remainder = 0;
        self.restart = true;
    }

    fn on_recovery_exit(&mut self, _now: Time) {
        if self.ssthresh < Bytes::INFINITY.get() {
            self.cwnd = self.ssthresh.max(self.smss);
        }
    }

    fn cwnd(&self) -> Bytes { Bytes::new(self.cwnd) }
    fn ssthresh(&self) -> Bytes { Bytes::new(self.ssthresh) }
}

impl Vegas {
    /// Between round ends only slow start grows (per ACK); congestion avoidance waits for the
    /// next decision.
    fn grow_between_rounds(&mut self, s: &AckSample) {
        if self.in_ss() && s.is_cwnd_limited && s.newly_cum_acked > Bytes::ZERO && s.state == CaState::Open {
            self.reno_step(s.newly_cum_acked.get());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::tcp::RateSample;
    use crate::units::Bitrate;

    const MSS: i64 = 1000;

    /// Drives a Vegas with ACKs, one per segment.
    struct Driver {
        v: Vegas,
        delivered: i64,
        now: Time,
    }

    impl Driver {
        fn new(v: Vegas) -> Self { Driver { v, delivered: 0, now: Time::ZERO } }
        /// One ACK with an RTT sample; `ends_round`: it acknowledges a segment sent after the
        /// current round began.
        fn ack_in(&mut self, rtt_ms: i64, ends_round: bool, state: CaState) {
            let prior = if ends_round { self.delivered } else { -1 };
            self.delivered += MSS;
            let s = AckSample {
                now: self.now,
                newly_acked: Bytes::new(MSS),
                newly_cum_acked: Bytes::new(MSS),
                rtt: Some(Duration::from_ms(rtt_ms)),
                srtt: Some(Duration::from_ms(rtt_ms)),
                min_rtt: None,
                prior_in_flight: Bytes::ZERO,
                in_flight: Bytes::ZERO,
                delivered: Bytes::new(self.delivered),
                state,
                is_cwnd_limited: true,
                rate: Some(RateSample { delivered: Bytes::new(MSS), interval: Duration::from_ms(rtt_ms), delivery_rate: Bitrate::from_kbps(1000), is_app_limited: false, prior_delivered: Bytes::new(prior) }),
                newly_lost: Bytes::ZERO,
            };
            self.v.on_ack(&s);
        }
        fn ack(&mut self, rtt_ms: i64, ends_round: bool) { self.ack_in(rtt_ms, ends_round, CaState::Open) }
        /// One round trip: an ACK per segment of the window; the first one ends the previous
        /// round (its RTT sample still counts there, as in Linux).
        fn round(&mut self, rtt_ms: i64) {
            let n = self.v.cwnd().get() / MSS;
            for i in 0..n {
                self.ack(rtt_ms, i == 0);
            }
            self.now += Duration::from_ms(rtt_ms);
        }
    }

    /// A Vegas in congestion avoidance at `w` segments with BaseRTT = 100 ms, at the start of a
    /// round (the next `round` is measured, the one after decides).
    fn in_ca(w: i64) -> Driver {
        let mut v = Vegas::new(Bytes::new(MSS), 10);
        v.ssthresh = 2 * MSS;
        v.cwnd = w * MSS;
        v.base_rtt = Some(Duration::from_ms(100));
        v.rounds.start_round_now(Bytes::new(1));
        Driver::new(v)
    }

    #[test]
    fn constants() {
        assert_eq!((ALPHA, BETA, GAMMA), (2.0, 4.0, 1.0));
    }

    #[test]
    fn diff_decisions_in_congestion_avoidance() {
        // cwnd 20, BaseRTT 100 ms.
        // RTT 105 ms: diff = 20·(1 − 100/105) = 0.952 < α → +1 segment.
        let mut d = in_ca(20);
        d.round(105);
        assert_eq!(d.v.cwnd(), Bytes::new(20 * MSS), "no change inside a round");
        d.round(105); // the decision happens on the first ACK of the following round
        assert!((d.v.last_diff().unwrap() - 20.0 * 5.0 / 105.0).abs() < 1e-9);
        assert_eq!(d.v.cwnd(), Bytes::new(21 * MSS));

        // RTT 115 ms: diff = 20·15/115 = 2.61 ∈ [α, β] → hold.
        let mut d = in_ca(20);
        d.round(115);
        d.round(115);
        assert!((d.v.last_diff().unwrap() - 2.608_7).abs() < 1e-4);
        assert_eq!(d.v.cwnd(), Bytes::new(20 * MSS));

        // RTT 130 ms: diff = 20·30/130 = 4.615 > β → −1 segment.
        let mut d = in_ca(20);
        d.round(130);
        d.round(130);
        assert!((d.v.last_diff().unwrap() - 4.615_4).abs() < 1e-4);
        assert_eq!(d.v.cwnd(), Bytes::new(19 * MSS));
        assert!(!d.v.in_slow_start());

        // The bounds are exclusive: RTT 125 ms gives diff = 20·0.2 = 4 = β → hold.
        let mut d = in_ca(20);
        d.round(125);
        d.round(125);
        assert!((d.v.last_diff().unwrap() - 4.0).abs() < 1e-12);
        assert_eq!(d.v.cwnd(), Bytes::new(20 * MSS));
    }

    #[test]
    fn slow_start_exit_on_gamma() {
        let mut d = Driver::new(Vegas::new(Bytes::new(MSS), 10));
        d.round(100);
        assert_eq!(d.v.cwnd(), Bytes::new(20 * MSS));
        assert_eq!(d.v.base_rtt(), Some(Duration::from_ms(100)));
        d.round(102);
        assert_eq!(d.v.cwnd(), Bytes::new(40 * MSS), "slow start doubles per round");
        // The 102 ms round ends at cwnd 40: diff = 40·2/102 = 0.78 ≤ γ → keep growing.
        d.ack(102, true);
        assert!((d.v.last_diff().unwrap() - 40.0 * 2.0 / 102.0).abs() < 1e-9);
        assert_eq!(d.v.cwnd(), Bytes::new(41 * MSS));
        assert!(d.v.in_slow_start());
        // A round at 110 ms: slow start per ACK to 81, then the round end decides
        // diff = 81·10/110 = 7.36 > γ → cwnd = ⌊81·100/110⌋ + 1 = 74, ssthresh = 73.
        for _ in 0..40 {
            d.ack(110, false);
        }
        assert_eq!(d.v.cwnd(), Bytes::new(81 * MSS));
        d.ack(110, true);
        assert!((d.v.last_diff().unwrap() - 81.0 * 10.0 / 110.0).abs() < 1e-9);
        assert_eq!(d.v.cwnd(), Bytes::new(74 * MSS));
        assert_eq!(d.v.ssthresh(), Bytes::new(73 * MSS));
        assert!(!d.v.in_slow_start());
    }

    #[test]
    fn too_few_samples_fall_back_to_reno_and_loss_is_reno() {
        let mut d = in_ca(20);
        // Two RTT samples in the round: no Vegas decision at its end, one Reno step instead.
        d.ack(130, false);
        d.ack(130, true);
        assert_eq!(d.v.last_diff(), None);
        assert_eq!(d.v.cwnd(), Bytes::new(20 * MSS + MSS * MSS / (20 * MSS)));

        d.v.on_congestion_event(&CongestionEvent { now: Time::ZERO, flight_size: Bytes::new(30 * MSS), in_flight: Bytes::ZERO, lost: Bytes::new(MSS) });
        assert_eq!((d.v.cwnd(), d.v.ssthresh()), (Bytes::new(15 * MSS), Bytes::new(15 * MSS)));
        // No change during recovery.
        d.ack_in(200, true, CaState::Recovery);
        assert_eq!(d.v.cwnd(), Bytes::new(15 * MSS));
        d.v.on_rto(&RtoEvent { now: Time::ZERO, flight_size: Bytes::new(10 * MSS), consecutive: 1, during_recovery: false });
        assert_eq!((d.v.cwnd(), d.v.ssthresh()), (Bytes::new(MSS), Bytes::new(5 * MSS)));
        // After the timeout: Reno slow start while the sender is in Loss.
        d.ack_in(200, true, CaState::Loss);
        assert_eq!(d.v.cwnd(), Bytes::new(2 * MSS));
        assert_eq!(d.v.base_rtt(), Some(Duration::from_ms(100)));
    }

    #[test]
    fn window_never_below_two_segments() {
        // Slow start at 2 segments with BaseRTT 100 ms; the first round grows to 4, then a
        // 1000 ms round gives diff = 4·0.9 = 3.6 > γ and target ⌊4·0.1⌋ + 1 = 1 → floored at 2.
        let mut v = Vegas::new(Bytes::new(MSS), 2);
        v.base_rtt = Some(Duration::from_ms(100));
        v.rounds.start_round_now(Bytes::new(1));
        let mut d = Driver::new(v);
        d.round(1000);
        assert_eq!(d.v.cwnd(), Bytes::new(4 * MSS));
        d.round(1000);
        assert_eq!(d.v.cwnd(), Bytes::new(2 * MSS));
        assert_eq!(d.v.ssthresh(), Bytes::new(2 * MSS));
    }
}
