//! Reno / NewReno window arithmetic (RFC 5681, RFC 6928 initial window, RFC 6582 recovery;
//! the recovery procedure itself is in the sender).
//!
//! * slow start (`cwnd < ssthresh`): `cwnd += min(N, SMSS)` per ACK, `N` = bytes newly acked;
//! * congestion avoidance: `cwnd += SMSS²/cwnd` per ACK (≈ +1 SMSS per RTT with an ACK per
//!   segment), with the integer remainder carried to the next ACK so nothing is lost to rounding;
//! * congestion event: `ssthresh = max(FlightSize/2, 2·SMSS)`, `cwnd = ssthresh`;
//! * timeout: the same `ssthresh` (only on the first timeout of a series, and not when the
//!   timeout interrupts a fast recovery: [`super::RtoEvent::reduces_ssthresh`]), `cwnd = 1·SMSS`.
//!
//! No growth during fast recovery, nor while the sender is not cwnd-limited.

use super::cc::{AckSample, CaState, CongestionEvent, RtoEvent, WindowCongestionControl};
use crate::units::{Bytes, Time};

#[derive(Clone, Debug)]
pub struct NewReno {
    smss: i64,
    cwnd: i64,
    ssthresh: i64,
    /// Remainder of SMSS² not yet turned into window in congestion avoidance (< cwnd).
    ca_remainder: i64,
}

impl NewReno {
    /// `iw_segments`: initial window in segments (RFC 6928: 10).
    pub fn new(smss: Bytes, iw_segments: u32) -> Self {
        let smss = smss.get().max(1);
        NewReno { smss, cwnd: smss * iw_segments.max(1) as i64, ssthresh: Bytes::INFINITY.get(), ca_remainder: 0 }
    }

    /// Start with a given slow-start threshold instead of "infinite" (tests, experiments that
    /// want a flow to start in congestion avoidance).
    pub fn with_ssthresh(smss: Bytes, iw_segments: u32, ssthresh: Bytes) -> Self {
        let mut r = Self::new(smss, iw_segments);
        r.ssthresh = ssthresh.get().max(2 * r.smss);
        r
    }

    fn reduced_ssthresh(&self, flight_size: Bytes) -> i64 { (flight_size.get() / 2).max(2 * self.smss) }
}

impl WindowCongestionControl for NewReno {
    fn name(&self) -> &'static str { "newreno" }

    fn on_ack(&mut self, s: &AckSample) {
        // RFC 5681 grows the window on ACKs that advance the cumulative ACK point (like Linux's
        // FLAG_DATA_ACKED); duplicate ACKs carrying new SACK blocks do not.
        if s.state == CaState::Recovery || s.newly_cum_acked <= Bytes::ZERO || !s.is_cwnd_limited {
            return;
        }
        if self.cwnd < self.ssthresh {
            self.cwnd += s.newly_cum_acked.get().min(self.smss);
        } else {
            let num = self.smss * self.smss + self.ca_remainder;
            let inc = num / self.cwnd;
            self.ca_remainder = num % self.cwnd;
            self.cwnd += inc;
        }
    }

    fn on_congestion_event(&mut self, ev: &CongestionEvent) {
        self.ssthresh = self.reduced_ssthresh(ev.flight_size);
        self.cwnd = self.ssthresh;
        self.ca_remainder = 0;
    }

    fn on_rto(&mut self, ev: &RtoEvent) {
        if ev.reduces_ssthresh() {
            self.ssthresh = self.reduced_ssthresh(ev.flight_size);
        }
        self.cwnd = self.smss;
        self.ca_remainder = 0;
    }

    fn on_recovery_exit(&mut self, _now: Time) {
        // RFC 6582 exit option (2): the window deflates to ssthresh (the sender drops its
        // inflation); our cwnd already equals ssthresh since the congestion event.
        self.cwnd = self.ssthresh.max(self.smss);
    }

    fn cwnd(&self) -> Bytes { Bytes::new(self.cwnd) }
    fn ssthresh(&self) -> Bytes { Bytes::new(self.ssthresh) }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: i64 = 1448;

