//! RFC 6298 retransmission-timer estimator, in integer microseconds.
//!
//! * first sample `R`: `SRTT = R`, `RTTVAR = R/2`;
//! * later samples `R'`: `RTTVAR = (1−β)·RTTVAR + β·|SRTT − R'|` (with the old SRTT), then
//!   `SRTT = (1−α)·SRTT + α·R'`, α = 1/8, β = 1/4;
//! * `RTO = clamp(SRTT + max(G, 4·RTTVAR, min_rto), min_rto, max_rto)`, G = 1 µs (the clock
//!   granularity). `min_rto` bounds the *variance term* as Linux does (`tcp_rto_min` floors
//!   `mdev`), not only the total: with a deep drop-tail buffer the RTT grows smoothly, RTTVAR
//!   shrinks, and a plain `max(SRTT + 4·RTTVAR, 200 ms)` fires spuriously while a retransmission
//!   waits behind the full queue (observed in RMCAT 5.6 before this rule);
//! * before any sample `RTO = initial_rto` (1 s);
//! * each expiry doubles the RTO (capped at `max_rto`) until the next valid sample.

use crate::units::Duration;

#[derive(Clone, Debug)]
pub struct RttEstimator {
    srtt_us: Option<i64>,
    rttvar_us: i64,
    latest: Option<Duration>,
    min_rtt: Option<Duration>,
    /// RTO from the estimator alone (no back-off).
    base_rto: Duration,
    backoff: u32,
    min_rto: Duration,
    max_rto: Duration,
}

impl RttEstimator {
    pub fn new(initial_rto: Duration, min_rto: Duration, max_rto: Duration) -> Self {
        RttEstimator {
            srtt_us: None,
            rttvar_us: 0,
            latest: None,
            min_rtt: None,
            base_rto: initial_rto.clamp(min_rto, max_rto),
            backoff: 0,
            min_rto,
            max_rto,
        }
    }

    /// Feed one RTT measurement (negative samples are ignored). Resets the back-off.
    pub fn on_sample(&mut self, r: Duration) {
        let r_us = r.as_us();
        if r_us < 0 {
            return;
        }
        match self.srtt_us {
            None => {
                self.srtt_us = Some(r_us);
                self.rttvar_us = r_us / 2;
            }
            Some(srtt) => {
                self.rttvar_us = (3 * self.rttvar_us + (srtt - r_us).abs()) / 4;
                self.srtt_us = Some((7 * srtt + r_us) / 8);
            }
        }
        let srtt = self.srtt_us.unwrap_or(r_us);
        self.base_rto = Duration::from_us(srtt + (4 * self.rttvar_us).max(1).max(self.min_rto.as_us())).clamp(self.min_rto, self.max_rto);
        self.backoff = 0;
        self.latest = Some(r);
        self.min_rtt = Some(self.min_rtt.map_or(r, |m| m.min(r)));
    }

    /// The timer expired: double the RTO (RFC 6298 5.5).
    pub fn back_off(&mut self) { self.backoff = (self.backoff + 1).min(32); }

    /// Current RTO including back-off.
    pub fn rto(&self) -> Duration {
        let mut rto = self.base_rto;
        for _ in 0..self.backoff {
            rto = rto * 2;
            if rto >= self.max_rto {
                return self.max_rto;
            }
        }
        rto.clamp(self.min_rto, self.max_rto)
    }

    pub fn srtt(&self) -> Option<Duration> { self.srtt_us.map(Duration::from_us) }
    pub fn rttvar(&self) -> Duration { Duration::from_us(self.rttvar_us) }
    pub fn latest(&self) -> Option<Duration> { self.latest }
    pub fn min_rtt(&self) -> Option<Duration> { self.min_rtt }
    pub fn backoff_count(&self) -> u32 { self.backoff }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn est(min_rto_ms: i64) -> RttEstimator {
        RttEstimator::new(Duration::from_secs(1), Duration::from_ms(min_rto_ms), Duration::from_secs(60))
    }

    #[test]
    fn rfc6298_first_and_following_samples() {
        let mut e = est(1);
        assert_eq!(e.rto(), Duration::from_secs(1), "initial RTO is 1 s");
        // First sample 100 ms: SRTT = 100, RTTVAR = 50, RTO = 100 + 4·50 = 300 ms.
        e.on_sample(Duration::from_ms(100));
        assert_eq!(e.srtt(), Some(Duration::from_ms(100)));
        assert_eq!(e.rttvar(), Duration::from_ms(50));
        assert_eq!(e.rto(), Duration::from_ms(300));
        // Second 200 ms: RTTVAR = 0.75·50 + 0.25·|100−200| = 62.5; SRTT = 0.875·100 + 0.125·200
        // = 112.5; RTO = 112.5 + 250 = 362.5 ms.
        e.on_sample(Duration::from_ms(200));
        assert_eq!(e.rttvar(), Duration::from_us(62_500));
        assert_eq!(e.srtt(), Some(Duration::from_us(112_500)));
        assert_eq!(e.rto(), Duration::from_us(362_500));
        // Third 80 ms: RTTVAR = 0.75·62.5 + 0.25·32.5 = 55; SRTT = 0.875·112.5 + 10 = 108.4375;
        // RTO = 108.4375 + 220 = 328.4375 ms.
        e.on_sample(Duration::from_ms(80));
        assert_eq!(e.rttvar(), Duration::from_us(55_000));
        assert_eq!(e.srtt(), Some(Duration::from_us(108_437)));
        assert_eq!(e.rto(), Duration::from_us(328_437));
        assert_eq!(e.min_rtt(), Some(Duration::from_ms(80)));
    }

    #[test]
    fn min_rto_floor_and_backoff() {
        let mut e = est(200);
        // 10 ms path: 4·RTTVAR = 20 ms is floored at 200 ms (Linux), RTO = 10 + 200 = 210 ms.
        e.on_sample(Duration::from_ms(10));
        assert_eq!(e.rto(), Duration::from_ms(210));
        e.back_off();
        assert_eq!(e.rto(), Duration::from_ms(420));
        e.back_off();
        assert_eq!(e.rto(), Duration::from_ms(840));
        for _ in 0..20 {
            e.back_off();
        }
        assert_eq!(e.rto(), Duration::from_secs(60), "capped at max RTO");
        // A new sample clears the back-off (RFC 6298 5.7 / Karn).
        e.on_sample(Duration::from_ms(10));
        assert_eq!(e.rto(), Duration::from_ms(210));
    }
}