    fn sample(newly: i64, state: CaState) -> AckSample { AckSample::for_test(Time::ZERO, newly, state) }

    #[test]
    fn initial_window_and_slow_start_step() {
        let mut r = NewReno::new(Bytes::new(MSS), 10);
        assert_eq!(r.cwnd(), Bytes::new(14_480));
        assert!(r.in_slow_start());
        // An ACK for 2 segments still grows by only one SMSS (L = 1·SMSS).
        r.on_ack(&sample(2 * MSS, CaState::Open));
        assert_eq!(r.cwnd(), Bytes::new(11 * MSS));
        // A partial-segment ACK grows by what it acked.
        r.on_ack(&sample(100, CaState::Open));
        assert_eq!(r.cwnd(), Bytes::new(11 * MSS + 100));
        // No growth in recovery or when not cwnd-limited.
        r.on_ack(&sample(MSS, CaState::Recovery));
        let mut s = sample(MSS, CaState::Open);
        s.is_cwnd_limited = false;
        r.on_ack(&s);
        assert_eq!(r.cwnd(), Bytes::new(11 * MSS + 100));
    }

    #[test]
    fn congestion_avoidance_carries_remainder() {
        let mut r = NewReno::new(Bytes::new(MSS), 10);
        r.on_congestion_event(&CongestionEvent { now: Time::ZERO, flight_size: Bytes::new(40 * MSS), in_flight: Bytes::ZERO, lost: Bytes::new(MSS) });
        assert_eq!(r.cwnd(), Bytes::new(20 * MSS));
        assert_eq!(r.ssthresh(), Bytes::new(20 * MSS));
        // First CA ack: 1448² / 28960 = 72.4 -> +72, remainder 0.4·28960 = 11584.
        r.on_ack(&sample(MSS, CaState::Open));
        assert_eq!(r.cwnd(), Bytes::new(20 * MSS + 72));
        assert_eq!(r.ca_remainder, 11_584);
        // Second: (2_096_704 + 11_584) / 29_032 = 72 rem 17_904.
        r.on_ack(&sample(MSS, CaState::Open));
        assert_eq!(r.cwnd(), Bytes::new(20 * MSS + 144));
        assert_eq!(r.ca_remainder, 2_108_288 - 72 * 29_032);
    }

    #[test]
    fn reductions() {
        let mut r = NewReno::new(Bytes::new(MSS), 10);
        // Tiny flight: ssthresh floors at 2·SMSS.
        r.on_congestion_event(&CongestionEvent { now: Time::ZERO, flight_size: Bytes::new(MSS), in_flight: Bytes::ZERO, lost: Bytes::ZERO });
        assert_eq!(r.ssthresh(), Bytes::new(2 * MSS));
        r.on_rto(&RtoEvent { now: Time::ZERO, flight_size: Bytes::new(30 * MSS), consecutive: 1, during_recovery: false });
        assert_eq!(r.ssthresh(), Bytes::new(15 * MSS));
        assert_eq!(r.cwnd(), Bytes::new(MSS));
        // A backed-off second timeout keeps ssthresh.
        r.on_rto(&RtoEvent { now: Time::ZERO, flight_size: Bytes::new(4 * MSS), consecutive: 2, during_recovery: false });
        assert_eq!(r.ssthresh(), Bytes::new(15 * MSS));
        assert_eq!(r.cwnd(), Bytes::new(MSS));
        // So does a timeout that interrupts a fast recovery (which already set ssthresh), even
        // if much more data has been sent since (Linux `tcp_enter_loss`).
        r.on_congestion_event(&CongestionEvent { now: Time::ZERO, flight_size: Bytes::new(20 * MSS), in_flight: Bytes::ZERO, lost: Bytes::new(MSS) });
        assert_eq!(r.ssthresh(), Bytes::new(10 * MSS));
        r.on_rto(&RtoEvent { now: Time::ZERO, flight_size: Bytes::new(60 * MSS), consecutive: 1, during_recovery: true });
        assert_eq!(r.ssthresh(), Bytes::new(10 * MSS));
        assert_eq!(r.cwnd(), Bytes::new(MSS));
    }
}
